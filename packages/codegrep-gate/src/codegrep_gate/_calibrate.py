"""The calibration math: precision curves, PAV-merged score bins and their intervals.

Per-instance scores, the accounting and the cluster bootstrap are grpo-rewards' scoring core
(`score_ranked`, `account`, `ClusterBootstrap`), the same functions swe-eval's Table 2 scores
with, so that a figure in an evaluation report and the figure the gate acts on are one number:

- every instance with a non-empty gold set counts once (a macro average);
- an instance without a prediction row, or with an empty one, scores 0 (`missing`, `empty`);
- an instance whose gold set is empty is left out and counted (`no_gold`);
- prediction rows for ids outside the gold set are ignored and counted (`unknown`); for an id
  named twice, the first row is used.

`precision_answered` is the same average over answered instances only: an empty answer injects
nothing, so the files a coding agent is shown have this precision. The curves say how precision
falls with rank and rises with score; the gate looks each file up in one of them.

Intervals come from one cluster bootstrap over instances (files of one instance are not
independent): resample instance ids with replacement (`random.Random(seed)`), recompute every
figure with the bins held fixed, take percentiles. Per-instance, per-bin counts are computed
once, so a resample costs a few C-level sums per column.

This module measures and checks; the per-instance scores are `_scored`, the bins (quantile
blocks, PAV) `_bins`. Pure functions; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from codegrep_records import Prediction
from codegrep_records.stats import ClusterBootstrap, Ratio, percentile_interval

from codegrep_gate._bins import (
    BinSpec,
    bin_spec_from_curve,
    rank_bin_spec,
    score_bin_spec,
)
from codegrep_gate._context import fit_context_model
from codegrep_gate._records import Bin, Calibration, Check, Curve, DataRef, Interval, Retriever
from codegrep_gate._scored import Evaluated, GoldSets, Scored, evaluate
from codegrep_gate.errors import CalibrationMismatchError, GateError, GateInputError

__all__ = [
    "GoldSets",
    "calibrate",
    "check",
]

# A bin needs this share of resamples with at least one file in it for its percentiles to mean
# anything; below it the interval is [0, 1] and the bin's note says so. A bin fed by one
# instance appears in about 63% of resamples (1 - 1/e), by two in about 86%, by three in 95%:
# so in practice a bin from one or two instances gets no interval of its own.
_MIN_VALID_SHARE = 0.9


# --- bootstrap --------------------------------------------------------------------------------


def _interval(point: float, dist: list[float], level: float) -> Interval:
    """Percentile interval, widened to hold the point when the percentiles miss it."""
    low, high = percentile_interval(point, dist, level)
    return Interval(point=point, low=low, high=high, level=level)


class _Columns:
    """Per-instance columns the bootstrap sums, and the ratios read from them."""

    def __init__(self, scored: Sequence[Scored]) -> None:
        self.scored = scored
        self.columns: list[list[float]] = []

    def add(self, values: Iterable[float]) -> int:
        self.columns.append(list(values))
        return len(self.columns) - 1

    def bins(self, spec: BinSpec) -> tuple[list[Ratio], list[tuple[int, int, int]]]:
        """Per bin: the ratio hits/files and the totals (files, hits, instances)."""
        n_bins = len(spec.edges)
        files = [[0.0] * len(self.scored) for _ in range(n_bins)]
        hits = [[0.0] * len(self.scored) for _ in range(n_bins)]
        for i, s in enumerate(self.scored):
            for f in s.files:
                b = spec.assign(f)
                if b is None:
                    continue
                files[b][i] += 1
                hits[b][i] += f[2]
        ratios = []
        totals = []
        for b in range(n_bins):
            ratios.append(Ratio(self.add(hits[b]), self.add(files[b])))
            totals.append((int(sum(files[b])), int(sum(hits[b])), sum(1 for x in files[b] if x)))
        return ratios, totals


def _curve(
    spec: BinSpec,
    totals: Sequence[tuple[int, int, int]],
    dists: Sequence[list[float]],
    *,
    resamples: int,
    level: float,
) -> tuple[Curve | None, list[str]]:
    """The curve with one interval per bin; bins without files are dropped (and named)."""
    bins: list[Bin] = []
    dropped: list[str] = []
    for (lo, hi), (n_files, n_hits, n_inst), dist in zip(spec.edges, totals, dists, strict=True):
        if n_files == 0:
            empty = Interval(point=0.0, low=0.0, high=1.0, level=level)
            shape = Bin(lo=lo, hi=hi, files=0, hits=0, instances=0, precision=empty)
            dropped.append(shape.describe(spec.basis))
            continue
        point = n_hits / n_files
        note = ""
        if resamples > 0 and len(dist) < _MIN_VALID_SHARE * resamples:
            precision = Interval(point=point, low=0.0, high=1.0, level=level)
            note = (
                f"only {len(dist)} of {resamples} resamples had a file in this bin; "
                "interval widened to [0, 1]"
            )
        else:
            precision = _interval(point, dist, level)
        bins.append(
            Bin(
                lo=lo,
                hi=hi,
                files=n_files,
                hits=n_hits,
                instances=n_inst,
                precision=precision,
                note=note,
            )
        )
    if not bins:
        return None, dropped
    return Curve(basis=spec.basis, method=spec.method, bins=bins), dropped


@dataclass(frozen=True)
class _Measured:
    evaluated: Evaluated
    precision: Interval
    precision_answered: Interval
    recall: Interval
    fbeta: Interval
    files_per_answer: float
    by_rank: Curve
    by_score: Curve | None
    dropped_bins: list[str]


def _measure(
    evaluated: Evaluated,
    rank_spec: BinSpec,
    score_spec: BinSpec | None,
    *,
    resamples: int,
    seed: int,
    level: float,
) -> _Measured:
    scored = evaluated.scored
    answered = [s for s in scored if s.answered]
    cols = _Columns(scored)
    p = cols.add(s.precision for s in scored)
    r = cols.add(s.recall for s in scored)
    f = cols.add(s.fbeta for s in scored)
    a = cols.add(1.0 if s.answered else 0.0 for s in scored)
    # Unanswered instances have precision 0, so sum(precision) / sum(answered) is the mean
    # over answered instances.
    overall = [Ratio(p, None), Ratio(p, a), Ratio(r, None), Ratio(f, None)]
    rank_ratios, rank_totals = cols.bins(rank_spec)
    score_ratios: list[Ratio] = []
    score_totals: list[tuple[int, int, int]] = []
    if score_spec is not None:
        score_ratios, score_totals = cols.bins(score_spec)
    boot = ClusterBootstrap(len(scored), resamples, seed)
    dists = boot.distributions(cols.columns, [*overall, *rank_ratios, *score_ratios])
    n = len(scored)
    points = [
        math.fsum(cols.columns[p]) / n,
        math.fsum(cols.columns[p]) / len(answered),
        math.fsum(cols.columns[r]) / n,
        math.fsum(cols.columns[f]) / n,
    ]
    intervals = [_interval(pt, d, level) for pt, d in zip(points, dists[:4], strict=True)]
    by_rank, dropped = _curve(
        rank_spec,
        rank_totals,
        dists[4 : 4 + len(rank_ratios)],
        resamples=resamples,
        level=level,
    )
    by_score = None
    if score_spec is not None:
        by_score, dropped_score = _curve(
            score_spec,
            score_totals,
            dists[4 + len(rank_ratios) :],
            resamples=resamples,
            level=level,
        )
        dropped += dropped_score
    assert by_rank is not None  # answered instances have a file at rank 1
    return _Measured(
        evaluated,
        precision=intervals[0],
        precision_answered=intervals[1],
        recall=intervals[2],
        fbeta=intervals[3],
        files_per_answer=math.fsum(len(s.files) for s in answered) / len(answered),
        by_rank=by_rank,
        by_score=by_score,
        dropped_bins=dropped,
    )


def _check_parameters(resamples: int, level: float) -> None:
    if resamples < 0:
        raise GateInputError(f"resamples must be >= 0, got {resamples}")
    if not 0 < level < 1:
        raise GateInputError(f"level must be between 0 and 1, got {level}")


def _stamp(data: DataRef, ev: Evaluated) -> DataRef:
    """`data` with the counts measured here (they describe what was actually scored)."""
    statuses = [s.status for s in ev.scored]
    return data.model_copy(
        update={
            "instances": ev.instances,
            "scored": len(ev.scored),
            "missing": statuses.count("missing"),
            "empty": statuses.count("empty"),
            "no_gold": ev.no_gold,
            "unknown": ev.unknown,
        }
    )


def _nothing_to_measure(ev: Evaluated, what: str) -> GateError | None:
    if not ev.scored:
        return GateError(
            f"nothing to {what}: none of the {ev.instances} instance(s) has a gold file"
        )
    if not any(s.answered for s in ev.scored):
        return GateError(
            f"nothing to {what}: no prediction names a file for any of the "
            f"{len(ev.scored)} instance(s) with gold"
        )
    return None


def _versions() -> dict[str, str]:
    out = {}
    for dist in ("codegrep-gate", "codegrep-records", "pydantic"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "unknown"
    return out


def calibrate(
    predictions: Iterable[Prediction],
    gold: GoldSets,
    *,
    retriever: Retriever,
    data: DataRef,
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    max_rank: int = 5,
    score_bins: int = 8,
    min_bin_files: int = 20,
    context: bool = False,
    groups: Mapping[str, str] | None = None,
    context_resamples: int = 200,
    context_penalty: float = 1.0,
) -> Calibration:
    """Measure a retriever's precision on `predictions` against `gold` (id -> gold files).

    With `context`, also fit the context model (`ContextModel`: precision on score, rank and
    answer size; every answered file must carry a score), its interval from
    `context_resamples` refits on resamples of the repositories `groups` maps instance ids to
    (of the instances without `groups`).

    `gold` maps every instance of the data to its gold files (a frozenset, or a `GoldLabel`
    as `codegrep_records.gold_from_instances` returns); see `gold_sets` for the toolkit's rule.
    The counts of `data` are replaced by what was measured here; its name, files, hashes,
    repositories and gold rule are kept.

    Raises `CalibrationMismatchError` when a prediction names another retriever than
    `retriever.name`, and `GateError` when no instance with gold has an answer.
    """
    _check_parameters(resamples, level)
    for name, value in (("max_rank", max_rank), ("score_bins", score_bins)):
        if value < 1:
            raise GateInputError(f"{name} must be >= 1, got {value}")
    if min_bin_files < 1:
        raise GateInputError(f"min_bin_files must be >= 1, got {min_bin_files}")
    ev = evaluate(predictions, gold)
    others = [r for r in ev.other_retrievers if r != retriever.name]
    if others:
        raise CalibrationMismatchError(
            f"predictions name retriever(s) {', '.join(map(repr, others))}, but the calibration "
            f"is for {retriever.name!r}; calibrate each retriever on its own predictions"
        )
    problem = _nothing_to_measure(ev, "calibrate")
    if problem is not None:
        raise problem
    rank_spec = rank_bin_spec(ev.scored, max_rank)
    assert rank_spec is not None
    score_spec = score_bin_spec(ev.scored, score_bins, min_bin_files)
    m = _measure(ev, rank_spec, score_spec, resamples=resamples, seed=seed, level=level)
    model = None
    if context:
        if context_resamples < 0 or not math.isfinite(context_penalty) or context_penalty < 0:
            raise GateInputError("context_resamples and context_penalty must be >= 0")
        model = fit_context_model(
            ev.scored,
            groups,
            resamples=context_resamples,
            seed=seed,
            level=level,
            penalty=context_penalty,
        )
    bootstrap: dict[str, Any] = {
        "unit": "instance",
        "resamples": resamples,
        "seed": seed,
        "level": level,
        "interval": "percentile",
        "rng": "random.Random(seed).choices",
    }
    return Calibration(
        retriever=retriever,
        data=_stamp(data, ev),
        bootstrap=bootstrap,
        precision=m.precision,
        precision_answered=m.precision_answered,
        recall=m.recall,
        fbeta=m.fbeta,
        files_per_answer=m.files_per_answer,
        by_rank=m.by_rank,
        by_score=m.by_score,
        context=model,
        checks=[],
        created_with=_versions(),
    )


def _where(value: float, interval: Interval) -> str:
    if value < interval.low:
        return "below"
    if value > interval.high:
        return "above"
    return "within"


def check(
    calibration: Calibration,
    predictions: Iterable[Prediction],
    gold: GoldSets,
    *,
    data: DataRef,
    resamples: int = 1000,
    seed: int = 0,
) -> Check:
    """Measure `calibration` again on other data (held out), with its bins held fixed.

    `consistent` is true when the held-out precision and answered-only precision points both lie
    in the calibration's intervals; the note says where each lies, and names the bins whose
    held-out point falls outside the calibrated interval. The calibration is not changed:
    `calibration.with_check(result)` returns a copy that holds it.
    """
    level = float(calibration.bootstrap.get("level", calibration.level))
    _check_parameters(resamples, level)
    ev = evaluate(predictions, gold)
    name = calibration.retriever.name
    others = [r for r in ev.other_retrievers if r != name]
    if others:
        raise CalibrationMismatchError(
            f"predictions name retriever(s) {', '.join(map(repr, others))}, but the calibration "
            f"is for {name!r}"
        )
    problem = _nothing_to_measure(ev, "check")
    if problem is not None:
        raise problem
    rank_spec = bin_spec_from_curve(calibration.by_rank)
    score_spec = None
    if calibration.by_score is not None and any(
        s.answered and s.files[0][1] is not None for s in ev.scored
    ):
        score_spec = bin_spec_from_curve(calibration.by_score)
    m = _measure(ev, rank_spec, score_spec, resamples=resamples, seed=seed, level=level)
    parts = []
    consistent = True
    for label, held, cal in (
        ("precision", m.precision, calibration.precision),
        ("answered-only precision", m.precision_answered, calibration.precision_answered),
    ):
        where = _where(held.point, cal)
        consistent = consistent and where == "within"
        parts.append(
            f"held-out {label} {held.point:.3f} lies {where} the calibration's "
            f"{cal.level:.0%} interval [{cal.low:.3f}, {cal.high:.3f}]"
        )
    outside = []
    for held_curve, cal_curve in (
        (m.by_rank, calibration.by_rank),
        (m.by_score, calibration.by_score),
    ):
        if held_curve is None or cal_curve is None:
            continue
        for b in held_curve.bins:
            cal_bin = cal_curve.lookup(b.lo)
            where = _where(b.precision.point, cal_bin.precision)
            if where != "within":
                outside.append(
                    f"{b.describe(held_curve.basis)} {b.precision.point:.2f} ({b.files} files) "
                    f"{where} [{cal_bin.precision.low:.2f}, {cal_bin.precision.high:.2f}]"
                )
    note = "; ".join(parts)
    if outside:
        note += "; bins outside their calibrated interval: " + ", ".join(outside)
    if m.dropped_bins:
        note += "; bins without held-out files: " + ", ".join(m.dropped_bins)
    if calibration.by_score is not None and m.by_score is None:
        note += "; the held-out predictions carry no scores, so the score curve is not checked"
    return Check(
        data=_stamp(data, ev),
        precision=m.precision,
        precision_answered=m.precision_answered,
        by_rank=m.by_rank,
        by_score=m.by_score,
        consistent=consistent,
        note=note,
    )
