"""A reward that needs the turn / tool-call counts, called without them, warns once or raises.

Without counts every rollout has c̄ = 0, which v2/v3 treat as degenerate: a perfect answer scores
0.0 and a GRPO run learns nothing. Each adapter says so once per reward-function object (or
raises when asked to), and says nothing when the counts, or tool calls in the completions, are
there.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ClassVar, TypeVar

import pytest
from grpo_rewards import (
    ADAPTER_REWARDS,
    Gold,
    GrpoRewardsError,
    MissingRolloutStatsError,
    RolloutStats,
)
from grpo_rewards import verl_score as verl_module
from grpo_rewards._missing_counts import MissingCountsGuard, OnMissingCounts
from grpo_rewards._trainer_rows import stats_per_row
from grpo_rewards.errors import MissingRolloutStatsWarning
from grpo_rewards.swift_orm import CodeGrepORM, CodeGrepV3ORM, FbetaFileORM
from grpo_rewards.trl_reward import TRLReward
from grpo_rewards.verl_score import compute_score

PERFECT = '{"files": ["src/app.py"]}'
GOLD = ["src/app.py"]
CALLS = 7
FILE_CHANGES = [{"file": "src/app.py", "changes": {}}]
FINISH = (
    '<tool_call>{"name": "localization_finish", "arguments": '
    '{"locations": [{"file": "src/app.py"}]}}</tool_call>'
)

# the rewards that read c̄ (CodeScout's only for its turn bonus), and their keyword arguments
NEEDS_COUNTS: list[tuple[str, dict[str, object]]] = [
    ("codegrep_v1", {}),
    ("codegrep_v2", {}),
    ("codegrep_v3", {}),
    ("colgrep_file_f1", {}),
    ("codescout_multilevel", {"turn_bonus_range": (4, 4)}),
]
T = TypeVar("T")
NO_COUNTS: list[tuple[str, dict[str, object]]] = [
    ("fbeta_file", {}),
    ("codescout_multilevel", {}),
]


def _recorded(run: Callable[[], T]) -> tuple[T, list[str]]:
    """What `run` returns, and the text of every MissingRolloutStatsWarning it issued (repeats
    included: the filter is "always", so only the adapter itself can hold them back)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run()
    return result, [
        str(w.message) for w in caught if issubclass(w.category, MissingRolloutStatsWarning)
    ]


@contextmanager
def _no_warning() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _trl_batch(completion: str) -> dict[str, object]:
    """Two text completions (no tool call recorded, no count column) with both kinds of label."""
    return {
        "prompts": ["issue", "issue"],
        "completions": [completion, completion],
        "gold_files": [GOLD, GOLD],
        "file_changes": [FILE_CHANGES, FILE_CHANGES],
    }


# ---------------------------------------------------------------- TRL


def test_trl_warns_once_over_many_calls_and_the_reward_is_zero() -> None:
    reward = TRLReward("codegrep_v3")
    outs, messages = _recorded(
        lambda: [
            reward(prompts=["issue"] * k, completions=[PERFECT] * k, gold_files=[GOLD] * k)
            for k in [1] + [2] * CALLS
        ]
    )
    assert len(messages) == 1
    assert "'num_turns'" in messages[0]
    assert "'num_tool_calls'" in messages[0]
    assert "fbeta_file" in messages[0]
    assert "every rollout scores 0.0" in messages[0]
    assert outs[0] == [0.0]  # the silent failure the warning is about
    assert all(out == [0.0, 0.0] for out in outs[1:])


@pytest.mark.parametrize(("name", "params"), NEEDS_COUNTS, ids=[n for n, _ in NEEDS_COUNTS])
def test_trl_every_reward_that_needs_counts_warns_once(
    name: str, params: dict[str, object]
) -> None:
    reward = TRLReward(name, **params)
    _, messages = _recorded(lambda: [reward(**_trl_batch(PERFECT)) for _ in range(CALLS)])
    assert len(messages) == 1
    assert repr(name) in messages[0]


