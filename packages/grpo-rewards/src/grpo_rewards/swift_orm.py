"""ms-swift ORM plugin: our rewards under `--reward_funcs codegrep_v3` (and every other one).

ms-swift instantiates `orms[name](...)` once and calls it with the final assistant message of each
rollout as `completions` plus every dataset column and `rollout_infos` as batched keyword lists
(ms-swift 4.x `swift.rewards.orm`; 3.x `swift.plugin.orm`). The classes below follow that contract
without importing ms-swift; only `register_swift_orms()` touches it, to add them to its registry.

A plugin file for `--external_plugins` is two lines:

    from grpo_rewards.swift_orm import register_swift_orms
    register_swift_orms()

Rollout statistics come from `rollout_infos` (`num_turns`, which ms-swift adds, and
`tool_calls_per_turn` or `num_tool_calls`, which the multi-turn driver records), else from the
rollout's `messages`. When neither holds any (ms-swift without a multi-turn scheduler), a reward
that needs them would see c̄ = 0 for every rollout: the ORM warns once, or raises when its
`on_missing_counts` is "raise". Each `rollout_infos` dict is turned into the record it is the
JSON form of (`grpo_rewards.RolloutInfo.from_infos`) where it arrives, and the row is scored from
that record (`grpo_rewards.score_rollout`): the answer the environment parsed (codegrep-model's
`RolloutEnvironment` records it) is scored as it is, and the completion is parsed only for a
record that holds none. Nothing here reads the record's keys.
`codescout_multilevel` reads the `localization_finish` call from `messages` (else from the
completion text) and its gold from the `file_changes` column.

The advantage-layer efficiency scale needs torch, so it belongs in a GRPOTrainer subclass; the
ms-swift plugin of codegrep-model (`codegrep_model.train`) has one, and registers these ORMs.
Each ORM carries its reward's `spec` (`grpo_rewards.RewardSpec`): the subclass scales advantages
only for a reward whose `spec.efficiency_layer` is "advantage" (v2, v3), never for v1, whose
efficiency term is already in the reward.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import ClassVar

from grpo_rewards._codescout import DEFAULT_FILE_CHANGES_COLUMN, MultiLevelTargets, score_codescout
from grpo_rewards._missing_counts import (
    MissingCountsGuard,
    OnMissingCounts,
    check_on_missing_counts,
    needs_counts,
)
from grpo_rewards._rollout import RolloutStats, rollout_stats_from_messages
from grpo_rewards._rollout_infos import RolloutInfo, score_rollout
from grpo_rewards._spec import REWARD_SPECS, RewardSpec, reward_spec
from grpo_rewards._trainer_rows import (
    DEFAULT_FILES_COLUMN,
    DEFAULT_LINE_RANGES_COLUMN,
    check_reward_name,
    column,
    labels_from_columns,
    stats_per_row,
)
from grpo_rewards.errors import MissingFrameworkError

__all__ = [
    "SWIFT_ORMS",
    "CodeGrepORM",
    "CodeGrepV1ORM",
    "CodeGrepV2ORM",
    "CodeGrepV3ORM",
    "CodeScoutMultilevelORM",
    "ColgrepFileF1ORM",
    "FbetaFileORM",
    "register_swift_orms",
    "swift_orm_class",
    "swift_rollout_stats",
]


def _info(rollout_info: object) -> RolloutInfo:
    """The record behind one `rollout_infos` entry (ms-swift carries it as a dict)."""
    return (
        rollout_info
        if isinstance(rollout_info, RolloutInfo)
        else RolloutInfo.from_infos(rollout_info)
    )


def _messages(messages: object) -> list[Mapping[str, object]] | None:
    if isinstance(messages, Sequence) and not isinstance(messages, str | bytes):
        return [m for m in messages if isinstance(m, Mapping)]
    return None


def swift_rollout_stats(rollout_info: object, messages: object) -> RolloutStats:
    """T and C_total of one ms-swift rollout (`rollout_info`: a `RolloutInfo`, or its dict)."""
    stats = _info(rollout_info).stats()
    if stats is not None:
        return stats
    listed = _messages(messages)
    if listed is not None:
        return rollout_stats_from_messages(listed)
    return RolloutStats(turns=1, tool_calls=0)


class CodeGrepORM:
    """Base ORM: scores `reward_name` against the `files_column` / `line_ranges_column` label
    (`codescout_multilevel`: against the `file_changes_column` label).

    Subclass and override the class attributes to change the reward, the columns, the
    constants (`params`, e.g. `{"beta": 1.0}`) or what happens when a reward that needs the turn
    and tool-call counts finds none in a batch (`on_missing_counts`: "warn" once per ORM object,
    or "raise"). A row without a label scores `None` (ms-swift turns it into NaN and leaves it
    out of the reward mean).
    """

    reward_name: ClassVar[str] = "codegrep_v3"
    files_column: ClassVar[str] = DEFAULT_FILES_COLUMN
    line_ranges_column: ClassVar[str] = DEFAULT_LINE_RANGES_COLUMN
    file_changes_column: ClassVar[str] = DEFAULT_FILE_CHANGES_COLUMN
    params: ClassVar[Mapping[str, object]] = {}
    on_missing_counts: ClassVar[OnMissingCounts] = "warn"

    def __init__(self, args: object = None, **kwargs: object) -> None:
        self.args = args
        check_reward_name(self.reward_name)
        #: What the reward declares (which layer carries its efficiency term): trainer hooks
        #: read it to decide whether to scale the advantage.
        self.spec: RewardSpec = reward_spec(self.reward_name)
        check_on_missing_counts(self.on_missing_counts)
        self._missing = MissingCountsGuard(type(self).__name__)

    def __call__(self, completions: Sequence[object], **kwargs: object) -> list[float | None]:
        n = len(completions)
        labels = labels_from_columns(kwargs, n, self.reward_name, self)
        infos = column(kwargs, "rollout_infos", n, required=False)
        messages = column(kwargs, "messages", n, required=False)
        # the records behind ms-swift's dicts, read for the labelled rollouts only
        records = [None if labels[i] is None else _info(infos[i]) for i in range(n)]
        stats, uncounted = stats_per_row(
            labels,
            recorded=lambda i: None if (r := records[i]) is None else r.stats(),
            derived=lambda i: swift_rollout_stats(None, messages[i]),
        )
        if uncounted and needs_counts(self.reward_name, self.params):
            self._missing.report(
                self.reward_name,
                self.on_missing_counts,
                "no rollout_infos holds 'num_turns' with 'tool_calls_per_turn' or "
                "'num_tool_calls', and no rollout's messages record a tool call",
                "Record the counts from the multi-turn scheduler under those keys "
                "(grpo_rewards.RolloutInfo.to_infos)",
            )
        out: list[float | None] = []
        for i, text in enumerate(completions):
            label, row_stats = labels[i], stats[i]
            if label is None:
                out.append(None)
                continue
            if isinstance(label, MultiLevelTargets):
                # the whole conversation when ms-swift passed it, else the final message alone
                listed = _messages(messages[i]) or []
                answered = any(m.get("role") == "assistant" for m in listed)
                rollout = listed if answered else [{"role": "assistant", "content": text}]
                turns = None if row_stats is None else row_stats.turns
                out.append(score_codescout(rollout, label, turns, self.params).reward)
                continue
            # the environment's own parse of the final answer, from its record; the completion
            # (ms-swift's final assistant message) only for a record that holds none
            result = score_rollout(
                self.reward_name, records[i], text, label, row_stats, params=self.params
            )
            out.append(result.reward)
        return out


def swift_orm_class(name: str) -> type[CodeGrepORM]:
    """The ORM class of reward `name`, made from its spec (`RewardSpec.orm_class`) once."""
    spec = reward_spec(name)
    cls = _ORM_CLASSES.get(spec)
    if cls is None:
        doc = f"`{spec.name}`: {spec.formula}."
        attrs = {"reward_name": spec.name, "__doc__": doc, "__module__": __name__}
        cls = _ORM_CLASSES[spec] = type(spec.orm_class, (CodeGrepORM,), attrs)
    return cls


_ORM_CLASSES: dict[RewardSpec, type[CodeGrepORM]] = {}


class _SwiftOrms(Mapping[str, type[CodeGrepORM]]):
    """One ORM class per registered reward spec, made on first use."""

    def __getitem__(self, name: str) -> type[CodeGrepORM]:
        if name not in REWARD_SPECS:
            raise KeyError(name)
        return swift_orm_class(name)

    def __iter__(self) -> Iterator[str]:
        return iter(list(REWARD_SPECS))

    def __len__(self) -> int:
        return len(REWARD_SPECS)


#: The names `register_swift_orms` adds to ms-swift's registry: every reward in
#: `grpo_rewards.REWARD_SPECS`, each with a class made from its spec.
SWIFT_ORMS: Mapping[str, type[CodeGrepORM]] = _SwiftOrms()

# The built-in rewards' classes under their names, for `--external_plugins` files and subclasses.
CodeGrepV1ORM = swift_orm_class("codegrep_v1")
CodeGrepV2ORM = swift_orm_class("codegrep_v2")
CodeGrepV3ORM = swift_orm_class("codegrep_v3")
ColgrepFileF1ORM = swift_orm_class("colgrep_file_f1")
FbetaFileORM = swift_orm_class("fbeta_file")
CodeScoutMultilevelORM = swift_orm_class("codescout_multilevel")


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
