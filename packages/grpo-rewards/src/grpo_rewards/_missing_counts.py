"""What an adapter does when a reward that needs rollout statistics gets none: warn once, or raise.

A trainer that passes no turn / tool-call counts (plain TRL without count columns, ms-swift
without a multi-turn scheduler, verl without the agent loop's `extra_info`) leaves the adapter
with c̄ = 0 for every rollout. For CodeGrep v2/v3 that is the degenerate-rollout rule, so a
perfect answer scores 0.0 and a GRPO run learns nothing; nothing else in the numbers says so.
The adapters therefore check each batch and, by their `on_missing_counts` setting, warn once per
reward-function object (`MissingRolloutStatsWarning`) or raise (`MissingRolloutStatsError`).
This module holds that rule and the message; what each reward becomes without statistics is its
spec's `without_counts` (`grpo_rewards.RewardSpec`). It does not score.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Literal

from grpo_rewards._spec import REWARD_SPECS
from grpo_rewards.errors import (
    GrpoRewardsError,
    MissingRolloutStatsError,
    MissingRolloutStatsWarning,
)

__all__ = [
    "ON_MISSING_COUNTS",
    "MissingCountsGuard",
    "OnMissingCounts",
    "check_on_missing_counts",
    "needs_counts",
]

#: What an adapter does when a reward that needs rollout statistics gets none.
OnMissingCounts = Literal["warn", "raise"]
ON_MISSING_COUNTS: tuple[OnMissingCounts, ...] = ("warn", "raise")


def needs_counts(reward: str, params: Mapping[str, object]) -> bool:
    """Whether `reward` reads the rollout statistics with `params` (its spec's `counts`)."""
    spec = REWARD_SPECS.get(reward)
    return spec is not None and spec.needs_counts(params)


def check_on_missing_counts(value: object) -> OnMissingCounts:
    """`value` as an `OnMissingCounts`, or a `GrpoRewardsError` naming the accepted values."""
    for policy in ON_MISSING_COUNTS:
        if value == policy:
            return policy
    raise GrpoRewardsError(f"on_missing_counts must be 'warn' or 'raise', got {value!r}")


def _consequence(reward: str) -> str:
    spec = REWARD_SPECS.get(reward)
    return spec.without_counts if spec is not None else "the reward is not the one designed"


class MissingCountsGuard:
    """One per reward-function object: remembers which rewards it has already warned about."""

    def __init__(self, adapter: str) -> None:
        self.adapter = adapter
        self._warned: set[str] = set()

    def report(self, reward: str, policy: OnMissingCounts, missing: str, remedy: str) -> None:
        """Raise, or warn the first time for `reward`; `missing` names what the batch lacked."""
        message = (
            f"{self.adapter}: reward {reward!r} needs rollout statistics (turns, tool calls) but "
            f"got none: {missing}. Without them c̄ = 0: "
            f"{_consequence(reward)}. {remedy}; or use "
            f"'fbeta_file', the tool-free reward (file F-beta, no statistics needed)."
        )
        if policy == "raise":
            raise MissingRolloutStatsError(message)
        if reward in self._warned:
            return
        self._warned.add(reward)
        warnings.warn(
            f"{message} Scored with c̄ = 0; warned once per reward function "
            f"(on_missing_counts='raise' makes this an error).",
            MissingRolloutStatsWarning,
            stacklevel=3,
        )
