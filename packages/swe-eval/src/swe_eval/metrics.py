"""Per-instance retrieval scores, their macro averages and 95% bootstrap intervals.

The columns are the CodeGrep paper's Table 2 (F-beta mean and median, precision, recall, share of
instances with F-beta >= 0.8, turns) plus F1 (CodeScout) and acc@k (LocAgent). Every score is a
macro average over instances: each instance counts once, whatever its number of gold files.

The denominator is fixed by the gold set, never by the predictions:
- an instance without a prediction row scores 0 and is counted as `missing`;
- a prediction with no files scores 0 and is counted as `empty`;
- an instance whose gold set is empty (e.g. its patch only adds files) cannot be scored; it is
  left out and counted as `no_gold`;
- predictions for ids outside the gold set are ignored and counted as `unknown`.

acc@k follows LocAgent's `eval_metric.py`: 1 when every gold file (at most k of them) is among the
top k predictions, i.e. |top_k ∩ G| >= min(k, |G|); a full-recall@k.

The per-instance scores and the accounting are grpo-rewards' scoring core (`score_ranked`,
`account`), which codegrep-gate's calibration uses too: the precision here and the one the gate
acts on are one number by construction.

The bootstrap intervals and the paired p-value are the same core's `ClusterBootstrap`,
`percentile_interval` and `two_sided_p` (stdlib, seeded with `random.Random(seed)`).

Pure functions; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from codegrep_records import GoldLabel, Prediction
from codegrep_records.stats import ClusterBootstrap, Ratio, percentile_interval, two_sided_p
from grpo_rewards import account, answer_status, fbeta_from_counts, score_ranked
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict

__all__ = [
    "DEFAULT_KS",
    "Estimate",
    "InstanceScore",
    "PairedDifference",
    "ScoreStatus",
    "SystemEval",
    "SystemSummary",
    "evaluate",
    "paired_difference",
    "score_instance",
    "summarize",
]

DEFAULT_KS = (1, 3, 5, 10)
# Table 2's "high-quality retrieval" column.
HIGH_QUALITY = 0.8


class ScoreStatus(StrEnum):
    OK = "ok"
    EMPTY = "empty"
    MISSING = "missing"


@dataclass(frozen=True, slots=True)
class InstanceScore:
    instance_id: str
    repo: str
    status: ScoreStatus
    n_gold: int
    n_pred: int
    hits: int
    precision: float
    recall: float
    fbeta: float
    f1: float
    acc: tuple[float, ...]  # aligned with the `ks` of the evaluation
    turns: float | None


def score_instance(
    gold: frozenset[str],
    prediction: Prediction | None,
    *,
    instance_id: str | None = None,
    repo: str = "",
    beta: float = 0.5,
    ks: Sequence[int] = DEFAULT_KS,
) -> InstanceScore:
    """Score one ranked prediction against a non-empty gold set (paths already normalized)."""
    if not gold:
        raise ValueError("an empty gold set cannot be scored")
    iid = instance_id or (prediction.instance_id if prediction else "")
    turns = prediction.turns if prediction else None
    status = answer_status(None if prediction is None else prediction.files)
    if prediction is None or status != "ok":
        return InstanceScore(
            iid, repo, ScoreStatus(status), len(gold), 0, 0, 0.0, 0.0, 0.0, 0.0,
            (0.0,) * len(ks), turns,
        )  # fmt: skip
    # grpo-rewards' core: a file named twice is one file (recall and F-beta could pass 1)
    score = score_ranked(prediction.files, gold, beta=beta)
    files = score.files
    acc = []
    for k in ks:
        top_hits = sum(score.hits[:k])
        acc.append(1.0 if top_hits >= min(k, len(gold)) else 0.0)
    return InstanceScore(
        iid,
        repo,
        ScoreStatus.OK,
        len(gold),
        len(files),
        score.true_positives,
        score.precision,
        score.recall,
        score.fbeta,
        fbeta_from_counts(score.true_positives, len(files), len(gold), 1.0),
        tuple(acc),
        turns,
    )


@dataclass(frozen=True)
class SystemEval:
    """Per-instance scores of one system on one gold set, plus the accounting of what was left."""

    name: str
    beta: float
    ks: tuple[int, ...]
    scores: tuple[InstanceScore, ...]
    no_gold: tuple[str, ...]
    unknown: tuple[str, ...]

    def column(self, metric: str) -> NDArray[np.float64]:
        """One per-instance metric as an array, in instance order ('turns' skips None)."""
        if metric.startswith("acc@"):
            j = self.ks.index(int(metric[4:]))
            return np.fromiter((s.acc[j] for s in self.scores), float, len(self.scores))
        if metric == "fbeta_ge":
            return np.fromiter(
                (1.0 if s.fbeta >= HIGH_QUALITY else 0.0 for s in self.scores),
                float,
                len(self.scores),
            )
        if metric == "turns":
            return np.array([s.turns for s in self.scores if s.turns is not None], dtype=float)
        if metric == "n_files":
            return np.fromiter((s.n_pred for s in self.scores), float, len(self.scores))
        return np.fromiter((getattr(s, metric) for s in self.scores), float, len(self.scores))

    def restrict(
        self, keep: Callable[[InstanceScore], bool], name: str | None = None
    ) -> SystemEval:
        return SystemEval(
            name or self.name,
            self.beta,
            self.ks,
            tuple(s for s in self.scores if keep(s)),
            self.no_gold,
            self.unknown,
        )


def evaluate(
    gold: Mapping[str, GoldLabel],
    predictions: Iterable[Prediction],
    *,
    repos: Mapping[str, str] | None = None,
    name: str = "system",
    beta: float = 0.5,
    ks: Sequence[int] = DEFAULT_KS,
) -> SystemEval:
    """Score `predictions` on every instance of `gold`, in sorted instance-id order."""
    acc = account(
        {iid: label.files for iid, label in gold.items()},
        predictions,
        key=lambda pred: pred.instance_id,
    )
    repos = repos or {}
    ks = tuple(ks)
    scores = tuple(
        score_instance(files, found, instance_id=iid, repo=repos.get(iid, ""), beta=beta, ks=ks)
        for iid, files, found in acc.scored
    )
    return SystemEval(name, beta, ks, scores, acc.no_gold, tuple(sorted(acc.unknown)))


class Estimate(BaseModel):
    """A point value and its bootstrap interval (low == high == value when n < 2)."""

    model_config = ConfigDict(frozen=True)

    value: float
    low: float
    high: float
    n: int

    def fmt(self, digits: int = 3, ci: bool = True) -> str:
        if math.isnan(self.value):
            return "–"
        if not ci or self.n < 2:
            return f"{self.value:.{digits}f}"
        return f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


class SystemSummary(BaseModel):
    """Table 2 row of one system (and, nested, one row per repository)."""

    model_config = ConfigDict(frozen=True)

    name: str
    n: int
    missing: int
    empty: int
    no_gold: int
    unknown: int
    metrics: dict[str, Estimate]
    per_repo: dict[str, SystemSummary] = {}


def _metric_names(ks: Sequence[int]) -> list[str]:
    return [
        "fbeta",
        "fbeta_median",
        "precision",
        "recall",
        "f1",
        "fbeta_ge",
        *(f"acc@{k}" for k in ks),
        "n_files",
        "turns",
    ]


def _summarize_scores(
    ev: SystemEval,
    *,
    n_resamples: int,
    confidence: float,
    seed: int,
    no_gold: int,
    unknown: int,
) -> SystemSummary:
    boot = ClusterBootstrap(len(ev.scores), n_resamples, seed)
    metrics: dict[str, Estimate] = {}
    for name in _metric_names(ev.ks):
        if name == "turns":
            # a cluster resample of the instances; the figure is the mean over those with turns
            turns = [s.turns for s in ev.scores]
            x = ev.column("turns")
            columns = [[t or 0.0 for t in turns], [float(t is not None) for t in turns]]
        else:
            x = ev.column("fbeta" if name == "fbeta_median" else name)
            columns = [x.tolist()]
        agg = np.median if name == "fbeta_median" else np.mean
        value = float(agg(x)) if len(x) else math.nan
        if math.isnan(value):
            low, high = value, value
        elif name == "fbeta_median":
            low, high = percentile_interval(value, boot.medians(columns[0]), confidence)
        else:  # a mean is a ratio of sums: the bootstrap's vectorized path
            ratio = Ratio(0, None) if name != "turns" else Ratio(0, 1)
            (dist,) = boot.distributions(columns, [ratio])
            low, high = percentile_interval(value, dist, confidence)
        metrics[name] = Estimate(value=value, low=low, high=high, n=len(x))
    statuses = [s.status for s in ev.scores]
    return SystemSummary(
        name=ev.name,
        n=len(ev.scores),
        missing=statuses.count(ScoreStatus.MISSING),
        empty=statuses.count(ScoreStatus.EMPTY),
        no_gold=no_gold,
        unknown=unknown,
        metrics=metrics,
    )


def summarize(
    ev: SystemEval,
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    by_repo: bool = True,
) -> SystemSummary:
    """Macro averages with percentile-bootstrap intervals (seeded, so reruns agree).

    The intervals are grpo-rewards' `ClusterBootstrap` (the one codegrep-gate calibrates with):
    every figure is recomputed on the same resamples of instances.
    """
    top = _summarize_scores(
        ev,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        no_gold=len(ev.no_gold),
        unknown=len(ev.unknown),
    )
    if not by_repo:
        return top
    per_repo = {}
    for repo in sorted({s.repo for s in ev.scores}):
        sub = ev.restrict(lambda s, r=repo: s.repo == r, name=repo)  # type: ignore[misc]
        per_repo[repo] = _summarize_scores(
            sub, n_resamples=n_resamples, confidence=confidence, seed=seed, no_gold=0, unknown=0
        )
    return top.model_copy(update={"per_repo": per_repo})


class PairedDifference(BaseModel):
    """Mean of a − b over the instances both were scored on, with a paired bootstrap."""

    model_config = ConfigDict(frozen=True)

    a: str
    b: str
    metric: str
    n: int
    diff: Estimate
    p_value: float


def paired_difference(
    a: SystemEval,
    b: SystemEval,
    *,
    metric: str = "fbeta",
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedDifference:
    """Paired bootstrap of the mean difference; instances are resampled jointly for a and b.

    The p-value is two-sided: twice the smaller share of resampled means on either side of 0
    (at least 1/n_resamples, never exactly 0); grpo-rewards' `two_sided_p`.
    """
    if metric in ("fbeta_median", "turns"):
        raise ValueError(f"paired difference is defined for per-instance means, not {metric}")
    ia = {s.instance_id: i for i, s in enumerate(a.scores)}
    ib = {s.instance_id: i for i, s in enumerate(b.scores)}
    common = sorted(set(ia) & set(ib))
    if len(common) < 2:
        raise ValueError(f"{a.name} and {b.name} share fewer than two scored instances")
    ca, cb = a.column(metric), b.column(metric)
    d = np.array([ca[ia[i]] - cb[ib[i]] for i in common])
    mean = float(d.mean())
    boot = ClusterBootstrap(len(d), n_resamples, seed)
    (dist,) = boot.distributions([d.tolist()], [Ratio(0, None)])
    p = two_sided_p(dist, n_resamples)
    low, high = percentile_interval(mean, dist, confidence)
    return PairedDifference(
        a=a.name,
        b=b.name,
        metric=metric,
        n=len(d),
        diff=Estimate(value=mean, low=low, high=high, n=len(d)),
        p_value=p,
    )