@pytest.mark.parametrize(("name", "params"), NO_COUNTS, ids=[n for n, _ in NO_COUNTS])
def test_trl_rewards_without_counts_never_warn(name: str, params: dict[str, object]) -> None:
    reward = TRLReward(name, on_missing_counts="raise", **params)
    completion = FINISH if name == "codescout_multilevel" else PERFECT
    with _no_warning():
        out = reward(**_trl_batch(completion))
    assert out == [1.0, 1.0]  # CodeScout: file F1 1, no module or entity in the gold


def test_trl_fbeta_file_scores_a_perfect_answer_without_counts() -> None:
    with _no_warning():
        out = TRLReward("fbeta_file")(prompts=["issue"], completions=[PERFECT], gold_files=[GOLD])
    assert out == [1.0]


def test_trl_raise_mode_names_the_missing_columns() -> None:
    reward = TRLReward("codegrep_v3", turns_column="T", on_missing_counts="raise")
    with pytest.raises(MissingRolloutStatsError, match="'T'") as info:
        reward(prompts=["issue"], completions=[PERFECT], gold_files=[GOLD])
    assert "'num_tool_calls'" in str(info.value)
    assert "fbeta_file" in str(info.value)
    assert isinstance(info.value, GrpoRewardsError)
    # every call raises, not only the first
    with pytest.raises(MissingRolloutStatsError):
        reward(prompts=["issue"], completions=[PERFECT], gold_files=[GOLD])


def test_trl_with_the_count_columns_warns_nothing() -> None:
    reward = TRLReward("codegrep_v3", on_missing_counts="raise")
    with _no_warning():
        out = reward(
            prompts=["issue"] * 2,
            completions=[PERFECT] * 2,
            gold_files=[GOLD] * 2,
            num_turns=[2, 1],
            num_tool_calls=[3, 0],
        )
    assert out == [1.0, 0.0]  # the second rollout really called no tool


def test_trl_completions_that_record_tool_calls_warn_nothing() -> None:
    with_tools = [
        {"role": "assistant", "content": "", "tool_calls": [{"id": "1"}]},
        {"role": "tool", "content": "src/app.py:3: def handler"},
        {"role": "assistant", "content": PERFECT},
    ]
    answered_at_once = [{"role": "assistant", "content": PERFECT}]
    reward = TRLReward("codegrep_v3", on_missing_counts="raise")
    with _no_warning():
        out = reward(
            prompts=["issue"] * 2, completions=[with_tools, answered_at_once], gold_files=[GOLD] * 2
        )
    assert out == [1.0, 0.0]


def test_trl_unlabelled_batches_warn_nothing() -> None:
    with _no_warning():
        out = TRLReward("codegrep_v3")(prompts=["issue"], completions=[PERFECT], gold_files=[None])
    assert out == [None]


def test_trl_each_reward_object_warns_once() -> None:
    first, second = TRLReward("codegrep_v3"), TRLReward("codegrep_v3")
    _, messages = _recorded(
        lambda: [
            reward(prompts=["issue"], completions=[PERFECT], gold_files=[GOLD])
            for reward in (first, second, first, second)
        ]
    )
    assert len(messages) == 2


def test_trl_rejects_an_unknown_setting() -> None:
    with pytest.raises(GrpoRewardsError, match="'warn' or 'raise'"):
        TRLReward("codegrep_v3", on_missing_counts="ignore")  # type: ignore[arg-type]


# ---------------------------------------------------------------- ms-swift


def test_swift_warns_once_without_rollout_infos() -> None:
    orm = CodeGrepV3ORM()
    outs, messages = _recorded(
        lambda: [
            orm([PERFECT, PERFECT], gold_files=[GOLD, GOLD], messages=[[], []])
            for _ in range(CALLS)
        ]
    )
    assert len(messages) == 1
    for key in ("'num_turns'", "'tool_calls_per_turn'", "'num_tool_calls'", "fbeta_file"):
        assert key in messages[0]
    assert all(out == [0.0, 0.0] for out in outs)


