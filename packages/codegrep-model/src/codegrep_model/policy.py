"""The one interface every policy implements, and what flows through it.

A policy sees the whole conversation (`messages`, what an LLM needs) and also the typed results of
its previous calls (`observations`, what a program needs): the lexical policy reads grep matches
as data rather than parsing the text a model would see.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from worktree_sandbox import Definition, GlobResult, GrepResult, ReadResult
from worktree_sandbox.history import HistoryLog

from codegrep_model.records import ChatMessage, Instance, ToolCall, Usage

__all__ = [
    "CommitLogLookup",
    "DefinitionLookup",
    "Observation",
    "Policy",
    "PolicyReply",
    "PolicyRequest",
]

# The definitions of one file of the rollout's tree (worktree_sandbox's tree-sitter index);
# () for a file with no grammar or that cannot be read.
DefinitionLookup = Callable[[str], Awaitable[tuple[Definition, ...]]]
# The commits before the rollout's tree (worktree_sandbox.history), read once per rollout; an
# empty log (with its reason) when the tree has no readable history.
CommitLogLookup = Callable[[], Awaitable[HistoryLog]]


@dataclass(frozen=True)
class Observation:
    """One call of the previous turn and its typed result (None when it was refused/malformed)."""

    call: ToolCall
    result: GrepResult | GlobResult | ReadResult | None


@dataclass(frozen=True)
class PolicyRequest:
    instance: Instance
    messages: tuple[ChatMessage, ...]
    tools: tuple[dict[str, Any], ...] = field(
        metadata={"doc": "OpenAI function tools offered this turn; empty on the answer turn."}
    )
    turn: int
    exploration_turns: int
    max_calls: int
    observations: tuple[Observation, ...] = ()
    history: tuple[tuple[Observation, ...], ...] = field(
        default=(), metadata={"doc": "Observations of every earlier tool turn, oldest first."}
    )
    repo_files: tuple[str, ...] = ()
    definitions: DefinitionLookup | None = field(
        default=None,
        compare=False,
        repr=False,
        metadata={
            "doc": "The tree's definition index when the engine has one (worktree-sandbox's "
            "`symbols` extra); a program policy may use it, a model never sees it."
        },
    )
    commit_log: CommitLogLookup | None = field(
        default=None,
        compare=False,
        repr=False,
        metadata={
            "doc": "The tree's git history, for a policy whose `uses_history` is true (the "
            "engine starts reading it when the rollout starts); a model never sees it."
        },
    )

    @property
    def answer_turn(self) -> bool:
        return not self.tools


@dataclass(frozen=True)
class PolicyReply:
    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)


@runtime_checkable
class Policy(Protocol):
    """Anything that turns a conversation into the next assistant message.

    Optional: a true `uses_history` attribute asks the engine to read the tree's git history
    when the rollout starts and to hand it over as `PolicyRequest.commit_log`."""

    @property
    def name(self) -> str: ...

    async def reply(self, request: PolicyRequest) -> PolicyReply: ...
