"""worktree-sandbox: read-only grep/glob/read over git repositories at a commit."""

from worktree_sandbox.errors import (
    CommitNotFoundError,
    RepositoryNotFoundError,
    SandboxClosedError,
    SandboxError,
)

__version__ = "0.1.0"

__all__ = [
    "CommitNotFoundError",
    "RepositoryNotFoundError",
    "SandboxClosedError",
    "SandboxError",
    "__version__",
]
