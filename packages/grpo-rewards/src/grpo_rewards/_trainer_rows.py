"""What the adapters share: the reward names they accept, reading labels and rollout statistics
from trainers' per-row values (scoring a row is the rollout record's, `_rollout_infos.score_row`).

Trainers hand rewards their dataset columns as loosely typed values (lists, dicts, Arrow structs
turned into dicts, sometimes JSON text). This module turns them into `Gold` (or CodeScout's
`MultiLevelTargets`) and `RolloutStats` at the boundary, so nothing loosely typed travels
further. It imports no trainer framework.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from grpo_rewards._codescout import MultiLevelTargets, targets_from_file_changes
from grpo_rewards._rewards import Gold
from grpo_rewards._rollout import (
    MAX_CALLS_PER_TURN,
    RolloutStats,
    check_calls_per_turn,
    rollout_stats_from_messages,
)
from grpo_rewards._spec import REWARD_SPECS
from grpo_rewards.errors import GrpoRewardsError, InvalidRolloutError, UnknownRewardError

__all__ = [
    "ADAPTER_REWARDS",
    "DEFAULT_FILES_COLUMN",
    "DEFAULT_LINE_RANGES_COLUMN",
    "Label",
    "LabelColumns",
    "check_reward_name",
    "column",
    "count_value",
    "count_values",
    "final_text",
    "gold_from_values",
    "labels_from_columns",
    "stats_from_completion",
    "stats_from_counts",
    "stats_per_row",
    "targets_from_values",
]

#: Dataset columns the adapters read the label from (override per adapter).
DEFAULT_FILES_COLUMN = "gold_files"
DEFAULT_LINE_RANGES_COLUMN = "gold_line_ranges"

#: The built-in reward names every adapter (TRL, ms-swift, verl) accepts, as declared in
#: `REWARD_SPECS`: those that score the JSON answer against gold files, and CodeScout's, which
#: scores the finish call against `file_changes`. The adapters check names against
#: `REWARD_SPECS` itself, so a reward added with `register_reward` is accepted too.
ADAPTER_REWARDS: tuple[str, ...] = tuple(REWARD_SPECS)

#: One row's label: gold files (and line ranges), or CodeScout's three-level targets.
Label = Gold | MultiLevelTargets


def check_reward_name(name: object) -> str:
    """`name` if an adapter can score it, else `UnknownRewardError` listing the names."""
    if not isinstance(name, str) or name not in REWARD_SPECS:
        raise UnknownRewardError(f"unknown reward {name!r}; known: {', '.join(REWARD_SPECS)}")
    return name


def column(kwargs: Mapping[str, object], name: str, n: int, *, required: bool) -> list[object]:
    """The per-rollout values of column `name`, checked to have one entry per rollout."""
    values = kwargs.get(name)
    if values is None:
        if required:
            known = ", ".join(sorted(k for k in kwargs if not k.startswith("_")))
            raise GrpoRewardsError(
                f"the batch has no column {name!r} (columns seen: {known}); "
                f"add it to the dataset or set the adapter's column name"
            )
        return [None] * n
    if not isinstance(values, Sequence) or isinstance(values, str | bytes):
        raise GrpoRewardsError(f"column {name!r} is not a per-rollout list")
    if len(values) != n:
        raise GrpoRewardsError(f"column {name!r} has {len(values)} values for {n} rollouts")
    return list(values)


def _maybe_json(value: object) -> object:
    # a column of lists or mappings may arrive as JSON text (a CSV or text dataset); one rule
    # for every label column
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):  # not JSON, a 5,000-digit number, deep nesting
            return value
    return value


def gold_from_values(files: object, line_ranges: object = None) -> Gold | None:
    """A label from a row's values; `None` when the row carries no label (the reward skips it).

    `files` may be a list of paths, a single path, a mapping `{"files": [...], "line_ranges":
    ...}` (verl's `ground_truth`), or JSON text of either.
    """
    files = _maybe_json(files)
    if files is None:
        return None
    if isinstance(files, Mapping):
        line_ranges = files.get("line_ranges", line_ranges)
        files = files.get("files")
        if files is None:
            return None
    if isinstance(files, str):
        files = [files]
    if not isinstance(files, Sequence) or not all(isinstance(f, str) for f in files):
        raise GrpoRewardsError(f"gold files must be a list of paths, got {files!r}"[:200])
    return Gold.of(files, _maybe_json(line_ranges))


def targets_from_values(value: object) -> MultiLevelTargets | None:
    """CodeScout's gold from a row's value: `file_changes` rows (a list), a mapping holding them
    under `file_changes` (verl's `ground_truth`), or JSON text of either; None skips the row."""
    value = _maybe_json(value)
    if value is None:
        return None
    if isinstance(value, Mapping):
        value = value.get("file_changes")
        if value is None:
            return None
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise GrpoRewardsError(f"file_changes must be a list of rows, got {value!r}"[:200])
    try:
        return targets_from_file_changes(value)
    except TypeError as exc:
        raise GrpoRewardsError(str(exc)) from exc


def count_value(value: object, what: str) -> int:
    """A whole, non-negative count (an integral float from a JSON or Arrow column is accepted)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidRolloutError(f"{what} must be a whole number, got {value!r}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise InvalidRolloutError(f"{what} must be a whole number, got {value!r}")
    return int(value)


def count_values(values: Sequence[object], what: str) -> tuple[int, ...]:
    """`count_value` of each item; a list of plain ints (what a driver writes) is taken as it is."""
    if all(type(v) is int for v in values):
        return tuple(values)  # type: ignore[arg-type]  # every item is an int, checked above
    return tuple(count_value(v, what) for v in values)


def stats_from_counts(
    turns: object, tool_calls: object, *, max_calls_per_turn: int = MAX_CALLS_PER_TURN
) -> RolloutStats | None:
    """Stats from explicit counts (int, or a per-turn list of call counts); None if absent.

    A per-turn list is held to the per-turn cap turn by turn, not only on average.
    """
    if turns is None or tool_calls is None:
        return None
    if isinstance(tool_calls, Sequence) and not isinstance(tool_calls, str | bytes):
        per_turn = count_values(tool_calls, "a per-turn tool-call count")
        calls = check_calls_per_turn(per_turn, max_calls_per_turn)
    elif isinstance(tool_calls, int | float):
        calls = count_value(tool_calls, "the tool-call count")
    else:
        raise GrpoRewardsError(f"tool-call count must be a number or a list, got {tool_calls!r}")
    return RolloutStats(
        turns=count_value(turns, "the turn count"),
        tool_calls=calls,
        max_calls_per_turn=max_calls_per_turn,
    )


def final_text(completion: object) -> object:
    """The final assistant message text of a completion (text, or a list of chat messages)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence):
        for msg in reversed(completion):
            if isinstance(msg, Mapping) and msg.get("role") == "assistant":
                return msg.get("content")
        return None
    return completion


def stats_from_completion(completion: object) -> RolloutStats:
    """Stats from what a trainer calls the completion: chat messages, or one assistant text."""
    if isinstance(completion, Sequence) and not isinstance(completion, str | bytes):
        messages = [m for m in completion if isinstance(m, Mapping)]
        return rollout_stats_from_messages(messages)
    return rollout_stats_from_messages([{"role": "assistant", "content": completion}])


class LabelColumns(Protocol):
    """Where an adapter reads each row's label: `TRLReward`'s arguments, a `CodeGrepORM`'s class
    attributes."""

    @property
    def files_column(self) -> str: ...

    @property
    def line_ranges_column(self) -> str: ...

    @property
    def file_changes_column(self) -> str: ...


def labels_from_columns(
    kwargs: Mapping[str, object], n: int, reward: str, columns: LabelColumns
) -> list[Label | None]:
    """Each rollout's label from the batch columns: `file_changes_column` for CodeScout's reward,
    `files_column` (+ `line_ranges_column`) for the others; None where a row has no label."""
    if REWARD_SPECS[reward].label == "file_changes":
        return [
            targets_from_values(v)
            for v in column(kwargs, columns.file_changes_column, n, required=True)
        ]
    files = column(kwargs, columns.files_column, n, required=True)
    ranges = column(kwargs, columns.line_ranges_column, n, required=False)
    return [gold_from_values(f, r) for f, r in zip(files, ranges, strict=True)]


def stats_per_row(
    labels: Sequence[Label | None],
    recorded: Callable[[int], RolloutStats | None],
    derived: Callable[[int], RolloutStats],
) -> tuple[list[RolloutStats | None], bool]:
    """Each labelled rollout's statistics (None for a row without a label): the counts the
    trainer recorded for row i (`recorded(i)`), else what its messages show (`derived(i)`).

    Also whether the batch is uncounted: it has labelled rollouts and none had recorded counts
    or messages that record a tool call, so absent statistics cannot be told from c̄ = 0 (the
    adapters' missing-statistics warning).
    """
    stats: list[RolloutStats | None] = []
    counted = False
    for i, label in enumerate(labels):
        if label is None:
            stats.append(None)
            continue
        explicit = recorded(i)
        row = explicit or derived(i)
        stats.append(row)
        counted = counted or explicit is not None or row.tool_calls > 0
    labelled = any(row is not None for row in stats)
    return stats, labelled and not counted
