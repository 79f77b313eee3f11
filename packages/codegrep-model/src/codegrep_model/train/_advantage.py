"""CodeGrep's advantage-layer efficiency scale per rollout, and the per-rollout training log.

After GRPO's group normalization each rollout's advantage is multiplied by
s(c̄) = sqrt(min(c̄ / 4, 1)), c̄ = C_total / T (the calls that ran over the assistant turns): the
discount shrinks a rollout's step without flipping its sign or re-ranking its group, which is
why the paper moved efficiency out of the reward (v2, v3). Degenerate rollouts get 0: one that
never answered, and one in which no call ran (no call, or only malformed or refused ones; there
c̄ = 0 and s is 0 anyway).

The counts are read from the rollout's `rollout_infos` under `grpo_rewards`' keys, as the
reward reads them (`grpo_rewards.swift_orm.swift_rollout_stats`). A rollout without them is a
setup error, not c̄ = 0: a trainer subclass that silently zeroed every advantage would train
nothing and say nothing. Pure Python; the ms-swift trainer multiplies its tensor by `factor`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from grpo_rewards import (
    INFO_ANSWER_ERROR,
    INFO_ANSWER_FILES,
    INFO_NUM_TOOL_CALLS,
    INFO_NUM_TURNS,
    INFO_TOOL_CALLS_PER_TURN,
    answer_from_infos,
    efficiency_scale,
)
from grpo_rewards.swift_orm import swift_rollout_stats
from pydantic import BaseModel, ConfigDict, Field

from codegrep_model.train._scheduler_core import (
    INFO_EPISODE_STATUS,
    INFO_TEST_POLICY,
    TrainingSetupError,
)

__all__ = ["AdvantageScale", "RolloutLogEntry", "advantage_scale", "read_rollout_log"]


class AdvantageScale(BaseModel):
    """The factor one rollout's group-normalized advantage is multiplied by, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    turns: int = Field(description="T: assistant turns, the answer turn included.")
    tool_calls: int = Field(description="C_total: the calls that ran.")
    cbar: float = Field(description="c̄ = C_total / T.")
    efficiency: float = Field(description="s(c̄) = sqrt(min(c̄ / saturation, 1)).")
    factor: float = Field(description="efficiency, or 0.0 for a degenerate rollout.")
    degenerate: str | None = Field(
        default=None, description="Why the rollout is degenerate (its factor is 0); None if not."
    )


def advantage_scale(
    info: Mapping[str, Any] | None, *, saturation: float = 4.0, zero_unanswered: bool = True
) -> AdvantageScale:
    """The scale of one rollout from its `rollout_infos`.

    >>> advantage_scale({"num_turns": 4, "tool_calls_per_turn": [2, 2, 0, 0]}).factor
    0.5
    >>> advantage_scale({"num_turns": 2, "tool_calls_per_turn": [0, 0]}).degenerate
    'no tool call ran'
    """
    info = info or {}
    if INFO_TOOL_CALLS_PER_TURN not in info and INFO_NUM_TOOL_CALLS not in info:
        raise TrainingSetupError(
            f"rollout_infos holds no {INFO_TOOL_CALLS_PER_TURN!r} or {INFO_NUM_TOOL_CALLS!r}: "
            "the advantage scale needs the rollout's tool-call counts; train with "
            "--multi_turn_scheduler codegrep_tools"
        )
    stats = swift_rollout_stats(info, None)
    efficiency = efficiency_scale(stats.cbar, saturation=saturation)
    degenerate: str | None = None
    parsed = answer_from_infos(info)
    if stats.tool_calls == 0:
        degenerate = "no tool call ran"
    elif zero_unanswered and parsed is not None and parsed.answer is None:
        why = parsed.error if parsed.error and parsed.error != "no answer" else None
        degenerate = f"no answer: {why}" if why else "no answer"
    return AdvantageScale(
        turns=stats.turns,
        tool_calls=stats.tool_calls,
        cbar=stats.cbar,
        efficiency=efficiency,
        factor=0.0 if degenerate else efficiency,
        degenerate=degenerate,
    )


class RolloutLogEntry(BaseModel):
    """One line of the per-rollout training log (JSON lines)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    step: int = Field(
        description="The optimizer step these rollouts train, as ms-swift's logging.jsonl "
        "numbers it (the trainer's global_step + 1 when the batch is scored)."
    )
    index: int = Field(description="The rollout's place in the gathered batch.")
    instance_id: str | None = None
    reward: float | None = Field(description="The weighted reward sum; None when NaN.")
    rewards: dict[str, float | None] = Field(default_factory=dict, description="Per function.")
    num_turns: int
    tool_calls_per_turn: tuple[int, ...] = ()
    num_tool_calls: int
    cbar: float
    efficiency: float
    factor: float
    degenerate: str | None = None
    advantage_group: float = Field(description="The advantage after group normalization.")
    advantage: float = Field(description="advantage_group × factor: what the loss uses.")
    answer_files: tuple[str, ...] | None = None
    answer_error: str | None = None
    episode_status: str | None = None
    test_policy: str | None = Field(
        default=None, description="Set when a test-only policy replaced the model's replies."
    )

    @classmethod
    def of(
        cls,
        *,
        step: int,
        index: int,
        info: Mapping[str, Any],
        scale: AdvantageScale,
        reward: float,
        rewards: Mapping[str, float],
        advantage_group: float,
        instance_id: str | None = None,
    ) -> RolloutLogEntry:
        def num(x: float) -> float | None:
            return None if math.isnan(x) else x

        per_turn = info.get(INFO_TOOL_CALLS_PER_TURN)
        files = info.get(INFO_ANSWER_FILES)
        return cls(
            step=step,
            index=index,
            instance_id=instance_id,
            reward=num(reward),
            rewards={k: num(v) for k, v in rewards.items()},
            num_turns=int(info.get(INFO_NUM_TURNS, scale.turns)),
            tool_calls_per_turn=tuple(int(c) for c in per_turn) if per_turn else (),
            num_tool_calls=scale.tool_calls,
            cbar=scale.cbar,
            efficiency=scale.efficiency,
            factor=scale.factor,
            degenerate=scale.degenerate,
            advantage_group=advantage_group,
            advantage=advantage_group * scale.factor,
            answer_files=tuple(files) if isinstance(files, list | tuple) else None,
            answer_error=info.get(INFO_ANSWER_ERROR),
            episode_status=info.get(INFO_EPISODE_STATUS),
            test_policy=info.get(INFO_TEST_POLICY),
        )

    def to_json_line(self) -> str:
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False) + "\n"


def read_rollout_log(path: str | Path) -> list[RolloutLogEntry]:
    """Every entry of a per-rollout log, in order."""
    lines: Iterable[str] = Path(path).read_text(encoding="utf-8").splitlines()
    return [RolloutLogEntry.model_validate_json(line) for line in lines if line.strip()]
