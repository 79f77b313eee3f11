"""Set metrics over file paths and line ranges (CodeScout's hierarchical F1 is built on `fbeta`
in `_codescout`).

Everything here is a pure function of its arguments. Paths are expected already normalized
(`normalize_paths`); the convenience wrappers in `_rewards` do that. Not for ranking metrics
(Acc@k, MRR): those belong to evaluation, not to a training reward.

Conventions, chosen so that a reward can never be earned by saying nothing:
- an empty prediction has precision 0; an empty gold set has recall 0;
- F-beta is 0 when precision and recall are both 0 (and so whenever either set is empty).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from grpo_rewards._answer import LineRange

__all__ = [
    "SetScores",
    "fbeta",
    "fbeta_from_counts",
    "fbeta_line_ranges",
    "line_range_scores",
    "precision",
    "recall",
    "set_scores",
]


@dataclass(frozen=True)
class SetScores:
    """Precision, recall and F-beta of one prediction, with the counts they come from."""

    true_positives: int
    predicted: int
    gold: int
    beta: float
    precision: float
    recall: float
    fbeta: float


def fbeta_from_counts(true_positives: int, predicted: int, gold: int, beta: float = 0.5) -> float:
    """F-beta = (1 + β²)·P·R / (β²·P + R) from counts; β < 1 favours precision."""
    if beta < 0:
        raise ValueError(f"beta must be >= 0, got {beta}")
    if true_positives == 0 or predicted == 0 or gold == 0:
        return 0.0
    p = true_positives / predicted
    r = true_positives / gold
    b2 = beta * beta
    return (1.0 + b2) * p * r / (b2 * p + r)


def set_scores(predicted: Iterable[str], gold: Iterable[str], *, beta: float = 0.5) -> SetScores:
    """Precision, recall and F-beta of a predicted set against a gold set (duplicates collapse)."""
    for name, value in (("predicted", predicted), ("gold", gold)):
        if isinstance(value, str | bytes):
            raise TypeError(f"{name} must be a collection of paths, got the string {value!r}")
    pred = set(predicted)
    truth = set(gold)
    tp = len(pred & truth)
    return SetScores(
        true_positives=tp,
        predicted=len(pred),
        gold=len(truth),
        beta=beta,
        precision=tp / len(pred) if pred else 0.0,
        recall=tp / len(truth) if truth else 0.0,
        fbeta=fbeta_from_counts(tp, len(pred), len(truth), beta),
    )


def precision(predicted: Iterable[str], gold: Iterable[str]) -> float:
    """|P ∩ G| / |P|, 0 for an empty prediction."""
    return set_scores(predicted, gold).precision


def recall(predicted: Iterable[str], gold: Iterable[str]) -> float:
    """|P ∩ G| / |G|, 0 for an empty gold set."""
    return set_scores(predicted, gold).recall


def fbeta(predicted: Iterable[str], gold: Iterable[str], *, beta: float = 0.5) -> float:
    """File-level F-beta (CodeGrep: β = 0.5, precision-biased).

    >>> round(fbeta({"config.py", "main.py"}, {"config.py"}), 3)
    0.556
    """
    return set_scores(predicted, gold, beta=beta).fbeta


# ---------------------------------------------------------------- line ranges


def _merge(ranges: Iterable[LineRange]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for r in sorted(ranges):
        if merged and r.start <= merged[-1][1] + 1:
            if r.end > merged[-1][1]:
                merged[-1] = (merged[-1][0], r.end)
        else:
            merged.append((r.start, r.end))
    return merged


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if lo <= hi:
            total += hi - lo + 1
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def line_range_scores(
    predicted: Mapping[str, Sequence[LineRange]],
    gold: Mapping[str, Sequence[LineRange]],
    *,
    beta: float = 0.5,
) -> SetScores:
    """Line-level precision/recall/F-beta: lines only match within the same file.

    Each side is the set of (file, line) pairs covered by its ranges (overlapping ranges count a
    line once). Counts are pooled over files, so a long range weighs by its length. A gold set
    without any range (a CATM-only label) makes the score 0, the bias the CodeGrep paper names as
    one reason v3 drops this term.
    """
    pred_m = {p: _merge(rs) for p, rs in predicted.items()}
    gold_m = {p: _merge(rs) for p, rs in gold.items()}
    n_pred = sum(e - s + 1 for rs in pred_m.values() for s, e in rs)
    n_gold = sum(e - s + 1 for rs in gold_m.values() for s, e in rs)
    tp = sum(_overlap(rs, gold_m[p]) for p, rs in pred_m.items() if p in gold_m)
    return SetScores(
        true_positives=tp,
        predicted=n_pred,
        gold=n_gold,
        beta=beta,
        precision=tp / n_pred if n_pred else 0.0,
        recall=tp / n_gold if n_gold else 0.0,
        fbeta=fbeta_from_counts(tp, n_pred, n_gold, beta),
    )


def fbeta_line_ranges(
    predicted: Mapping[str, Sequence[LineRange]],
    gold: Mapping[str, Sequence[LineRange]],
    *,
    beta: float = 0.5,
) -> float:
    """Line-range F-beta (see `line_range_scores`)."""
    return line_range_scores(predicted, gold, beta=beta).fbeta
