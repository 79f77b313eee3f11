"""Rollout statistics as the CodeGrep paper defines them: T turns, C_total calls, c̄ = C_total/T.

T counts assistant turns, the answer turn included, and is at least 1 (a rollout that produced
nothing still had the turn that failed). Each turn may issue at most `MAX_CALLS_PER_TURN` (the
paper's 8) tool calls, so c̄ ∈ [0, 8]; statistics outside that range mean the harness broke its
own contract, and raise `InvalidRolloutError` rather than being clamped into a plausible reward.
The cap is defined here once: codegrep-model's `RolloutConfig` defaults to it, an episode run
with another cap records that cap in its `rollout_infos` (`RolloutInfo.max_calls_per_turn`), and the
reward and the advantage scale hold its turns to the cap it recorded (`check_calls_per_turn`).

The helpers read the two shapes trainers hand over: OpenAI-style `messages` (assistant
`tool_calls`, `role: tool` observations, or Hermes `<tool_call>` text) and per-turn call counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from grpo_rewards.errors import InvalidRolloutError

__all__ = [
    "MAX_CALLS_PER_TURN",
    "RolloutStats",
    "check_calls_per_turn",
    "rollout_stats_from_messages",
]

#: The paper's per-turn cap on concurrent tool calls: the one definition of the default cap.
MAX_CALLS_PER_TURN = 8


def check_calls_per_turn(
    calls_per_turn: Sequence[int], max_calls_per_turn: int = MAX_CALLS_PER_TURN
) -> int:
    """C_total of these per-turn counts, each held to the cap; `InvalidRolloutError` otherwise.

    >>> check_calls_per_turn([2, 8, 0])
    10
    """
    if any(c < 0 for c in calls_per_turn):
        raise InvalidRolloutError(f"negative call count in {list(calls_per_turn)}")
    if any(c > max_calls_per_turn for c in calls_per_turn):
        raise InvalidRolloutError(
            f"a turn issued more than {max_calls_per_turn} calls: {list(calls_per_turn)}"
        )
    return sum(calls_per_turn)


@dataclass(frozen=True)
class RolloutStats:
    """T (assistant turns, ≥ 1) and C_total (tool calls) of one rollout.

    >>> RolloutStats(turns=3, tool_calls=12).cbar
    4.0
    >>> RolloutStats(turns=0, tool_calls=0).turns  # T >= 1 by definition
    1
    """

    turns: int
    tool_calls: int
    max_calls_per_turn: int = MAX_CALLS_PER_TURN

    def __post_init__(self) -> None:
        for name in ("turns", "tool_calls", "max_calls_per_turn"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidRolloutError(f"{name} must be an integer, got {value!r}")
        if self.turns < 0 or self.tool_calls < 0:
            raise InvalidRolloutError(
                f"turns and tool calls must be >= 0, got T={self.turns}, C={self.tool_calls}"
            )
        if self.turns == 0:
            object.__setattr__(self, "turns", 1)
        if self.tool_calls > self.max_calls_per_turn * self.turns:
            raise InvalidRolloutError(
                f"{self.tool_calls} tool calls in {self.turns} turn(s) exceeds "
                f"{self.max_calls_per_turn} per turn (c̄ must lie in [0, {self.max_calls_per_turn}])"
            )

    @property
    def cbar(self) -> float:
        """c̄ = C_total / T, the mean number of tool calls per turn."""
        return self.tool_calls / self.turns

    @classmethod
    def from_calls_per_turn(
        cls,
        calls_per_turn: Sequence[int],
        *,
        answer_turns: int = 1,
        max_calls_per_turn: int = MAX_CALLS_PER_TURN,
    ) -> RolloutStats:
        """From per-turn call counts of the exploration turns, plus the answer turn(s).

        `calls_per_turn` lists only turns that called tools (as a multi-turn scheduler records
        them); `answer_turns` adds the final turns without calls (1 for a rollout that answered,
        0 for one cut off at the turn limit).
        """
        return cls(
            turns=len(calls_per_turn) + answer_turns,
            tool_calls=check_calls_per_turn(calls_per_turn, max_calls_per_turn),
            max_calls_per_turn=max_calls_per_turn,
        )


def _calls_in_text(content: object) -> int:
    return content.count("<tool_call>") if isinstance(content, str) else 0


def rollout_stats_from_messages(
    messages: Iterable[Mapping[str, object]], *, max_calls_per_turn: int = MAX_CALLS_PER_TURN
) -> RolloutStats:
    """T and C_total from a conversation (prompt messages may be included; they are not counted).

    T = number of assistant messages. C_total = the assistant `tool_calls` entries when the
    conversation carries them; otherwise the `role: tool` observations (one per executed call);
    otherwise the Hermes `<tool_call>` blocks in assistant text. Assistant content that is not
    text (ms-swift freezes earlier turns as token-id lists) still counts as a turn.
    """
    turns = 0
    structured = 0
    has_structured = False
    observations = 0
    textual = 0
    for msg in messages:
        role = msg.get("role")
        if role == "assistant":
            turns += 1
            calls = msg.get("tool_calls")
            if isinstance(calls, list | tuple):
                has_structured = has_structured or bool(calls)
                structured += len(calls)
            textual += _calls_in_text(msg.get("content"))
        elif role == "tool":
            observations += 1
    if has_structured:
        total = structured
    elif observations:
        total = observations
    else:
        total = textual
    return RolloutStats(turns=turns, tool_calls=total, max_calls_per_turn=max_calls_per_turn)
