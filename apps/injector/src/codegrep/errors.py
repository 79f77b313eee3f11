"""The exception tree of the codegrep app: what the CLI turns into a message and exit 2."""

from __future__ import annotations

__all__ = ["InjectorError", "IssueInputError", "RepositoryInputError"]


class InjectorError(Exception):
    """Base of every error this app raises."""


class RepositoryInputError(InjectorError):
    """--repo is neither a local directory nor a repository the cache can clone."""


class IssueInputError(InjectorError):
    """--issue is missing, unreadable or empty."""
