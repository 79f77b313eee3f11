"""The exception tree of grpo-rewards.

Model failures (a malformed answer, no tool call) are never exceptions: they score 0 and carry a
reason in the result. Exceptions are for caller mistakes and infrastructure faults (bad rollout
statistics, a missing framework, inconsistent batch shapes), which should stop a training run.
The one warning, `MissingRolloutStatsWarning`, is the soft form of `MissingRolloutStatsError`.
"""

from __future__ import annotations

__all__ = [
    "BatchShapeError",
    "GrpoRewardsError",
    "InvalidRolloutError",
    "MissingFrameworkError",
    "MissingRolloutStatsError",
    "MissingRolloutStatsWarning",
    "UnknownRewardError",
]


class GrpoRewardsError(Exception):
    """Base of every error raised by grpo-rewards."""


class InvalidRolloutError(GrpoRewardsError, ValueError):
    """Rollout statistics that break the paper's contract (negative counts, c̄ above the cap)."""


class MissingRolloutStatsError(InvalidRolloutError):
    """A reward that needs rollout statistics (T turns, C tool calls) got none to read.

    Raised by `score_completion` when it is given no statistics, and by the adapters in
    `on_missing_counts="raise"` mode when the trainer passed no counts and no completion of the
    batch records a tool call.
    """


class MissingRolloutStatsWarning(UserWarning):
    """The `on_missing_counts="warn"` form of `MissingRolloutStatsError` (the TRL and ms-swift
    adapters' default): issued once per reward-function object; the rollouts are scored with
    c̄ = 0."""


class BatchShapeError(GrpoRewardsError, ValueError):
    """Per-rollout sequences of different lengths, or groups that do not tile the batch."""


class UnknownRewardError(GrpoRewardsError, KeyError):
    """A reward name that is not in the registry."""

    def __str__(self) -> str:  # KeyError quotes its argument; the message reads better plain
        return str(self.args[0]) if self.args else ""


class MissingFrameworkError(GrpoRewardsError, ImportError):
    """An adapter was asked to talk to a trainer framework that is not installed."""
