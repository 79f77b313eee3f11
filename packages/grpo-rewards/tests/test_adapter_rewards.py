"""Every reward the README documents is reachable from every adapter (TRL, ms-swift, verl).

One rollout per reward, scored through each adapter the way its framework calls it, must give the
value the core reward function gives for the same answer, label and statistics.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from grpo_rewards import (
    ADAPTER_REWARDS,
    REWARDS,
    CodeLocation,
    Gold,
    RolloutStats,
    UnknownRewardError,
    codescout_multilevel,
    parse_answer,
    targets_from_file_changes,
)
from grpo_rewards.swift_orm import SWIFT_ORMS, CodeGrepORM
from grpo_rewards.trl_reward import TRLReward
from grpo_rewards.verl_score import compute_score

README = Path(__file__).resolve().parents[1] / "README.md"

# one label in every shape the adapters read
GOLD_FILES = ["src/app.py"]
GOLD_RANGES = {"src/app.py": [[10, 20]]}
FILE_CHANGES = [
    {
        "file": "src/app.py",
        "changes": {
            "edited_modules": ["src/app.py:App"],
            "edited_entities": ["src/app.py:App.run"],
        },
    }
]
# the JSON answer (two files: F-beta 5/9 at beta 0.5) and the finish call (one wrong location)
ANSWER = '{"files": ["src/app.py", "README.md"], "line_ranges": {"src/app.py": [[10, 20]]}}'
LOCATIONS = [
    {"file": "src/app.py", "class_name": "App", "function_name": "run"},
    {"file": "setup.py"},
]
GREP = {"name": "terminal", "arguments": {"command": "rg run src"}}
FINISH = {"name": "localization_finish", "arguments": {"locations": LOCATIONS}}
TURNS, CALLS = 3, 4  # search turns of 3 and 1 calls, then the answer turn


def _hermes(call: dict[str, object]) -> str:
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"


def _conversation(reward: str) -> list[dict[str, object]]:
    """The rollout as chat messages with structured tool calls (TRL with tools=[...])."""
    search = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": GREP} for _ in range(3)],
    }
    observations = [{"role": "tool", "content": "src/app.py:12: def run"}] * 3
    second = {"role": "assistant", "content": "", "tool_calls": [{"function": GREP}]}
    if reward == "codescout_multilevel":
        final = {"role": "assistant", "content": "", "tool_calls": [{"function": FINISH}]}
    else:
        final = {"role": "assistant", "content": ANSWER}
    return [search, *observations, second, observations[0], final]


def _final_text(reward: str) -> str:
    return _hermes(FINISH) if reward == "codescout_multilevel" else ANSWER


def _expected(reward: str) -> float:
    stats = RolloutStats(turns=TURNS, tool_calls=CALLS)
    if reward == "codescout_multilevel":
        locations = [CodeLocation(**loc) for loc in LOCATIONS]  # type: ignore[arg-type]
        return codescout_multilevel(locations, targets_from_file_changes(FILE_CHANGES)).reward
    gold = Gold.of(GOLD_FILES, GOLD_RANGES)
    return REWARDS[reward](parse_answer(ANSWER), gold, stats).reward


def test_the_expected_values_are_not_trivial() -> None:
    values = {name: round(_expected(name), 4) for name in ADAPTER_REWARDS}
    assert values == {
        "codegrep_v1": 0.7778,  # ½(5/9 + 1) · σ(4/3) = ½(5/9 + 1)
        "codegrep_v2": 0.7778,
        "codegrep_v3": 0.5556,
        "colgrep_file_f1": 0.6600,  # F1 2/3 · (1 − 0.01 · (3 − 2))
        "fbeta_file": 0.5556,
        "codescout_multilevel": 2.6667,  # file F1 2/3 + module 1 + entity 1
    }


@pytest.mark.parametrize("reward", ADAPTER_REWARDS)
def test_trl_conversational_with_tools(reward: str) -> None:
    out = TRLReward(reward, on_missing_counts="raise")(
        prompts=[[{"role": "user", "content": "issue"}]],
        completions=[_conversation(reward)],
        gold_files=[GOLD_FILES],
        gold_line_ranges=[GOLD_RANGES],
        file_changes=[FILE_CHANGES],
    )
    assert out == [pytest.approx(_expected(reward))]


@pytest.mark.parametrize("reward", ADAPTER_REWARDS)
def test_trl_text_with_count_columns(reward: str) -> None:
    out = TRLReward(reward, on_missing_counts="raise")(
        prompts=["issue"],
        completions=[_final_text(reward)],
        gold_files=[GOLD_FILES],
        gold_line_ranges=[GOLD_RANGES],
        file_changes=[FILE_CHANGES],
        num_turns=[TURNS],
        num_tool_calls=[CALLS],
    )
    assert out == [pytest.approx(_expected(reward))]


@pytest.mark.parametrize("reward", ADAPTER_REWARDS)
def test_swift_orm(reward: str) -> None:
    # ms-swift's compute_rewards_per_func: the final message text plus batched row fields
    orm = SWIFT_ORMS[reward](args=None)
    assert orm.reward_name == reward
    messages = [
        {"role": "user", "content": "issue"},
        {"role": "assistant", "content": _hermes(GREP) * 3},
        {"role": "tool", "content": "src/app.py:12: def run"},
        {"role": "assistant", "content": _hermes(GREP)},
        {"role": "tool", "content": "src/app.py:12: def run"},
        {"role": "assistant", "content": _final_text(reward)},
    ]
    out = orm(
        [_final_text(reward)],
        messages=[messages],
        rollout_infos=[{"num_turns": TURNS, "tool_calls_per_turn": [3, 1]}],
        gold_files=[GOLD_FILES],
        gold_line_ranges=[GOLD_RANGES],
        file_changes=[FILE_CHANGES],
        trainer_state=None,
    )
    assert out == [pytest.approx(_expected(reward))]


@pytest.mark.parametrize("reward", ADAPTER_REWARDS)
def test_verl_compute_score(reward: str) -> None:
    if reward == "codescout_multilevel":
        # the decoded multi-turn response: the final turn follows the last tool response
        response = (
            f"{_hermes(GREP)}<tool_response>\nsrc/app.py:12\n</tool_response>\n{_hermes(FINISH)}"
        )
        ground_truth: object = {"file_changes": FILE_CHANGES}
    else:
        response = ANSWER
        ground_truth = {"files": GOLD_FILES, "line_ranges": GOLD_RANGES}
    info = {"assistant_turns": TURNS, "tool_calls": [3, 1], "reward": reward}
    out = compute_score("codegrep", response, ground_truth, info)
    assert out["score"] == pytest.approx(_expected(reward))
    # the reward keyword (verl's custom_reward_function.reward_kwargs) picks it too
    del info["reward"]
    assert compute_score("x", response, ground_truth, info, reward=reward)["score"] == (
        pytest.approx(_expected(reward))
    )


def test_swift_registers_every_adapter_reward() -> None:
    assert set(SWIFT_ORMS) == set(ADAPTER_REWARDS)
    assert all(cls.reward_name == name for name, cls in SWIFT_ORMS.items())


def test_codescout_turn_bonus_through_the_adapters() -> None:
    base = _expected("codescout_multilevel")
    trl = TRLReward("codescout_multilevel", turn_bonus_range=(3, 3))
    assert trl(
        prompts=["issue"],
        completions=[_conversation("codescout_multilevel")],
        file_changes=[FILE_CHANGES],
    ) == [pytest.approx(base + 1.0)]

    class FourTurns(CodeGrepORM):
        reward_name = "codescout_multilevel"
        params = {"turn_bonus_range": (4, 4)}  # noqa: RUF012 (read-only class constant)

    out = FourTurns()(
        [_hermes(FINISH)],
        file_changes=[FILE_CHANGES],
        rollout_infos=[{"num_turns": 3, "num_tool_calls": 4}],
    )
    assert out == [pytest.approx(base)]  # 3 turns: no bonus
    verl = compute_score(
        "x",
        _hermes(FINISH),
        {"file_changes": FILE_CHANGES},
        {"assistant_turns": 4, "tool_calls": 3},
        reward="codescout_multilevel",
        turn_bonus_range=[4, 4],  # a list, as verl's YAML config hands it over
    )
    assert verl["score"] == pytest.approx(base + 1.0)
    assert verl["turn_bonus"] == 1.0


@pytest.mark.parametrize(
    ("final", "why"),
    [
        (_hermes(FINISH) + "\nI am done.", "text after the finish call"),
        (_hermes(FINISH) * 2, "two finish calls"),
        (_hermes(GREP) + _hermes(FINISH), "the finish call in parallel with another"),
        (ANSWER, "no finish call"),
    ],
)
def test_codescout_rules_hold_in_every_adapter(final: str, why: str) -> None:
    trl = TRLReward("codescout_multilevel")(
        prompts=["issue"], completions=[final], file_changes=[FILE_CHANGES]
    )
    swift = SWIFT_ORMS["codescout_multilevel"]()([final], file_changes=[FILE_CHANGES])
    verl = compute_score("x", final, {"file_changes": FILE_CHANGES}, reward="codescout_multilevel")
    assert trl == swift == [0.0], why
    assert verl["score"] == 0.0
    assert verl["zeroed_by_rule"] == 1.0


def test_codescout_needs_its_label_column() -> None:
    with pytest.raises(Exception, match="file_changes"):
        TRLReward("codescout_multilevel")(
            prompts=["issue"], completions=[_hermes(FINISH)], gold_files=[GOLD_FILES]
        )
    with pytest.raises(Exception, match="file_changes"):
        compute_score("x", _hermes(FINISH), GOLD_FILES, reward="codescout_multilevel")


@pytest.mark.parametrize(
    "select",
    [
        lambda name: TRLReward(name),
        lambda name: type("Custom", (CodeGrepORM,), {"reward_name": name})(),
        lambda name: compute_score("x", ANSWER, GOLD_FILES, {"reward": name}),
    ],
    ids=["trl", "swift", "verl"],
)
def test_an_unknown_name_lists_every_adapter_reward(select: Callable[[str], object]) -> None:
    with pytest.raises(UnknownRewardError) as info:
        select("colgrep_reward")
    assert all(name in str(info.value) for name in ADAPTER_REWARDS)


def test_every_reward_in_the_readme_table_is_an_adapter_reward() -> None:
    text = README.read_text()
    table = text.split("## Rewards", 1)[1].split("\n\n", 2)[1]
    names = re.findall(r"^\| `([a-z0-9_]+)`", table, flags=re.MULTILINE)
    assert names, "the README's reward table was not found"
    assert set(names) == set(ADAPTER_REWARDS)
