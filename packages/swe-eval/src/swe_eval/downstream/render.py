"""The downstream report as text: a rich terminal table, Markdown or JSON.

Rendering only; the figures come from `swe_eval.downstream.analysis`.
"""

from __future__ import annotations

import io
import math
from collections import Counter
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from codegrep_records import RowProblem
from codegrep_records.io import dumps_json
from pydantic import BaseModel, ConfigDict

from swe_eval._markdown import md_cell
from swe_eval.downstream.analysis import (
    CaseRow,
    ConfigSummary,
    PairedComparison,
    PooledComparison,
    PrecisionBenefit,
    Spread,
)
from swe_eval.downstream.records import TokenBasis
from swe_eval.metrics import Estimate

__all__ = [
    "DownstreamFormat",
    "DownstreamReport",
    "render_report",
    "report_notes",
]

_BASIS_TEXT = {
    TokenBasis.SUM_OF_CALLS: "prompt + completion tokens summed over every LLM call of the run",
    TokenBasis.FINAL_CONTEXT: (
        "the last request's prompt tokens + its completion tokens (the context at the end of "
        "the run; the records keep no earlier call's usage), not a sum over calls"
    ),
}


class DownstreamFormat(StrEnum):
    TABLE = "table"
    MARKDOWN = "markdown"
    JSON = "json"


#: `schema_version` of the JSON report (`swe-eval downstream report -f json`); a report without
#: it (written before it) is 1.
DOWNSTREAM_REPORT_SCHEMA_VERSION = 1


class DownstreamReport(BaseModel):
    """Everything `swe-eval downstream report` shows, as one record (the JSON output)."""

    model_config = ConfigDict(frozen=True)

    title: str | None
    denominator: int
    denominator_source: str
    baseline: str | None
    configs: list[ConfigSummary]
    paired: list[PairedComparison]
    precision_benefit: list[PrecisionBenefit]
    cases: list[CaseRow]
    notes: list[str]
    pooled: list[PooledComparison] = []
    # per configuration, the unresolved instances by cause (missing included): every id
    failure_ids: dict[str, dict[str, list[str]]] = {}
    resamples: int
    seed: int
    confidence: float


def report_notes(configs: Sequence[ConfigSummary], paired: Sequence[PairedComparison]) -> list[str]:
    """What a reader must know to read the figures: token bases, set-aside rows, gaps."""
    notes: list[str] = []
    for basis in sorted({c.token_basis for c in configs if c.token_basis is not None}):
        names = ", ".join(c.name for c in configs if c.token_basis is basis)
        notes.append(f"tokens of {names}: {_BASIS_TEXT[basis]}")
    for c in configs:
        if c.missing is None:
            notes.append(
                f"{c.name}: the report lists resolved ids only and no outputs were given, so "
                "instances without output cannot be told apart (missing: ?)"
            )
        if c.earlier_attempts:
            notes.append(
                f"{c.name}: {c.earlier_attempts} earlier attempt(s) set aside; only the last "
                "attempt of an instance is scored"
            )
        if c.duplicates:
            notes.append(f"{c.name}: {c.duplicates} duplicate output(s); the later line kept")
        if c.outside:
            notes.append(
                f"{c.name}: {c.outside} instance(s) in its outputs/report are not in the "
                "denominator; ignored"
            )
        if c.disagreements:
            notes.append(
                f"{c.name}: the outputs' own verdict differs from the report's on "
                f"{c.disagreements} instance(s); the report's is used"
            )
        if c.no_prompt_tokens:
            notes.append(
                f"{c.name}: {c.no_prompt_tokens} output(s) report 0 prompt tokens (the server "
                "did not count them): their tokens are completion tokens only"
            )
        if c.not_finished:
            notes.append(
                f"{c.name}: {c.not_finished} output(s) did not end with `finish` (round budget "
                "or a crash); their patch was still evaluated"
            )
    notes += [f"{p.b} vs {p.a}: {p.note}" for p in paired if p.note]
    return notes


def _nan(x: float) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _pct(e: Estimate, ci: bool = True) -> str:
    if _nan(e.value):
        return "–"
    if not ci or e.n < 2 or _nan(e.low):
        return f"{100 * e.value:.1f}%"
    return f"{100 * e.value:.1f}% [{100 * e.low:.1f}, {100 * e.high:.1f}]"


def _pp(e: Estimate) -> str:
    if _nan(e.value):
        return "–"
    out = f"{100 * e.value:+.1f} pp"
    if e.n >= 2 and not _nan(e.low):
        out += f" [{100 * e.low:+.1f}, {100 * e.high:+.1f}]"
    return out


def _rel(e: Estimate | None) -> str:
    if e is None or _nan(e.value):
        return "–"
    out = f"{100 * e.value:+.1f}%"
    if e.n >= 2 and not _nan(e.low):
        out += f" [{100 * e.low:+.1f}, {100 * e.high:+.1f}]"
    return out


