"""The scoring core: ranked per-instance scores and the macro accounting of a prediction set
against gold sets.

swe-eval's Table 2 (`swe_eval.metrics`) and codegrep-gate's calibration both score with these,
so that the precision a report prints and the precision the gate acts on are one number by
construction (they used to be two copies held equal by a test). It lives here, beside the
F-beta it uses; the intervals around those figures are codegrep-records' `ClusterBootstrap`.

The accounting (`account`):
- every gold id with a non-empty gold set is scored once (a macro average), in sorted id order;
- a gold id without a row, or whose row names no file, is scored 0 (`missing`, `empty`);
- a gold id whose gold set is empty is left out and listed (`no_gold`);
- rows for ids outside the gold sets are ignored and listed (`unknown`); for an id named twice,
  the first row is used.

A file named twice in one answer is one file at its first rank (`score_ranked`): counted twice
it would give a recall, and an F-beta, above 1.

Pure functions; no I/O; stdlib only. Not for a training reward (`_rewards`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from grpo_rewards._metrics import fbeta_from_counts

__all__ = [
    "Accounting",
    "AnswerStatus",
    "RankedScore",
    "account",
    "answer_status",
    "score_ranked",
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
