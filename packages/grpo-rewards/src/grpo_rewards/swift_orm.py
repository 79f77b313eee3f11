"""ms-swift ORM plugin: our rewards under `--reward_funcs codegrep_v3` (and v1, v2, colgrep).

ms-swift instantiates `orms[name](...)` once and calls it with the final assistant message of each
rollout as `completions` plus every dataset column and `rollout_infos` as batched keyword lists
(ms-swift 4.x `swift.rewards.orm`; 3.x `swift.plugin.orm`). The classes below follow that contract
without importing ms-swift; only `register_swift_orms()` touches it, to add them to its registry.

A plugin file for `--external_plugins` is two lines:

    from grpo_rewards.swift_orm import register_swift_orms
    register_swift_orms()

Rollout statistics come from `rollout_infos` (`num_turns`, which ms-swift adds, and
`tool_calls_per_turn` or `num_tool_calls`, which the multi-turn driver records), else from the
rollout's `messages`. When the driver also recorded the parsed final answer (`answer_files`: what
codegrep-model's `Episode` writes in strict mode), that answer is scored and the completion is not
parsed again. The key names are `grpo_rewards`' `INFO_*` constants.

The advantage-layer efficiency scale needs torch, so it belongs in a GRPOTrainer subclass that
calls `grpo_rewards.efficiency_scale`; that subclass, and the ms-swift plugin around
codegrep-model's `Episode`, are planned and not part of this repository yet.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping, Sequence
from typing import ClassVar

from grpo_rewards._rewards import score_completion, score_parsed
from grpo_rewards._rollout import RolloutStats, rollout_stats_from_messages
from grpo_rewards._rollout_infos import (
    INFO_NUM_TOOL_CALLS,
    INFO_NUM_TURNS,
    INFO_TOOL_CALLS_PER_TURN,
    answer_from_infos,
)
from grpo_rewards._trainer_rows import (
    DEFAULT_FILES_COLUMN,
    DEFAULT_LINE_RANGES_COLUMN,
    column,
    gold_from_values,
    stats_from_counts,
)
from grpo_rewards.errors import MissingFrameworkError

__all__ = [
    "SWIFT_ORMS",
    "CodeGrepORM",
    "CodeGrepV1ORM",
    "CodeGrepV2ORM",
    "CodeGrepV3ORM",
    "ColgrepFileF1ORM",
    "register_swift_orms",
    "swift_rollout_stats",
]


def swift_rollout_stats(rollout_info: object, messages: object) -> RolloutStats:
    """T and C_total of one ms-swift rollout."""
    if isinstance(rollout_info, Mapping):
        calls = rollout_info.get(INFO_TOOL_CALLS_PER_TURN, rollout_info.get(INFO_NUM_TOOL_CALLS))
        stats = stats_from_counts(rollout_info.get(INFO_NUM_TURNS), calls)
        if stats is not None:
            return stats
    if isinstance(messages, Sequence) and not isinstance(messages, str | bytes):
        return rollout_stats_from_messages([m for m in messages if isinstance(m, Mapping)])
    return RolloutStats(turns=1, tool_calls=0)


class CodeGrepORM:
    """Base ORM: scores `reward_name` against the `files_column` / `line_ranges_column` label.

    Subclass and override the class attributes to change the reward, the columns or the
    constants (`params`, e.g. `{"beta": 1.0}`). A row without a label scores `None` (ms-swift
    turns it into NaN and leaves it out of the reward mean).
    """

    reward_name: ClassVar[str] = "codegrep_v3"
    files_column: ClassVar[str] = DEFAULT_FILES_COLUMN
    line_ranges_column: ClassVar[str] = DEFAULT_LINE_RANGES_COLUMN
    params: ClassVar[Mapping[str, float]] = {}

    def __init__(self, args: object = None, **kwargs: object) -> None:
        self.args = args

    def __call__(self, completions: Sequence[object], **kwargs: object) -> list[float | None]:
        n = len(completions)
        files = column(kwargs, self.files_column, n, required=True)
        ranges = column(kwargs, self.line_ranges_column, n, required=False)
        infos = column(kwargs, "rollout_infos", n, required=False)
        messages = column(kwargs, "messages", n, required=False)
        out: list[float | None] = []
        for i, text in enumerate(completions):
            gold = gold_from_values(files[i], ranges[i])
            if gold is None:
                out.append(None)
                continue
            stats = swift_rollout_stats(infos[i], messages[i])
            info = infos[i]
            # the driver's own parse of the final answer, when it recorded one (strict mode)
            parsed = answer_from_infos(info) if isinstance(info, Mapping) else None
            if parsed is None:
                result = score_completion(self.reward_name, text, gold, stats, params=self.params)
            else:
                result = score_parsed(self.reward_name, parsed, gold, stats, params=self.params)
            out.append(result.reward)
        return out


class CodeGrepV1ORM(CodeGrepORM):
    """`codegrep_v1`: ½(Fβ_file + Fβ_lr) · 1/max(1, c̄/4)."""

    reward_name = "codegrep_v1"


class CodeGrepV2ORM(CodeGrepORM):
    """`codegrep_v2`: ½(Fβ_file + Fβ_lr) · 1[c̄ > 0]."""

    reward_name = "codegrep_v2"


class CodeGrepV3ORM(CodeGrepORM):
    """`codegrep_v3`: Fβ_file · 1[c̄ > 0]."""

    reward_name = "codegrep_v3"


class ColgrepFileF1ORM(CodeGrepORM):
    """`colgrep_file_f1`: file F1 with colgrep's turn and format penalties."""

    reward_name = "colgrep_file_f1"


#: The names `register_swift_orms` adds to ms-swift's registry.
SWIFT_ORMS: Mapping[str, type[CodeGrepORM]] = {
    "codegrep_v1": CodeGrepV1ORM,
    "codegrep_v2": CodeGrepV2ORM,
    "codegrep_v3": CodeGrepV3ORM,
    "colgrep_file_f1": ColgrepFileF1ORM,
}


def _swift_registry() -> MutableMapping[str, object]:
    for module in ("swift.rewards.orm", "swift.rewards", "swift.plugin.orm", "swift.plugin"):
        try:
            registry = getattr(importlib.import_module(module), "orms", None)
        except ImportError:
            continue
        if isinstance(registry, MutableMapping):
            return registry
    raise MissingFrameworkError(
        "ms-swift is not installed (or has no ORM registry): pip install ms-swift"
    )


def register_swift_orms(
    registry: MutableMapping[str, object] | None = None,
    *,
    orms: Mapping[str, type[CodeGrepORM]] = SWIFT_ORMS,
) -> MutableMapping[str, object]:
    """Add our ORMs to ms-swift's `orms` registry (or to `registry`) and return it."""
    target = _swift_registry() if registry is None else registry
    for name, cls in orms.items():
        target[name] = cls
    return target
