"""Adapters, called the way each framework calls them; plus a check against the real framework
when it is installed (skipped with a reason otherwise)."""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar

import pytest
from grpo_rewards import GrpoRewardsError
from grpo_rewards.errors import InvalidRolloutError, MissingFrameworkError
from grpo_rewards.swift_orm import (
    SWIFT_ORMS,
    CodeGrepORM,
    CodeGrepV1ORM,
    CodeGrepV3ORM,
    register_swift_orms,
    swift_rollout_stats,
)
from grpo_rewards.trl_reward import TRLReward
from grpo_rewards.verl_score import compute_score

ANSWER = '```json\n{"files": ["/testbed/a.py", "b.py"]}\n```'
F_FILE = 5 / 9  # {a, b} vs {a} at beta = 0.5


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# ---------------------------------------------------------------- ms-swift


def _swift_batch() -> dict[str, object]:
    """What ms-swift's compute_rewards_per_func passes: completions + batched row fields."""
    return {
        "completions": [ANSWER, ANSWER, ANSWER, "I give up"],
        "messages": [[], [], [{"role": "assistant", "content": ANSWER}], []],
        "rollout_infos": [
            {"num_turns": 3, "tool_calls_per_turn": [4, 2]},
            {"num_turns": 2, "num_tool_calls": 0},
            {},  # no scheduler info: stats come from messages (1 turn, 0 calls)
            {"num_turns": 4, "tool_calls_per_turn": [8, 8, 8]},
        ],
        "gold_files": [["a.py"], ["a.py"], ["a.py"], ["a.py"]],
        "request_id": ["r0", "r1", "r2", "r3"],
        "trainer_state": None,
    }


def test_swift_orm_contract_without_swift() -> None:
    orm = CodeGrepV3ORM(args=object())
    batch = _swift_batch()
    completions = batch.pop("completions")
    assert isinstance(completions, list)
    rewards = orm(completions, **batch)
    assert rewards == pytest.approx([F_FILE, 0.0, 0.0, 0.0])


def test_swift_v1_uses_the_scheduler_counts() -> None:
    batch = _swift_batch()
    completions = batch.pop("completions")
    assert isinstance(completions, list)
    rewards = CodeGrepV1ORM()(completions, **batch)
    # rollout 0: c̄ = 6/3 = 2 -> σ = 1; v1 = ½(F_file + 0); rollout 3 is malformed
    assert rewards[0] == pytest.approx(0.5 * F_FILE)
    assert rewards[3] == 0.0


def test_swift_rows_without_label_are_skipped() -> None:
    rewards = CodeGrepV3ORM()([ANSWER], gold_files=[None], rollout_infos=[{}])
    assert rewards == [None]


def test_swift_missing_label_column_is_loud() -> None:
    with pytest.raises(GrpoRewardsError, match="gold_files"):
        CodeGrepV3ORM()([ANSWER], solution=[["a.py"]])


def test_swift_subclass_changes_column_and_constants() -> None:
    class MyORM(CodeGrepORM):
        reward_name = "codegrep_v3"
        files_column = "solution"
        params: ClassVar[Mapping[str, float]] = MappingProxyType({"beta": 1.0})

    rewards = MyORM()(
        [ANSWER], solution=[["a.py"]], rollout_infos=[{"num_turns": 2, "num_tool_calls": 3}]
    )
    assert rewards == pytest.approx([2 / 3])


def test_swift_stats_reject_a_broken_harness() -> None:
    with pytest.raises(InvalidRolloutError):
        swift_rollout_stats({"num_turns": 1, "tool_calls_per_turn": [12]}, None)
    # the mean (12 / 3 = 4) is within the cap, but one turn issued 12 calls
    with pytest.raises(InvalidRolloutError, match="more than 8"):
        swift_rollout_stats({"num_turns": 3, "tool_calls_per_turn": [12, 0]}, None)


@pytest.mark.parametrize(
    ("turns", "calls", "what"),
    [
        (2, [1, None], "per-turn tool-call count"),
        (2, ["x"], "per-turn tool-call count"),
        (float("nan"), 2, "turn count"),
        (2.5, 2, "turn count"),
        (2, 1.5, "tool-call count"),
    ],
)
def test_swift_stats_name_a_bad_count(turns: object, calls: object, what: str) -> None:
    with pytest.raises(InvalidRolloutError, match=what):
        swift_rollout_stats({"num_turns": turns, "tool_calls_per_turn": calls}, None)


def test_integral_float_counts_are_accepted() -> None:
    stats = swift_rollout_stats({"num_turns": 3.0, "num_tool_calls": 6.0}, None)
    assert (stats.turns, stats.tool_calls) == (3, 6)


def test_register_into_a_given_registry() -> None:
    registry: dict[str, object] = {"accuracy": object()}
    register_swift_orms(registry)
    assert set(registry) == {"accuracy", *SWIFT_ORMS}


