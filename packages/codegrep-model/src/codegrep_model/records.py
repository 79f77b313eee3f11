"""Typed records of a run: chat messages, tool calls, turns and the rollout record.

The instance that goes in and the prediction that comes out are `codegrep_records`' `Instance`
and `Prediction` (re-exported here), read and written by its readers, so that every package of
the toolkit means the same by them. `prediction_from_rollout` turns a rollout into a prediction.
"""

from __future__ import annotations

from typing import Any, Literal

from codegrep_records import Instance, Prediction
from pydantic import BaseModel, ConfigDict, Field

from codegrep_model.answer import Answer

__all__ = [
    "ChatMessage",
    "Instance",
    "Prediction",
    "RewardView",
    "RolloutCounts",
    "RolloutRecord",
    "ToolCall",
    "ToolCallRecord",
    "TurnRecord",
    "Usage",
    "prediction_from_rollout",
]

SCHEMA_VERSION = 1


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


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


class RolloutCounts(_Record):
    """What the rewards need: T turns, C_total executed calls, c̄ = C_total / T, as recorded.

    The record of one rollout's counts, with the refusals and failures beside them. The rewards'
    own `grpo_rewards.RolloutStats` is the validated input of a reward (T >= 1, C_total <= 8T);
    the episode computes these counts through it (`rollout_stats`), so both hold the same T and
    C_total; this one is what a rollout file keeps.
    """

    turns: int
    tool_calls: int
    calls_per_turn: float
    refused_calls: int = 0
    malformed_calls: int = 0
    tool_errors: int = 0


class RewardView(_Record):
    """Strict mode (training): what the reward reads of the rollout, recorded by the episode.

    The final answer exactly as `grpo_rewards.parse_answer` reads the last assistant message
    (no tolerance beyond it, no fallback), and the counts the rewards use. The episode writes the
    same into `rollout_infos`, so the reward scores this and never parses the completion again.
    """

    files: tuple[str, ...] | None = Field(description="None: no answer (see `answer_error`).")
    line_ranges: dict[str, tuple[tuple[int, int], ...]] = Field(default_factory=dict)
    answer_error: str | None = Field(
        default=None, description="Why there is no answer (the reward parser's reason)."
    )
    turns: int = Field(description="T: every assistant turn, the answer turn included.")
    tool_calls: int = Field(description="C_total: the calls that ran.")
    tool_calls_per_turn: tuple[int, ...] = Field(
        default=(), description="Calls that ran, per assistant turn (T entries)."
    )


class RolloutRecord(_Record):
    schema_version: int = SCHEMA_VERSION
    instance_id: str
    repo: str
    commit: str | None = Field(description="The base commit; None for a tree without one.")
    policy: str
    status: Literal["answered", "fallback", "unanswered", "error"] = Field(
        description="answered: the model gave a parsable answer; fallback: it did not and the "
        "files it read stand in (flagged); unanswered: it did not, in strict mode, which has no "
        "fallback (`reward_view.answer_error` says why); error: the policy failed "
        "(infrastructure), no answer."
    )
    answer: Answer | None = None
    messages: tuple[ChatMessage, ...] = ()
    turns: tuple[TurnRecord, ...] = ()
    stats: RolloutCounts
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
    reward_view: RewardView | None = Field(
        default=None, description="Strict mode only: the answer and counts the reward reads."
    )
    overflow: Literal["max_length", "completion_budget"] | None = Field(
        default=None,
        description="Set when the rollout's token budget (RolloutConfig.budget) ended it: its "
        "conversation would have passed max_length, or the model's output passed "
        "max_completion_tokens. It then has no answer (status unanswered, or fallback).",
    )
    rollout_tokens: int | None = Field(
        default=None, description="With a token budget: the conversation's tokens at the end."
    )
    completion_tokens: int | None = Field(
        default=None, description="With a token budget: the model's output tokens, all turns."
    )
    tool_results_cut: int = Field(
        default=0, description="Tool results cut (with a marker) to fit the token budget."
    )


def prediction_from_rollout(r: RolloutRecord) -> Prediction:
    """The prediction a rollout makes: its answer's files, scores and line ranges, its counts.

    A rollout without an answer (an error, or strict mode's `unanswered`) predicts no files; a
    fallback answer is flagged `fallback`. Line ranges are left out when the answer has none.
    """
    answer = r.answer or Answer(files=())
    return Prediction(
        instance_id=r.instance_id,
        files=answer.files,
        scores=answer.scores,
        line_ranges=dict(answer.line_ranges) or None,
        turns=r.stats.turns,
        tool_calls=r.stats.tool_calls,
        tokens=r.usage.total_tokens,
        latency_s=round(r.wall_s, 4),
        retriever=r.policy,
        fallback=r.status == "fallback",
    )
