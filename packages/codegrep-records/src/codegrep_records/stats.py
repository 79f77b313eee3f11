"""The project's one bootstrap: seeded resamples of instances shared by every figure.

Import from here: `from codegrep_records.stats import ClusterBootstrap, Ratio,
percentile_interval, two_sided_p`.

`ClusterBootstrap` resamples instance indices with replacement from `random.Random(seed)` and
recomputes each figure on the resampled instances (a ratio of column sums, a median, or any
statistic of the resampled columns), so that every figure moves with the same resamples. The
interval is the percentile interval (`percentile` is numpy's default, 'linear', percentile)
widened to hold the point; `two_sided_p` is the share of resamples on the far side of 0,
doubled. swe-eval's Table 2 intervals and paired differences, its downstream resolve-rate
intervals, codegrep-gate's calibration and codegrep-model's cross-validation by repository all
draw from it: it lives here, in the bottom package all of them use, not in the reward package
(grpo-rewards, whose users train with it and need no statistics).

Pure functions; no I/O; standard library only, with numpy (when installed) drawing the same
resamples faster (`ClusterBootstrap`'s docstring says what may differ: the last bits of a float
sum).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

# `percentile` (a step of `percentile_interval`) is importable from here but not exported.
__all__ = ["ClusterBootstrap", "Ratio", "percentile_interval", "two_sided_p"]


def percentile(ordered: Sequence[float], q: float) -> float:
    """numpy's default ('linear') percentile of an already sorted sequence, q in [0, 1]."""
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def percentile_interval(point: float, dist: list[float], level: float) -> tuple[float, float]:
    """(low, high) percentile interval of `dist` (sorted in place), widened to hold `point`;
    (point, point) when there is no resample."""
    if not dist:
        return point, point
    dist.sort()
    alpha = 1.0 - level
    return (
        min(percentile(dist, alpha / 2), point),
        max(percentile(dist, 1 - alpha / 2), point),
    )


def two_sided_p(dist: Sequence[float], resamples: int) -> float:
    """Twice the smaller share of resampled values on either side of 0 (0 counts on both),
    capped at 1 and never below 1/resamples: the bootstrap p-value of "the figure is 0"."""
    if not dist:
        return 1.0
    below = sum(1 for v in dist if v <= 0) / len(dist)
    above = sum(1 for v in dist if v >= 0) / len(dist)
    return min(1.0, max(2 * min(below, above), 1.0 / max(1, resamples)))


@dataclass(frozen=True)
class Ratio:
    """A figure that is sum(numerator column) / sum(denominator column) over the instances."""

    num: int
    den: int | None  # None: the number of instances (a plain mean)


def _numpy() -> Any:
    """numpy if it is installed (it is optional: this package needs only the stdlib)."""
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def _picker(idx: Sequence[int]) -> Callable[[Sequence[float]], Sequence[float]]:
    # itemgetter of one index returns the item itself, not a 1-tuple.
    return itemgetter(*idx) if len(idx) > 1 else _single(idx[0])


def _single(i: int) -> Callable[[Sequence[float]], Sequence[float]]:
    def pick(column: Sequence[float]) -> Sequence[float]:
        return (column[i],)

    return pick


class ClusterBootstrap:
    """Resamples of instance indices, shared by every figure so that they move together.

    The draws are `random.Random(seed).choices(range(n), k=n)`, one per resample. Where numpy
    is installed they are made by numpy's MT19937 started from that generator's own state:
    the same indices, drawn ~20x faster, and the ratios (`distributions`) summed by numpy. A
    sum of floats may then differ from `math.fsum`'s in its last bits; 0/1 columns are exact.
    """

    def __init__(self, n: int, resamples: int, seed: int) -> None:
        rng = random.Random(seed)
        self.n = n
        count = resamples if n > 0 else 0
        np = _numpy()
        self._draws: Any = None  # a numpy array (resamples x n) when numpy draws
        self._pickers: list[Callable[[Sequence[float]], Sequence[float]]] | None = None
        if np is not None and count:
            state = rng.getstate()[1]
            mt = np.random.RandomState()
            mt.set_state(("MT19937", np.array(state[:624], dtype=np.uint32), state[624]))
            # choices() is floor(random() * n) per draw, and random() is MT19937's 53-bit
            # double, the one random_sample() gives
            self._draws = np.floor(mt.random_sample((count, n)) * n).astype(np.int32)
        else:
            self._pickers = [_picker(rng.choices(range(n), k=n)) for _ in range(count)]

    @property
    def pickers(self) -> list[Callable[[Sequence[float]], Sequence[float]]]:
        """One function per resample: a column's values at the drawn indices."""
        if self._pickers is None:
            draws = self._draws
            assert draws is not None
            self._pickers = [_picker(row) for row in draws.tolist()]
        return self._pickers

    def resampled(self, columns: Sequence[Sequence[float]]) -> Iterator[list[Sequence[float]]]:
        """Each resample's columns: the values of the drawn instances, in draw order."""
        for pick in self.pickers:
            yield [pick(col) for col in columns]

    def distribution(
        self,
        columns: Sequence[Sequence[float]],
        statistic: Callable[[Sequence[Sequence[float]]], float | None],
    ) -> list[float]:
        """`statistic` of every resample's columns; a resample where it is None or not finite
        (a ratio over nothing) is left out."""
        out: list[float] = []
        for drawn in self.resampled(columns):
            value = statistic(drawn)
            if value is not None and math.isfinite(value):
                out.append(value)
        return out

    def distributions(
        self, columns: Sequence[Sequence[float]], ratios: Sequence[Ratio]
    ) -> list[list[float]]:
        """For each ratio, its value in every resample where its denominator is not 0."""
        out: list[list[float]] = [[] for _ in ratios]
        if self._draws is not None:
            return self._distributions_numpy(columns, ratios)
        for pick in self.pickers:
            sums = [math.fsum(pick(col)) for col in columns]
            for k, ratio in enumerate(ratios):
                den = self.n if ratio.den is None else sums[ratio.den]
                if den > 0:
                    out[k].append(sums[ratio.num] / den)
        return out

    def medians(self, column: Sequence[float]) -> list[float]:
        """The median of `column` in every resample (numpy's where it drew, the same value)."""
        np = _numpy() if self._draws is not None else None
        if np is None:
            return [float(statistics.median(pick(column))) for pick in self.pickers]
        return [float(x) for x in self._per_resample(column, np.median).tolist()]

    def _per_resample(self, column: Sequence[float], reduce: Any) -> Any:
        """`reduce(values, axis=1)` of `column` at every resample's drawn indices (numpy), in
        blocks of ~32 MB of gathered values."""
        np = _numpy()
        values = np.asarray(column, dtype=np.float64)
        rows = max(1, (1 << 22) // max(1, self.n))
        draws = self._draws
        blocks = [reduce(values[draws[i : i + rows]], axis=1) for i in range(0, len(draws), rows)]
        return np.concatenate(blocks)

    def _distributions_numpy(
        self, columns: Sequence[Sequence[float]], ratios: Sequence[Ratio]
    ) -> list[list[float]]:
        np = _numpy()
        assert np is not None
        sums = [self._per_resample(col, np.sum) for col in columns]
        out: list[list[float]] = []
        for ratio in ratios:
            num = sums[ratio.num]
            den = np.full(len(num), float(self.n)) if ratio.den is None else sums[ratio.den]
            keep = den > 0
            out.append((num[keep] / den[keep]).tolist())
        return out
