"""Readers of a downstream run's agent outputs.

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

A bad row is skipped and reported with file and line; a file that cannot be read at all raises
`DatasetError`. Nothing is printed here.
Not for: harness reports (`_harness_reports`), instance and run lists (`_run_lists`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codegrep_records import (
    RowProblem,
    normalize_path,
)

from swe_eval.downstream._reader_values import _dict, _int, _rows
from swe_eval.downstream._trajectory import Trace, trace
from swe_eval.downstream.records import (
    AgentOutputs,
    AgentRun,
    Failure,
    OutputFormat,
    TokenBasis,
    TokenCount,
)

__all__ = [
    "classify_error",
    "parse_agent_record",
    "read_agent_outputs",
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
    # a run with no events (it crashed before its first step) has no actions
    steps = trace(row) if history else Trace((), (), (), ())
    if fmt is OutputFormat.OPENHANDS_V0:
        rounds = rounds or _v0_rounds_from_events(history)
        finished: bool | None = any(
            isinstance(e, dict) and e.get("action") == "finish" for e in history
        )
    else:
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
        actions=steps.actions,
        files_opened=steps.files_opened,
        files_opened_before_edit=steps.files_opened_before_edit,
        files_edited=steps.files_edited,
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
    steps = trace(row)
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
        actions=steps.actions,
        files_opened=steps.files_opened,
        files_opened_before_edit=steps.files_opened_before_edit,
        files_edited=steps.files_edited,
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
