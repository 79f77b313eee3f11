"""Readers for downstream evaluation: agent outputs, harness reports, instance lists, run lists.

Agent outputs (JSON Lines, gzipped or not; the format is found per record):
- OpenHands V0 `output.jsonl`: `history` of action/observation dicts, `metrics`,
  `test_result.git_patch` (and `test_result.report` once `eval_infer` has run), `error`.
- OpenHands V1 (OpenHands/benchmarks `EvalOutput`): `history` of openhands-sdk events with a
  `kind`, the same `metrics` shape, `attempt` (1-indexed); and the benchmarks' standardized
  `output.jsonl` (`status`, `resolved`, `cost` with input/output tokens; no history).
- Raw completions (one line per attempt): `messages` (the last LLM request, so the whole
  conversation), `final_response` (the reply to it, with `usage`), `resolved`, `attempt`,
  `is_last_attempt`. Only the last attempt of an instance is scored; earlier ones are counted.

What each format gives for rounds and tokens:
- V0/V1: rounds = LLM calls = `metrics.response_latencies` (one per completion request, a
  request whose reply was rejected included); without them, the distinct model responses among
  the events. Tokens = `metrics.accumulated_token_usage` prompt + completion, summed over every
  call (`TokenBasis.SUM_OF_CALLS`). Cost = `metrics.accumulated_cost`, when anything was costed.
- Raw completions: rounds = the assistant messages of the last request + the final response
  (= `n_llm_calls`). Only the final call's usage is kept, so tokens = that request's prompt
  tokens + its completion tokens: the context at the end of the run
  (`TokenBasis.FINAL_CONTEXT`), not a sum over calls. The record's `cost` is not read: in
  OpenHands' completion logs it is the last call's cost only.

Harness reports (found by their keys): swebench 4.x/5.x run reports (`resolved_ids`,
`unresolved_ids`, `error_ids`, `empty_patch_ids`, `incomplete_ids`, 5.x `infra_failure_ids`,
`ambiguous_failure_ids`; OpenHands V1's derived `output.report.json` too), per-instance
`report.json` (a file, or a folder searched for them), OpenHands V0 `output.swebench_eval.md`,
AutoCodeRover's bucket report, SWE-agent's final report, and moatless resolved-by lists (JSON
Lines; pick the system with `system=`).

A bad row is skipped and reported with file and line; a file that cannot be read at all raises
`DatasetError`. Nothing is printed here.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegrep_records import (
    RecordFileError,
    RowProblem,
    normalize_path,
    parse_json,
    read_json_file,
    read_rows,
    read_text_file,
)
from pydantic import ValidationError

from swe_eval.downstream._trajectory import Trace, trace_messages, trace_v0, trace_v1
from swe_eval.downstream.records import (
    AgentOutputs,
    AgentRun,
    Failure,
    HarnessReport,
    OutputFormat,
    ReportKind,
    RunSpec,
    TokenBasis,
    TokenCount,
    Verdict,
)
from swe_eval.errors import DatasetError

__all__ = [
    "Manifest",
    "classify_error",
    "parse_agent_record",
    "parse_run_option",
    "read_agent_outputs",
    "read_harness_report",
    "read_instance_ids",
    "read_manifest",
    "read_run_manifest",
]

_MAX_ITERATIONS = re.compile(r"maximum iteration|max(imum)?[_ ]?iterations? ?reached", re.I)
_TIMEOUT = re.compile(r"time ?out|timed out", re.I)


# -- agent outputs ------------------------------------------------------------------------------


def classify_error(error: str) -> Failure:
    """The failure an agent-side error message stands for."""
    if _MAX_ITERATIONS.search(error):
        return Failure.MAX_ITERATIONS
    if _TIMEOUT.search(error):
        return Failure.TIMEOUT
    return Failure.AGENT_ERROR


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if math.isfinite(value) else None  # int(inf) raises OverflowError


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _metrics(metrics: Any) -> tuple[int | None, TokenCount | None, float | None]:
    """(LLM calls, summed tokens, cost) from an OpenHands `metrics` object (V0 and V1 alike)."""
    m = _dict(metrics)
    latencies = m.get("response_latencies")
    rounds = len(latencies) if isinstance(latencies, list) and latencies else None
    tokens = None
    usage = _dict(m.get("accumulated_token_usage"))
    prompt, completion = _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))
    if prompt is None and completion is None and isinstance(m.get("token_usages"), list):
        per_call = [_dict(u) for u in m["token_usages"]]
        prompt = sum(_int(u.get("prompt_tokens")) or 0 for u in per_call)
        completion = sum(_int(u.get("completion_tokens")) or 0 for u in per_call)
    if prompt is not None or completion is not None:
        tokens = TokenCount(prompt or 0, completion or 0, TokenBasis.SUM_OF_CALLS)
    cost = m.get("accumulated_cost")
    # A self-hosted model is costed at 0 with no cost entries: "not costed", not "free".
    if isinstance(cost, int | float) and (cost > 0 or bool(m.get("costs"))):
        return rounds, tokens, float(cost)
    return rounds, tokens, None


def _report_verdict(test_result: dict[str, Any]) -> tuple[bool | None, Failure | None]:
    """OpenHands V0 `eval_infer` writes {empty_generation, resolved, failed_apply_patch, ...}."""
    report = _dict(test_result.get("report"))
    resolved = report.get("resolved")
    if not isinstance(resolved, bool):
        return None, None
    failure = None
    if not resolved:
        if report.get("empty_generation"):
            failure = Failure.EMPTY_PATCH
        elif report.get("failed_apply_patch"):
            failure = Failure.PATCH_NOT_APPLIED
        elif report.get("error_eval"):
            failure = Failure.HARNESS_ERROR
        elif report.get("test_timeout"):
            failure = Failure.TIMEOUT
    return resolved, failure


def _injected(instance: Any) -> tuple[str, ...] | None:
    inst = _dict(instance)
    for key in ("candidate_files", "injected", "injected_files"):
        files = inst.get(key)
        if isinstance(files, list):
            return tuple(dict.fromkeys(normalize_path(str(f)) for f in files if str(f).strip()))
    return None


def _format_of(row: Mapping[str, Any]) -> OutputFormat:
    if isinstance(row.get("messages"), list):
        return OutputFormat.COMPLETIONS
    history = row.get("history")
    if isinstance(history, list):
        head = [e for e in history[:50] if isinstance(e, dict)]
        if any("kind" in e for e in head):
            return OutputFormat.OPENHANDS_V1
        if any("action" in e or "observation" in e for e in head) or not head:
            return OutputFormat.OPENHANDS_V0
    if "status" in row and isinstance(row.get("cost"), dict):
        return OutputFormat.OPENHANDS_V1  # the benchmarks' standardized output.jsonl
    keys = ", ".join(sorted(map(str, row))[:12]) or "none"
    raise ValueError(
        "not an agent output: expected `history` (OpenHands V0/V1) or `messages` (raw "
        f"completions); found the keys {keys}"
    )


def _v0_rounds_from_events(history: list[Any]) -> int | None:
    ids = {
        str(_dict(_dict(e.get("tool_call_metadata")).get("model_response")).get("id"))
        for e in history
        if isinstance(e, dict) and "action" in e and e.get("tool_call_metadata")
    }
    return len(ids) or None


def _v1_rounds_from_events(history: list[Any]) -> int | None:
    ids: set[str] = set()
    messages = 0
    for e in history:
        if not isinstance(e, dict) or e.get("source", "agent") != "agent":
            continue
        if e.get("kind") == "ActionEvent" and e.get("llm_response_id"):
            ids.add(str(e["llm_response_id"]))
        elif e.get("kind") == "MessageEvent":
            messages += 1
    return (len(ids) + messages) or None


def _finished_v1(history: list[Any]) -> bool:
    return any(
        isinstance(e, dict)
        and e.get("kind") == "ActionEvent"
        and (e.get("tool_name") == "finish" or _dict(e.get("action")).get("kind") == "FinishAction")
        for e in history
    )


def _v1_stop(history: list[Any]) -> tuple[str, str] | None:
    """The last `ConversationErrorEvent` (code, detail): openhands-sdk ends a run that hits
    its iteration cap with code `MaxIterationsReached` and leaves the output's `error` null."""
    for e in reversed(history):
        if isinstance(e, dict) and e.get("kind") == "ConversationErrorEvent":
            return str(e.get("code") or "ConversationError"), str(e.get("detail") or "")
    return None


