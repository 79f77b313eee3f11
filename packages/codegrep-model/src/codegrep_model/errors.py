"""The exception tree of codegrep-model.

Nothing here reaches the model: tool failures, malformed calls and missing answers are turned into
messages the model reads or into flags on the rollout record. These exceptions are for the code
around the agent: an endpoint that keeps failing, a record file that cannot be read, a policy that
is used wrongly.
"""

from __future__ import annotations

__all__ = [
    "CodegrepModelError",
    "EndpointError",
    "EndpointTimeoutError",
    "PolicyError",
    "RecordError",
]


class CodegrepModelError(Exception):
    """Base of every error this package raises."""


class PolicyError(CodegrepModelError):
    """A policy could not produce a reply (scripted replies ran out, bad configuration)."""


class EndpointError(PolicyError):
    """An OpenAI-compatible endpoint failed after its retries (HTTP 5xx, bad JSON, refused)."""


class EndpointTimeoutError(EndpointError):
    """An OpenAI-compatible endpoint did not answer within the request timeout."""


class RecordError(CodegrepModelError):
    """A JSONL record file has a row that does not validate; the message names file and line."""
