"""worktree-sandbox: read-only grep/glob/read over git repositories at a commit."""

from worktree_sandbox.errors import (
    CommitNotFoundError,
    RepositoryNotFoundError,
    SandboxClosedError,
    SandboxError,
)
from worktree_sandbox.models import (
    TOOL_ARGS,
    GlobArgs,
    GlobResult,
    GrepArgs,
    GrepMatch,
    GrepResult,
    ReadArgs,
    ReadResult,
    SandboxLimits,
    ToolArgs,
    ToolErrorKind,
    ToolName,
    ToolResult,
)

__version__ = "0.1.0"

__all__ = [
    "TOOL_ARGS",
    "CommitNotFoundError",
    "GlobArgs",
    "GlobResult",
    "GrepArgs",
    "GrepMatch",
    "GrepResult",
    "ReadArgs",
    "ReadResult",
    "RepositoryNotFoundError",
    "SandboxClosedError",
    "SandboxError",
    "SandboxLimits",
    "ToolArgs",
    "ToolErrorKind",
    "ToolName",
    "ToolResult",
    "__version__",
]
