"""The project's one bootstrap (`codegrep_records.stats.ClusterBootstrap`) and its intervals:
seeded, instances resampled jointly for every figure, numpy drawing the standard library's
indices."""

from __future__ import annotations

import random

import pytest
from codegrep_records.stats import (
    ClusterBootstrap,
    Ratio,
    percentile,
    percentile_interval,
    two_sided_p,
)


def test_percentile_is_numpys_linear_percentile() -> None:
    np = pytest.importorskip("numpy")
    rng = random.Random(7)
    values = sorted(rng.random() for _ in range(37))
    for q in (0.0, 0.025, 0.5, 0.975, 1.0):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q * 100)))


def test_percentile_interval_holds_the_point() -> None:
    assert percentile_interval(0.3, [], 0.95) == (0.3, 0.3)
    low, high = percentile_interval(0.9, [0.1, 0.2, 0.3], 0.95)
    assert low == pytest.approx(0.105)
    assert high == 0.9  # widened: the percentiles miss the point


def test_cluster_bootstrap_resamples_instances_jointly_and_is_seeded() -> None:
    hits = [1.0, 0.0, 2.0, 1.0]
    files = [2.0, 1.0, 2.0, 4.0]
    ratios = [Ratio(0, None), Ratio(0, 1)]
    one = ClusterBootstrap(4, 50, seed=3).distributions([hits, files], ratios)
    two = ClusterBootstrap(4, 50, seed=3).distributions([hits, files], ratios)
    assert one == two
    assert len(one[0]) == len(one[1]) == 50
    # the same resample of instances for both figures: recompute each from its indices
    rng = random.Random(3)
    for k in range(50):
        idx = rng.choices(range(4), k=4)
        assert one[0][k] == pytest.approx(sum(hits[i] for i in idx) / 4)
        assert one[1][k] == pytest.approx(sum(hits[i] for i in idx) / sum(files[i] for i in idx))
    assert ClusterBootstrap(0, 50, seed=3).distributions([[], []], ratios) == [[], []]


def test_cluster_bootstrap_takes_any_statistic_of_the_resampled_columns() -> None:
    values = [0.5, 0.0, 1.0, 0.25, 0.75]
    present = [1.0, 0.0, 1.0, 1.0, 1.0]
    boot = ClusterBootstrap(5, 40, seed=11)
    drawn = list(boot.resampled([values, present]))
    rng = random.Random(11)
    for cols in drawn:
        idx = rng.choices(range(5), k=5)
        assert list(cols[0]) == [values[i] for i in idx]
        assert list(cols[1]) == [present[i] for i in idx]

    # a resample where the statistic is undefined (None) or not finite is left out
    def mean_of_present(cols: list[list[float]]) -> float | None:
        n = sum(cols[1])
        return sum(cols[0]) / n if n else None

    dist = boot.distribution([values, present], mean_of_present)
    expected = [mean_of_present([list(c) for c in cols]) for cols in drawn]
    assert dist == [v for v in expected if v is not None]
    assert boot.distribution([values], lambda cols: float("inf")) == []


def test_two_sided_p_is_twice_the_smaller_tail_and_never_zero() -> None:
    assert two_sided_p([0.1, 0.2, -0.1, 0.3], 4) == 0.5
    assert two_sided_p([0.1, 0.2, 0.3], 1000) == 1 / 1000  # never 0
    assert two_sided_p([0.0, 0.0], 10) == 1.0  # 0 counts on both sides; capped at 1
    assert two_sided_p([], 10) == 1.0


def test_numpy_draws_are_the_stdlib_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("numpy")
    import codegrep_records.stats as scoring

    rng = random.Random(5)
    cols = [[rng.random() for _ in range(300)], [float(rng.random() < 0.3) for _ in range(300)]]
    ratios = [scoring.Ratio(0, None), scoring.Ratio(0, 1), scoring.Ratio(1, None)]
    fast = scoring.ClusterBootstrap(300, 200, 11)
    assert fast._draws is not None  # numpy drew them
    fast_out = fast.distributions(cols, ratios)
    fast_pick = fast.pickers[3](list(range(300)))
    monkeypatch.setattr(scoring, "_numpy", lambda: None)
    slow = scoring.ClusterBootstrap(300, 200, 11)
    assert slow._draws is None
    assert slow.pickers[3](list(range(300))) == fast_pick
    slow_out = slow.distributions(cols, ratios)
    assert [len(x) for x in fast_out] == [len(x) for x in slow_out]
    assert fast_out[2] == slow_out[2]  # a 0/1 column sums exactly
    for a, b in zip(fast_out, slow_out, strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-12