@pytest.mark.skipif(_has("swift"), reason="ms-swift is installed; the missing-framework path")
def test_register_without_swift_names_the_install() -> None:
    with pytest.raises(MissingFrameworkError, match="pip install ms-swift"):
        register_swift_orms()


@pytest.mark.train
@pytest.mark.skipif(not _has("swift"), reason="ms-swift not installed (training test tier)")
def test_register_into_real_swift_registry() -> None:
    registry = register_swift_orms()
    assert registry["codegrep_v3"] is CodeGrepV3ORM
    # ms-swift's _prepare_rewards: build kwargs from the __init__ signature minus self/args/kwargs
    cls = registry["codegrep_v3"]
    assert isinstance(cls, type)
    params = [
        p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "args", "kwargs")
    ]
    assert params == []
    batch = _swift_batch()
    completions = batch.pop("completions")
    assert cls()(completions, **batch) == pytest.approx([F_FILE, 0.0, 0.0, 0.0])


# ---------------------------------------------------------------- TRL


def test_trl_reward_contract_with_conversational_completions() -> None:
    logged: dict[str, float] = {}
    reward = TRLReward("codegrep_v3")
    assert reward.__name__ == "codegrep_v3"
    with_tools = [
        {"role": "assistant", "content": "", "tool_calls": [{"id": "1"}, {"id": "2"}]},
        {"role": "tool", "content": "..."},
        {"role": "tool", "content": "..."},
        {"role": "assistant", "content": ANSWER},
    ]
    no_tools = [{"role": "assistant", "content": ANSWER}]
    out = reward(
        prompts=[[{"role": "user", "content": "issue"}]] * 3,
        completions=[with_tools, no_tools, with_tools],
        completion_ids=[[1], [2], [3]],
        gold_files=[["a.py"], ["a.py"], None],
        trainer_state=None,
        log_metric=lambda name, value: logged.__setitem__(name, value),
    )
    assert out == pytest.approx([F_FILE, 0.0, None])
    assert out[2] is None
    assert logged == {"codegrep_v3/zeroed_by_rule_frac": pytest.approx(1 / 3)}


def test_trl_reward_with_text_completions_and_count_columns() -> None:
    reward = TRLReward("codegrep_v1", files_column="solution")
    out = reward(
        prompts=["issue", "issue"],
        completions=[ANSWER, ANSWER],
        solution=[["a.py"], ["a.py"]],
        num_turns=[2, 2],
        num_tool_calls=[16, 4],
    )
    assert out == pytest.approx([0.5 * F_FILE * 0.5, 0.5 * F_FILE])


def test_trl_reward_rejects_unknown_names() -> None:
    with pytest.raises(GrpoRewardsError, match="unknown reward"):
        TRLReward("f1_everything")


# The real-TRL check is tests/test_trl_train.py (training tier): GRPOTrainer runs 2 steps.


# ---------------------------------------------------------------- verl


def test_verl_contract() -> None:
    out = compute_score(
        "codegrep", ANSWER, ["a.py"], {"assistant_turns": 3, "tool_calls": [4, 2], "index": 7}
    )
    assert out["score"] == pytest.approx(F_FILE)
    assert out["zeroed_by_rule"] == 0.0
    masked = compute_score("codegrep", ANSWER, ["a.py"], {"assistant_turns": 1, "tool_calls": 0})
    assert masked["score"] == 0.0
    assert masked["zeroed_by_rule"] == 1.0
    assert set(masked) == set(out)  # verl stacks the keys across the batch


def test_verl_ground_truth_shapes_and_reward_choice() -> None:
    gt = {"files": ["a.py"], "line_ranges": {"a.py": [1, 10]}}
    text = '{"files": ["a.py"], "line_ranges": {"a.py": [[1, 10]]}}'
    info = {"assistant_turns": 2, "tool_calls": 2, "reward": "codegrep_v2"}
    assert compute_score("x", text, gt, info)["score"] == 1.0
    assert compute_score("x", ANSWER, '["a.py"]', None, reward="fbeta_file")["score"] == (
        pytest.approx(F_FILE)
    )


def test_verl_without_stats_refuses_to_guess() -> None:
    with pytest.raises(InvalidRolloutError, match="needs rollout statistics"):
        compute_score("codegrep", ANSWER, ["a.py"], {"num_turns": 5})


@pytest.mark.skipif(not _has("verl"), reason="verl not installed (pip install verl)")
def test_verl_loads_the_custom_reward_file() -> None:
    import grpo_rewards.verl_score as module
    from verl.trainer.ppo.reward import (  # type: ignore[import-not-found,unused-ignore]
        get_custom_reward_fn,
    )

    config = {
        "custom_reward_function": {"path": str(Path(module.__file__)), "name": "compute_score"}
    }
    fn = get_custom_reward_fn(config)
    out = fn("codegrep", ANSWER, ["a.py"], {"assistant_turns": 3, "tool_calls": 6})
    assert out["score"] == pytest.approx(F_FILE)
