"""worktree-sandbox: read-only grep/glob/read over git repositories at a commit."""

from importlib import metadata as _metadata

from worktree_sandbox._grep_backends import (
    GREP_ENGINES,
    GrepEngine,
    check_grep_engine,
    register_grep_engine,
)
from worktree_sandbox._runtime import Runtime
from worktree_sandbox.cache import BareRepoCache, PreparedRepo
from worktree_sandbox.commit_tree import CommitTree
from worktree_sandbox.directory_tree import DirectoryTree
from worktree_sandbox.errors import (
    CommitNotFoundError,
    CommitRequiredError,
    RepositoryLayoutError,
    RepositoryNotFoundError,
    SandboxClosedError,
    SandboxError,
    SymbolCacheError,
    SymbolsUnavailable,
)
from worktree_sandbox.locations import RepositoryLocations, repository_locations
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
from worktree_sandbox.pool import Materialize, PoolStats, TreePool, default_workdir, prune_workdir
from worktree_sandbox.symbols import (
    Definition,
    SymbolIndex,
    SymbolIndexStats,
    enclosing,
    language_of,
    parse_definitions,
    symbols_available,
)
from worktree_sandbox.sync import SyncSandbox, SyncTree
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
    "CommitNotFoundError",
    "CommitRequiredError",
    "CommitTree",
    "Definition",
    "DirectoryTree",
    "GlobArgs",
    "GlobResult",
    "GrepArgs",
    "GrepEngine",
    "GrepMatch",
    "GrepResult",
    "Materialize",
    "PoolStats",
    "PreparedRepo",
    "ReadArgs",
    "ReadResult",
    "RepositoryLayoutError",
    "RepositoryLocations",
    "RepositoryNotFoundError",
    "Runtime",
    "SandboxClosedError",
    "SandboxError",
    "SandboxLimits",
    "SymbolCacheError",
    "SymbolIndex",
    "SymbolIndexStats",
    "SymbolsUnavailable",
    "SyncSandbox",
    "SyncTree",
    "ToolArgs",
    "ToolErrorKind",
    "ToolName",
    "ToolResult",
    "Tree",
    "TreePool",
    "__version__",
    "check_grep_engine",
    "default_workdir",
    "enclosing",
    "language_of",
    "parse_definitions",
    "prune_workdir",
    "register_grep_engine",
    "repository_locations",
    "symbols_available",
]
