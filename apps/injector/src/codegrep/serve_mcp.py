"""The MCP server of `codegrep serve --mcp`: one tool, `localize_files`, over one service.

Built with the official `mcp` SDK's high-level `MCPServer` (mcp 2.x); it runs on stdio, so
nothing but the protocol goes to stdout (the SDK and this app log to stderr). The tool answers
with the same `LocalizeResponse` the HTTP API gives, as structured content and as JSON text; the
service's errors (a folder outside the allowed roots, a repository not on the allow-list, a
busy server) come back as error results with the service's one-line message, so the calling
model can read them. Not for: the rules themselves, which are the service's.

`mcp` (the `serve` extra) is imported when the server is built, not with this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field, ValidationError

from codegrep.service import LocalizeRequest, LocalizeResponse, LocalizeService, ServiceError

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["TOOL_DESCRIPTION", "build_mcp_server"]

TOOL_DESCRIPTION = (
    "Find the files of a repository that an issue needs (CodeGrep's retrieval agent: read-only "
    "grep/glob/read over the repository), most important first, each with a reason. Use it "
    "before editing code for a bug report or feature request: put the returned `injection` "
    "text (or the `injected` files) in front of your work. `repo` is an absolute folder path "
    "this server may read, or owner/name (with `commit`) from its allow-list."
)


def build_mcp_server(service: LocalizeService) -> MCPServer:
    """An `MCPServer` whose one tool calls `service`; the caller runs and closes both."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from codegrep import __version__

    server: MCPServer = MCPServer(
        "codegrep",
        version=__version__,
        instructions="Call localize_files with the issue text before you change code.",
    )

    async def localize_files(
        repo: Annotated[
            str,
            Field(
                description="Absolute path of a folder this server may read (searched as it "
                "is, or at `commit`), or owner/name from its allow-list (needs `commit`)."
            ),
        ],
        issue: Annotated[str, Field(description="The issue text: what is wrong or wanted.")],
        commit: Annotated[
            str | None, Field(description="Search the repository at this commit.")
        ] = None,
        gate: Annotated[
            bool,
            Field(
                description="true: inject only the files whose calibrated precision clears "
                "the server's threshold (when the server has a calibration); false: every file "
                "found."
            ),
        ] = True,
        inject: Annotated[
            str | None,
            Field(
                description="Render the kept files as text to inject: openhands, markdown, "
                "agent_context or json."
            ),
        ] = None,
    ) -> LocalizeResponse:
        try:
            request = LocalizeRequest.model_validate(
                {
                    "repo": repo,
                    "issue": issue,
                    "commit": commit,
                    # true gates when the server can: without a calibration, it cannot
                    "gate": gate and service.calibration is not None,
                    "inject": inject,
                }
            )
        except ValidationError as exc:
            said = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                for e in exc.errors(include_url=False, include_input=False)
            )
            raise ToolError(f"invalid arguments: {said}") from exc
        try:
            return await service.localize(request)
        except ServiceError as exc:
            raise ToolError(str(exc)) from exc

    server.add_tool(localize_files, description=TOOL_DESCRIPTION, structured_output=True)
    return server
