"""How many of the ranked files to answer, chosen for the score the answer is judged by (F0.5).

`ExpectedFCut` answers the top k files whose expected F0.5 is highest. The expectation is over
which candidates are gold (each with its recalibrated probability, independently) and over how
many gold files the candidates miss (the training instances' distribution of that count), with
grpo-rewards' `fbeta_from_counts`, the F-beta every reward and figure uses. Under independence
the best answer of any size is the top k of the ranking, so choosing k is choosing the set.

Why a decision and not a threshold: F0.5 is won or lost on the set, and a second file is worth
answering only when it adds more expected hits than it costs in precision, which depends on the
first file's probability, on how likely a second gold file is, and on how many gold files the
candidates miss (a threshold on one probability sees none of that). The ranker's probabilities
are fitted per candidate and are not calibrated as a set, so the cut first maps them through a
logistic (`platt`: slope and intercept on the logit) fitted by likelihood on out-of-fold
probabilities of the training instances, never on the rows the ranker was fitted on
(`ranker.fit_platt`, the ranker's own regression on one feature).

Pure functions and a frozen record; the standard library and grpo-rewards only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grpo_rewards import fbeta_from_counts

from codegrep_model.errors import CodegrepModelError

__all__ = ["ExpectedFCut", "SelectionError", "expected_fbeta", "logit", "missing_pmf", "sigmoid"]

#: The most gold files the candidates can miss that the distribution tells apart (more count
#: as this many).
MAX_MISSING = 4
BETA = 0.5


class SelectionError(CodegrepModelError):
    """An answer selection that cannot be used (out of range, malformed)."""


def sigmoid(z: float) -> float:
    """1 / (1 + e^-z), without overflow (the ranker's probabilities too)."""
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def logit(p: float) -> float:
    """log(p / (1 - p)), p clipped to [1e-9, 1 - 1e-9]."""
    p = min(max(p, 1e-9), 1 - 1e-9)
    return math.log(p / (1 - p))


def _poisson_binomial(probs: Sequence[float]) -> list[float]:
    """P(exactly j of the independent events happen), j = 0..len(probs)."""
    pmf = [1.0]
    for p in probs:
        nxt = [0.0] * (len(pmf) + 1)
        for j, q in enumerate(pmf):
            nxt[j] += q * (1 - p)
            nxt[j + 1] += q * p
        pmf = nxt
    return pmf


def _convolve(a: Sequence[float], b: Sequence[float]) -> list[float]:
    out = [0.0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                out[i + j] += x * y
    return out


def expected_fbeta(
    probs: Sequence[float], k: int, missing: Sequence[float], beta: float = BETA
) -> float:
    """E[F-beta] of answering the first `k` of `probs` (gold probabilities, in answer order),
    the candidates' gold events independent, and `missing[m]` the probability that m gold
    files are not among the candidates at all.

    >>> round(expected_fbeta([0.9, 0.1], 1, [1.0]), 4)  # a likely file alone ...
    0.885
    >>> round(expected_fbeta([0.9, 0.1], 2, [1.0]), 4)  # ... beats adding an unlikely one
    0.5456
    >>> expected_fbeta([0.6, 0.6], 2, [1.0]) > expected_fbeta([0.6, 0.6], 1, [1.0])  # two even
    True
    """
    if k <= 0 or not probs:
        return 0.0
    hits = _poisson_binomial(probs[:k])
    others = _convolve(_poisson_binomial(probs[k:]), missing or [1.0])
    total = 0.0
    for t, pt in enumerate(hits):
        if not t or not pt:
            continue
        for g, pg in enumerate(others):
            if pg:
                total += pt * pg * fbeta_from_counts(t, k, t + g, beta)
    return total


@dataclass(frozen=True)
class ExpectedFCut:
    """Answer the first k ranked files, k in 1..max_files maximizing the expected F0.5 of the
    recalibrated probabilities `sigmoid(slope * logit(p) + intercept)`, with `missing` the
    distribution of gold files outside the candidates. Ties go to the smaller answer."""

    slope: float = 1.0
    intercept: float = 0.0
    missing: tuple[float, ...] = (1.0,)
    max_files: int = 3

    def __post_init__(self) -> None:
        problems = []
        if not (math.isfinite(self.slope) and math.isfinite(self.intercept)):
            problems.append(f"slope {self.slope} and intercept {self.intercept} must be finite")
        if self.max_files < 1:
            problems.append(f"max_files {self.max_files} must be at least 1")
        if (
            not self.missing
            or len(self.missing) > MAX_MISSING + 1
            or any(not math.isfinite(x) or x < 0 for x in self.missing)
            or abs(sum(self.missing) - 1.0) > 1e-6
        ):
            problems.append(
                f"missing {list(self.missing)} must be 1 to {MAX_MISSING + 1} non-negative "
                "probabilities summing to 1"
            )
        if problems:
            raise SelectionError("answer selection out of range: " + "; ".join(problems))

    def calibrated(self, probs: Sequence[float]) -> list[float]:
        return [sigmoid(self.slope * logit(p) + self.intercept) for p in probs]

    def take(self, probs: Sequence[float]) -> int:
        """How many of `probs` (the ranker's, sorted, highest first) to answer."""
        if not probs:
            return 0
        cal = self.calibrated(probs)
        best_k, best = 1, -1.0
        for k in range(1, min(len(cal), self.max_files) + 1):
            value = expected_fbeta(cal, k, self.missing)
            if value > best + 1e-12:
                best_k, best = k, value
        return best_k

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "expected_f",
            "slope": round(self.slope, 6),
            "intercept": round(self.intercept, 6),
            "missing": [round(x, 6) for x in self.missing],
            "max_files": self.max_files,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExpectedFCut:
        missing = tuple(float(x) for x in data["missing"])
        total = sum(missing)
        if total > 0:  # six decimals written: renormalize what rounding moved
            missing = tuple(x / total for x in missing)
        return cls(
            slope=float(data["slope"]),
            intercept=float(data["intercept"]),
            missing=missing,
            max_files=int(data["max_files"]),
        )


def missing_pmf(counts: Sequence[int]) -> tuple[float, ...]:
    """The distribution of the number of gold files outside the candidates, from one count per
    training instance (more than MAX_MISSING counts as MAX_MISSING)."""
    if not counts:
        return (1.0,)
    top = min(MAX_MISSING, max(counts))
    pmf = [0.0] * (top + 1)
    for c in counts:
        pmf[min(max(c, 0), top)] += 1
    return tuple(x / len(counts) for x in pmf)
