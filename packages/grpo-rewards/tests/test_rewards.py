"""Each reward formula against values computed by hand, including the papers' own examples."""

from __future__ import annotations

import math

import pytest
from grpo_rewards import (
    CodeLocation,
    Gold,
    LineRange,
    RolloutStats,
    UnknownRewardError,
    codegrep_v1,
    codegrep_v2,
    codegrep_v3,
    codescout_multilevel,
    colgrep_reward,
    parse_answer,
    score_completion,
    targets_from_file_changes,
)
from grpo_rewards._codescout import codescout_last_turn_ok
from grpo_rewards._rewards import colgrep_file_f1, sigma_v1
from grpo_rewards._spec import score_batch
from grpo_rewards.errors import InvalidRolloutError

GOLD = Gold.of(["a.py"], {"a.py": [[15, 24]]})
# files: P = 1/2, R = 1 -> F0.5 = 5/9; lines: 5 of 10 predicted, 5 of 10 gold -> F0.5 = 1/2
ANSWER = parse_answer('{"files": ["a.py", "b.py"], "line_ranges": {"a.py": [[10, 19]]}}')
F_FILE, F_LR = 5 / 9, 0.5


def test_gold_counts_unreadable_line_ranges() -> None:
    gold = Gold.of(["a.py"], {"a.py": "garbage", "b.py": [[3, 5]], "c.py": [[9, 1]]})
    assert gold.line_ranges == {"b.py": (LineRange(3, 5),)}
    assert gold.dropped_line_ranges == 2
    assert GOLD.dropped_line_ranges == 0
    with pytest.raises(TypeError, match="single string"):
        Gold.of("a.py")


def test_sigma_v1() -> None:
    assert sigma_v1(0.0) == 1.0
    assert sigma_v1(4.0) == 1.0
    assert sigma_v1(6.0) == pytest.approx(2 / 3)  # the paper's full budget: 24 calls / 4 turns
    assert sigma_v1(8.0) == 0.5


def test_v1_scales_the_reward_by_efficiency() -> None:
    r = codegrep_v1(ANSWER, GOLD, RolloutStats(turns=2, tool_calls=16))  # c̄ = 8
    assert r.reward == pytest.approx(0.5 * (F_FILE + F_LR) * 0.5)
    assert r.parts["sigma"] == 0.5
    r = codegrep_v1(ANSWER, GOLD, RolloutStats(turns=4, tool_calls=12))  # c̄ = 3: no discount
    assert r.reward == pytest.approx(0.5 * (F_FILE + F_LR))


def test_v1_does_not_mask_zero_calls() -> None:
    # v1's only efficiency term is σ, which is 1 for c̄ = 0: the degenerate mask came with v2
    r = codegrep_v1(ANSWER, GOLD, RolloutStats(turns=1, tool_calls=0))
    assert r.reward == pytest.approx(0.5 * (F_FILE + F_LR))


def test_v2_is_the_unscaled_mean_with_a_hard_mask() -> None:
    r = codegrep_v2(ANSWER, GOLD, RolloutStats(turns=2, tool_calls=16))
    assert r.reward == pytest.approx(0.5 * (F_FILE + F_LR))
    masked = codegrep_v2(ANSWER, GOLD, RolloutStats(turns=1, tool_calls=0))
    assert masked.reward == 0.0
    assert masked.reason is not None
    assert "c̄ = 0" in masked.reason


def test_v3_drops_line_ranges() -> None:
    r = codegrep_v3(ANSWER, GOLD, RolloutStats(turns=3, tool_calls=5))
    assert r.reward == pytest.approx(F_FILE)
    assert "fbeta_lr" not in r.parts
    assert codegrep_v3(ANSWER, GOLD, RolloutStats(turns=3, tool_calls=0)).reward == 0.0


def test_v3_on_a_catm_only_label_is_not_dragged_down_by_missing_ranges() -> None:
    gold = Gold.of(["a.py", "helper.py"])  # CATM-only entry: no gold line ranges
    ans = parse_answer('{"files": ["a.py", "helper.py"], "line_ranges": {"a.py": [1, 5]}}')
    stats = RolloutStats(turns=2, tool_calls=4)
    assert codegrep_v3(ans, gold, stats).reward == 1.0
    assert codegrep_v2(ans, gold, stats).reward == 0.5  # v2's line-range term is stuck at 0


@pytest.mark.parametrize("fn", [codegrep_v1, codegrep_v2, codegrep_v3])
def test_malformed_answers_score_zero_with_reason(fn: object) -> None:
    assert callable(fn)
    r = fn(parse_answer("no idea"), GOLD, RolloutStats(turns=4, tool_calls=8))
    assert r.reward == 0.0
    assert r.reason == "no JSON object in the answer"


def test_colgrep_turn_penalty_examples() -> None:
    # "The first two turns are unpenalized; each additional turn reduces the task reward by 1%,
    # up to a maximum reduction of 8%."
    ok = {"searched": True, "submitted": True}
    assert colgrep_reward(1.0, turns=1, **ok) == 1.0
    assert colgrep_reward(1.0, turns=2, **ok) == 1.0
    assert colgrep_reward(1.0, turns=3, **ok) == pytest.approx(0.99)
    assert colgrep_reward(1.0, turns=10, **ok) == pytest.approx(0.92)
    assert colgrep_reward(1.0, turns=11, **ok) == pytest.approx(0.92)
    assert colgrep_reward(0.8, turns=5, **ok) == pytest.approx(0.8 * 0.97)


