"""Rendering of Table 2-style summaries: rich terminal table, Markdown, CSV and JSON.

Rendering only; the numbers come from `swe_eval.metrics`.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Sequence
from enum import StrEnum

from codegrep_records import RowProblem

from swe_eval._markdown import md_cell
from swe_eval.metrics import PairedDifference, SystemSummary

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "TableFormat",
    "render_table",
]

#: `schema_version` of the JSON report (`swe-eval retrieval -f json`): the shape of `systems`,
#: `paired` and `skipped_rows`. A reader treats a report without it as version 1.
REPORT_SCHEMA_VERSION = 1

# (metric key, column title, show interval)
_COLUMNS: tuple[tuple[str, str, bool], ...] = (
    ("fbeta", "Fβ mean", True),
    ("fbeta_median", "Fβ median", True),
    ("precision", "P", True),
    ("recall", "R", True),
    ("f1", "F1", True),
    ("fbeta_ge", "Fβ≥0.8", True),
)
_TAIL: tuple[tuple[str, str, bool], ...] = (
    ("n_files", "files", False),
    ("turns", "turns", False),
)


class TableFormat(StrEnum):
    TABLE = "table"
    MARKDOWN = "markdown"
    CSV = "csv"
    JSON = "json"


def _columns(summary: SystemSummary) -> list[tuple[str, str, bool]]:
    accs = [(k, k, False) for k in summary.metrics if k.startswith("acc@")]
    return [*_COLUMNS, *accs, *_TAIL]


def _rows(
    summaries: Sequence[SystemSummary], by_repo: bool, ci: bool
) -> tuple[list[str], list[list[str]]]:
    if not summaries:
        return [], []
    cols = _columns(summaries[0])
    header = ["system", "n", *(title for _, title, _ in cols), "missing", "empty"]
    rows = []
    for s in summaries:
        entries = [(s.name, s)]
        if by_repo:
            entries += [(f"  {s.name} · {repo}", sub) for repo, sub in s.per_repo.items()]
        for label, sub in entries:
            cells = [label, str(sub.n)]
            for key, _, with_ci in cols:
                est = sub.metrics.get(key)
                digits = 2 if key in ("n_files", "turns") else 3
                cells.append(est.fmt(digits, ci and with_ci) if est else "–")
            cells += [str(sub.missing), str(sub.empty)]
            rows.append(cells)
    return header, rows


def _diff_rows(diffs: Sequence[PairedDifference]) -> tuple[list[str], list[list[str]]]:
    header = ["a − b", "metric", "n", "mean diff [95% CI]", "p (two-sided)"]
    rows = [
        [f"{d.a} − {d.b}", d.metric, str(d.n), d.diff.fmt(3), f"{d.p_value:.4f}"] for d in diffs
    ]
    return header, rows


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    # Names come from the predictions files (`retriever`): every cell is escaped.
    out = ["| " + " | ".join(map(md_cell, header)) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(map(md_cell, r)) + " |" for r in rows]
    return "\n".join(out) + "\n"


def render_table(
    summaries: Sequence[SystemSummary],
    fmt: TableFormat | str = TableFormat.MARKDOWN,
    *,
    diffs: Sequence[PairedDifference] = (),
    by_repo: bool = False,
    ci: bool = True,
    title: str | None = None,
    skipped: Sequence[RowProblem] = (),
) -> str:
    """The summaries (and paired differences) as text in `fmt`.

    TABLE renders through rich and returns the text it would print (no colour codes). JSON
    says its `schema_version` (`REPORT_SCHEMA_VERSION`) and also carries `skipped`, the input
    rows the readers skipped, as `skipped_rows`: a total, a count per file and every row with
    its reason (the other formats leave that to the caller's log).
    """
    fmt = TableFormat(fmt)
    if fmt is TableFormat.JSON:
        payload = {
            "schema_version": REPORT_SCHEMA_VERSION,
            "title": title,
            "systems": [s.model_dump(mode="json") for s in summaries],
            "paired": [d.model_dump(mode="json") for d in diffs],
            "skipped_rows": {
                "total": len(skipped),
                "by_file": dict(Counter(p.path for p in skipped)),
                "rows": [{"path": p.path, "line": p.line, "message": p.message} for p in skipped],
            },
        }
        return json.dumps(payload, indent=2) + "\n"
    header, rows = _rows(summaries, by_repo, ci)
    if fmt is TableFormat.CSV:
        buf = io.StringIO()
        writer = csv.writer(buf)
        # CSV is for programs: plain values, intervals in their own columns.
        cols = _columns(summaries[0]) if summaries else []
        head = ["system", "repo", "n"]
        for key, _, _ in cols:
            head += [key, f"{key}_low", f"{key}_high"]
        writer.writerow([*head, "missing", "empty", "no_gold", "unknown"])
        for s in summaries:
            subs = [("", s), *(s.per_repo.items() if by_repo else [])]
            for repo, sub in subs:
                cells: list[object] = [s.name, repo, sub.n]
                for key, _, _ in cols:
                    est = sub.metrics.get(key)
                    cells += [est.value, est.low, est.high] if est else ["", "", ""]
                writer.writerow([*cells, sub.missing, sub.empty, sub.no_gold, sub.unknown])
        for d in diffs:
            writer.writerow(
                [
                    f"{d.a} - {d.b}",
                    "",
                    d.n,
                    f"diff_{d.metric}",
                    d.diff.value,
                    d.diff.low,
                    d.diff.high,
                    f"p={d.p_value:.6f}",
                ]
            )
        return buf.getvalue()
    if fmt is TableFormat.MARKDOWN:
        parts = [f"**{md_cell(title)}**\n\n" if title else "", _markdown(header, rows)]
        if diffs:
            parts += ["\n", _markdown(*_diff_rows(diffs))]
        return "".join(parts)
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Cells as `Text`: a name is shown as written, never read as rich markup ("[/bold]" in a
    # `retriever` was a MarkupError traceback).
    console = Console(file=io.StringIO(), width=240, color_system=None)
    table = Table(title=Text(title) if title else None)
    for h in header:
        table.add_column(h, overflow="fold")
    for r in rows:
        table.add_row(*(Text(x) for x in r))
    console.print(table)
    if diffs:
        dh, dr = _diff_rows(diffs)
        dt = Table(title="paired bootstrap")
        for h in dh:
            dt.add_column(h)
        for r in dr:
            dt.add_row(*(Text(x) for x in r))
        console.print(dt)
    out = console.file
    assert isinstance(out, io.StringIO)
    return out.getvalue()
