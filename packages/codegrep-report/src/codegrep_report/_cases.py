"""The retrieval and downstream reports: per-instance cases from swe-eval's records.

Retrieval cases are typed records the caller fills; the downstream report is given as the
JSON form of `swe-eval downstream report -f json` (a documented output), so that this package
needs nothing of swe-eval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codegrep_report._page import json_ready, render_page, write_page
from codegrep_report._training import MAX_TEXT, parse_completion

__all__ = [
    "RetrievalCase",
    "RetrievalSummary",
    "write_downstream_report",
    "write_retrieval_report",
]

MAX_ISSUE = 20_000  # characters of an issue shown; the rest is cut with a note


@dataclass(frozen=True)
class RetrievalCase:
    """One system's answer for one instance, scored."""

    system: str
    instance_id: str
    repo: str
    issue: str
    files: tuple[str, ...]
    scores: tuple[float, ...] | None
    gold: tuple[str, ...]
    fbeta: float
    precision: float
    recall: float
    status: str = "scored"
    turns: float | None = None
    tool_calls: int | None = None
    #: The rollout as logged (a message list or text with `<tool_call>` blocks), when known.
    rollout: object = field(default=None, compare=False)


@dataclass(frozen=True)
class RetrievalSummary:
    """One system's summary row, as its scorer computed it: `n` instances, of which `missing`
    had no prediction and `empty` an empty answer; each figure a mean (missing instances count
    as 0) with its interval (`low`, `high`; equal to the mean when none was computed)."""

    system: str
    n: int
    missing: int
    empty: int
    fbeta: tuple[float, float, float]
    precision: tuple[float, float, float]
    recall: tuple[float, float, float]


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" … [{len(text)} chars]"


def write_retrieval_report(
    path: str | Path,
    cases: Sequence[RetrievalCase],
    *,
    title: str = "retrieval",
    beta: float = 0.5,
    summary: Sequence[RetrievalSummary] = (),
) -> Path:
    """Write the retrieval report: a summary row per system (`summary` when the scorer gives
    one, with its intervals; else the means of `cases`, without), then per instance the issue,
    the answer with scores, the gold, F-beta, and the rollout when the case has one. The page
    sorts worst first among the answered cases; a case whose status is `missing` (no
    prediction) is listed apart from a wrong answer."""
    rows = []
    for c in cases:
        row: dict[str, object] = {
            "sys": c.system,
            "id": c.instance_id,
            "repo": c.repo,
            "issue": _cut(c.issue, MAX_ISSUE),
            "files": [_cut(f, MAX_TEXT) for f in c.files],
            "scores": list(c.scores) if c.scores is not None else None,
            "gold": [_cut(f, MAX_TEXT) for f in c.gold],
            "f": c.fbeta,
            "p": c.precision,
            "rc": c.recall,
            "status": c.status,
            "t": c.turns,
            "c": c.tool_calls,
        }
        if c.rollout is not None:
            turns, answer = parse_completion(c.rollout)
            row["turns"], row["ans"] = turns, answer
        rows.append(row)
    table = [
        {
            "sys": r.system,
            "n": r.n,
            "missing": r.missing,
            "empty": r.empty,
            "f": list(r.fbeta),
            "p": list(r.precision),
            "rc": list(r.recall),
        }
        for r in summary
    ]
    payload = {"beta": beta, "cases": rows, "summary": table}
    html = render_page("retrieval", title, json_ready(payload))  # type: ignore[arg-type]
    return write_page(path, html)


def write_downstream_report(
    path: str | Path, report: Mapping[str, object], *, title: str | None = None
) -> Path:
    """Write the downstream report from the JSON form of `swe-eval downstream report`: Table 3
    (resolve rates with intervals, MDE when the report has one), the paired comparisons, and
    the per-instance case view."""
    data = json_ready(report)
    assert isinstance(data, dict)
    name = title or (data.get("title") if isinstance(data.get("title"), str) else None)
    html = render_page("downstream", str(name or "downstream"), {"report": data})
    return write_page(path, html)