def test_swift_raise_mode_names_the_missing_keys() -> None:
    class StrictV3(CodeGrepV3ORM):
        on_missing_counts: ClassVar[OnMissingCounts] = "raise"

    with pytest.raises(MissingRolloutStatsError, match="'num_turns'") as info:
        StrictV3()([PERFECT], gold_files=[GOLD], rollout_infos=[{}])
    assert "'tool_calls_per_turn'" in str(info.value)


def test_swift_with_rollout_infos_or_tool_messages_warns_nothing() -> None:
    class StrictV3(CodeGrepV3ORM):
        on_missing_counts: ClassVar[OnMissingCounts] = "raise"

    with_tools = [
        {"role": "user", "content": "issue"},
        {"role": "assistant", "content": '<tool_call>{"name": "grep"}</tool_call>'},
        {"role": "tool", "content": "src/app.py:3"},
        {"role": "assistant", "content": PERFECT},
    ]
    with _no_warning():
        from_infos = StrictV3()(
            [PERFECT], gold_files=[GOLD], rollout_infos=[{"num_turns": 2, "num_tool_calls": 1}]
        )
        from_messages = StrictV3()([PERFECT], gold_files=[GOLD], messages=[with_tools])
        tool_free = FbetaFileORM()([PERFECT], gold_files=[GOLD])
    assert from_infos == from_messages == tool_free == [1.0]


def test_swift_rejects_an_unknown_setting() -> None:
    class Typo(CodeGrepORM):
        on_missing_counts = "silent"  # type: ignore[assignment]

    with pytest.raises(GrpoRewardsError, match="'warn' or 'raise'"):
        Typo()


# ---------------------------------------------------------------- verl


def test_verl_raises_by_default_naming_the_extra_info_keys() -> None:
    with pytest.raises(MissingRolloutStatsError, match="'assistant_turns'") as info:
        compute_score("codegrep", PERFECT, GOLD, {"num_turns": 5})
    assert "'tool_calls'" in str(info.value)
    assert "fbeta_file" in str(info.value)


def test_verl_warn_mode_warns_once_per_reward(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verl_module, "_MISSING", MissingCountsGuard("verl compute_score"))
    infos: list[dict[str, object] | None] = [None] * CALLS + [{"reward": "codegrep_v2"}] * 2
    scores, messages = _recorded(
        lambda: [
            compute_score("codegrep", PERFECT, GOLD, info, on_missing_counts="warn")["score"]
            for info in infos
        ]
    )
    assert len(messages) == 2  # once for codegrep_v3, once for codegrep_v2
    assert "'assistant_turns' / 'tool_calls'" in messages[0]
    assert scores == [0.0] * (CALLS + 2)


def test_verl_with_counts_or_a_tool_free_reward_warns_nothing() -> None:
    with _no_warning():
        counted = compute_score("x", PERFECT, GOLD, {"assistant_turns": 2, "tool_calls": [1]})
        tool_free = compute_score("x", PERFECT, GOLD, {"reward": "fbeta_file"})
    assert counted["score"] == tool_free["score"] == 1.0


def test_every_adapter_reward_is_classified() -> None:
    classified = {name for name, _ in NEEDS_COUNTS + NO_COUNTS}
    assert classified == set(ADAPTER_REWARDS)


def test_stats_per_row_reads_labelled_rows_only_and_says_when_nothing_was_counted() -> None:
    # the one rule both the TRL and the ms-swift adapter use: recorded counts first, then what
    # the messages show; an unlabelled row is never read (its rollout_infos may not parse)
    gold = Gold.of(["a.py"])
    read: list[int] = []

    def recorded(i: int) -> RolloutStats | None:
        read.append(i)
        return RolloutStats(turns=2, tool_calls=3) if i == 2 else None

    def derived(i: int) -> RolloutStats:
        return RolloutStats(turns=1, tool_calls=0)

    stats, uncounted = stats_per_row([gold, None, gold], recorded, derived)
    assert (stats, uncounted, read) == (
        [RolloutStats(turns=1, tool_calls=0), None, RolloutStats(turns=2, tool_calls=3)],
        False,
        [0, 2],
    )
    assert stats_per_row([gold, None], lambda i: None, derived)[1] is True
    assert stats_per_row([None, None], recorded, derived) == ([None, None], False)
