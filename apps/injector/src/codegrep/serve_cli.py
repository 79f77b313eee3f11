"""`codegrep serve`: the HTTP API (starlette + uvicorn) or, with `--mcp`, the MCP server on
stdio, both over one `LocalizeService`.

Registered onto `codegrep.cli.app` when `codegrep.cli` is imported. Nothing here imports
starlette, uvicorn or mcp until the command runs, so `codegrep --help` works without the
`serve` extra, and `codegrep serve` without it exits 2 naming the extra. Exit 2 for bad
input found before serving (no allow-list, an unreadable calibration, a calibration of another
retriever, a port in use).
"""

from __future__ import annotations

import asyncio
import importlib
import ipaddress
import logging
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from codegrep.cli import (
    _ApiKeyOption,
    _BaseUrlOption,
    _check_base_url,
    _fail,
    _ModelOption,
    app,
)

if TYPE_CHECKING:
    from codegrep_model import Policy

    from codegrep.service import LocalizeService

__all__ = ["SERVE_EXTRA_HINT", "serve"]

SERVE_EXTRA_HINT = "pip install 'codegrep[serve]'"
_SERVE_MODULES = ("starlette", "uvicorn", "mcp")


@app.command()
def serve(
    host: Annotated[
        str, typer.Option(help="Address to listen on (HTTP); anything but loopback warns.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port (HTTP); 0 picks a free one.")
    ] = 8765,
    allow_root: Annotated[
        list[Path] | None,
        typer.Option(
            "--allow-root",
            help="A folder requests may name (absolute paths inside it, symlinks resolved); "
            "repeatable.",
        ),
    ] = None,
    allow_repo: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-repo",
            help="owner/name that requests may have cloned into --cache; repeatable.",
        ),
    ] = None,
    cache: Annotated[
        Path | None,
        typer.Option(help="Clone cache for --allow-repo names (default ~/.cache/codegrep/repos)."),
    ] = None,
    source: Annotated[
        str, typer.Option(help="Clone source template for --allow-repo names.")
    ] = "https://github.com/{repo}.git",
    calibration: Annotated[
        Path | None,
        typer.Option(
            help="The retriever's calibration (codegrep calibrate); default: the one shipped "
            "for the lexical policy, if any."
        ),
    ] = None,
    no_calibration: Annotated[
        bool, typer.Option("--no-calibration", help="Run without a calibration (no gate).")
    ] = False,
    gate: Annotated[
        bool | None,
        typer.Option(
            "--gate/--no-gate",
            help="Gate requests that do not say (default: gate when a calibration is loaded).",
            show_default=False,
        ),
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="The gate's precision threshold (default 0.45).",
            show_default=False,
        ),
    ] = None,
    max_concurrent: Annotated[int, typer.Option(min=1, help="Searches at once.")] = 2,
    max_queue: Annotated[
        int, typer.Option(min=0, help="Requests waiting beyond those; more get 503.")
    ] = 16,
    max_body_bytes: Annotated[
        int, typer.Option(min=1, help="Largest request body (HTTP); more gets 413.")
    ] = 1 << 20,
    max_issue_bytes: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Largest issue text, UTF-8 bytes (default 262144); more gets 413.",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds per request, queueing included; 504 after.")
    ] = 60.0,
    base_url: _BaseUrlOption = None,
    model: _ModelOption = "codegrep",
    api_key: _ApiKeyOption = None,
    mcp: Annotated[bool, typer.Option("--mcp", help="Serve MCP on stdio instead of HTTP.")] = False,
    mcp_http: Annotated[
        bool,
        typer.Option("--mcp-http/--no-mcp-http", help="Also serve MCP over HTTP at /mcp."),
    ] = True,
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Log every request (stderr).")
    ] = False,
) -> None:
    """Answer localize requests over HTTP (POST /localize, and MCP at /mcp) or MCP (--mcp, stdio).

    Requests may only name folders inside --allow-root and repositories on --allow-repo; give
    at least one.

    Example:
      codegrep serve --allow-root ~/src --port 8765
      curl -s localhost:8765/localize -d '{"repo": "/home/me/src/app", "issue": "KeyError in get"}'
      codegrep serve --mcp --allow-root ~/src
    """
    for name in _SERVE_MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise _fail(
                f"codegrep serve needs the 'serve' extra ({name} is not installed): "
                f"{SERVE_EXTRA_HINT}"
            ) from exc
    if not allow_root and not allow_repo:
        raise _fail(
            "nothing to serve: give at least one folder (--allow-root DIR) or repository "
            "(--allow-repo owner/name) that requests may name; nothing is served by default"
        )
    if calibration is not None and no_calibration:
        raise _fail("--calibration and --no-calibration contradict each other; give one")
    if not timeout > 0:
        raise _fail(f"--timeout must be a positive number of seconds, got {timeout:g}")
    _check_base_url(base_url)
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from codegrep_gate import GateConfig
    from codegrep_model import DEFAULT_MAX_ISSUE_BYTES, OpenAIPolicy
    from codegrep_model import __version__ as model_version

    from codegrep.gating import CalibrationChoiceError, calibration_for
    from codegrep.service import LocalizeService, ServiceConfigError, ServiceLimits

    policy_name = "lexical" if base_url is None else f"openai:{model}"  # OpenAIPolicy.name
    try:
        loaded = (
            None
            if no_calibration
            else calibration_for(policy_name, calibration, required=calibration is not None)
        )
    except CalibrationChoiceError as exc:
        raise _fail(str(exc)) from exc
    if gate and loaded is None:
        raise _fail(
            "--gate needs a calibration: give --calibration FILE (a served model needs its own, "
            "from codegrep calibrate)"
        )
    gate_config = GateConfig() if threshold is None else GateConfig(threshold=threshold)
    limits = ServiceLimits(
        max_concurrent=max_concurrent,
        max_queue=max_queue,
        timeout_s=timeout,
        max_issue_bytes=max_issue_bytes or DEFAULT_MAX_ISSUE_BYTES,
    )
    policy: Policy | None = None
    if base_url is not None:
        policy = OpenAIPolicy(base_url, model, api_key=api_key, timeout_s=timeout)

    def service() -> LocalizeService:
        try:
            return LocalizeService(
                policy=policy,
                allow_roots=allow_root or (),
                allow_repos=allow_repo or (),
                cache_dir=cache,
                source=source,
                calibration=loaded,
                gate_config=gate_config,
                gate_by_default=gate,
                limits=limits,
                version=model_version,
            )
        except ServiceConfigError as exc:
            raise _fail(str(exc)) from exc

    if mcp:
        asyncio.run(_serve_mcp(service(), policy))
        return
    if not _is_loopback(host):
        typer.echo(
            f"warning: listening on {host}: anyone who can reach it can search the allowed "
            "folders; there is no authentication (put a proxy with one in front)",
            err=True,
        )
    try:
        sock = _listen(host, port)
    except OSError as exc:
        raise _fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    asyncio.run(_serve_http(service(), policy, sock, max_body_bytes, verbose, mcp_http))


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket, bound here so that a port in use is exit 2 and `--port 0` can be said."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