def _openhands(row: Mapping[str, Any], fmt: OutputFormat, iid: str, source: str) -> AgentRun:
    history = row.get("history") if isinstance(row.get("history"), list) else []
    assert isinstance(history, list)
    rounds, tokens, cost = _metrics(row.get("metrics"))
    test_result = _dict(row.get("test_result"))
    patch = test_result.get("git_patch")
    resolved, failure = _report_verdict(test_result)
    if resolved is None and isinstance(row.get("resolved"), bool):
        resolved = row["resolved"]  # V1 standardized output
    std_cost = _dict(row.get("cost"))
    if tokens is None and std_cost:
        prompt, completion = _int(std_cost.get("input_tokens")), _int(std_cost.get("output_tokens"))
        if prompt is not None or completion is not None:
            tokens = TokenCount(prompt or 0, completion or 0, TokenBasis.SUM_OF_CALLS)
        total = std_cost.get("total_cost")
        cost = float(total) if isinstance(total, int | float) and total > 0 else cost
    trace: Trace
    if fmt is OutputFormat.OPENHANDS_V0:
        trace = trace_v0(history)
        rounds = rounds or _v0_rounds_from_events(history)
        finished: bool | None = any(
            isinstance(e, dict) and e.get("action") == "finish" for e in history
        )
    else:
        trace = trace_v1(history)
        rounds = rounds or _v1_rounds_from_events(history)
        finished = _finished_v1(history) if history else None
    error = row.get("error")
    stop = _v1_stop(history) if fmt is OutputFormat.OPENHANDS_V1 else None
    if stop is not None:
        error = error or f"{stop[0]}: {stop[1]}"
        if failure is None and stop[0] == "MaxIterationsReached":
            failure = Failure.MAX_ITERATIONS
    attempt = _int(row.get("attempt")) or 0
    return AgentRun(
        instance_id=iid,
        format=fmt,
        source=source,
        rounds=rounds,
        tokens=tokens,
        cost=cost,
        patch=patch if isinstance(patch, str) else None,
        error=str(error) if error else None,
        resolved=resolved,
        failure=failure,
        actions=trace.actions,
        files_opened=trace.files_opened,
        files_opened_before_edit=trace.files_opened_before_edit,
        files_edited=trace.files_edited,
        injected=_injected(row.get("instance")),
        finished=finished if history else None,
        attempt=attempt,
    )


