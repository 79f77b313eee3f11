"""The MCP server of `codegrep serve`: one tool, `localize_files`, over one service.

Built with the official `mcp` SDK's high-level `MCPServer` (mcp 2.x). `codegrep serve --mcp`
runs it on stdio (nothing but the protocol goes to stdout; the SDK and this app log to stderr);
the HTTP server mounts its streamable-HTTP transport at `/mcp` (`mcp_routes`), behind the same
checks as the rest of that app. The tool answers with the same `LocalizeResponse` the HTTP API
gives, as structured content and as JSON text. Its arguments are the HTTP request's
(`LocalizeRequest`: unknown ones refused, types strict, `gate` absent means the server's
default); a bad argument and the service's errors (a folder outside the allowed roots, a
repository not on the allow-list, a busy server) come back as error results of one line, so
the calling model can read them. Not for: the rules themselves, which are the service's.

`mcp` (the `serve` extra) is imported when the server is built, not with this module.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any, cast

from pydantic import Field, ValidationError

from codegrep.localize_options import tool_field
from codegrep.service import (
    InjectStyle,
    LocalizeRequest,
    LocalizeResponse,
    LocalizeService,
    ServiceError,
)

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.mcpserver import MCPServer
    from starlette.routing import BaseRoute

__all__ = [
    "TOOL_DESCRIPTION",
    "TOOL_NAME",
    "build_mcp_server",
    "invalid_arguments",
    "mcp_routes",
]

TOOL_NAME = "localize_files"
TOOL_DESCRIPTION = (
    "Find the files of a repository that an issue needs (CodeGrep's retrieval agent: read-only "
    "grep/glob/read over the repository), most important first, each with a reason. Use it "
    "before editing code for a bug report or feature request: put the returned `injection` "
    "text (or the `injected` files) in front of your work. `repo` is an absolute folder path "
    "this server may read, or owner/name (with `commit`) from its allow-list."
)


def invalid_arguments(exc: ValidationError) -> str:
    """A refused argument set in one line: each field and what is wrong with it (no values,
    no documentation links)."""
    said = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
        for e in exc.errors(include_url=False, include_input=False, include_context=False)
    )
    return " ".join(f"invalid arguments: {said}".split())


def build_mcp_server(service: LocalizeService) -> MCPServer:
    """An `MCPServer` whose one tool calls `service`; the caller runs and closes both."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import CallToolResult, TextContent, ToolAnnotations

    from codegrep import __version__

    async def strict_arguments(
        ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        # The SDK would drop unknown arguments and answer a wrong type with pydantic's
        # multi-line text and a link: the request record says both in one line first.
        params = ctx.params if isinstance(ctx.params, dict) else {}
        if ctx.method == "tools/call" and params.get("name") == TOOL_NAME:
            arguments = params.get("arguments") or {}
            try:
                LocalizeRequest.model_validate(arguments)
            except ValidationError as exc:
                text = TextContent(type="text", text=invalid_arguments(exc))
                return CallToolResult(content=[text], is_error=True)
        return await call_next(ctx)

    server: MCPServer = MCPServer(
        "codegrep",
        version=__version__,
        instructions="Call localize_files with the issue text before you change code.",
        middleware=[strict_arguments],
    )

    async def localize_files(
        # each argument's text and bounds: `codegrep.localize_options`, the options' one
        # declaration
        repo: Annotated[str, Field(**tool_field("repo"))],
        issue: Annotated[str, Field(**tool_field("issue"))],
        commit: Annotated[str | None, Field(**tool_field("commit"))] = None,
        gate: Annotated[
            bool | Annotated[float, Field(ge=0, le=1)] | None, Field(**tool_field("gate"))
        ] = None,
        inject: Annotated[InjectStyle | None, Field(**tool_field("inject"))] = None,
        max_files: Annotated[int | None, Field(**tool_field("max_files"))] = None,
        top: Annotated[int | None, Field(**tool_field("top"))] = None,
    ) -> LocalizeResponse:
        # A refusal is the tool's result with is_error and the reason as its text, returned:
        # raised, the SDK would prefix "Error executing tool localize_files: " to it.
        try:
            request = LocalizeRequest(
                repo=repo, issue=issue, commit=commit, gate=gate, inject=inject,
                max_files=max_files, top=top,
            )  # fmt: skip
        except ValidationError as exc:
            return _refusal(invalid_arguments(exc))
        try:
            return await service.localize(request)
        except ServiceError as exc:
            return _refusal(" ".join(str(exc).split()))

    def _refusal(text: str) -> LocalizeResponse:
        # the SDK passes a CallToolResult through as the tool's result (`convert_result`)
        return cast(
            "LocalizeResponse",
            CallToolResult(content=[TextContent(type="text", text=text)], is_error=True),
        )

    server.add_tool(
        localize_files,
        name=TOOL_NAME,
        description=TOOL_DESCRIPTION,
        structured_output=True,
        # It reads the repository and writes nothing of the user's; the same request gives
        # the same answer; it reaches no service outside the server's own allow-lists.
        annotations=ToolAnnotations(
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )
    # The schema a client reads says what the server enforces: no argument but these
    # (`strict_arguments` refuses the others; the SDK's generated schema leaves it open).
    tool = server._tool_manager.get_tool(TOOL_NAME)
    assert tool is not None
    tool.parameters["additionalProperties"] = False
    return server


def mcp_routes(
    service: LocalizeService, hosts: Iterable[str] = ("localhost", "127.0.0.1", "[::1]")
) -> tuple[list[BaseRoute], MCPServer]:
    """The streamable-HTTP transport of the MCP server as routes at `/mcp` (stateless, JSON
    answers: no session state to hold), and the server whose `session_manager.run()` the
    app's lifespan must enter. The SDK's own DNS-rebinding check admits the same `hosts` as
    the app's `RequestGuard` (which runs first), so `--allow-host` holds on `/mcp` too."""
    from mcp.server.transport_security import TransportSecuritySettings

    names = list(hosts)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*names, *(f"{h}:*" for h in names)],
        allowed_origins=[
            f"{scheme}://{h}{port}"
            for h in names
            for scheme in ("http", "https")
            for port in ("", ":*")
        ],
    )
    server = build_mcp_server(service)
    sub = server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        transport_security=security,
    )
    return list(sub.routes), server
