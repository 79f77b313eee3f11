"""The exception tree of worktree-sandbox.

Tool calls never raise these at the model: the tools turn every failure into a result the model can
read. They are for the code that sets the sandbox up (cache, pool, CLI).
"""

from __future__ import annotations

__all__ = [
    "CommitNotFoundError",
    "CommitRequiredError",
    "RepositoryNotFoundError",
    "SandboxClosedError",
    "SandboxError",
]


class SandboxError(Exception):
    """Base of every error this package raises."""


class RepositoryNotFoundError(SandboxError):
    """The source template does not lead to a git repository."""


class CommitNotFoundError(SandboxError):
    """The commit is in neither the bare clone nor its source."""


class CommitRequiredError(SandboxError):
    """A repository name was given to `TreePool.open` without the commit to open it at."""


class SandboxClosedError(SandboxError):
    """A tree or pool was used after it was closed."""
