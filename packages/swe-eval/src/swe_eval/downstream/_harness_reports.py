"""Readers of a downstream run's harness report.

Harness reports (found by their keys): swebench 4.x/5.x run reports (`resolved_ids`,
`unresolved_ids`, `error_ids`, `empty_patch_ids`, `incomplete_ids`, 5.x `infra_failure_ids`,
`ambiguous_failure_ids`; OpenHands V1's derived `output.report.json` too), per-instance
`report.json` (a file, or a folder searched for them), OpenHands V0 `output.swebench_eval.md`,
AutoCodeRover's bucket report, SWE-agent's final report, and moatless resolved-by lists (JSON
Lines; pick the system with `system=`).

A bad row is skipped and reported with file and line; a file that cannot be read at all raises
`DatasetError`. Nothing is printed here.
Not for: agent outputs (`_agent_outputs`), instance and run lists (`_run_lists`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from codegrep_records import RecordFileError, RowProblem
from codegrep_records.io import read_text_file

from swe_eval.downstream._reader_values import _dict, _int, _load_json, _rows
from swe_eval.downstream.records import (
    Failure,
    HarnessReport,
    ReportKind,
    Verdict,
)
from swe_eval.errors import DatasetError

__all__ = [
    "read_harness_report",
]

# -- harness reports ----------------------------------------------------------------------------

_ACR_FAILURES: tuple[tuple[str, Failure], ...] = (
    ("no_generation", Failure.EMPTY_PATCH),
    ("install_fail", Failure.HARNESS_ERROR),
    ("reset_failed", Failure.HARNESS_ERROR),
    ("test_errored", Failure.HARNESS_ERROR),
    ("test_timeout", Failure.TIMEOUT),
    ("no_apply", Failure.PATCH_NOT_APPLIED),
)
_ACR_KEYS = frozenset({"generated", "with_logs", "applied", "no_apply", "no_generation"})
# swebench run report buckets, in the order a verdict is taken (an id in two lists: the first)
_SWEBENCH_FAILURES: tuple[tuple[str, Failure], ...] = (
    ("error_ids", Failure.HARNESS_ERROR),
    ("infra_failure_ids", Failure.HARNESS_ERROR),
    ("ambiguous_failure_ids", Failure.HARNESS_ERROR),
    ("empty_patch_ids", Failure.EMPTY_PATCH),
    # swebench's make_run_report puts here the instances of the dataset with no prediction
    # at all: no agent output (build_config keeps not_evaluated when an output exists)
    ("incomplete_ids", Failure.MISSING),
    ("skipped_ids", Failure.NOT_EVALUATED),
)
_MD_SECTIONS: dict[str, Failure | None] = {
    "error instances": Failure.HARNESS_ERROR,
    "empty patch instances": Failure.EMPTY_PATCH,
    "incomplete instances": Failure.MISSING,
    "unresolved instances": None,
}
_MD_ITEM = re.compile(r"^\s*[-*]\s+\[?([A-Za-z0-9_.\-/]+?__[A-Za-z0-9_.\-]+)\]?(?:\(.*\))?\s*$")
# ASCII digits, at most 12: int() reads other scripts' digits and refuses 4,300 of them.
_MD_CLAIM = re.compile(r"^\s*[-*]\s+([a-z ]+ instances):\s*([0-9]{1,12})\s*$", re.I)


def _ids(value: Any) -> list[str]:
    return [str(x) for x in value] if isinstance(value, list) else []


def _swebench_summary(p: Path, data: dict[str, Any]) -> HarnessReport:
    verdicts: dict[str, Verdict] = {}
    for iid in _ids(data.get("resolved_ids")):
        verdicts[iid] = Verdict(True)
    conflicts: dict[str, None] = {}
    for key, failure in _SWEBENCH_FAILURES:
        for iid in _ids(data.get(key)):
            if iid in verdicts and verdicts[iid].resolved:
                conflicts[iid] = None
            verdicts.setdefault(iid, Verdict(False, failure))
    for key in ("unresolved_ids", "completed_ids", "submitted_ids"):
        for iid in _ids(data.get(key)):
            # submitted but in no other list: swebench did not evaluate it
            why = Failure.NOT_EVALUATED if key == "submitted_ids" else None
            verdicts.setdefault(iid, Verdict(False, why))
    claimed = {k: v for k, v in data.items() if k.endswith("_instances") and _int(v) is not None}
    totals = _dict(data.get("totals"))  # OpenHands V1's derived output.report.json
    claimed.update({k: v for k, v in totals.items() if _int(v) is not None})
    return HarnessReport(
        str(p), ReportKind.SWEBENCH_SUMMARY, verdicts, True, claimed, conflicts=tuple(conflicts)
    )


def _instance_verdict(entry: dict[str, Any]) -> Verdict:
    if entry.get("resolved") is True:
        return Verdict(True)
    if entry.get("patch_is_None") is True or entry.get("patch_exists") is False:
        return Verdict(False, Failure.EMPTY_PATCH)
    if entry.get("infra_failure") is True:
        return Verdict(False, Failure.HARNESS_ERROR)
    if entry.get("patch_successfully_applied") is False:
        return Verdict(False, Failure.PATCH_NOT_APPLIED)
    return Verdict(False)


def _is_instance_report(data: dict[str, Any]) -> bool:
    return bool(data) and all(
        isinstance(v, dict) and isinstance(v.get("resolved"), bool) for v in data.values()
    )


def _instance_reports(p: Path, files: Iterable[Path]) -> HarnessReport:
    verdicts: dict[str, Verdict] = {}
    problems: list[RowProblem] = []
    for f in sorted(files):
        data = _load_json(f, refuse_links=f != p)  # found in a folder: a link is not followed
        if not isinstance(data, dict) or not _is_instance_report(data):
            problems.append(RowProblem(str(f), 1, "not a per-instance report.json"))
            continue
        for iid, entry in data.items():
            verdicts[iid] = _instance_verdict(entry)
    if not verdicts:
        raise DatasetError(f"{p}: no per-instance report.json with a verdict found")
    return HarnessReport(
        str(p), ReportKind.SWEBENCH_INSTANCE, verdicts, True, problems=tuple(problems)
    )


def _autocoderover(p: Path, data: dict[str, Any]) -> HarnessReport:
    verdicts = {iid: Verdict(True) for iid in _ids(data.get("resolved"))}
    for key, failure in _ACR_FAILURES:
        for iid in _ids(data.get(key)):
            verdicts.setdefault(iid, Verdict(False, failure))
    for key in ("applied", "with_logs", "generated"):
        for iid in _ids(data.get(key)):
            verdicts.setdefault(iid, Verdict(False))
    claimed = {k: len(v) for k, v in data.items() if isinstance(v, list)}
    return HarnessReport(str(p), ReportKind.AUTOCODEROVER, verdicts, True, claimed)


def _swe_agent(p: Path, data: dict[str, Any]) -> HarnessReport:
    verdicts = {iid: Verdict(True) for iid in _ids(data.get("resolved"))}
    claimed = {k: v for k, v in _dict(data.get("stats")).items() if _int(v) is not None}
    return HarnessReport(str(p), ReportKind.SWE_AGENT, verdicts, False, claimed)


def _resolved_by(p: Path, rows: Iterable[tuple[int, Any]], system: str | None) -> HarnessReport:
    problems: list[RowProblem] = []
    by_system: dict[str, set[str]] = {}
    n_rows = 0
    for line, row in rows:
        if isinstance(row, RowProblem):
            problems.append(row)
            continue
        iid = row.get("instance_id") if isinstance(row, dict) else None
        systems = row.get("resolved_by") if isinstance(row, dict) else None
        if not isinstance(iid, str) or not isinstance(systems, list):
            problems.append(RowProblem(str(p), line, "expected instance_id and a resolved_by list"))
            continue
        n_rows += 1
        for entry in systems:
            name = entry.get("name") if isinstance(entry, dict) else entry
            if isinstance(name, str):
                by_system.setdefault(name, set()).add(iid)
    if not n_rows:
        raise DatasetError(
            f"{p}: not a harness report: rows of a JSON Lines report must be a resolved-by "
            f"list (instance_id and resolved_by); {len(problems)} row(s) are not"
        )
    known = sorted(by_system, key=lambda s: (-len(by_system[s]), s))
    if system is None or system not in by_system:
        listed = ", ".join(known[:5]) + (", ..." if len(known) > 5 else "")
        what = (
            "names several systems; pick one with system=NAME"
            if system is None
            else (f"has no system {system!r}")
        )
        raise DatasetError(f"{p}: a resolved-by list that {what} ({len(known)}: {listed})")
    verdicts = {iid: Verdict(True) for iid in sorted(by_system[system])}
    return HarnessReport(
        str(p),
        ReportKind.RESOLVED_BY,
        verdicts,
        False,
        {"rows": n_rows, "resolved": len(verdicts)},
        tuple(problems),
        system,
    )


def _markdown(p: Path) -> HarnessReport:
    try:
        text = read_text_file(p)
    except RecordFileError as exc:
        raise DatasetError(str(exc)) from None
    sections: dict[str, list[str]] = {}
    claimed: dict[str, int] = {}
    current: str | None = None
    for line in text.splitlines():
        if line.startswith("#"):
            current = line.lstrip("#").strip().lower()
            sections.setdefault(current, [])
            continue
        claim = _MD_CLAIM.match(line)
        if claim and current == "summary":
            claimed[claim.group(1).strip().lower().replace(" ", "_")] = int(claim.group(2))
            continue
        item = _MD_ITEM.match(line)
        if item and current is not None:
            sections[current].append(item.group(1))
    if "resolved instances" not in sections:
        raise DatasetError(
            f"{p}: not an OpenHands SWE-bench report: no '## Resolved Instances' section"
        )
    verdicts = {iid: Verdict(True) for iid in sections["resolved instances"]}
    for name, failure in _MD_SECTIONS.items():
        for iid in sections.get(name, []):
            verdicts.setdefault(iid, Verdict(False, failure))
    return HarnessReport(str(p), ReportKind.OPENHANDS_MARKDOWN, verdicts, True, claimed)


def read_harness_report(path: str | Path, *, system: str | None = None) -> HarnessReport:
    """The verdicts of a harness report; its kind is found from the file's content.

    `system` picks one system of a resolved-by list (required there, refused elsewhere).
    """
    p = Path(path)
    if not p.exists():
        raise DatasetError(f"{p}: no such file")
    if p.is_dir():
        report = _instance_reports(p, p.rglob("report.json"))
    elif p.suffix.lower() == ".md":
        report = _markdown(p)
    elif p.name.endswith((".jsonl", ".jsonl.gz")):
        report = _resolved_by(p, _rows(p), system)
    else:
        data = _load_json(p)
        if isinstance(data, list):
            report = _resolved_by(p, enumerate(data, start=1), system)
        elif not isinstance(data, dict):
            raise DatasetError(f"{p}: expected a JSON object (a harness report)")
        elif "resolved_ids" in data:
            report = _swebench_summary(p, data)
        elif isinstance(data.get("resolved"), list) and _ACR_KEYS & set(data):
            report = _autocoderover(p, data)
        elif isinstance(data.get("resolved"), list):
            report = _swe_agent(p, data)
        elif _is_instance_report(data):
            report = _instance_reports(p, [p])
        else:
            keys = ", ".join(sorted(data)[:10]) or "none"
            raise DatasetError(
                f"{p}: not a harness report this reader knows (swebench, per-instance "
                f"report.json, AutoCodeRover, SWE-agent, resolved-by); found the keys {keys}"
            )
    if system is not None and report.kind is not ReportKind.RESOLVED_BY:
        raise DatasetError(f"{p}: system={system} is for resolved-by lists; this is {report.kind}")
    return report
