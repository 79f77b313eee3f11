"""worktree-sandbox: read-only grep/glob/read over git repositories at a commit."""

from importlib import metadata as _metadata

from worktree_sandbox._grep_backends import GREP_ENGINES, check_grep_engine
from worktree_sandbox.cache import BareRepoCache
from worktree_sandbox.directory_tree import DirectoryTree
from worktree_sandbox.errors import RepositoryNotFoundError, SandboxError
from worktree_sandbox.locations import repository_locations
from worktree_sandbox.models import (
    TOOL_ARGS,
    GlobArgs,
    GlobResult,
    GrepArgs,
    GrepResult,
    ReadArgs,
    ReadResult,
    SandboxLimits,
    ToolErrorKind,
    ToolResult,
)
from worktree_sandbox.pool import TreePool
from worktree_sandbox.symbols import (
    Definition,
    SymbolIndex,
    enclosing,
    language_of,
    parse_definitions,
    symbols_available,
)
from worktree_sandbox.sync import SyncSandbox
from worktree_sandbox.tree import Tree

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("worktree-sandbox")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

__all__ = [
    "GREP_ENGINES",
    "TOOL_ARGS",
    "BareRepoCache",
    "Definition",
    "DirectoryTree",
    "GlobArgs",
    "GlobResult",
    "GrepArgs",
    "GrepResult",
    "ReadArgs",
    "ReadResult",
    "RepositoryNotFoundError",
    "SandboxError",
    "SandboxLimits",
    "SymbolIndex",
    "SyncSandbox",
    "ToolErrorKind",
    "ToolResult",
    "Tree",
    "TreePool",
    "__version__",
    "check_grep_engine",
    "enclosing",
    "language_of",
    "parse_definitions",
    "repository_locations",
    "symbols_available",
]
