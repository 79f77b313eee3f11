from __future__ import annotations

import math

import numpy as np
import pytest
from codegrep_records import GoldLabel, Prediction
from hypothesis import given
from hypothesis import strategies as st
from swe_eval import evaluate, paired_difference, summarize
from swe_eval.metrics import ScoreStatus, score_instance


def _gold(**files: list[str]) -> dict[str, GoldLabel]:
    return {
        i: GoldLabel(instance_id=i, files=frozenset(f), source="test") for i, f in files.items()
    }


def test_one_instance_by_hand() -> None:
    s = score_instance(
        frozenset({"a.py", "b.py"}),
        Prediction(instance_id="x", files=("a.py", "c.py", "d.py")),
        ks=(1, 3),
    )
    assert (s.hits, s.precision, s.recall) == (1, 1 / 3, 1 / 2)
    # F0.5 = 1.25 P R / (0.25 P + R)
    assert s.fbeta == pytest.approx(1.25 * (1 / 3) * 0.5 / (0.25 / 3 + 0.5))
    assert s.f1 == pytest.approx(0.4)
    # LocAgent acc@k: every gold file (at most k) in the top k.
    assert s.acc == (1.0, 0.0)


def test_acc_at_k_caps_gold_at_k() -> None:
    s = score_instance(
        frozenset({"a", "b", "c"}), Prediction(instance_id="x", files=("b", "z")), ks=(1, 2)
    )
    assert s.acc == (1.0, 0.0)


def test_denominator_is_the_gold_set() -> None:
    gold = _gold(a=["x.py"], b=["y.py"], c=["z.py"], d=[])
    preds = [
        Prediction(instance_id="a", files=("x.py",)),
        Prediction(instance_id="b", files=()),
        Prediction(instance_id="zzz", files=("q.py",)),
    ]
    ev = evaluate(gold, preds)
    assert [s.status for s in ev.scores] == [ScoreStatus.OK, ScoreStatus.EMPTY, ScoreStatus.MISSING]
    assert ev.no_gold == ("d",)
    assert ev.unknown == ("zzz",)
    summary = summarize(ev, n_resamples=200)
    assert summary.n == 3
    assert summary.missing == 1
    assert summary.empty == 1
    assert summary.metrics["fbeta"].value == pytest.approx(1 / 3)
    assert summary.metrics["fbeta_ge"].value == pytest.approx(1 / 3)
    assert math.isnan(summary.metrics["turns"].value)


def test_bootstrap_interval_is_seeded_and_brackets_the_mean() -> None:
    rng = np.random.default_rng(1)
    gold = {
        f"i{n}": GoldLabel(instance_id=f"i{n}", files=frozenset({"g"}), source="t")
        for n in range(200)
    }
    preds = [
        Prediction(instance_id=f"i{n}", files=("g",) if rng.random() < 0.4 else ("h",))
        for n in range(200)
    ]
    ev = evaluate(gold, preds, repos={f"i{n}": "o/r" if n % 2 else "o/s" for n in range(200)})
    a = summarize(ev, n_resamples=500, seed=3)
    b = summarize(ev, n_resamples=500, seed=3)
    est = a.metrics["precision"]
    assert est == b.metrics["precision"]
    assert est.low < est.value < est.high
    # The interval of a proportion of ~0.4 over 200 instances is about ±0.07.
    assert 0.08 < est.high - est.low < 0.2
    assert set(a.per_repo) == {"o/r", "o/s"}
    assert a.per_repo["o/r"].n == 100


def test_paired_difference_detects_a_better_system() -> None:
    gold = {
        f"i{n}": GoldLabel(instance_id=f"i{n}", files=frozenset({"g"}), source="t")
        for n in range(100)
    }
    good = evaluate(gold, [Prediction(instance_id=i, files=("g",)) for i in gold], name="good")
    half = evaluate(
        gold,
        [Prediction(instance_id=i, files=("g",) if n % 2 else ("h",)) for n, i in enumerate(gold)],
        name="half",
    )
    d = paired_difference(good, half, n_resamples=2000)
    assert d.diff.value == pytest.approx(0.5)
    assert d.diff.low > 0.3
    assert d.p_value < 0.01
    same = paired_difference(good, good)
    assert same.diff.value == 0
    assert same.p_value == 1.0


@given(
    gold=st.sets(st.sampled_from("abcdefgh"), min_size=1),
    pred=st.lists(st.sampled_from("abcdefghij"), unique=True),
)
def test_scores_are_bounded_and_consistent(gold: set[str], pred: list[str]) -> None:
    s = score_instance(frozenset(gold), Prediction(instance_id="x", files=tuple(pred)))
    for v in (s.precision, s.recall, s.fbeta, s.f1):
        assert 0.0 <= v <= 1.0
    assert min(s.precision, s.recall) - 1e-12 <= s.fbeta <= max(s.precision, s.recall) + 1e-12
    assert (s.fbeta == 1.0) == (set(pred) == gold)


def test_a_file_named_twice_counts_once() -> None:
    """Counted twice, ("a.py", "a.py") against {"a.py"} scored recall 2.0 and F0.5 1.11."""
    s = score_instance(
        frozenset({"a.py", "b.py"}), Prediction(instance_id="x", files=("a.py", "a.py", "c.py"))
    )
    assert (s.n_pred, s.hits) == (2, 1)
    assert (s.precision, s.recall) == (0.5, 0.5)
    one = score_instance(frozenset({"a.py"}), Prediction(instance_id="y", files=("a.py", "a.py")))
    assert (one.precision, one.recall, one.fbeta) == (1.0, 1.0, 1.0)