def _completions(row: Mapping[str, Any], iid: str, source: str) -> AgentRun:
    messages = row["messages"]
    response = _dict(row.get("final_response"))
    choices = response.get("choices")
    final = _dict(choices[0]).get("message") if isinstance(choices, list) and choices else None
    final_message = final if isinstance(final, dict) else None
    assistant = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
    rounds = assistant + (1 if final_message is not None else 0)
    usage = _dict(response.get("usage"))
    prompt, completion = _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))
    tokens = (
        TokenCount(prompt or 0, completion or 0, TokenBasis.FINAL_CONTEXT)
        if prompt is not None or completion is not None
        else None
    )
    trace = trace_messages(messages, final_message)
    finished = None
    calls = (final_message or {}).get("tool_calls")
    if final_message is not None:
        names = [str(_dict(_dict(c).get("function")).get("name")) for c in (calls or []) if c]
        finished = bool(names) and names[-1] == "finish"
    patch = row.get("model_patch", row.get("git_patch"))
    resolved = row.get("resolved")
    injected = _injected(row.get("instance"))
    if injected is None and isinstance(row.get("candidate_files"), list):
        injected = _injected({"candidate_files": row["candidate_files"]})
    return AgentRun(
        instance_id=iid,
        format=OutputFormat.COMPLETIONS,
        source=source,
        rounds=rounds or None,
        tokens=tokens,
        cost=None,
        patch=patch if isinstance(patch, str) else None,
        error=None,
        resolved=resolved if isinstance(resolved, bool) else None,
        failure=None,
        actions=trace.actions,
        files_opened=trace.files_opened,
        files_opened_before_edit=trace.files_opened_before_edit,
        files_edited=trace.files_edited,
        injected=injected,
        finished=finished,
        attempt=_int(row.get("attempt")) or 0,
    )


