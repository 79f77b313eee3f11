"""Typed records that cross module and file boundaries.

Two families live here. Frozen dataclasses (`Trajectory`, `Step`, `TrajectoryCall`, `FileRead`,
`Skip`) are the in-memory shape every reader produces; they are cheap because the readers make
hundreds of thousands of them. `MiningStats` is the run metadata catm writes beside its labels.

The label rows themselves (`LabelRecord`, `MinedFile`, `Verdict`) are codegrep-records' records,
re-exported here, so that every package that reads a label file reads the same shape; they carry
its `schema_version`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from codegrep_records import GoldRule, LabelRecord, MinedFile, RowProblem, Verdict
from pydantic import BaseModel

__all__ = [
    "SCHEMA_VERSION",
    "FileRead",
    "LabelRecord",
    "MinedFile",
    "MiningStats",
    "Skip",
    "Step",
    "Trajectory",
    "TrajectoryCall",
    "TrajectoryFormat",
    "Verdict",
]

# The label rows' version (codegrep-records owns it); the stats sidecar carries the same number.
SCHEMA_VERSION: int = LabelRecord.SCHEMA_VERSION


class TrajectoryFormat(StrEnum):
    """The on-disk trajectory formats the readers recognise."""

    OPENHANDS_V0 = "openhands_v0"  # event stream: `history` of action / observation dicts
    OPENHANDS_V1 = "openhands_v1"  # openhands-sdk events with a `kind` discriminator
    MESSAGES = "messages"  # OpenAI chat messages with `tool_calls` (SWE-Gym, SWE-rebench, litellm)


#: A record a reader could not use: where it was (`path`, `line`) and why (`message`). Counted,
#: never raised. It is codegrep-records' `RowProblem`, the one bad-row record every reader of
#: the toolkit returns.
Skip = RowProblem


@dataclass(frozen=True, slots=True)
class TrajectoryCall:
    """One tool call of a recorded agent turn, reduced to what stage 1 needs.

    Not the agent's own `ToolCall` record (codegrep-model): this is what a trajectory file says
    was called, normalised across formats.

    `tool` is normalised: "editor" (str_replace_editor / file_editor), "shell" (execute_bash /
    terminal), "think" (the reasoning-only tool, whose text is also the step's reasoning), or
    the original tool name for anything else; `name` is the tool's name as the trajectory wrote
    it (the function name, OpenHands V1's `tool_name`, a V0 action). `cwd` is the working
    directory the environment reported after the call, when it did. An empty `observation`
    means the record has none for the call.
    """

    tool: str
    command: str = ""  # editor sub-command (view, create, str_replace, ...) or the shell line
    path: str = ""  # editor target path, as the agent wrote it
    observation: str = ""  # the start of the tool's answer; enough to tell a directory listing
    cwd: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class Step:
    """One assistant turn: the text it wrote (reasoning) and the tool calls it made."""

    reasoning: str
    calls: tuple[TrajectoryCall, ...] = ()


@dataclass(frozen=True, slots=True)
class Trajectory:
    """One agent run on one instance, in a format-independent shape."""

    instance_id: str
    trajectory_id: str
    format: TrajectoryFormat
    steps: tuple[Step, ...]
    workspace_root: str = ""  # absolute repository root inside the agent's sandbox, if known
    patch: str = ""  # a gold patch carried by the record itself (eval output.jsonl `instance`)
    repo: str = ""
    source_file: str = ""  # where the record came from, for skip reports
    source_line: int = 0


@dataclass(frozen=True, slots=True)
class FileRead:
    """Stage 1 output for one read of one repository file in one trajectory."""

    path: str  # repository-relative, normalised
    step: int  # index of the turn that issued the read
    reasoning_step: int  # index of the turn whose text is the post-reasoning (-1: none followed)
    reasoning_tokens: int


class MiningStats(BaseModel):
    """Run metadata and per-stage counts, written beside the labels as `<labels>.stats.json`."""

    schema_version: int = SCHEMA_VERSION
    judge: str
    tokenizer: str
    beta: float
    mean_weight_raw: float
    threshold: float
    records_read: int
    records_skipped: int
    skip_reasons: dict[str, int]
    trajectories: int
    instances: int
    instances_without_patch: int
    instance_rows_skipped: int = 0  # --instances rows not usable (no id, no patch, bad JSON)
    # The rule that chose `patch_files` from each patch. None: a stats file written by catm 0.1,
    # whose patch files were every file of the diff headers (renames under the new name, added
    # and test files included).
    gold_rule: GoldRule | None = None
    reads_total: int
    reads_dropped: dict[str, int]
    reads_kept: int
    mined_files: int  # (instance, file) pairs after stage 1
    judged_relevant: int
    judged_not_relevant: int
    judge_failed: int
    unjudged: int
    weighted_files: int  # pairs that reached stage 3
    above_threshold: int  # w >= threshold
    mined_not_in_patch: int  # gold files that come only from mining
    gold_files: int
    labels_written: int
    trajectories_contributing: (
        int  # trajectories with at least one file in some gold set via mining
    )
    retention: float  # trajectories_contributing / trajectories
