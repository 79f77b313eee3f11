"""CodeGrep v1, v2 and v3 on one hand-computed group of four rollouts, reward to advantage.

The group (gold: a.py, lines 10-19 of it):
  0. perfect: files [a.py], a.py [10, 19]; T = 2, C = 4 (c̄ = 2)
  1. half right: files [a.py, b.py], a.py [15, 24]; T = 2, C = 16 (c̄ = 8)
  2. perfect but no tool call: T = 1, C = 0 (c̄ = 0, degenerate)
  3. called tools, gave no answer: T = 4, C = 9 (c̄ = 9/4)

Rollout 1: Fβ_file: P = 1/2, R = 1, β² = 1/4: 1.25 · 1/2 / (1/8 + 1) = 5/9.
Fβ_lr: 5 of its 10 lines (15-19) are gold, 5 of 10 gold lines found: P = R = 1/2, F = 1/2.
Advantages are Dr. GRPO's (r − mean, no std) so that every figure is a fraction by hand.
s(c̄) = √min(c̄/4, 1): rollout 0 √(1/2), 1: 1, 2: 0, 3: √(9/16) = 3/4.
"""

from __future__ import annotations

import math

import pytest
from grpo_rewards import (
    ADAPTER_REWARDS,
    REWARD_SPECS,
    Gold,
    RolloutStats,
    codegrep_v1,
    codegrep_v2,
    codegrep_v3,
    dr_grpo_advantages,
    parse_answer,
    reward_spec,
    scale_advantages_for,
)
from grpo_rewards.trl_reward import TRLReward
from grpo_rewards.verl_score import compute_score

GOLD = Gold.of(["a.py"], {"a.py": [[10, 19]]})
ANSWERS = [
    parse_answer('{"files": ["a.py"], "line_ranges": {"a.py": [[10, 19]]}}'),
    parse_answer('{"files": ["a.py", "b.py"], "line_ranges": {"a.py": [[15, 24]]}}'),
    parse_answer('{"files": ["a.py"], "line_ranges": {"a.py": [[10, 19]]}}'),
    parse_answer("I ran out of turns."),
]
STATS = [
    RolloutStats(turns=2, tool_calls=4),
    RolloutStats(turns=2, tool_calls=16),
    RolloutStats(turns=1, tool_calls=0),
    RolloutStats(turns=4, tool_calls=9),
]


def _advantages(name: str, rewards: list[float]) -> list[float]:
    return scale_advantages_for(name, dr_grpo_advantages(rewards, group_size=4), STATS)


def test_v1_scales_the_reward_and_leaves_the_advantage() -> None:
    rewards = [codegrep_v1(a, GOLD, s).reward for a, s in zip(ANSWERS, STATS, strict=True)]
    # 0: ½(1 + 1)·1 = 1.  1: ½(5/9 + 1/2) · 1/max(1, 8/4) = 19/72.
    # 2: no mask in v1, σ(0) = 1: 1.  3: no answer: 0.
    assert rewards == pytest.approx([1.0, 19 / 72, 1.0, 0.0])
    # mean = (2 + 19/72)/4 = 163/288; the advantage layer does not touch v1
    mean = 163 / 288
    assert _advantages("codegrep_v1", rewards) == pytest.approx(
        [1 - mean, 19 / 72 - mean, 1 - mean, -mean]
    )


def test_v2_masks_degenerate_rollouts_and_scales_the_advantage() -> None:
    rewards = [codegrep_v2(a, GOLD, s).reward for a, s in zip(ANSWERS, STATS, strict=True)]
    # 0: ½(1 + 1) = 1.  1: ½(5/9 + 1/2) = 19/36, no reward-layer scale.  2: 1[c̄ > 0] = 0.  3: 0.
    assert rewards == pytest.approx([1.0, 19 / 36, 0.0, 0.0])
    # mean = (1 + 19/36)/4 = 55/144: A = [89, 21, -55, -55]/144, times s = [√½, 1, 0, 3/4]
    got = _advantages("codegrep_v2", rewards)
    assert got == pytest.approx([89 / 144 * math.sqrt(0.5), 21 / 144, 0.0, -55 / 144 * 0.75])
    assert got[3] < 0  # calls and no answer: penalized, as the formula says


def test_v3_drops_the_line_range_term_and_scales_the_advantage() -> None:
    rewards = [codegrep_v3(a, GOLD, s).reward for a, s in zip(ANSWERS, STATS, strict=True)]
    # 0: Fβ_file = 1.  1: 5/9.  2: masked, 0.  3: no answer, 0.
    assert rewards == pytest.approx([1.0, 5 / 9, 0.0, 0.0])
    # mean = (14/9)/4 = 7/18: A = [11, 3, -7, -7]/18, times s = [√½, 1, 0, 3/4]
    got = _advantages("codegrep_v3", rewards)
    assert got == pytest.approx([11 / 18 * math.sqrt(0.5), 3 / 18, 0.0, -7 / 24])
    assert got[3] < 0


def test_a_perfect_answer_scores_1_under_every_design_when_the_row_has_line_ranges() -> None:
    for fn in (codegrep_v1, codegrep_v2, codegrep_v3):
        assert fn(ANSWERS[0], GOLD, STATS[0]).reward == 1.0
    # without gold ranges the line-range term is 0 and v1/v2 halve: the label must carry them
    files_only = Gold.of(["a.py"])
    assert codegrep_v1(ANSWERS[0], files_only, STATS[0]).reward == 0.5


def test_every_adapter_reward_declares_its_efficiency_layer() -> None:
    assert set(REWARD_SPECS) == set(ADAPTER_REWARDS)
    layers = {
        n: reward_spec(n).efficiency_layer for n in ("codegrep_v1", "codegrep_v2", "codegrep_v3")
    }
    assert layers == {
        "codegrep_v1": "reward",
        "codegrep_v2": "advantage",
        "codegrep_v3": "advantage",
    }
    assert reward_spec("codegrep_v2").masks_degenerate
    assert not reward_spec("codegrep_v1").masks_degenerate
    assert TRLReward("codegrep_v1").spec.efficiency_layer == "reward"


def test_verl_reports_the_advantage_factor_of_the_spec() -> None:
    info = {"assistant_turns": 4, "tool_calls": [1, 1, 0, 0]}  # c̄ = 1/2: s = √(1/8)
    v3 = compute_score("d", '{"files": ["a.py"]}', ["a.py"], info)
    v1 = compute_score("d", '{"files": ["a.py"]}', ["a.py"], info, reward="codegrep_v1")
    assert v3["advantage_factor"] == pytest.approx(math.sqrt(1 / 8))
    assert v1["advantage_factor"] == 1.0
