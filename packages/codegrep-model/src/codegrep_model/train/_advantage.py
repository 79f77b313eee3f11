"""The advantage scale as the ms-swift trainer reads it, and the per-rollout training log.

The rule itself (s(c̄) = sqrt(min(c̄ / 4, 1)) for a reward whose `grpo_rewards.RewardSpec`
declares the advantage-layer efficiency term, 1.0 otherwise; the degenerate rollouts; the
`zero_unanswered` choice) has one home, `grpo_rewards.advantage_scale` (its module docstring
says why). `advantage_scale` here is that function with the setup error a trainer of this
package can act on (`TrainingSetupError`, naming the scheduler that records the counts);
`AdvantageScale` is grpo-rewards' record. Pure Python; the ms-swift trainer multiplies its
tensor by each `factor`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from grpo_rewards import (
    REWARD_SPECS,
    AdvantageScale,
    MissingRolloutStatsError,
    RolloutInfo,
    record_text,
)
from grpo_rewards import advantage_scales as _advantage_scales
from pydantic import BaseModel, ConfigDict, Field, field_validator

from codegrep_model.train._scheduler_core import TrainingSetupError

__all__ = [
    "ROLLOUT_LOG_FILE",
    "ROLLOUT_LOG_SCHEMA_VERSION",
    "AdvantageScale",
    "RolloutLogEntry",
    "advantage_scale",
    "advantage_scales",
    "efficiency_reward",
    "overflow_rate",
    "read_rollout_log",
    "set_aside_log",
]


#: The per-rollout log's file name under the trainer's output folder (unless
#: `$CODEGREP_ROLLOUT_LOG` names another path); the monitor looks for it there.
ROLLOUT_LOG_FILE = "codegrep_rollouts.jsonl"


def set_aside_log(rollout_log: Path) -> Path:
    """Where the rollouts that dynamic sampling drew and did not train on are logged, beside
    the rollout log: `codegrep_rollouts.set_aside.jsonl` (the same records, advantage 0)."""
    name = rollout_log.name.removesuffix(".jsonl")
    return rollout_log.with_name(f"{name}.set_aside.jsonl")


#: The layout of `RolloutLogEntry`; a line without `schema_version` is version 1 (the fields
#: added since then have defaults, so older lines read).
ROLLOUT_LOG_SCHEMA_VERSION = 1


def _record(info: RolloutInfo | Mapping[str, Any] | None) -> RolloutInfo:
    return info if isinstance(info, RolloutInfo) else RolloutInfo.from_infos(info)


def efficiency_reward(funcs: Sequence[object], names: Sequence[str]) -> str | None:
    """The reward whose spec decides the advantage scale of a trainer with these reward functions.

    A function's `spec` (grpo-rewards' ORMs carry one) is read first, else its name is looked up
    in `grpo_rewards.REWARD_SPECS`; functions known to neither (a format reward) do not vote.
    None when no function is known; `TrainingSetupError` when the known ones disagree on the
    efficiency layer (one would be discounted twice, or the other not at all).
    """
    specs = []
    for func, name in zip(funcs, names, strict=True):
        spec = getattr(func, "spec", None) or REWARD_SPECS.get(name)
        if spec is not None:
            specs.append(spec)
    layers = {s.efficiency_layer == "advantage" for s in specs}
    if len(layers) > 1:
        listed = ", ".join(f"{s.name}: {s.efficiency_layer}" for s in specs)
        raise TrainingSetupError(
            f"the reward functions disagree on where the efficiency term lives ({listed}); "
            "train v2/v3 apart from v1"
        )
    return specs[0].name if specs else None


def advantage_scales(
    infos: Iterable[RolloutInfo | Mapping[str, Any] | None],
    *,
    reward: str | None,
    zero_unanswered: bool = False,
) -> list[AdvantageScale]:
    """`grpo_rewards.advantage_scales`; a rollout without tool-call counts is a
    `TrainingSetupError` that names the scheduler which records them."""
    try:
        return _advantage_scales(infos, reward=reward, zero_unanswered=zero_unanswered)
    except MissingRolloutStatsError as exc:
        raise TrainingSetupError(
            f"{exc}; train with --multi_turn_scheduler codegrep_tools"
        ) from exc


def advantage_scale(
    info: RolloutInfo | Mapping[str, Any] | None,
    *,
    reward: str | None = "codegrep_v3",
    zero_unanswered: bool = False,
) -> AdvantageScale:
    """`advantage_scales` of one rollout.

    >>> info = {"num_turns": 4, "tool_calls_per_turn": [2, 2, 0, 0]}
    >>> advantage_scale(info).factor, advantage_scale(info, reward="codegrep_v1").factor
    (0.5, 1.0)
    """
    return advantage_scales([info], reward=reward, zero_unanswered=zero_unanswered)[0]


class RolloutLogEntry(BaseModel):
    """One line of the per-rollout training log (JSON lines)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    schema_version: int = ROLLOUT_LOG_SCHEMA_VERSION
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
    stop_cause: str | None = Field(
        default=None,
        description="Why the rollout stopped: 'overflow' (its token budget ended it; "
        "`overflow` says which limit), else the episode's status ('answered', 'unanswered', "
        "'error'); None when the scheduler recorded neither.",
    )
    overflow: str | None = Field(
        default=None,
        description="The limit that ended it: 'max_length' or 'completion_budget'; None: none.",
    )
    rollout_tokens: int | None = Field(
        default=None, description="The whole rollout's tokens (prompt, replies, tool results)."
    )
    completion_tokens: int | None = Field(
        default=None, description="The model's output tokens summed over the rollout's turns."
    )
    tool_results_cut: int = Field(
        default=0, description="Tool results cut, with a marker, to stay within max_length."
    )

    @field_validator("*", mode="before")
    @classmethod
    def _writable(cls, v: Any) -> Any:
        """Every text as a UTF-8 log line can carry it: a lone surrogate (a model's JSON
        `"\\udce9"` in an answer's path, a driver's error) is U+FFFD (`record_text`), so no
        rollout can make the log unwritable."""
        if isinstance(v, str):
            return record_text(v)
        if isinstance(v, list | tuple) and any(isinstance(x, str) for x in v):
            return type(v)(record_text(x) if isinstance(x, str) else x for x in v)
        if isinstance(v, Mapping):
            return {record_text(k) if isinstance(k, str) else k: x for k, x in v.items()}
        return v

    @classmethod
    def of(
        cls,
        *,
        step: int,
        index: int,
        info: RolloutInfo | Mapping[str, Any],
        scale: AdvantageScale,
        reward: float,
        rewards: Mapping[str, float],
        advantage_group: float,
        instance_id: str | None = None,
    ) -> RolloutLogEntry:
        def num(x: float) -> float | None:
            return None if math.isnan(x) else x

        record = _record(info)
        parsed = record.answer
        answer = None if parsed is None else parsed.answer
        return cls(
            step=step,
            index=index,
            instance_id=instance_id,
            reward=num(reward),
            rewards={k: num(v) for k, v in rewards.items()},
            num_turns=scale.turns if record.num_turns is None else record.num_turns,
            tool_calls_per_turn=record.tool_calls_per_turn or (),
            num_tool_calls=scale.tool_calls,
            cbar=scale.cbar,
            efficiency=scale.efficiency,
            factor=scale.factor,
            degenerate=scale.degenerate,
            advantage_group=advantage_group,
            advantage=advantage_group * scale.factor,
            answer_files=None if answer is None else answer.files,
            answer_error=None if parsed is None or answer is not None else parsed.error,
            episode_status=record.episode_status,
            test_policy=record.test_policy,
            stop_cause="overflow" if record.overflow else record.episode_status,
            overflow=record.overflow,
            rollout_tokens=record.rollout_tokens,
            completion_tokens=record.completion_tokens,
            tool_results_cut=record.tool_results_cut or 0,
        )

    def to_json_line(self) -> str:
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False) + "\n"


def overflow_rate(entries: Iterable[RolloutLogEntry]) -> float | None:
    """The share of rollouts whose `stop_cause` is 'overflow', among those that record a stop
    cause; None when none does (a log written before the token budget)."""
    causes = [e.stop_cause for e in entries if e.stop_cause is not None]
    return sum(c == "overflow" for c in causes) / len(causes) if causes else None


def read_rollout_log(path: str | Path) -> list[RolloutLogEntry]:
    """Every entry of a per-rollout log, in order."""
    lines: Iterable[str] = Path(path).read_text(encoding="utf-8").splitlines()
    return [RolloutLogEntry.model_validate_json(line) for line in lines if line.strip()]
