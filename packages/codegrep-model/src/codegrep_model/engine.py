"""The rollout engine: one issue, one tree, one policy, the paper's turn budget.

Per exploration turn the policy may emit up to `max_calls_per_turn` tool calls, which run
concurrently; calls beyond the cap are refused with a message the model sees. After the
exploration turns, one more turn offers no tools and asks for the answer; a reply without a
parsable answer gets one rescue prompt, and if that fails too the files the agent read stand in
as the answer and the rollout is flagged `fallback`. Policy failures (an endpoint that keeps
failing, a reply over `RolloutConfig.reply_timeout_s`) end the rollout with status `error`: they
are infrastructure, not model, failures.

An issue longer than `RolloutConfig.max_issue_bytes` is cut to it before the policy and the
prompt see it (a pasted log can make an issue megabytes long; no real problem statement comes
near the cap), and the record says how long it was and where it was cut.

Every one of these rules lives in `codegrep_model.episode.Episode`, a synchronous state machine;
`run_rollout` is its asyncio driver (await the policy, run one turn's calls concurrently on the
tree, time both). The same engine serves batch evaluation and `codegrep localize`; the ms-swift
training plugin (`codegrep_model.train`) drives the same `Episode` from its per-turn hooks.
"""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any, Protocol

from worktree_sandbox import GlobResult, GrepResult, ReadResult, SymbolIndex, Tree
from worktree_sandbox import symbols_available as _symbols_available
from worktree_sandbox.history import HistoryLog, commit_log

from codegrep_model.budget import TokenCounter
from codegrep_model.episode import (
    DEFAULT_MAX_ISSUE_BYTES,
    AskPolicy,
    Done,
    Episode,
    RolloutConfig,
    RunCalls,
    rollout_stats,
)
from codegrep_model.errors import PolicyError
from codegrep_model.policies.protocol import (
    CommitLogLookup,
    DefinitionLookup,
    Policy,
    PolicyNeeds,
    PolicyReply,
    PolicyRequest,
    TreeContext,
    bind_tree,
    needs_of,
)
from codegrep_model.prompts import PromptSet
from codegrep_model.records import Instance, RolloutRecord

__all__ = ["DEFAULT_MAX_ISSUE_BYTES", "RolloutConfig", "ToolTree", "rollout_stats", "run_rollout"]

AnyResult = GrepResult | GlobResult | ReadResult


class ToolTree(Protocol):
    """What the engine needs of a tree: `worktree_sandbox` trees (commit or directory) fit."""

    async def call(self, name: str, arguments: dict[str, Any] | str) -> AnyResult: ...

    async def files(self) -> tuple[str, ...]: ...


@functools.cache
def _symbol_index() -> SymbolIndex | None:
    """One definition index per process (memory only: each distinct file content is parsed
    once, whatever tree or commit it is in); None without worktree-sandbox's `symbols` extra."""
    return SymbolIndex() if _symbols_available() else None


def definitions_mode() -> str:
    """How a rollout of this process reads definitions: "tree-sitter" (worktree-sandbox's
    `symbols` extra installed: the engine offers policies the tree's definition index) or
    "regex" (without it: only the lexical policy's regular expressions). The lexical policy's
    scores differ between the two, so a calibration records the mode it was measured in and
    every answer says which ran."""
    return "tree-sitter" if _symbol_index() is not None else "regex"


def definition_lookup(tree: object) -> DefinitionLookup | None:
    """The definitions of `tree`'s files for a policy's requests, when the tree is a
    worktree_sandbox tree and tree-sitter is installed."""
    index = _symbol_index()
    if index is None or not isinstance(tree, Tree):
        return None
    return functools.partial(index.definitions, tree)


def _start_history(needs: PolicyNeeds, tree: object) -> asyncio.Task[HistoryLog] | None:
    """Start reading the tree's history when the policy asked for it (`PolicyNeeds.history`),
    so that git log runs while the first tool calls do."""
    if not needs.history or not isinstance(tree, Tree):
        return None
    return asyncio.ensure_future(commit_log(tree))


def _history_lookup(task: asyncio.Task[HistoryLog]) -> CommitLogLookup:
    async def lookup() -> HistoryLog:
        return await asyncio.shield(task)

    return lookup


async def _ask(policy: Policy, request: PolicyRequest, timeout_s: float | None) -> PolicyReply:
    if timeout_s is None:
        return await policy.reply(request)
    try:
        return await asyncio.wait_for(policy.reply(request), timeout_s)
    except TimeoutError as exc:
        raise PolicyError(f"no reply within {timeout_s} s") from exc


async def run_rollout(
    policy: Policy,
    tree: ToolTree,
    instance: Instance,
    *,
    config: RolloutConfig | None = None,
    prompts: PromptSet | None = None,
    counter: TokenCounter | None = None,
) -> RolloutRecord:
    """Run one rollout to the end and return its full record; never raises for model mistakes.
    `counter` counts tokens for `config.budget` (default: the character estimate)."""
    cfg = config or RolloutConfig()
    started = time.perf_counter()
    files = await tree.files()
    episode = Episode.start(
        instance, files, policy=policy.name, config=cfg, prompts=prompts, counter=counter
    )
    needs = needs_of(policy)
    history = _start_history(needs, tree)
    try:
        context = TreeContext(
            definitions=definition_lookup(tree) if needs.definitions else None,
            commit_log=_history_lookup(history) if history is not None else None,
        )
        return await _drive(episode, bind_tree(policy, context), tree, cfg, started)
    finally:
        if history is not None and not history.done():
            history.cancel()


async def _drive(
    episode: Episode,
    policy: Policy,
    tree: ToolTree,
    cfg: RolloutConfig,
    started: float,
) -> RolloutRecord:
    while True:
        match episode.next_action():
            case Done():
                return episode.record(wall_s=time.perf_counter() - started)
            case RunCalls(calls=calls):
                t0 = time.perf_counter()
                results = await asyncio.gather(*(tree.call(c.name, c.arguments) for c in calls))
                episode.on_results(results, tools_s=time.perf_counter() - t0)
            case AskPolicy(request=request):
                t0 = time.perf_counter()
                try:
                    reply = await _ask(policy, request, cfg.reply_timeout_s)
                except PolicyError as exc:
                    episode.fail(exc)
                    continue
                episode.on_reply(reply, model_s=time.perf_counter() - t0)