async def _serve_http(
    service: LocalizeService,
    policy: Policy | None,
    sock: socket.socket,
    max_body_bytes: int,
    verbose: bool,
    mcp_http: bool = True,
) -> None:
    import uvicorn

    from codegrep.serve_http import build_app

    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host

    def ready() -> None:
        gate = "gated by default" if service.gate_by_default else "not gated by default"
        print(
            f"codegrep serve: http://{shown}:{bound_port} ({service.policy.name}, {gate}; "
            f"{service.limits.max_concurrent} at once, {service.limits.max_queue} queued)",
            file=sys.stderr,
            flush=True,
        )

    app = build_app(service, max_body_bytes=max_body_bytes, on_ready=ready, mcp=mcp_http)
    config = uvicorn.Config(
        app,
        log_level="info" if verbose else "warning",
        access_log=verbose,
        server_header=False,
        lifespan="on",
    )
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        await _close_policy(policy)


async def _serve_mcp(service: LocalizeService, policy: Policy | None) -> None:
    from codegrep.serve_mcp import build_mcp_server

    try:
        async with service:
            await build_mcp_server(service).run_stdio_async()
    finally:
        await _close_policy(policy)


async def _close_policy(policy: Policy | None) -> None:
    from codegrep_model import OpenAIPolicy

    if isinstance(policy, OpenAIPolicy):
        await policy.aclose()
