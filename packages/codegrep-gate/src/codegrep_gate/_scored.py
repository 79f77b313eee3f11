"""Per-instance scores of a prediction set, file by file, for the calibration.

The accounting and the scores are grpo-rewards' scoring core (`account`, `score_ranked`), the
same swe-eval's Table 2 uses; this keeps, per instance, each answered file's rank, score and
hit, which the curves and bins need. Not for the curves or bins themselves (`_bins`,
`_calibrate`). Pure functions; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from codegrep_records import GoldLabel, Prediction
from grpo_rewards import account, answer_status, score_ranked

__all__ = ["Evaluated", "GoldSets", "Scored", "evaluate", "gold_files"]

GoldSets = Mapping[str, frozenset[str]] | Mapping[str, GoldLabel]


@dataclass(frozen=True, slots=True)
class Scored:
    """One instance with gold: its scores, and each of its files with rank, score and hit."""

    instance_id: str
    status: Literal["ok", "missing", "empty"]
    precision: float
    recall: float
    fbeta: float
    files: tuple[tuple[int, float | None, bool], ...]  # (rank, score, is gold), ranked

    @property
    def answered(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class Evaluated:
    scored: tuple[Scored, ...]  # sorted by instance id
    instances: int
    no_gold: int
    unknown: int
    other_retrievers: tuple[str, ...]


def gold_files(value: frozenset[str] | GoldLabel) -> frozenset[str]:
    return value.files if isinstance(value, GoldLabel) else frozenset(value)


def evaluate(predictions: Iterable[Prediction], gold: GoldSets) -> Evaluated:
    """grpo-rewards' accounting and ranked scores, file by file (see the module docstring)."""
    rows = list(predictions)
    retrievers = {pred.retriever for pred in rows if pred.retriever}
    acc = account(
        {iid: gold_files(value) for iid, value in gold.items()},
        rows,
        key=lambda pred: pred.instance_id,
    )
    scored: list[Scored] = []
    for iid, truth, found in acc.scored:
        status = answer_status(None if found is None else found.files)
        if found is None or status != "ok":
            scored.append(Scored(iid, status, 0.0, 0.0, 0.0, ()))
            continue
        score = score_ranked(found.files, truth, beta=0.5)
        scores = found.scores
        scored.append(
            Scored(
                iid,
                "ok",
                score.precision,
                score.recall,
                score.fbeta,
                tuple(
                    (k + 1, None if scores is None else scores[j], hit)
                    for k, (j, hit) in enumerate(zip(score.first_index, score.hits, strict=True))
                ),
            )
        )
    return Evaluated(
        tuple(scored), len(gold), len(acc.no_gold), len(acc.unknown), tuple(sorted(retrievers))
    )
