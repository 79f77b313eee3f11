"""Turning a ranking into a short answer: top-k and score cuts, and choosing one on a dev set.

A baseline writes its whole ranking (files with scores); the cut decides how many files are
injected. `sweep_cuts` scores every candidate cut on a gold set so the best one can be chosen on
one set (SWE-bench Lite) and then applied unchanged elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from codegrep_records import GoldLabel, Prediction

from swe_eval.metrics import evaluate

__all__ = ["Cut", "CutResult", "apply_cut", "sweep_cuts"]


@dataclass(frozen=True)
class Cut:
    """Keep scores >= `min_score`, then >= `relative` × the top score, then the first k files."""

    top_k: int | None = None
    min_score: float | None = None
    relative: float | None = None

    def label(self) -> str:
        parts = []
        if self.min_score is not None:
            parts.append(f"score>={self.min_score:g}")
        if self.relative is not None:
            parts.append(f"rel>={self.relative:g}")
        if self.top_k is not None:
            parts.append(f"top{self.top_k}")
        return ",".join(parts) or "all"


def apply_cut(pred: Prediction, cut: Cut) -> Prediction:
    files = list(pred.files)
    scores = list(pred.scores) if pred.scores is not None else None
    if scores is not None and (cut.min_score is not None or cut.relative is not None):
        floor = cut.min_score if cut.min_score is not None else float("-inf")
        if cut.relative is not None and scores:
            floor = max(floor, cut.relative * scores[0])
        keep = [i for i, s in enumerate(scores) if s >= floor]
        files = [files[i] for i in keep]
        scores = [scores[i] for i in keep]
    if cut.top_k is not None:
        files = files[: cut.top_k]
        scores = scores[: cut.top_k] if scores is not None else None
    return pred.model_copy(
        update={"files": tuple(files), "scores": tuple(scores) if scores is not None else None}
    )


@dataclass(frozen=True)
class CutResult:
    cut: Cut
    fbeta: float
    precision: float
    recall: float
    mean_files: float


def sweep_cuts(
    gold: Mapping[str, GoldLabel],
    rankings: Iterable[Prediction],
    *,
    top_ks: Sequence[int] = tuple(range(1, 11)),
    relatives: Sequence[float] = (),
    beta: float = 0.5,
) -> list[CutResult]:
    """Every cut's macro F-beta, precision, recall and mean answer size; best F-beta first."""
    preds = list(rankings)
    cuts = [Cut(top_k=k) for k in top_ks]
    cuts += [Cut(relative=r, top_k=max(top_ks) if top_ks else None) for r in relatives]
    results = []
    for cut in cuts:
        ev = evaluate(gold, (apply_cut(p, cut) for p in preds), beta=beta, ks=(1,))
        n = max(len(ev.scores), 1)
        results.append(
            CutResult(
                cut,
                float(ev.column("fbeta").sum() / n),
                float(ev.column("precision").sum() / n),
                float(ev.column("recall").sum() / n),
                float(ev.column("n_files").sum() / n),
            )
        )
    return sorted(results, key=lambda r: -r.fbeta)
