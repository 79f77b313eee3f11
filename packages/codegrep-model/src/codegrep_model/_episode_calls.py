"""The actions an `Episode` hands its driver, and the checks of one tool call on its way to
the tree: a known tool, arguments that are a JSON object, the record of what ran.

Kept apart from `codegrep_model.episode` (the state machine) so each file holds one job; the
names are re-exported there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from codegrep_records.io import parse_json
from worktree_sandbox import GlobResult, GrepResult, ReadResult, ToolErrorKind

from codegrep_model.policies.protocol import PolicyReply, PolicyRequest
from codegrep_model.records import RolloutRecord, ToolCall, ToolCallRecord

__all__ = [
    "Action",
    "AnyResult",
    "AskPolicy",
    "Done",
    "Feedback",
    "Pending",
    "PlannedCall",
    "RunCalls",
    "executed_record",
    "plan_call",
    "result_paths",
]

AnyResult = GrepResult | GlobResult | ReadResult


@dataclass(frozen=True)
class PlannedCall:
    """A call for the tree: a known tool, arguments that are a JSON object, within the cap."""

    call: ToolCall
    arguments: dict[str, Any]

    @property
    def name(self) -> str:
        return self.call.name


@dataclass(frozen=True)
class AskPolicy:
    """Ask the policy for the next assistant message; `request.tools` is empty on the answer
    (and rescue) turns, which offer no tools."""

    request: PolicyRequest

    @property
    def answer_turn(self) -> bool:
        return self.request.answer_turn


@dataclass(frozen=True)
class RunCalls:
    """Run these calls (concurrently if you like) and hand the results back in this order."""

    calls: tuple[PlannedCall, ...]


@dataclass(frozen=True)
class Done:
    """The episode is over. `record.wall_s` is the sum of the durations fed in; a driver that
    timed the whole rollout asks `Episode.record(wall_s=...)` instead."""

    record: RolloutRecord


Action = AskPolicy | RunCalls | Done


@dataclass(frozen=True)
class Feedback:
    """A call that never reaches the tree (malformed or unknown tool): its record and message."""

    record: ToolCallRecord
    text: str


@dataclass(frozen=True)
class Pending:
    """An exploration reply whose calls are out at the tree."""

    reply: PolicyReply
    model_s: float
    outcomes: tuple[PlannedCall | Feedback, ...]  # one per call within the cap, in order


def result_paths(result: AnyResult) -> tuple[str, ...]:
    """The paths a result names (a read's file, a grep's matched files, a glob's paths)."""
    if isinstance(result, ReadResult):
        return (result.path,) if result.ok and result.path else ()
    if isinstance(result, GrepResult):
        return tuple(dict.fromkeys(m.path for m in result.matches))
    return result.paths


def plan_call(call: ToolCall, known: tuple[str, ...]) -> PlannedCall | Feedback:
    """`call` ready for the tree, or the feedback that stands for it (no name, an unknown tool,
    arguments that are not a JSON object)."""

    def malformed(msg: str) -> Feedback:
        return Feedback(ToolCallRecord(call=call, status="malformed", error=msg), msg)

    if not call.name:
        return malformed(
            "Malformed tool call: write it as "
            '<tool_call>{"name": "grep", "arguments": {"pattern": "..."}}</tool_call>.'
        )
    if call.name not in known:
        return malformed(f"Unknown tool {call.name!r}. The tools are: {', '.join(known)}.")
    try:
        args = parse_json(call.arguments) if call.arguments.strip() else {}
    except ValueError as exc:
        return malformed(
            f"Malformed call to {call.name}: the arguments are not valid JSON ({exc}). "
            "Send a JSON object that matches the tool's parameters."
        )
    if not isinstance(args, dict):
        return malformed(f"Malformed call to {call.name}: the arguments must be a JSON object.")
    return PlannedCall(call=call, arguments=args)


def executed_record(call: ToolCall, result: AnyResult) -> ToolCallRecord:
    """The record of a call the tree ran: its status from the result, and the paths it named."""
    status: Literal["ok", "tool_error", "malformed"]
    if result.ok:
        status = "ok"
    elif result.error == ToolErrorKind.INVALID_ARGUMENTS:
        status = "malformed"
    else:
        status = "tool_error"
    return ToolCallRecord(
        call=call,
        status=status,
        error=None if result.ok else result.text,
        elapsed_ms=result.elapsed_ms,
        truncated=result.truncated,
        cached=result.cached,
        paths=result_paths(result)[:50],
    )
