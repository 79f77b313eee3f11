"""Typed records: instances in, chat messages and rollouts during a run, predictions out.

These are the boundary of the package. Every record carries a `schema_version`; `read_jsonl`
rejects bad rows with the file and line in the message and counts them instead of stopping.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codegrep_model.answer import Answer
from codegrep_model.errors import RecordError

__all__ = [
    "ChatMessage",
    "Instance",
    "Prediction",
    "RolloutRecord",
    "RolloutStats",
    "ToolCall",
    "ToolCallRecord",
    "TurnRecord",
    "Usage",
    "read_jsonl",
]

SCHEMA_VERSION = 1


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class Instance(_Record):
    """One SWE-bench-style row; only what the agent needs (extra columns are ignored)."""

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    gold_files: tuple[str, ...] = ()


class ToolCall(_Record):
    """One call as the model wrote it; `arguments` stays the raw JSON text so that a malformed
    call can be recorded and answered exactly as it came."""

    id: str
    name: str
    arguments: str = "{}"

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


class ChatMessage(_Record):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def to_openai(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role == "tool":
            out["name"] = self.name
        return out


class Usage(_Record):
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class ToolCallRecord(_Record):
    """What happened to one call: executed (ok or not), refused over the per-turn cap, or
    malformed (arguments that are not a JSON object)."""

    call: ToolCall
    status: Literal["ok", "tool_error", "malformed", "refused"]
    error: str | None = None
    elapsed_ms: float = 0.0
    truncated: bool = False
    cached: bool = False
    paths: tuple[str, ...] = Field(default=(), description="Files the call returned or read.")


class TurnRecord(_Record):
    index: int = Field(description="1-based, in the order the model was asked.")
    kind: Literal["explore", "answer", "rescue"]
    content: str | None = None
    calls: tuple[ToolCallRecord, ...] = ()
    model_s: float = 0.0
    tools_s: float = 0.0
    usage: Usage = Usage()


class RolloutStats(_Record):
    """What the rewards need: T turns, C_total executed calls, c̄ = C_total / T."""

    turns: int
    tool_calls: int
    calls_per_turn: float
    refused_calls: int = 0
    malformed_calls: int = 0
    tool_errors: int = 0


class RolloutRecord(_Record):
    schema_version: int = SCHEMA_VERSION
    instance_id: str
    repo: str
    commit: str
    policy: str
    status: Literal["answered", "fallback", "error"] = Field(
        description="answered: the model gave a parsable answer; fallback: it did not and the "
        "files it read stand in (flagged); error: the policy failed (infrastructure), no answer."
    )
    answer: Answer | None = None
    messages: tuple[ChatMessage, ...] = ()
    turns: tuple[TurnRecord, ...] = ()
    stats: RolloutStats
    usage: Usage = Usage()
    wall_s: float = 0.0
    model_s: float = 0.0
    overhead_s: float = Field(default=0.0, description="wall_s - model_s: the environment's cost.")
    issue_bytes: int = Field(default=0, description="UTF-8 size of the issue as given.")
    issue_cut_to: int | None = Field(
        default=None,
        description="Bytes of the issue the policy and the prompt saw when it was longer than "
        "RolloutConfig.max_issue_bytes and was cut; None: it was used whole.",
    )
    error: str | None = None


class Prediction(_Record):
    """DESIGN.md's prediction record: what every retriever writes and swe-eval reads."""

    schema_version: int = SCHEMA_VERSION
    instance_id: str
    files: tuple[str, ...]
    line_ranges: dict[str, tuple[tuple[int, int], ...]] = Field(default_factory=dict)
    turns: int = 0
    tool_calls: int = 0
    tokens: int = 0
    latency_s: float = 0.0
    retriever: str
    fallback: bool = False

    @classmethod
    def from_rollout(cls, r: RolloutRecord) -> Prediction:
        answer = r.answer or Answer(files=())
        return cls(
            instance_id=r.instance_id,
            files=answer.files,
            line_ranges=answer.line_ranges,
            turns=r.stats.turns,
            tool_calls=r.stats.tool_calls,
            tokens=r.usage.total_tokens,
            latency_s=round(r.wall_s, 4),
            retriever=r.policy,
            fallback=r.status == "fallback",
        )


R = TypeVar("R", bound=BaseModel)


def read_jsonl(path: Path, model: type[R], errors: list[str] | None = None) -> Iterator[R]:
    """Rows of `path` as `model`; bad rows are appended to `errors` (or raise when it is None)."""
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield model.model_validate(json.loads(line))
            except (ValueError, ValidationError) as exc:
                msg = f"{path}:{lineno}: {type(exc).__name__}: {str(exc).splitlines()[0]}"
                if errors is None:
                    raise RecordError(msg) from exc
                errors.append(msg)