def test_colgrep_format_penalty() -> None:
    assert colgrep_reward(0.8, turns=5, searched=False, submitted=True) == pytest.approx(
        0.8 * 0.97 - 0.5
    )
    assert colgrep_reward(0.0, turns=3, searched=True, submitted=False) == -0.5
    # p_max = 0 switches the turn penalty off, as in colgrep's runs without it
    assert colgrep_reward(1.0, turns=9, searched=True, submitted=True, p_max=0.0) == 1.0


def test_colgrep_file_f1_from_a_rollout() -> None:
    r = colgrep_file_f1(ANSWER, GOLD, RolloutStats(turns=4, tool_calls=6))
    assert r.reward == pytest.approx((2 / 3) * 0.98)  # F1 of {a, b} vs {a}; T = 4
    failed = colgrep_file_f1(parse_answer("nothing"), GOLD, RolloutStats(turns=4, tool_calls=6))
    assert failed.reward == -0.5
    assert failed.reason == "no JSON object in the answer"


TARGETS = targets_from_file_changes(
    [
        {
            "file": "a.py",
            "changes": {"edited_modules": ["a.py:Foo"], "edited_entities": ["a.py:Foo.bar"]},
        },
        {"file": "c.py", "changes": {"edited_entities": ["c.py:qux"]}},
    ]
)
LOCS = [CodeLocation("a.py", "Foo", "bar"), CodeLocation("b.py", None, "baz")]


def test_codescout_sum_of_levels() -> None:
    r = codescout_multilevel(LOCS, TARGETS)
    assert r.reward == pytest.approx(0.5 + 2 / 3 + 0.5)
    weighted = codescout_multilevel(LOCS, TARGETS, module_weight=0.0, entity_weight=2.0)
    assert weighted.reward == pytest.approx(0.5 + 2 * 0.5)


@pytest.mark.parametrize(("finish_calls", "last_turn_ok"), [(0, True), (2, True), (1, False)])
def test_codescout_finish_rules_zero_the_localization_reward(
    finish_calls: int, last_turn_ok: bool
) -> None:
    r = codescout_multilevel(LOCS, TARGETS, finish_calls=finish_calls, last_turn_ok=last_turn_ok)
    assert r.reward == 0.0
    assert r.reason is not None


def test_codescout_14b_turn_bonus_is_independent_of_finish_rules() -> None:
    r = codescout_multilevel(LOCS, TARGETS, turns=4, turn_bonus_range=(4, 4))
    assert r.reward == pytest.approx(1 + 2 / 3 + 1)
    r = codescout_multilevel(LOCS, TARGETS, turns=5, turn_bonus_range=(4, 4))
    assert r.reward == pytest.approx(2 / 3 + 1)
    r = codescout_multilevel(LOCS, TARGETS, finish_calls=2, turns=4, turn_bonus_range=(4, 4))
    assert r.reward == 1.0
    with pytest.raises(InvalidRolloutError):
        codescout_multilevel(LOCS, TARGETS, turn_bonus_range=(4, 4))


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ('<tool_call>{"name": "localization_finish"}</tool_call><|im_end|>', True),
        ('Done.\n<tool_call>{"name": "localization_finish"}</tool_call>\n', True),
        ('<tool_call>{"name": "localization_finish"}</tool_call> and more<|im_end|>', False),
        ("<tool_call>{}</tool_call><tool_call>{}</tool_call>", False),
        ("no call at all", False),
    ],
)
def test_codescout_last_turn_check(text: str, ok: bool) -> None:
    assert codescout_last_turn_ok(text) is ok


def test_score_completion_by_name() -> None:
    stats = RolloutStats(turns=3, tool_calls=5)
    text = '{"files": ["a.py", "b.py"]}'
    assert score_completion("codegrep_v3", text, GOLD, stats).reward == pytest.approx(F_FILE)
    f1 = score_completion("codegrep_v3", text, GOLD, stats, params={"beta": 1.0})
    assert f1.reward == pytest.approx(2 / 3)
    assert score_completion("fbeta_file", text, GOLD, None).reward == pytest.approx(F_FILE)
    with pytest.raises(InvalidRolloutError, match="needs rollout statistics"):
        score_completion("codegrep_v3", text, GOLD, None)
    with pytest.raises(UnknownRewardError, match="codegrep_v4"):
        score_completion("codegrep_v4", text, GOLD, stats)


def test_score_batch_keeps_order() -> None:
    texts = ['{"files": ["a.py"]}', '{"files": ["b.py"]}', "oops"]
    stats = [RolloutStats(turns=2, tool_calls=2)] * 3
    rewards = [r.reward for r in score_batch("codegrep_v3", texts, [GOLD] * 3, stats)]
    assert rewards == [1.0, 0.0, 0.0]
    assert math.isfinite(sum(rewards))
