"""Metric values computed by hand, and the properties any F-beta must have."""

from __future__ import annotations

import math

import pytest
from grpo_rewards import (
    CodeLocation,
    LineRange,
    fbeta,
    fbeta_line_ranges,
    multilevel_f1,
    normalize_paths,
    precision,
    recall,
    set_scores,
    targets_from_file_changes,
)
from grpo_rewards._metrics import line_range_scores
from hypothesis import given
from hypothesis import strategies as st


def test_fbeta_hand_values() -> None:
    # P = 1/2, R = 1: F0.5 = 1.25 * 0.5 / (0.25 * 0.5 + 1) = 5/9
    assert math.isclose(fbeta({"a", "b"}, {"a"}), 5 / 9)
    # P = 1, R = 1/2: F0.5 = 1.25 * 0.5 / (0.25 + 0.5) = 5/6 (precision is rewarded more)
    assert math.isclose(fbeta({"a"}, {"a", "b"}), 5 / 6)
    # F1 = 2PR / (P + R) = 2/3
    assert math.isclose(fbeta({"a"}, {"a", "b"}, beta=1.0), 2 / 3)
    # F2 leans to recall: 5 * 0.5 / (4 * 1 + 0.5) = 5/9
    assert math.isclose(fbeta({"a"}, {"a", "b"}, beta=2.0), 5 / 9)


def test_empty_sets_score_zero() -> None:
    assert fbeta(set(), {"a"}) == 0.0
    assert fbeta({"a"}, set()) == 0.0
    assert fbeta(set(), set()) == 0.0
    assert precision(set(), {"a"}) == 0.0
    assert recall({"a"}, set()) == 0.0


def test_a_single_string_is_not_a_set_of_paths() -> None:
    with pytest.raises(TypeError, match="gold must be a collection"):
        fbeta({"a.py"}, "a.py")
    with pytest.raises(TypeError, match="single string"):
        normalize_paths("a.py")


def test_file_changes_rows_must_be_mappings() -> None:
    with pytest.raises(TypeError, match=r"file_changes\[1\]"):
        targets_from_file_changes([{"file": "a.py"}, "b.py"])


def test_set_scores_counts() -> None:
    s = set_scores(["a", "b", "b", "c"], ["a", "d"])
    assert (s.true_positives, s.predicted, s.gold) == (1, 3, 2)
    assert math.isclose(s.precision, 1 / 3)
    assert math.isclose(s.recall, 1 / 2)


def test_line_range_hand_values() -> None:
    pred = {"a.py": [LineRange(10, 19)]}
    gold = {"a.py": [LineRange(15, 24)]}
    # 5 of 10 predicted lines are gold, 5 of 10 gold lines predicted
    assert math.isclose(fbeta_line_ranges(pred, gold), 0.5)
    # 10 more predicted lines in a file with no gold range: P = 5/20, R = 1/2
    pred_fp = {**pred, "b.py": [LineRange(1, 10)]}
    assert math.isclose(fbeta_line_ranges(pred_fp, gold), 1.25 * 0.125 / (0.0625 + 0.5))


def test_overlapping_ranges_count_each_line_once() -> None:
    pred = {"a.py": [LineRange(10, 19), LineRange(15, 24), LineRange(25, 25)]}
    s = line_range_scores(pred, {"a.py": [LineRange(10, 25)]})
    assert (s.predicted, s.gold, s.true_positives) == (16, 16, 16)
    assert s.fbeta == 1.0


def test_lines_only_match_in_the_same_file() -> None:
    assert fbeta_line_ranges({"a.py": [LineRange(1, 9)]}, {"b.py": [LineRange(1, 9)]}) == 0.0


def test_gold_without_ranges_scores_zero() -> None:
    # CATM-only labels have no gold ranges: the line-range term is systematically 0
    assert fbeta_line_ranges({"a.py": [LineRange(1, 9)]}, {}) == 0.0


def test_codescout_multilevel_hand_values() -> None:
    targets = targets_from_file_changes(
        [
            {
                "file": "a.py",
                "changes": {"edited_modules": ["a.py:Foo"], "edited_entities": ["a.py:Foo.bar"]},
            },
            {"file": "c.py", "changes": {"edited_modules": None, "edited_entities": ["c.py:qux"]}},
        ]
    )
    locations = [CodeLocation("a.py", "Foo", "bar"), CodeLocation("./b.py", None, "baz")]
    scores = multilevel_f1(locations, targets)
    assert math.isclose(scores.file_f1, 0.5)  # {a, b} vs {a, c}
    assert math.isclose(scores.module_f1, 2 / 3)  # {a:Foo, b:baz} vs {a:Foo}
    assert math.isclose(scores.entity_f1, 0.5)  # {a:Foo.bar, b:baz} vs {a:Foo.bar, c:qux}


def test_codescout_location_without_file_voids_the_answer() -> None:
    targets = targets_from_file_changes([{"file": "a.py", "changes": {}}])
    scores = multilevel_f1([CodeLocation("a.py"), CodeLocation("  ")], targets)
    assert (scores.file_f1, scores.module_f1, scores.entity_f1) == (0.0, 0.0, 0.0)


paths = st.frozensets(st.sampled_from([f"f{i}.py" for i in range(12)]), max_size=12)


@given(paths, paths, st.floats(min_value=0.0, max_value=10.0))
def test_fbeta_is_within_unit_interval(
    pred: frozenset[str], gold: frozenset[str], beta: float
) -> None:
    assert 0.0 <= fbeta(pred, gold, beta=beta) <= 1.0


@given(paths, paths)
def test_fbeta_tends_to_precision_as_beta_goes_to_zero(
    pred: frozenset[str], gold: frozenset[str]
) -> None:
    assert math.isclose(fbeta(pred, gold, beta=1e-9), precision(pred, gold), abs_tol=1e-9)


@given(paths, paths)
def test_fbeta_lies_between_precision_and_recall(
    pred: frozenset[str], gold: frozenset[str]
) -> None:
    p, r, f = precision(pred, gold), recall(pred, gold), fbeta(pred, gold)
    assert min(p, r) - 1e-12 <= f <= max(p, r) + 1e-12


ranges = st.lists(
    st.tuples(st.integers(1, 200), st.integers(0, 40)).map(lambda t: LineRange(t[0], t[0] + t[1])),
    max_size=5,
)
range_maps = st.dictionaries(st.sampled_from(["a.py", "b.py", "c.py"]), ranges, max_size=3)


@given(range_maps, range_maps)
def test_line_range_fbeta_is_within_unit_interval(
    pred: dict[str, list[LineRange]], gold: dict[str, list[LineRange]]
) -> None:
    s = line_range_scores(pred, gold)
    assert 0 <= s.true_positives <= min(s.predicted, s.gold)
    assert 0.0 <= s.fbeta <= 1.0
