"""The scoring-and-statistics core: ranked per-instance scores, the macro accounting of a
prediction set against gold sets, and the cluster bootstrap over instances.

swe-eval's Table 2 (`swe_eval.metrics`) and codegrep-gate's calibration both score with these,
so that the precision a report prints and the precision the gate acts on are one number by
construction (they used to be two copies held equal by a test). It lives here, in the stdlib-only
package both already depend on, beside the F-beta it uses.

The accounting (`account`):
- every gold id with a non-empty gold set is scored once (a macro average), in sorted id order;
- a gold id without a row, or whose row names no file, is scored 0 (`missing`, `empty`);
- a gold id whose gold set is empty is left out and listed (`no_gold`);
- rows for ids outside the gold sets are ignored and listed (`unknown`); for an id named twice,
  the first row is used.

A file named twice in one answer is one file at its first rank (`score_ranked`): counted twice
it would give a recall, and an F-beta, above 1.

The bootstrap (`ClusterBootstrap`) is the project's one bootstrap: swe-eval's Table 2 intervals
and paired differences, its downstream resolve-rate intervals and codegrep-gate's calibration all
draw from it. It resamples instance indices with replacement from `random.Random(seed)` and
recomputes each figure on the resampled instances (a ratio of column sums, or any statistic of
the resampled columns), so that every figure moves with the same resamples. The interval is the
percentile interval (`percentile` is numpy's default, 'linear', percentile) widened to hold the
point; `two_sided_p` is the share of resamples on the far side of 0, doubled.

Pure functions; no I/O; stdlib only, with numpy (when installed) drawing the same resamples
faster. Not for a training reward (`_rewards`).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Generic, Literal, TypeVar

from grpo_rewards._metrics import fbeta_from_counts

__all__ = [
    "Accounting",
    "AnswerStatus",
    "ClusterBootstrap",
    "RankedScore",
    "Ratio",
    "account",
    "answer_status",
    "percentile",
    "percentile_interval",
    "score_ranked",
    "two_sided_p",
]

R = TypeVar("R")
AnswerStatus = Literal["ok", "missing", "empty"]


@dataclass(frozen=True, slots=True)
class RankedScore:
    """One ranked answer against one non-empty gold set."""

    files: tuple[str, ...]  # ranked, each file once (at its first rank)
    first_index: tuple[int, ...]  # where each file first appears in the answer as given
    hits: tuple[bool, ...]  # per file: is it gold
    n_gold: int
    beta: float
    true_positives: int
    precision: float
    recall: float
    fbeta: float


def score_ranked(files: Sequence[str], gold: AbstractSet[str], *, beta: float = 0.5) -> RankedScore:
    """Precision, recall and F-beta of a ranked answer; `files` must name at least one file."""
    if not gold:
        raise ValueError("an empty gold set cannot be scored")
    first: dict[str, int] = {}
    for j, name in enumerate(files):
        first.setdefault(name, j)
    if not first:
        raise ValueError("an empty answer is not scored: it is `empty` (see `answer_status`)")
    ranked = tuple(first)
    hits = tuple(f in gold for f in ranked)
    tp = sum(hits)
    return RankedScore(
        files=ranked,
        first_index=tuple(first.values()),
        hits=hits,
        n_gold=len(gold),
        beta=beta,
        true_positives=tp,
        precision=tp / len(ranked),
        recall=tp / len(gold),
        fbeta=fbeta_from_counts(tp, len(ranked), len(gold), beta),
    )


def answer_status(files: Sequence[str] | None) -> AnswerStatus:
    """`missing` without a row, `empty` for a row that names no file, else `ok`."""
    if files is None:
        return "missing"
    return "ok" if files else "empty"


@dataclass(frozen=True)
class Accounting(Generic[R]):
    """Which row scores which gold id, and what was left out (see the module docstring)."""

    scored: tuple[tuple[str, frozenset[str], R | None], ...]  # (id, gold, first row), sorted
    no_gold: tuple[str, ...]  # sorted
    unknown: tuple[str, ...]  # ids of rows outside the gold sets, in input order


def account(
    gold: Mapping[str, AbstractSet[str]], rows: Iterable[R], *, key: Callable[[R], str]
) -> Accounting[R]:
    """Pair rows with gold ids: the first row per id; unknown ids and empty gold sets listed."""
    found: dict[str, R] = {}
    unknown: list[str] = []
    for row in rows:
        iid = key(row)
        if iid in gold:
            found.setdefault(iid, row)
        else:
            unknown.append(iid)
    scored: list[tuple[str, frozenset[str], R | None]] = []
    no_gold: list[str] = []
    for iid in sorted(gold):
        truth = frozenset(gold[iid])
        if not truth:
            no_gold.append(iid)
        else:
            scored.append((iid, truth, found.get(iid)))
    return Accounting(tuple(scored), tuple(no_gold), tuple(unknown))


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
