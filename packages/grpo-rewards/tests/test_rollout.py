"""T, C_total and c̄ exactly as the paper defines them, from counts and from conversations."""

from __future__ import annotations

import pytest
from grpo_rewards import RolloutStats
from grpo_rewards._rollout import rollout_stats_from_messages
from grpo_rewards.errors import InvalidRolloutError


def test_paper_budget() -> None:
    # 3 exploration turns of 8 parallel calls + 1 answer turn = the paper's 24 effective reads
    stats = RolloutStats.from_calls_per_turn([8, 8, 8])
    assert (stats.turns, stats.tool_calls, stats.cbar) == (4, 24, 6.0)


def test_turns_are_at_least_one() -> None:
    assert RolloutStats(turns=0, tool_calls=0).cbar == 0.0


@pytest.mark.parametrize(
    ("turns", "calls"), [(-1, 0), (1, -1), (1, 9), (2, 17)], ids=["T<0", "C<0", "9/1", "17/2"]
)
def test_contract_violations_raise(turns: int, calls: int) -> None:
    with pytest.raises(InvalidRolloutError):
        RolloutStats(turns=turns, tool_calls=calls)


@pytest.mark.parametrize(("turns", "calls"), [("3", 1), (2.5, 1), (True, 0), (2, None)])
def test_non_integer_counts_raise_naming_the_field(turns: object, calls: object) -> None:
    with pytest.raises(InvalidRolloutError, match="must be an integer"):
        RolloutStats(turns=turns, tool_calls=calls)  # type: ignore[arg-type]


def test_a_turn_over_the_cap_raises_even_if_the_mean_is_fine() -> None:
    with pytest.raises(InvalidRolloutError, match="more than 8"):
        RolloutStats.from_calls_per_turn([9, 1])


def test_stats_from_openai_messages() -> None:
    messages = [
        {"role": "system", "content": "..."},
        {"role": "user", "content": "issue"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "1"}, {"id": "2"}]},
        {"role": "tool", "content": "a"},
        {"role": "tool", "content": "b"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "3"}]},
        {"role": "tool", "content": "c"},
        {"role": "assistant", "content": '{"files": []}'},
    ]
    stats = rollout_stats_from_messages(messages)
    assert (stats.turns, stats.tool_calls) == (3, 3)
    assert stats.cbar == 1.0


def test_stats_from_tool_observations_when_calls_are_in_text() -> None:
    # ms-swift with the hermes template: calls live in assistant text, one tool message per call
    messages = [
        {"role": "assistant", "content": [101, 102, 103]},  # frozen turn as token ids
        {"role": "tool", "content": "a"},
        {"role": "tool", "content": "b"},
        {"role": "assistant", "content": "<tool_call>{}</tool_call>"},
        {"role": "tool", "content": "c"},
        {"role": "assistant", "content": '{"files": []}'},
    ]
    assert rollout_stats_from_messages(messages) == RolloutStats(turns=3, tool_calls=3)


def test_stats_from_hermes_text_alone() -> None:
    messages = [
        {"role": "assistant", "content": "<tool_call>{}</tool_call>\n<tool_call>{}</tool_call>"}
    ]
    assert rollout_stats_from_messages(messages) == RolloutStats(turns=1, tool_calls=2)
