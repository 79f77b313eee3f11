"""`codegrep serve`: the HTTP API (starlette + uvicorn) or, with `--mcp`, the MCP server on
stdio, both over one `LocalizeService`.

Attached to `codegrep.cli.app` by `codegrep.cli`; imports nothing from it. Nothing here imports
starlette, uvicorn or mcp until the command runs, so `codegrep --help` works without the
`serve` extra, and `codegrep serve` without it exits 2 naming the extra. Exit 2 for bad
input found before serving (no allow-list, an unreadable calibration, a calibration of another
retriever, a port in use, a broad root, a non-loopback address without a token).
"""

from __future__ import annotations

import asyncio
import importlib
import ipaddress
import logging
import re
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NamedTuple

import typer
from codegrep_cli import fail, grep_engine_option, timeout_option

from codegrep._cli_options import (
    _ApiKeyOption,
    _BaseUrlOption,
    _ModelOption,
    _policy_spec,
    _PolicyOption,
)

if TYPE_CHECKING:
    from codegrep_model import Policy

    from codegrep.service import LocalizeService

__all__ = ["SERVE_EXTRA_HINT", "serve"]

SERVE_EXTRA_HINT = "pip install 'codegrep[serve]'"
TOKEN_ENV = "CODEGREP_SERVE_TOKEN"
_SERVE_MODULES = ("starlette", "uvicorn", "mcp")


