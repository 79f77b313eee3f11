"""A reward is declared once, in a `RewardSpec`; every adapter and the missing-statistics warning
read it from there."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from typing import ClassVar

import pytest
from grpo_rewards import (
    REWARD_SPECS,
    REWARDS,
    Gold,
    GrpoRewardsError,
    RewardAnswer,
    RewardSpec,
    RolloutStats,
    UnknownRewardError,
    score_completion,
)
from grpo_rewards import _spec as spec_module
from grpo_rewards._answer import ParsedAnswer
from grpo_rewards._rewards import RewardResult
from grpo_rewards._spec import register_reward
from grpo_rewards.errors import MissingRolloutStatsWarning
from grpo_rewards.swift_orm import SWIFT_ORMS, CodeGrepV3ORM, register_swift_orms
from grpo_rewards.trl_reward import TRLReward
from grpo_rewards.verl_score import compute_score

ANSWER = '{"files": ["a.py", "b.py"]}'


def file_hits(
    answer: RewardAnswer | ParsedAnswer | None,
    gold: Gold,
    stats: RolloutStats | None = None,
    *,
    bonus: float = 0.0,
) -> RewardResult:
    """A toy reward: the gold files the answer names, plus `bonus` per executed tool call."""
    ans = answer.answer if isinstance(answer, ParsedAnswer) else answer
    hits = 0.0 if ans is None else float(len(gold.files & set(ans.files)))
    calls = 0 if stats is None else stats.tool_calls
    return RewardResult(hits + bonus * calls, {"hits": hits})


TOY = RewardSpec(
    "file_hits",
    "reward",
    False,
    False,
    "|gold ∩ answer| + bonus · C_total",
    function=file_hits,
    without_counts="C_total = 0, so the bonus is never earned",
)


@pytest.fixture
def toy() -> Iterator[RewardSpec]:
    """TOY registered for one test, and removed after it."""
    register_reward(TOY)
    try:
        yield TOY
    finally:
        del spec_module._SPECS[TOY.name]


def test_a_reward_declared_only_in_the_spec_reaches_every_adapter(toy: RewardSpec) -> None:
    stats = {"num_turns": 2, "tool_calls_per_turn": [3, 0]}
    expected = 1.0 + 0.5 * 3
    assert REWARDS["file_hits"] is file_hits
    gold = Gold.of(["a.py"])
    got = score_completion("file_hits", ANSWER, gold, RolloutStats(2, 3), params={"bonus": 0.5})
    assert got.reward == expected
    # TRL: by name, counts from columns
    trl = TRLReward("file_hits", bonus=0.5)
    trl_scores = trl(completions=[ANSWER], gold_files=[["a.py"]], num_turns=[2], num_tool_calls=[3])
    assert trl_scores == [expected]
    assert trl.spec is toy
    # ms-swift: a class made from the spec, registered with the others
    assert "file_hits" in SWIFT_ORMS
    orm_cls = SWIFT_ORMS["file_hits"]
    assert orm_cls.__name__ == "FileHitsORM"

    class WithBonus(orm_cls):  # type: ignore[misc, valid-type]
        params: ClassVar[Mapping[str, object]] = {"bonus": 0.5}

    orm = WithBonus(args=None)
    assert orm.spec is toy
    assert orm([ANSWER], gold_files=[["a.py"]], rollout_infos=[stats]) == [expected]
    registry: dict[str, object] = {}
    register_swift_orms(registry)
    assert registry["file_hits"] is orm_cls
    # verl: chosen by extra_info["reward"]
    verl = compute_score(
        "x", ANSWER, ["a.py"], {"reward": "file_hits", "assistant_turns": 2, "tool_calls": 3}
    )
    assert verl["score"] == 1.0  # verl's keywords are its config's; no bonus here
    assert verl["advantage_factor"] == 1.0


def test_the_missing_statistics_warning_says_what_the_spec_declares(toy: RewardSpec) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        TRLReward("file_hits")(completions=[ANSWER], gold_files=[["a.py"]])
    messages = [str(w.message) for w in caught if w.category is MissingRolloutStatsWarning]
    assert len(messages) == 1
    assert toy.without_counts in messages[0]


def test_a_spec_that_reads_statistics_must_say_what_it_becomes_without_them() -> None:
    with pytest.raises(GrpoRewardsError, match="without_counts"):
        RewardSpec("bad", "reward", False, False, "f", function=file_hits)
    # a tool-free reward needs no such line
    free = RewardSpec("free", "none", False, False, "f", function=file_hits, counts="never")
    assert not free.needs_counts({})


@pytest.mark.parametrize("name", list(REWARD_SPECS))
def test_every_built_in_reward_that_reads_statistics_says_what_it_becomes(name: str) -> None:
    spec = REWARD_SPECS[name]
    assert spec.counts == "never" or spec.without_counts.strip()


def test_a_name_is_registered_once(toy: RewardSpec) -> None:
    with pytest.raises(GrpoRewardsError, match="already registered"):
        register_reward(toy)


def test_the_built_in_classes_keep_their_names() -> None:
    assert CodeGrepV3ORM is SWIFT_ORMS["codegrep_v3"]
    assert {cls.__name__ for cls in SWIFT_ORMS.values()} == {
        "CodeGrepV1ORM",
        "CodeGrepV2ORM",
        "CodeGrepV3ORM",
        "ColgrepFileF1ORM",
        "FbetaFileORM",
        "CodeScoutMultilevelORM",
    }
    with pytest.raises(UnknownRewardError, match="finish call"):
        score_completion("codescout_multilevel", ANSWER, Gold.of(["a.py"]), None)