def parse_agent_record(row: Any, source: str = "<memory>") -> AgentRun:
    """One agent output record as an `AgentRun`; `ValueError` says why a row is unusable."""
    if not isinstance(row, dict):
        raise ValueError(f"expected a JSON object, got {type(row).__name__}")
    iid = row.get("instance_id")
    if not isinstance(iid, str) or not iid.strip():
        raise ValueError("no instance_id")
    fmt = _format_of(row)
    if fmt is OutputFormat.COMPLETIONS:
        return _completions(row, iid, source)
    return _openhands(row, fmt, iid, source)


def read_agent_outputs(path: str | Path) -> AgentOutputs:
    """Every agent output of a file, one per instance: its last attempt.

    Raw-completion rows with `is_last_attempt: false` are counted in `earlier_attempts` and left
    out; otherwise the highest `attempt` of an instance is kept and the lower ones counted. Two
    records of the same instance and attempt keep the later line and count a duplicate.
    """
    p = Path(path)
    problems: list[RowProblem] = []
    chosen: dict[str, AgentRun] = {}
    earlier = duplicates = 0
    rows = _rows(p)
    for line, row in rows:
        if isinstance(row, RowProblem):
            problems.append(row)
            continue
        try:
            run = parse_agent_record(row, f"{p}:{line}")
        except ValueError as exc:
            problems.append(RowProblem(str(p), line, str(exc)))
            continue
        if isinstance(row, dict) and row.get("is_last_attempt") is False:
            earlier += 1
            continue
        prev = chosen.get(run.instance_id)
        if prev is None:
            chosen[run.instance_id] = run
        elif run.attempt > prev.attempt:
            earlier += 1
            chosen[run.instance_id] = run
        elif run.attempt < prev.attempt:
            earlier += 1
        else:
            duplicates += 1
            chosen[run.instance_id] = run
    return AgentOutputs(str(p), chosen, tuple(problems), earlier, duplicates)


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


def _load_json(p: Path, *, refuse_links: bool = False) -> Any:
    """The JSON document `p` (gzipped or not) through codegrep-records' hardened reader: too
    deep, `1e999`, an over-long number, not UTF-8 or a broken gzip stream is a one-line
    `DatasetError` naming the file."""
    try:
        return read_json_file(p, refuse_links=refuse_links)
    except RecordFileError as exc:
        raise DatasetError(str(exc)) from None


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


def _rows(p: Path) -> list[tuple[int, Any]]:
    """Every row of a JSON/JSONL file as (line, row or RowProblem); unreadable -> DatasetError."""
    try:
        return list(read_rows(p))
    except RecordFileError as exc:
        raise DatasetError(str(exc)) from exc


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


# -- instance lists and run lists ---------------------------------------------------------------


def read_instance_ids(path: str | Path) -> tuple[list[str], list[RowProblem]]:
    """The instance ids of a file (the fixed denominator), in file order, each once.

    A `.txt` file holds one id per line (`#` starts a comment); any other file is read as rows
    (JSON Lines, JSON, parquet, gzipped or not) with an `instance_id`. A repeated id is reported
    as a bad row and counted once.
    """
    p = Path(path)
    problems: list[RowProblem] = []
    ids: dict[str, None] = {}
    pairs: list[tuple[int, Any]]
    if p.suffix.lower() == ".txt":
        try:
            lines = read_text_file(p).splitlines()
        except RecordFileError as exc:
            raise DatasetError(str(exc)) from None
        pairs = [
            (i, {"instance_id": line.strip()})
            for i, line in enumerate(lines, start=1)
            if line.strip() and not line.lstrip().startswith("#")
        ]
    else:
        pairs = _rows(p)
    for line, row in pairs:
        if isinstance(row, RowProblem):
            problems.append(row)
            continue
        iid = row.get("instance_id") if isinstance(row, dict) else None
        if not isinstance(iid, str) or not iid.strip():
            problems.append(RowProblem(str(p), line, "no instance_id"))
        elif iid in ids:
            problems.append(RowProblem(str(p), line, f"{iid} listed again (counted once)"))
        else:
            ids[iid] = None
    return list(ids), problems


_RUN_KEYS = ("output", "report", "system", "predictions", "precision", "manifest")