def _count(x: float) -> str:
    return f"{x / 1000:.1f}K" if x >= 10_000 else f"{x:.1f}"


def _spread(s: Spread | None, tokens: bool = False) -> str:
    if s is None:
        return "–"
    fmt = _count if tokens else (lambda v: f"{v:.1f}")
    return f"{fmt(s.mean)} · {fmt(s.median)} (n={s.n})"


def _p(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def _config_rows(configs: Sequence[ConfigSummary]) -> tuple[list[str], list[list[str]]]:
    header = [
        "config",
        "n",
        "resolved",
        "resolve rate [95% CI]",
        "rounds / resolved (mean · median)",
        "tokens / resolved (mean · median)",
        "unresolved rounds (mean · median)",
        "missing",
        "other failures",
        "over round cap",
        "cost / resolved",
    ]
    rows = []
    for c in configs:
        failures = ", ".join(f"{k} {v}" for k, v in c.failures.items())
        failures = failures or ("?" if c.missing is None else "0")
        rows.append(
            [
                c.name,
                str(c.n),
                str(c.resolved),
                _pct(c.resolve_rate),
                _spread(c.rounds_resolved),
                _spread(c.tokens_resolved, tokens=True),
                _spread(c.rounds_unresolved),
                "?" if c.missing is None else str(c.missing),
                failures,
                "–" if c.over_round_cap is None else str(c.over_round_cap),
                f"${c.cost_per_resolved:.3f}" if c.cost_per_resolved is not None else "–",
            ]
        )
    # a column no configuration has a figure for (report-only runs: no rounds, no tokens)
    keep = [j for j, h in enumerate(header) if j < 4 or any(r[j] != "–" for r in rows)]
    return [header[j] for j in keep], [[r[j] for j in keep] for r in rows]


def _paired_rows(paired: Sequence[PairedComparison]) -> tuple[list[str], list[list[str]]]:
    header = [
        "B vs A",
        "n",
        "both",
        "A only",
        "B only",
        "neither",
        "McNemar p",
        "Δ resolve [95% CI]",
        "MDE (80%)",
        "co-resolved",
        "Δ rounds (co-resolved)",
        "Δ tokens (co-resolved)",
    ]
    rows = [
        [
            f"{p.b} vs {p.a}",
            str(p.n),
            str(p.both),
            str(p.a_only),
            str(p.b_only),
            str(p.neither),
            _p(p.mcnemar_p),
            _pp(p.delta),
            _mde(p.mde),
            str(p.co_resolved),
            _rel(p.rounds.relative if p.rounds else None),
            _rel(p.tokens.relative if p.tokens else None),
        ]
        for p in paired
    ]
    # the co-resolved columns when no pair has a figure for them (report-only runs)
    keep = [j for j, h in enumerate(header) if j < 10 or any(r[j] != "–" for r in rows)]
    return [header[j] for j in keep], [[r[j] for j in keep] for r in rows]


def _mde(mde: float | None) -> str:
    return f"±{100 * mde:.1f} pp" if mde is not None else "–"


def _pooled_rows(pooled: Sequence[PooledComparison]) -> tuple[list[str], list[list[str]]]:
    header = [
        "B vs A",
        "n",
        "runs A · B",
        "resolved per run A · B",
        "rate A",
        "rate B",
        "Δ resolve [95% CI]",
        "permutation p",
        "flip rate",
        "MDE (80%)",
    ]
    rows = [
        [
            f"{p.b} vs {p.a}",
            str(p.n),
            f"{p.repeats_a} · {p.repeats_b}",
            f"{'/'.join(map(str, p.resolved_a))} · {'/'.join(map(str, p.resolved_b))}",
            f"{100 * p.rate_a:.1f}%",
            f"{100 * p.rate_b:.1f}%",
            _pp(p.delta),
            _p(p.p_value),
            f"{100 * p.flip_rate:.1f}% ({p.flip_source})" if p.flip_rate is not None else "–",
            _mde(p.mde),
        ]
        for p in pooled
    ]
    return header, rows


def _failure_rows(
    failure_ids: dict[str, dict[str, list[str]]],
) -> tuple[list[str], list[list[str]]]:
    rows = [
        [config, cause, str(len(ids)), " ".join(ids)]
        for config, causes in failure_ids.items()
        for cause, ids in causes.items()
        if ids
    ]
    return ["config", "cause", "n", "instances"], rows


def _benefit_rows(rows: Sequence[PrecisionBenefit]) -> tuple[list[str], list[list[str]]]:
    header = [
        "config",
        "precision",
        "Δ resolve [95% CI]",
        "MDE (80%)",
        "McNemar p",
        "Δ rounds",
        "Δ tokens",
    ]
    out = [
        [
            r.config,
            f"{r.precision:.3f} ({r.precision_source})" if r.precision is not None else "–",
            _pp(r.resolve_delta),
            _mde(r.mde),
            _p(r.mcnemar_p),
            _rel(r.rounds_relative),
            _rel(r.tokens_relative),
        ]
        for r in rows
    ]
    return header, out


def _files(files: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(files[:limit])
    return shown + (f" (+{len(files) - limit})" if len(files) > limit else "")


def _yes(x: bool | None) -> str:
    return "–" if x is None else ("yes" if x else "no")


def _case_rows(cases: Sequence[CaseRow]) -> tuple[list[str], list[list[str]]]:
    header = [
        "instance",
        "config",
        "resolved",
        "failure",
        "rounds",
        "tokens",
        "tools",
        "opened before first edit",
        "injected",
        "injected opened (any · before edit)",
    ]
    rows = [
        [
            c.instance_id,
            c.config,
            _yes(c.resolved),
            c.failure.value if c.failure else "",
            "–" if c.rounds is None else str(c.rounds),
            "–" if c.tokens is None else _count(c.tokens),
            " ".join(f"{k}:{v}" for k, v in sorted(c.tools.items())),
            _files(c.files_opened_before_edit),
            "–" if c.injected is None else _files(c.injected, 2),
            f"{_yes(c.injected_opened)} · {_yes(c.injected_opened_before_edit)}",
        ]
        for c in cases
    ]
    return header, rows


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(map(md_cell, header)) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(map(md_cell, r)) + " |" for r in rows]
    return "\n".join(out) + "\n"


def _sections(report: DownstreamReport) -> list[tuple[str, list[str], list[list[str]]]]:
    sections = [("configurations", *_config_rows(report.configs))]
    if report.paired:
        sections.append(("paired (B vs A, same instances)", *_paired_rows(report.paired)))
    if report.pooled:
        sections.append(
            ("pooled over repeats (B vs A, same instances)", *_pooled_rows(report.pooled))
        )
    if report.precision_benefit:
        sections.append(
            (
                f"precision vs downstream benefit (vs {report.baseline})",
                *_benefit_rows(report.precision_benefit),
            )
        )
    if report.cases:
        sections.append(("cases", *_case_rows(report.cases)))
    header, rows = _failure_rows(report.failure_ids)
    if rows:
        sections.append(("failures by cause (every id)", header, rows))
    return sections


def _footer(report: DownstreamReport) -> list[str]:
    ci = f"{round(100 * report.confidence)}%"
    lines = [
        f"denominator: {report.denominator} instances ({report.denominator_source}); every "
        "instance counts, missing and failed ones as unresolved",
        f"intervals: {ci} percentile bootstrap over instances ({report.resamples} resamples, "
        f"seed {report.seed}); Δ rounds/tokens = mean(B) / mean(A) − 1 on co-resolved instances; "
        "McNemar: exact two-sided binomial test on the discordant pairs",
        "MDE: the smallest Δ resolve found with 80% power at α 0.05 (swe-eval downstream "
        "power; the model is in the README); a Δ inside ±MDE is not evidence of no effect",
    ]
    if report.pooled:
        lines.append(
            "pooled: per instance the share of an arm's runs that resolve it; Δ = mean of B's "
            "share − A's, bootstrap over instances with all repeats of an instance drawn "
            "together; p: exact run-label permutation test (each instance's runs relabeled)"
        )
    return lines + report.notes


def render_report(
    report: DownstreamReport,
    fmt: DownstreamFormat | str = DownstreamFormat.MARKDOWN,
    *,
    skipped: Sequence[RowProblem] = (),
) -> str:
    """The report as text; JSON also carries the skipped input rows (total, per file, each)."""
    fmt = DownstreamFormat(fmt)
    if fmt is DownstreamFormat.JSON:
        payload: dict[str, Any] = {"schema_version": DOWNSTREAM_REPORT_SCHEMA_VERSION}
        payload.update(report.model_dump(mode="json"))
        payload["skipped_rows"] = {
            "total": len(skipped),
            "by_file": dict(Counter(p.path for p in skipped)),
            "rows": [{"path": p.path, "line": p.line, "message": p.message} for p in skipped],
        }
        return dumps_json(payload, indent=2) + "\n"
    sections = _sections(report)
    if fmt is DownstreamFormat.MARKDOWN:
        parts = [f"**{md_cell(report.title)}**\n\n" if report.title else ""]
        for name, header, rows in sections:
            parts += [f"*{name}*\n\n", _markdown(header, rows), "\n"]
        parts += [f"- {md_cell(line)}\n" for line in _footer(report)]
        return "".join(parts)
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(file=io.StringIO(), width=240, color_system=None)
    if report.title:
        console.print(Text(report.title, style="bold"))
    for name, header, rows in sections:
        table = Table(title=name)
        for h in header:
            table.add_column(h, overflow="fold")
        for r in rows:
            table.add_row(*(Text(x) for x in r))
        console.print(table)
    for line in _footer(report):
        console.print(Text(f"- {line}"), soft_wrap=True)
    out = console.file
    assert isinstance(out, io.StringIO)
    return out.getvalue()