def serve(
    host: Annotated[
        str,
        typer.Option(help="Address to listen on (HTTP); anything but loopback needs --token."),
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
    allow_broad_root: Annotated[
        bool,
        typer.Option(
            "--allow-broad-root",
            help="Accept / , the home folder or a folder above it as --allow-root.",
        ),
    ] = False,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            help="A Host/Origin name requests may use besides localhost, 127.0.0.1 and [::1] "
            "(with the server's port); repeatable.",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar=TOKEN_ENV,
            help=f"Require 'Authorization: Bearer TOKEN' (or set {TOKEN_ENV}); required off "
            "loopback.",
            show_default=False,
        ),
    ] = None,
    allow_fetch: Annotated[
        bool,
        typer.Option(
            "--allow-fetch",
            help="Let requests clone --allow-repo names and fetch missing commits from "
            "--source (at most --fetches-per-minute); without it only the cache is served.",
        ),
    ] = False,
    fetches_per_minute: Annotated[
        float, typer.Option(min=0.001, help="Client-driven fetches a minute (--allow-fetch).")
    ] = 6.0,
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
        float, timeout_option("Seconds per request, queueing included; 504 after.")
    ] = 60.0,
    body_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds for a request's body to arrive; 408 after.")
    ] = 10.0,
    header_timeout: Annotated[
        float,
        typer.Option(min=0.1, help="Seconds for a request's headers to arrive; closed after."),
    ] = 10.0,
    max_checkout_bytes: Annotated[
        int,
        typer.Option(
            min=0,
            help="Bytes of checkouts (in /dev/shm when there) held at once, each file counted "
            "as the 4 KiB pages it takes; idle ones are closed least recently used first, "
            "past it grep reads git objects.",
        ),
    ] = 512 << 20,
    max_idle_trees: Annotated[
        int, typer.Option(min=0, help="Repository trees kept open when no request holds them.")
    ] = 16,
    grep_engine: Annotated[str | None, grep_engine_option()] = None,
    policy_flag: _PolicyOption = None,
    base_url: _BaseUrlOption = None,
    model: _ModelOption = None,
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
    at least one. Only loopback Host/Origin names are answered (--allow-host for more), a POST
    must be JSON, and off loopback a --token is required.

    Example:
      codegrep serve --allow-root ~/src --port 8765
      curl -s localhost:8765/localize -H 'Content-Type: application/json' \\
        -d '{"repo": "/home/me/src/app", "issue": "KeyError in get"}'
      codegrep serve --mcp --allow-root ~/src
    """
    for name in _SERVE_MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise fail(
                f"codegrep serve needs the 'serve' extra ({name} is not installed): "
                f"{SERVE_EXTRA_HINT}"
            ) from exc
    if not allow_root and not allow_repo:
        raise fail(
            "nothing to serve: give at least one folder (--allow-root DIR) or repository "
            "(--allow-repo owner/name) that requests may name; nothing is served by default"
        )
    if calibration is not None and no_calibration:
        raise fail("--calibration and --no-calibration contradict each other; give one")
    if not timeout > 0:
        raise fail(f"--timeout must be a positive number of seconds, got {timeout:g}")
    if token is not None and not token.strip():
        raise fail(f"--token (or {TOKEN_ENV}) is empty; give a secret or leave it unset")
    if not mcp and not _is_loopback(host) and not token:
        raise fail(
            f"--host {host} is not loopback: anyone who can reach it could search the allowed "
            f"folders, so give --token (or set {TOKEN_ENV})"
        )
    for name in allow_host or ():
        if not re.fullmatch(r"\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+", name):
            raise fail(f"--allow-host {name!r}: give a host name or address, without a port")
    spec = _policy_spec(policy_flag, base_url, model)
    from worktree_sandbox import SandboxError, check_grep_engine

    try:
        check_grep_engine(grep_engine)
    except SandboxError as exc:
        raise fail(f"--grep-engine: {exc}") from exc
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from codegrep_gate import GateConfig
    from codegrep_model import DEFAULT_MAX_ISSUE_BYTES, PolicySpecError, policy_from_spec
    from codegrep_model import __version__ as model_version

    from codegrep.gating import CalibrationChoiceError, calibration_for
    from codegrep.service import LocalizeService, ServiceConfigError, ServiceLimits

    policy_name = spec.name
    try:
        loaded = (
            None
            if no_calibration
            else calibration_for(policy_name, calibration, required=calibration is not None)
        )
    except CalibrationChoiceError as exc:
        raise fail(str(exc)) from exc
    if gate and loaded is None:
        raise fail(
            "--gate needs a calibration: give --calibration FILE (a served model needs its own, "
            "from codegrep calibrate)"
        )
    gate_config = GateConfig() if threshold is None else GateConfig(threshold=threshold)
    limits = ServiceLimits(
        max_concurrent=max_concurrent,
        max_queue=max_queue,
        timeout_s=timeout,
        max_issue_bytes=max_issue_bytes or DEFAULT_MAX_ISSUE_BYTES,
        max_checkout_bytes=max_checkout_bytes,
        max_idle_trees=max_idle_trees,
        fetches_per_minute=fetches_per_minute,
        grep_engine=grep_engine,
    )
    # The lexical policy is the service's default (None), as before.
    policy: Policy | None = None
    if spec.kind != "lexical":
        try:
            policy = policy_from_spec(spec, api_key=api_key, timeout_s=timeout)
        except PolicySpecError as exc:
            raise fail(str(exc)) from exc

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
                allow_fetch=allow_fetch,
                allow_broad_root=allow_broad_root,
            )
        except ServiceConfigError as exc:
            raise fail(str(exc)) from exc

    if mcp:
        asyncio.run(_serve_mcp(service(), policy))
        return
    if not _is_loopback(host):
        typer.echo(
            f"warning: listening on {host}: anyone who can reach it and has the token can "
            "search the allowed folders; the traffic is not encrypted (put a TLS proxy in front)",
            err=True,
        )
    made = service()  # its configuration errors (a broad root) exit 2 before the port is taken
    try:
        sock = _listen(host, port)
    except OSError as exc:
        raise fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    guard = _Guard(
        hosts=(*LOOPBACK_NAMES, *(allow_host or ()), *(() if _is_loopback(host) else (host,))),
        token=token,
        body_timeout_s=body_timeout,
        header_timeout_s=header_timeout,
    )
    asyncio.run(_serve_http(made, policy, sock, max_body_bytes, verbose, guard, mcp_http))


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


class _Guard(NamedTuple):
    hosts: tuple[str, ...]
    token: str | None
    body_timeout_s: float
    header_timeout_s: float


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
    guard: _Guard,
    mcp_http: bool = True,
) -> None:
    import uvicorn

    from codegrep.serve_http import build_app, server_config

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

    hosts = [f"[{h}]" if ":" in h and not h.startswith("[") else h for h in guard.hosts]
    app = build_app(
        service,
        max_body_bytes=max_body_bytes,
        on_ready=ready,
        hosts=hosts,
        port=bound_port,
        token=guard.token,
        body_timeout_s=guard.body_timeout_s,
        mcp=mcp_http,
    )
    limits = service.limits
    config = server_config(
        app,
        header_timeout_s=guard.header_timeout_s,
        # searches, their queue, and room for /health and refusals beyond them; past it the
        # connection idle longest is closed, not the request refused
        max_connections=limits.max_concurrent + limits.max_queue + 64,
        verbose=verbose,
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
    """Close what the policy holds open (a served model's connections), whatever its kind."""
    close = getattr(policy, "aclose", None)
    if close is not None:
        await close()
