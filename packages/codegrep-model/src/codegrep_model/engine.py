"""The rollout engine: one issue, one tree, one policy, the paper's turn budget.

Per exploration turn the policy may emit up to `max_calls_per_turn` tool calls, which run
concurrently; calls beyond the cap are refused with a message the model sees. After the
exploration turns, one more turn offers no tools and asks for the answer; a reply without a
parsable answer gets one rescue prompt, and if that fails too the files the agent read stand in
as the answer and the rollout is flagged `fallback`. Policy failures (an endpoint that keeps
failing) end the rollout with status `error`: they are infrastructure, not model, failures.

An issue longer than `RolloutConfig.max_issue_bytes` is cut to it before the policy and the
prompt see it (a pasted log can make an issue megabytes long; no real problem statement comes
near the cap), and the record says how long it was and where it was cut.

The same engine serves batch evaluation and `codegrep localize`. It runs a rollout as one
coroutine; nothing drives it turn by turn yet (a training scheduler would need that).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any, Protocol

import grpo_rewards as rewards
from pydantic import BaseModel, ConfigDict, Field
from worktree_sandbox import GlobResult, GrepResult, ReadResult, ToolErrorKind

from codegrep_model.answer import Answer, parse_answer
from codegrep_model.errors import PolicyError
from codegrep_model.policy import Observation, Policy, PolicyReply, PolicyRequest
from codegrep_model.prompts import PromptSet, render_top_levels
from codegrep_model.records import (
    ChatMessage,
    Instance,
    RolloutRecord,
    RolloutStats,
    ToolCall,
    ToolCallRecord,
    TurnRecord,
    Usage,
)
from codegrep_model.tools import openai_tools, tool_names

__all__ = ["DEFAULT_MAX_ISSUE_BYTES", "RolloutConfig", "ToolTree", "rollout_stats", "run_rollout"]

AnyResult = GrepResult | GlobResult | ReadResult

# 256 KiB of UTF-8: ten times the longest SWE-bench problem statement (24,770 bytes over the 435
# rows of Lite and Verified dev at hand), so real issues are never cut, while a pasted 1 MB log
# costs a quarter of its parse and prompt.
DEFAULT_MAX_ISSUE_BYTES = 256 * 1024


class ToolTree(Protocol):
    """What the engine needs of a tree: `worktree_sandbox` trees (commit or directory) fit."""

    async def call(self, name: str, arguments: dict[str, Any] | str) -> AnyResult: ...

    async def files(self) -> tuple[str, ...]: ...


class RolloutConfig(BaseModel):
    """The interaction budget (defaults: the CodeGrep paper's 3 + 1 turns, 8 calls per turn)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    exploration_turns: int = Field(default=3, ge=0)
    max_calls_per_turn: int = Field(default=8, ge=1)
    rescue_attempts: int = Field(default=1, ge=0, description="Extra asks when no answer comes.")
    fallback_max_files: int = Field(default=3, ge=0, description="Files read that stand in.")
    reply_timeout_s: float | None = Field(
        default=None, gt=0, description="Per policy reply; None leaves it to the policy."
    )
    max_issue_bytes: int = Field(
        default=DEFAULT_MAX_ISSUE_BYTES,
        ge=1,
        description="A longer issue (UTF-8 bytes) is cut to this for the policy and the prompt; "
        "the record carries both sizes.",
    )


def rollout_stats(turns: Sequence[TurnRecord]) -> RolloutStats:
    """T, C_total and c̄ as `grpo_rewards.RolloutStats` defines them (T counts every assistant
    turn, the answer turn included, and is at least 1). C_total counts the calls that ran:
    refused and malformed calls did not, so c̄ stays within the per-turn cap the rewards check."""
    calls = [c for t in turns for c in t.calls]
    executed = sum(c.status in ("ok", "tool_error") for c in calls)
    stats = rewards.RolloutStats(turns=len(turns), tool_calls=executed)
    return RolloutStats(
        turns=stats.turns,
        tool_calls=stats.tool_calls,
        calls_per_turn=stats.cbar,
        refused_calls=sum(c.status == "refused" for c in calls),
        malformed_calls=sum(c.status == "malformed" for c in calls),
        tool_errors=sum(c.status == "tool_error" for c in calls),
    )


def _paths(result: AnyResult) -> tuple[str, ...]:
    if isinstance(result, ReadResult):
        return (result.path,) if result.ok and result.path else ()
    if isinstance(result, GrepResult):
        return tuple(dict.fromkeys(m.path for m in result.matches))
    return result.paths


async def _execute(
    tree: ToolTree, call: ToolCall, known: tuple[str, ...]
) -> tuple[ToolCallRecord, str, AnyResult | None]:
    if not call.name:
        msg = (
            "Malformed tool call: write it as "
            '<tool_call>{"name": "grep", "arguments": {"pattern": "..."}}</tool_call>.'
        )
        return ToolCallRecord(call=call, status="malformed", error=msg), msg, None
    if call.name not in known:
        msg = f"Unknown tool {call.name!r}. The tools are: {', '.join(known)}."
        return ToolCallRecord(call=call, status="malformed", error=msg), msg, None
    try:
        args = json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError as exc:
        msg = (
            f"Malformed call to {call.name}: the arguments are not valid JSON ({exc}). "
            "Send a JSON object that matches the tool's parameters."
        )
        return ToolCallRecord(call=call, status="malformed", error=msg), msg, None
    if not isinstance(args, dict):
        msg = f"Malformed call to {call.name}: the arguments must be a JSON object."
        return ToolCallRecord(call=call, status="malformed", error=msg), msg, None
    result = await tree.call(call.name, args)
    if result.ok:
        status: Any = "ok"
    elif result.error == ToolErrorKind.INVALID_ARGUMENTS:
        status = "malformed"
    else:
        status = "tool_error"
    record = ToolCallRecord(
        call=call,
        status=status,
        error=None if result.ok else result.text,
        elapsed_ms=result.elapsed_ms,
        truncated=result.truncated,
        cached=result.cached,
        paths=_paths(result)[:50],
    )
    return record, result.text, result


def _cut_issue(text: str, max_bytes: int) -> tuple[str, int, int | None]:
    """`text` cut to at most `max_bytes` UTF-8 bytes, at a character boundary; its size in
    bytes; the bytes kept when it was cut (None when it was not)."""
    # surrogatepass: a JSONL problem statement may hold a lone surrogate; it must not crash here
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text, len(data), None
    end = max_bytes
    while end > 0 and data[end] & 0xC0 == 0x80:  # a continuation byte: mid-character
        end -= 1
    return data[:end].decode("utf-8", "surrogatepass"), len(data), end


def _fallback(turns: Sequence[TurnRecord], limit: int) -> Answer:
    read: list[str] = []
    for t in turns:
        for c in t.calls:
            if c.call.name == "read" and c.status == "ok":
                read.extend(p for p in c.paths if p not in read)
    return Answer(files=tuple(read[:limit]))


async def run_rollout(
    policy: Policy,
    tree: ToolTree,
    instance: Instance,
    *,
    config: RolloutConfig | None = None,
    prompts: PromptSet | None = None,
) -> RolloutRecord:
    """Run one rollout to the end and return its full record; never raises for model mistakes."""
    cfg = config or RolloutConfig()
    ps = prompts or PromptSet.load()
    started = time.perf_counter()
    issue, issue_bytes, issue_cut_to = _cut_issue(instance.problem_statement, cfg.max_issue_bytes)
    if issue_cut_to is not None:
        instance = instance.model_copy(update={"problem_statement": issue})
    known = tool_names()
    tools = tuple(openai_tools())
    files = await tree.files()
    messages: list[ChatMessage] = [
        ChatMessage(
            role="system",
            content=ps.system(
                max_calls=cfg.max_calls_per_turn, exploration_turns=cfg.exploration_turns
            ),
        ),
        ChatMessage(
            role="user",
            content=ps.user(
                repo=instance.repo,
                issue=instance.problem_statement,
                top_levels=render_top_levels(files),
            ),
        ),
    ]
    turns: list[TurnRecord] = []
    observations: tuple[Observation, ...] = ()
    history: list[tuple[Observation, ...]] = []
    model_s = 0.0
    usage = Usage()
    answer: Answer | None = None

    async def ask(offer: tuple[dict[str, Any], ...]) -> tuple[PolicyReply, float]:
        request = PolicyRequest(
            instance=instance,
            messages=tuple(messages),
            tools=offer,
            turn=len(turns) + 1,
            exploration_turns=cfg.exploration_turns,
            max_calls=cfg.max_calls_per_turn,
            observations=observations,
            history=tuple(history),
            repo_files=files,
        )
        t0 = time.perf_counter()
        coro = policy.reply(request)
        if cfg.reply_timeout_s is None:
            reply = await coro
        else:
            try:
                reply = await asyncio.wait_for(coro, cfg.reply_timeout_s)
            except TimeoutError as exc:
                raise PolicyError(f"no reply within {cfg.reply_timeout_s} s") from exc
        return reply, time.perf_counter() - t0

    def finish(status: Any, error: str | None = None) -> RolloutRecord:
        wall = time.perf_counter() - started
        return RolloutRecord(
            instance_id=instance.instance_id,
            repo=instance.repo,
            commit=instance.base_commit,
            policy=policy.name,
            status=status,
            answer=answer,
            messages=tuple(messages),
            turns=tuple(turns),
            stats=rollout_stats(turns),
            usage=usage,
            wall_s=wall,
            model_s=model_s,
            overhead_s=max(0.0, wall - model_s),
            issue_bytes=issue_bytes,
            issue_cut_to=issue_cut_to,
            error=error,
        )

    try:
        for turn in range(1, cfg.exploration_turns + 1):
            reply, dt = await ask(tools)
            model_s += dt
            usage += reply.usage
            messages.append(
                ChatMessage(role="assistant", content=reply.content, tool_calls=reply.tool_calls)
            )
            if not reply.tool_calls:
                turns.append(
                    TurnRecord(
                        index=turn,
                        kind="explore",
                        content=reply.content,
                        model_s=dt,
                        usage=reply.usage,
                    )
                )
                answer = parse_answer(reply.content)
                if answer is not None:
                    return finish("answered")
                messages.append(ChatMessage(role="user", content=ps.no_calls()))
                observations = ()
                continue
            t0 = time.perf_counter()
            run = reply.tool_calls[: cfg.max_calls_per_turn]
            executed = await asyncio.gather(*(_execute(tree, c, known) for c in run))
            tools_s = time.perf_counter() - t0
            records = [r for r, _, _ in executed]
            texts = [text for _, text, _ in executed]
            for i, call in enumerate(reply.tool_calls[cfg.max_calls_per_turn :]):
                msg = ps.too_many_calls(
                    max_calls=cfg.max_calls_per_turn, index=cfg.max_calls_per_turn + i + 1
                )
                records.append(ToolCallRecord(call=call, status="refused", error=msg))
                texts.append(msg)
            for record, text in zip(records, texts, strict=True):
                messages.append(
                    ChatMessage(
                        role="tool",
                        content=text,
                        tool_call_id=record.call.id,
                        name=record.call.name,
                    )
                )
            observations = tuple(Observation(call=r.call, result=res) for r, _, res in executed)
            history.append(observations)
            turns.append(
                TurnRecord(
                    index=turn,
                    kind="explore",
                    content=reply.content,
                    calls=tuple(records),
                    model_s=dt,
                    tools_s=tools_s,
                    usage=reply.usage,
                )
            )
            left = cfg.exploration_turns - turn
            messages.append(ChatMessage(role="user", content=ps.reminder(turns_left=left)))
        if messages[-1].content != ps.answer():
            messages.append(ChatMessage(role="user", content=ps.answer()))
        for attempt in range(cfg.rescue_attempts + 1):
            reply, dt = await ask(())
            model_s += dt
            usage += reply.usage
            # Calls on a turn without tools are dropped: answering them would need tool
            # messages the protocol has no place for, and the turn is for the answer only.
            messages.append(ChatMessage(role="assistant", content=reply.content))
            turns.append(
                TurnRecord(
                    index=len(turns) + 1,
                    kind="answer" if attempt == 0 else "rescue",
                    content=reply.content,
                    model_s=dt,
                    usage=reply.usage,
                )
            )
            answer = parse_answer(reply.content)
            if answer is not None:
                return finish("answered")
            if attempt < cfg.rescue_attempts:
                messages.append(ChatMessage(role="user", content=ps.rescue()))
            observations = ()
        answer = _fallback(turns, cfg.fallback_max_files)
        return finish("fallback")
    except PolicyError as exc:
        answer = None
        return finish("error", f"{type(exc).__name__}: {exc}")