def parse_run_option(text: str) -> RunSpec:
    """`NAME=PATH[,report=PATH][,system=S][,predictions=PATH][,precision=P]` as a `RunSpec`.

    The bare PATH is the agent output; `NAME=report=PATH` is a run with a report only.
    """
    name, sep, rest = text.partition("=")
    if not sep or not name.strip() or not rest.strip():
        raise ValueError(f"--run {text!r}: expected NAME=PATH[,report=PATH,...]")
    fields: dict[str, str] = {}
    for i, part in enumerate(p.strip() for p in rest.split(",")):
        key, eq, value = part.partition("=")
        if eq and key in _RUN_KEYS:
            pass
        elif i == 0:
            key, value = "output", part
        else:
            known = ", ".join(_RUN_KEYS)
            raise ValueError(f"--run {name}: {part!r} is not KEY=VALUE with a KEY of {known}")
        if key in fields:
            raise ValueError(f"--run {name}: {key} given twice")
        fields[key] = value
    try:
        return RunSpec.model_validate({"name": name.strip(), **fields})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "run"
        raise ValueError(f"--run {name}: {where}: {first['msg']}") from exc


@dataclass(frozen=True)
class RunManifest:
    """A run's manifest.json (written by `plan`): what must be equal across compared runs
    (`frozen`) and what may differ (`arm`)."""

    path: str
    frozen: Mapping[str, Any]
    arm: Mapping[str, Any]


def read_run_manifest(path: str | Path) -> RunManifest:
    """A run's manifest.json through the records' hardened reader; `DatasetError` if it is not
    one."""
    p = Path(path)
    data = _load_json(p)
    if (
        not isinstance(data, dict)
        or data.get("kind") != "swe-eval-downstream-run"
        or not isinstance(data.get("frozen"), dict)
        or not isinstance(data.get("arm"), dict)
    ):
        raise DatasetError(f"{p}: not a run manifest (kind swe-eval-downstream-run, frozen, arm)")
    return RunManifest(str(p), data["frozen"], data["arm"])


@dataclass(frozen=True)
class Manifest:
    runs: tuple[RunSpec, ...]
    baseline: str | None = None
    instances: Path | None = None
    title: str | None = None


def read_manifest(path: str | Path) -> Manifest:
    """A run list as JSON or TOML: `instances`, `baseline`, and `runs` (a list of tables with
    `name`, `output`, `report`, `system`, `predictions`, `precision`). Relative paths are read
    from the manifest's folder."""
    p = Path(path)
    try:
        text = read_text_file(p)
    except RecordFileError as exc:
        raise DatasetError(str(exc)) from None
    try:
        data: Any = tomllib.loads(text) if p.suffix.lower() == ".toml" else parse_json(text)
    except (ValueError, RecursionError) as exc:  # tomllib recurses on nested inline tables
        reason = "nested too deeply to read" if isinstance(exc, RecursionError) else exc
        kind = "TOML" if p.suffix.lower() == ".toml" else "JSON"
        raise DatasetError(f"{p}: not {kind}: {reason}") from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise DatasetError(f"{p}: expected a `runs` list (and optionally instances, baseline)")
    unknown = set(data) - {"runs", "baseline", "instances", "title"}
    if unknown:
        raise DatasetError(f"{p}: unknown key(s) {', '.join(sorted(unknown))}")

    def resolve(value: Any) -> Any:
        return str(p.parent / value) if isinstance(value, str) and value else value

    runs = []
    for i, entry in enumerate(data["runs"], start=1):
        if not isinstance(entry, dict):
            raise DatasetError(f"{p}: runs[{i}] is not a table")
        fixed = {k: resolve(v) if k in ("output", "report", "predictions", "manifest") else v
                 for k, v in entry.items()}  # fmt: skip
        try:
            runs.append(RunSpec.model_validate(fixed))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(x) for x in first["loc"]) or "run"
            raise DatasetError(f"{p}: runs[{i}].{where}: {first['msg']}") from exc
    baseline = data.get("baseline")
    instances = data.get("instances")
    title = data.get("title")
    return Manifest(
        tuple(runs),
        str(baseline) if baseline is not None else None,
        Path(resolve(instances)) if isinstance(instances, str) else None,
        str(title) if title is not None else None,
    )
