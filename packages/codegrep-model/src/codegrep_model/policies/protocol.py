"""The one interface every policy implements, and what flows through it.

A policy sees the whole conversation (`messages`, what an LLM needs) and also the typed results of
its previous calls (`observations`, what a program needs): the lexical policy reads grep matches
as data rather than parsing the text a model would see.

A policy that reads more of the tree than its calls return (the lexical policy: the tree's
definition index and its git history) says so through the protocol (`TreePolicy.needs`), and
whoever runs the rollout hands over what it asked for once per rollout (`TreePolicy.for_tree`),
so a request carries the conversation only and nothing outside this room asks which policy it
holds. Not for: the policies themselves, or choosing one (`codegrep_model.policies.spec`).
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
    "PolicyNeeds",
    "PolicyReply",
    "PolicyRequest",
    "TreeContext",
    "TreePolicy",
    "bind_tree",
    "needs_of",
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
    """Anything that turns a conversation into the next assistant message."""

    @property
    def name(self) -> str: ...

    async def reply(self, request: PolicyRequest) -> PolicyReply: ...


@dataclass(frozen=True)
class PolicyNeeds:
    """What a policy asks of whoever runs it beyond the conversation (`TreePolicy.needs`); a
    model behind an endpoint asks none of it."""

    #: The tree's definition index, as `TreeContext.definitions` (when the engine has one:
    #: worktree-sandbox's `symbols` extra).
    definitions: bool = False
    #: The tree's git history, as `TreeContext.commit_log` (the engine starts reading it when
    #: the rollout starts, so git log runs while the first tool calls do).
    history: bool = False
    #: Its replies are computation in Python, not waiting: a server runs them on a thread of
    #: their own, so its event loop keeps answering.
    own_thread: bool = False


@dataclass(frozen=True)
class TreeContext:
    """What a policy asked of one rollout's tree (`PolicyNeeds`); None where it did not ask,
    or where the tree has none (a directory has no history, no `symbols` extra no index)."""

    definitions: DefinitionLookup | None = None
    commit_log: CommitLogLookup | None = None


@runtime_checkable
class TreePolicy(Policy, Protocol):
    """A policy with needs: `needs` says what, and `for_tree` gives the policy that answers one
    rollout's requests with what was asked for (the policy itself keeps no rollout's state, so
    one instance serves any number of concurrent rollouts)."""

    @property
    def needs(self) -> PolicyNeeds: ...

    def for_tree(self, context: TreeContext) -> Policy: ...


def needs_of(policy: Policy) -> PolicyNeeds:
    """What `policy` asks for: its `needs`, or nothing for a policy that declares none."""
    return policy.needs if isinstance(policy, TreePolicy) else PolicyNeeds()


def bind_tree(policy: Policy, context: TreeContext) -> Policy:
    """The policy that answers a rollout whose tree gave `context`: `policy.for_tree(context)`,
    or `policy` itself when it declares no needs."""
    return policy.for_tree(context) if isinstance(policy, TreePolicy) else policy
