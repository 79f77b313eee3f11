"""The errors `LocalizeService` raises on purpose, one class per answer a client gets.

Kept apart from `codegrep.service` (which re-exports them) so the HTTP and MCP layers, and a
reader of the status codes, find the tree in one short file: each class says the HTTP status
`codegrep.serve_http` maps it to; the MCP layer turns each into an error result. Every message
is one line.
"""

from __future__ import annotations

from codegrep.errors import InjectorError

__all__ = [
    "BusyError",
    "InternalServiceError",
    "NotAllowedError",
    "NotFoundError",
    "RateLimitedError",
    "RequestError",
    "ServiceConfigError",
    "ServiceError",
    "ServiceTimeoutError",
    "TooLargeError",
    "UpstreamError",
]


class ServiceError(InjectorError):
    """Base of what `LocalizeService.localize` raises on purpose; the message is one line."""


class ServiceConfigError(ServiceError):
    """The service cannot start as configured (no allow-list, a root that is not a folder, a
    calibration made for another retriever). `codegrep serve` exits 2 with it."""


class RequestError(ServiceError):
    """The request is malformed or asks for something this server cannot do (HTTP 400)."""


class NotAllowedError(ServiceError):
    """A folder outside the allowed roots, or a repository name not on the allow-list (403)."""


class NotFoundError(ServiceError):
    """No such folder, repository or commit (404)."""


class TooLargeError(ServiceError):
    """The issue (or, in the HTTP layer, the body) is over its limit (413)."""


class BusyError(ServiceError):
    """Every rollout slot and every queue place is taken (503); retry after `retry_after_s`."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class RateLimitedError(BusyError):
    """A client asked for a fetch over the server's fetch rate (429); retry after
    `retry_after_s`."""


class ServiceTimeoutError(ServiceError):
    """The request did not finish within the per-request timeout, queueing included (504)."""


class UpstreamError(ServiceError):
    """The policy's model endpoint failed (the rollout ended with status `error`) (502)."""


class InternalServiceError(ServiceError):
    """The rollout failed inside this server (500); the traceback went to the log only."""
