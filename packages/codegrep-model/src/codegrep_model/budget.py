"""A rollout's token budget: how long the whole conversation and the model's output may grow.

A trainer encodes a multi-turn rollout as one sequence (the prompt, every reply, every tool
result) and refuses or truncates one past its `max_length`; the CodeGrep paper's budget of about
2,000 tokens of model output is over the whole rollout, not one reply. `TokenBudget` states both;
the `Episode` (episode.py) keeps the count and enforces them:

- before a tool turn's results are appended, they share what is left of `max_length` once the
  next prompt and the next reply's largest size are set aside; a result that does not fit is cut
  at a line boundary and ends with `cut_marker` (the model sees that it was cut and how to narrow
  the call); when not even the markers fit, the rollout ends with overflow `max_length`;
- after each reply, the model's tokens are summed over the rollout; past
  `max_completion_tokens` the rollout ends with overflow `completion_budget` (no answer).

The conversation's count includes the tool schemas, which the chat template writes into the
system message of every turn (`tools_block_tokens`: ms-swift's hermes agent template adds some
2,100 characters for the three tools).

Tokens are counted with a `TokenCounter`: `TokenizerCounter` wraps the tokenizer the trainer uses
(a `transformers` tokenizer or a `tokenizers.Tokenizer`); `CharEstimate` (characters / 3, rounded
up) stands in only where no tokenizer is at hand. Not here: the trainer's own guard, and anything
that imports a tokenizer library.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from codegrep_model.records import ChatMessage

__all__ = [
    "OVERFLOW_CAUSES",
    "CharEstimate",
    "OverflowCause",
    "SystemWithTools",
    "TokenBudget",
    "TokenCounter",
    "TokenizerCounter",
    "cut_marker",
    "fit_texts",
    "message_text",
    "tools_block_tokens",
]

#: Why a rollout overflowed: its conversation would pass `max_length`, or the model's output
#: passed `max_completion_tokens`.
OverflowCause = Literal["max_length", "completion_budget"]
OVERFLOW_CAUSES: tuple[OverflowCause, ...] = ("max_length", "completion_budget")


class TokenBudget(BaseModel):
    """Limits on one rollout, in tokens; None: no limit of that kind."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_length: int | None = Field(
        default=32768,
        ge=1,
        description="The whole rollout: prompt, every reply, every tool result and prompt "
        "(the trainer's --max_length).",
    )
    max_completion_tokens: int | None = Field(
        default=2048,
        ge=1,
        description="The model's output summed over every turn (the paper's ~2,000 tokens).",
    )
    max_turn_tokens: int | None = Field(
        default=2048,
        ge=1,
        description="One reply's cap (the trainer's per-round --max_completion_length): room for "
        "the next reply is kept free of tool output.",
    )
    tool_turn_floor_tokens: int = Field(
        default=4096,
        ge=0,
        description="Room kept for each later exploration turn's tool results when an earlier "
        "turn's results are cut (an earlier turn gets at least an even split).",
    )
    message_overhead_tokens: int = Field(
        default=8,
        ge=0,
        description="Template tokens around each message (ChatML's role header and end marker, "
        "Qwen's <tool_response> tags).",
    )

    def reply_reserve(self, completion_used: int) -> int:
        """The most tokens the next reply may take."""
        caps = [c for c in (self.max_turn_tokens,) if c is not None]
        if self.max_completion_tokens is not None:
            caps.append(max(0, self.max_completion_tokens - completion_used))
        return min(caps) if caps else 0


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a piece of text (no special tokens added)."""

    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...


class CharEstimate:
    """A character-based estimate, for where no tokenizer is at hand: ceil(len / chars_per_token).

    Three characters a token over-counts Qwen's BPE on code and English (about 3.5-4), so a
    budget enforced with it errs on the short side.
    """

    def __init__(self, chars_per_token: float = 3.0) -> None:
        if not chars_per_token > 0:
            raise ValueError(f"chars_per_token must be positive, got {chars_per_token}")
        self.chars_per_token = chars_per_token

    @property
    def name(self) -> str:
        return f"chars/{self.chars_per_token:g}"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)


class TokenizerCounter:
    """Exact counts from a tokenizer: a `transformers` tokenizer (its `encode` returns ids) or a
    `tokenizers.Tokenizer` (its `encode` returns an encoding with `.ids`)."""

    def __init__(self, tokenizer: object) -> None:
        if not callable(getattr(tokenizer, "encode", None)):
            raise TypeError(f"{type(tokenizer).__name__} has no encode method")
        self._tokenizer = tokenizer

    @property
    def name(self) -> str:
        return "tokenizer"

    def count(self, text: str) -> int:
        encoded = self._tokenizer.encode(text, add_special_tokens=False)  # type: ignore[attr-defined]
        ids = getattr(encoded, "ids", encoded)
        return len(ids)


def message_text(message: ChatMessage) -> str:
    """A message as the model reads or writes it, for counting: its text, then one hermes
    `<tool_call>` block per call (the template's role header is `message_overhead_tokens`)."""
    parts = [message.content] if message.content else []
    for call in message.tool_calls:
        body = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
        parts.append(f"<tool_call>\n{body}\n</tool_call>")
    return "\n".join(parts)


#: A chat template's system message with the tools: (system text, tool schemas) -> text.
SystemWithTools = Callable[[str, Sequence[Mapping[str, Any]]], str]


def tools_block_tokens(
    system: str,
    tools: Sequence[Mapping[str, Any]],
    counter: TokenCounter,
    render: SystemWithTools | None = None,
) -> int:
    """The tokens a chat template adds to the prompt for the tool schemas: the system message
    as `render` writes it with `tools`, less the system message alone; 0 without tools.

    `render` is the trainer's template (the ms-swift plugin passes its template's own
    `_get_system`); default: ms-swift 4.6's hermes agent template, as
    `codegrep_model.policies.local.hermes_system` writes it (held to ms-swift's encoding token
    for token by the training tier).
    """
    if not tools:
        return 0
    if render is None:
        from codegrep_model._hermes import hermes_system

        render = hermes_system
    return max(0, counter.count(render(system, tools)) - counter.count(system))


def cut_marker(shown_lines: int, total_lines: int) -> str:
    """The line that ends a cut tool result."""
    return (
        f"\n[output cut: {shown_lines} of {total_lines} lines shown; this rollout's context "
        "limit is near. Narrow the call (a path, a glob, a line range) to see the rest.]"
    )


def _shares(sizes: Sequence[int], room: int) -> list[int]:
    """Water-filling: each size whole when the room allows, else an equal share of what is left
    once the smaller ones are whole."""
    out = [0] * len(sizes)
    left, n = room, len(sizes)
    for i in sorted(range(len(sizes)), key=lambda j: sizes[j]):
        share = left // n
        out[i] = min(sizes[i], share)
        left -= out[i]
        n -= 1
    return out


def _cut(text: str, limit: int, counter: TokenCounter) -> str:
    """The longest prefix of `text` within `limit` tokens (marker included), at a line end when
    one is in its second half, followed by the marker."""
    total_lines = text.count("\n") + 1
    # a token spans at most a few dozen characters: no need to search past that
    lo, hi = 0, min(len(text), 64 * max(limit, 1))
    while lo < hi:  # the longest prefix whose tokens fit once the marker is added
        mid = (lo + hi + 1) // 2
        prefix = text[:mid]
        if counter.count(prefix + cut_marker(prefix.count("\n"), total_lines)) <= limit:
            lo = mid
        else:
            hi = mid - 1
    kept = text[:lo]
    newline = kept.rfind("\n")
    if newline >= len(kept) // 2:
        kept = kept[:newline]
    return kept + cut_marker(kept.count("\n") + (1 if kept else 0), total_lines)


def fit_texts(texts: Sequence[str], room: int, counter: TokenCounter) -> list[str] | None:
    """`texts` made to fit `room` tokens together: whole when they fit, else each over its share
    cut with a marker. None when not even a marker per text fits."""
    sizes = [counter.count(t) for t in texts]
    if sum(sizes) <= room:
        return list(texts)
    floor = counter.count(cut_marker(0, 10**6))  # a marker alone, numbers at their widest
    if room < floor * len(texts):
        return None
    shares = _shares(sizes, room)
    out = []
    for text, size, share in zip(texts, sizes, shares, strict=True):
        out.append(text if size <= share else _cut(text, max(share, floor), counter))
    # a share below a marker's size was raised to it: check the whole instead of trusting it
    return out if sum(counter.count(t) for t in out) <= room else None
