"""The exception tree of the codegrep app: what the CLI turns into a message and exit 2."""

from __future__ import annotations

__all__ = [
    "InjectorError",
    "IssueInputError",
    "JobInputError",
    "OutputWriteError",
    "RepositoryInputError",
]


class InjectorError(Exception):
    """Base of every error this app raises."""


class RepositoryInputError(InjectorError):
    """--repo is neither a local directory nor a repository the cache can clone."""


class IssueInputError(InjectorError):
    """--issue is missing, unreadable or empty."""


class JobInputError(InjectorError):
    """A job's settings that cannot work (an unknown style, a calibration without the gate, a
    bad --base-url, one file named for two outputs)."""


class OutputWriteError(InjectorError):
    """An output (-o, --rollout) that cannot be written."""
