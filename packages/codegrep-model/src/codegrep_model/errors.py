"""The exception tree of codegrep-model.

Nothing here reaches the model: tool failures, malformed calls and missing answers are turned into
messages the model reads or into flags on the rollout record. These exceptions are for the code
around the agent: an endpoint that keeps failing, a policy or an episode that is used wrongly.
Record files are read by `codegrep_records`, whose `RecordError` says what was wrong with one.
"""

from __future__ import annotations

__all__ = [
    "BatchError",
    "BatchInputError",
    "BatchStoppedError",
    "CodegrepModelError",
    "EndpointError",
    "EndpointTimeoutError",
    "EpisodeError",
    "PolicyError",
    "PolicySpecError",
]


class CodegrepModelError(Exception):
    """Base of every error this package raises."""


class PolicyError(CodegrepModelError):
    """A policy could not produce a reply (scripted replies ran out, bad configuration)."""


class EndpointError(PolicyError):
    """An OpenAI-compatible endpoint failed after its retries (HTTP 5xx, bad JSON, refused)."""


class EndpointTimeoutError(EndpointError):
    """An OpenAI-compatible endpoint did not answer within the request timeout."""


class EpisodeError(CodegrepModelError):
    """An `Episode` was driven out of order (a reply when it waits for tool results, results of
    the wrong length, a step after it is done)."""


class PolicySpecError(CodegrepModelError):
    """A policy spec (`lexical`, `openai:MODEL@URL`) names no known policy or is malformed."""


class BatchError(CodegrepModelError):
    """`run_batch_file` could not run its batch (its message is one line, for the user)."""


class BatchInputError(BatchError):
    """Bad input, found before any rollout ran: an unreadable instances file, an unwritable
    output, a `--repo` no instance has, an unusable ranker, cache or endpoint."""


class BatchStoppedError(BatchError):
    """The batch began and could not go on (a full disk, a pool that cannot start); what was
    written stays, and a rerun resumes."""
