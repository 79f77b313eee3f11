"""Running a retriever over instances: one tree per (repo, base commit), one prediction each.

Generic over the retriever (anything with `name` and `rank(tree, query)`) and over where trees
come from (`open_tree`), so the same loop serves BM25, the dense model and test fakes. Failures
are outcomes, not exceptions: the caller counts and reports them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from codegrep_records import Instance, Prediction

from swe_eval._corpus import FileSource

__all__ = ["PredictOutcome", "Retriever", "predict"]


class Retriever(Protocol):
    name: str

    def rank(self, source: FileSource, query: str) -> list[tuple[str, float]]: ...


@dataclass(frozen=True)
class PredictOutcome:
    instance_id: str
    prediction: Prediction | None
    error: str | None = None


def predict(
    instances: Iterable[Instance],
    retriever: Retriever,
    open_tree: Callable[[Instance], AbstractContextManager[FileSource]],
    *,
    name: str | None = None,
) -> Iterator[PredictOutcome]:
    """Rank files for each instance; an instance whose tree or ranking fails yields an error."""
    label = name or retriever.name
    for inst in instances:
        start = time.perf_counter()
        try:
            with open_tree(inst) as tree:
                ranked = retriever.rank(tree, inst.problem_statement)
            # Inside the try: a ranking the record refuses (a NaN score) is this instance's failure.
            prediction = Prediction(
                instance_id=inst.instance_id,
                files=tuple(p for p, _ in ranked),
                scores=tuple(s for _, s in ranked),
                latency_s=time.perf_counter() - start,
                retriever=label,
            )
        except Exception as exc:  # a bad commit or tree must not end a 300-instance run
            yield PredictOutcome(inst.instance_id, None, f"{type(exc).__name__}: {exc}")
            continue
        yield PredictOutcome(inst.instance_id, prediction)
