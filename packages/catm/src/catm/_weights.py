"""Stage 3: intensity-aware weights from reasoning length, and the gold set.

    w̃(f) = 1 − exp(−ln 2 · l(f) / β),   w(f) = w̃(f) / mean(w̃),   G = patch ∪ {f : w(f) ≥ 0.15}

β is the median of l over every (instance, file) pair that reaches stage 3, so a file whose
post-reasoning is as long as the corpus median gets w̃ = 0.5. Pure functions, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

GOLD_THRESHOLD = 0.15
_LN2 = math.log(2.0)


def median_beta(lengths: Sequence[int]) -> float:
    """β: the median reasoning length; the median of the positive ones if that is 0; 1.0 if none.

    A zero median would make every weight 0/0; it happens only on corpora where most reads are
    followed by no text at all, and then the typical *non-empty* reasoning is the useful scale.
    """
    for values in (sorted(lengths), sorted(v for v in lengths if v > 0)):
        if not values:
            continue
        mid = len(values) // 2
        beta = float(values[mid]) if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
        if beta > 0:
            return beta
    return 1.0


def saturation_weight(length: int, beta: float) -> float:
    """w̃(f): 0 for no reasoning, 0.5 at the median, approaching 1 for long reasoning."""
    if beta <= 0:
        raise ValueError("beta must be positive")
    return 1.0 - math.exp(-_LN2 * max(length, 0) / beta)


def normalized_weights(raw: Sequence[float]) -> tuple[list[float], float]:
    """w = w̃ / mean(w̃), so that the weights average 1; returns (weights, mean(w̃))."""
    if not raw:
        return [], 0.0
    mean = math.fsum(raw) / len(raw)
    if mean <= 0:
        return [0.0 for _ in raw], 0.0
    return [value / mean for value in raw], mean
