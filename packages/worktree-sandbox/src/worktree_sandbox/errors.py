"""The exception tree of worktree-sandbox.

Tool calls never raise these at the model: the tools turn every failure into a result the model can
read. They are for the code that sets the sandbox up (cache, pool, CLI).
"""

from __future__ import annotations

__all__ = [
    "CommitNotFoundError",
    "CommitRequiredError",
    "RepositoryLayoutError",
    "RepositoryNotFoundError",
    "SandboxClosedError",
    "SandboxError",
    "SymbolCacheError",
    "SymbolsUnavailable",
]


class SandboxError(Exception):
    """Base of every error this package raises."""


class RepositoryNotFoundError(SandboxError):
    """The source template does not lead to a git repository."""


class RepositoryLayoutError(SandboxError):
    """A repository's pointer files (`.git` file, `commondir`, `objects/info/alternates`)
    cannot be read or make no sense, so where its data lives cannot be said."""


class CommitNotFoundError(SandboxError):
    """The commit is in neither the bare clone nor its source."""


class CommitRequiredError(SandboxError):
    """A repository name was given to `TreePool.open` without the commit to open it at."""


class SandboxClosedError(SandboxError):
    """A tree or pool was used after it was closed."""


class SymbolsUnavailable(SandboxError, ImportError):
    """The definition index needs the `symbols` extra (tree-sitter and its grammars).

    Also an ImportError, so `except ImportError` around an optional feature catches it.
    """


class SymbolCacheError(SandboxError):
    """The definition index's disk cache cannot be used: its folder is not one this package made,
    or it cannot be made or opened. A corrupted cache file is rebuilt, not reported here."""
