"""One rollout as a synchronous state machine: the `Episode` decides, a driver does the I/O.

An `Episode` holds everything a rollout is: the prompts and the conversation, the turn budget,
the per-turn call cap and its refusals, the feedback for malformed calls, the answer turn, the
rescue prompt, the fallback, the statistics and the record. It reads no clock, awaits nothing and
touches no tree: `next_action()` says what to do next, and the driver feeds back what happened.

    episode = Episode.start(instance, repo_files, policy="my-model")
    while not isinstance(action := episode.next_action(), Done):
        if isinstance(action, AskPolicy):    # action.request: a PolicyRequest
            episode.on_reply(reply_to(action.request), model_s=seconds)
        else:                                # RunCalls: valid calls, within the cap
            episode.on_results([tree_call(c.name, c.arguments) for c in action.calls])
    record = action.record

`run_rollout` (engine.py) is the asyncio driver. A trainer's per-turn hooks (ms-swift's
`on_turn_end` / `step` / `check_finished`) drive the same object: the ms-swift plugin
(`codegrep_model.train`) keeps one live `Episode` per request and drives it from those hooks.
`rollout_info()` gives the counts, and in strict mode the parsed answer, as one
`grpo_rewards.RolloutInfo`.

Strict mode (`RolloutConfig(strict=True)`, for training) reads answers exactly as the reward
does (`grpo_rewards.parse_answer`, no extra tolerance) and has no fallback: a rollout that never
answers stays `unanswered`, and the record says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

import grpo_rewards as rewards
from grpo_rewards import record_text
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from worktree_sandbox import ToolResult

from codegrep_model._episode_calls import (
    Action,
    AnyResult,
    AskPolicy,
    Done,
    Pending,
    PlannedCall,
    RunCalls,
    executed_record,
    plan_call,
)
from codegrep_model.answer import Answer, read_answer
from codegrep_model.budget import (
    CharEstimate,
    OverflowCause,
    TokenBudget,
    TokenCounter,
    fit_texts,
    message_text,
    tools_block_tokens,
)
from codegrep_model.errors import EpisodeError
from codegrep_model.policies.protocol import Observation, PolicyReply, PolicyRequest
from codegrep_model.prompts import PromptSet, render_top_levels
from codegrep_model.records import (
    ChatMessage,
    Instance,
    RewardView,
    RolloutCounts,
    RolloutRecord,
    ToolCallRecord,
    TurnRecord,
    Usage,
)
from codegrep_model.tools import openai_tools, tool_names

__all__ = [
    "DEFAULT_MAX_ISSUE_BYTES",
    "Action",
    "AskPolicy",
    "Done",
    "Episode",
    "PlannedCall",
    "RolloutConfig",
    "RunCalls",
    "rollout_stats",
]

Status = Literal["answered", "fallback", "unanswered", "error"]

# 256 KiB of UTF-8: ten times the longest SWE-bench problem statement (24,770 bytes over the 435
# rows of Lite and Verified dev at hand), so real issues are never cut, while a pasted 1 MB log
# costs a quarter of its parse and prompt.
DEFAULT_MAX_ISSUE_BYTES = 256 * 1024

_RESULT = TypeAdapter(ToolResult)


class RolloutConfig(BaseModel):
    """The interaction budget (defaults: the CodeGrep paper's 3 + 1 turns, 8 calls per turn)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    exploration_turns: int = Field(default=3, ge=0)
    max_calls_per_turn: int = Field(
        default=rewards.MAX_CALLS_PER_TURN,
        ge=1,
        description="Calls run per exploration turn (the rest are refused); defined once in "
        "grpo_rewards, and recorded in rollout_infos so the reward holds turns to this cap.",
    )
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
    budget: TokenBudget | None = Field(
        default=None,
        description="Token limits on the whole rollout (codegrep_model.budget): tool results cut "
        "to fit max_length, the model's output summed against max_completion_tokens; a rollout "
        "that cannot stay within them ends with an overflow cause. None: no limits.",
    )
    strict: bool = Field(
        default=False,
        description="Training: parse answers exactly as the reward does (grpo_rewards."
        "parse_answer), no fallback answer, and record the parsed answer and the counts "
        "(RolloutRecord.reward_view, Episode.rollout_infos).",
    )


def rollout_stats(
    turns: Sequence[TurnRecord], *, max_calls_per_turn: int = rewards.MAX_CALLS_PER_TURN
) -> RolloutCounts:
    """T, C_total and c̄ as `grpo_rewards.RolloutStats` defines them (T counts every assistant
    turn, the answer turn included, and is at least 1). C_total counts the calls that ran:
    refused and malformed calls did not, so c̄ stays within the per-turn cap the rewards check
    (the episode's `max_calls_per_turn`)."""
    calls = [c for t in turns for c in t.calls]
    executed = sum(c.status in ("ok", "tool_error") for c in calls)
    stats = rewards.RolloutStats(
        turns=len(turns), tool_calls=executed, max_calls_per_turn=max_calls_per_turn
    )
    return RolloutCounts(
        turns=stats.turns,
        tool_calls=stats.tool_calls,
        calls_per_turn=stats.cbar,
        refused_calls=sum(c.status == "refused" for c in calls),
        malformed_calls=sum(c.status == "malformed" for c in calls),
        tool_errors=sum(c.status == "tool_error" for c in calls),
    )


def _record_reply(reply: PolicyReply) -> PolicyReply:
    """`reply` with every text a record takes from it as `record_text`: a served model's JSON
    reply may decode to lone surrogates (`"\\udce9"`) in its content, a call's id, name or
    arguments, and one made the rollout record unwritable."""
    content = None if reply.content is None else record_text(reply.content)
    calls = tuple(
        c.model_copy(
            update={
                "id": record_text(c.id),
                "name": record_text(c.name),
                "arguments": record_text(c.arguments),
            }
        )
        if not (c.id + c.name + c.arguments).isascii()
        else c
        for c in reply.tool_calls
    )
    if content == reply.content and calls == reply.tool_calls:
        return reply
    return replace(reply, content=content, tool_calls=calls)


def _executed_per_turn(turns: Sequence[TurnRecord]) -> list[int]:
    return [sum(c.status in ("ok", "tool_error") for c in t.calls) for t in turns]


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


class Episode:
    """One rollout, step by step. Build it with `start`, then loop on
    `next_action()`: answer `AskPolicy` with `on_reply`, `RunCalls` with `on_results`, until
    `Done`. A policy that fails (an endpoint down, a reply timeout) ends it with `fail`.

    Feeding it out of order raises `EpisodeError`. Durations are what the driver measured and
    passes in; the episode only adds them up.
    """

    def __init__(
        self,
        *,
        instance: Instance,
        repo_files: Sequence[str],
        config: RolloutConfig,
        prompts: PromptSet,
        policy: str,
        issue_bytes: int,
        issue_cut_to: int | None,
        counter: TokenCounter | None = None,
        tools_tokens: int | None = None,
    ) -> None:
        # Use `start`; this only stores what it is given.
        self._cfg = config
        self._ps = prompts
        self._policy = policy
        self._instance = instance
        self._issue_bytes = issue_bytes
        self._issue_cut_to = issue_cut_to
        self._files = tuple(repo_files)
        self._tools = tuple(openai_tools())
        self._known = tool_names()
        self._messages: list[ChatMessage] = []
        self._turns: list[TurnRecord] = []
        self._history: list[tuple[Observation, ...]] = []
        self._observations: tuple[Observation, ...] = ()
        self._model_s = 0.0
        self._tools_s = 0.0
        self._usage = Usage()
        self._answer: Answer | None = None
        self._status: Status | None = None
        self._error: str | None = None
        self._parsed: rewards.ParsedAnswer | None = None  # strict: the last answer parse
        self._pending: Pending | None = None
        # the token budget's ledger (config.budget): counted only when there is a budget
        self._counter: TokenCounter = counter or CharEstimate()
        self._message_tokens: list[int] = []  # per message, template overhead included
        self._tools_tokens = tools_tokens  # the template's tool schemas; None: counted here
        self._completion_tokens = 0
        self._overflow: OverflowCause | None = None
        self._results_cut = 0

    # ------------------------------------------------------------------ building

    @classmethod
    def start(
        cls,
        instance: Instance,
        repo_files: Sequence[str],
        *,
        policy: str,
        config: RolloutConfig | None = None,
        prompts: PromptSet | None = None,
        counter: TokenCounter | None = None,
        tools_tokens: int | None = None,
    ) -> Episode:
        """A new episode for `instance` on a tree holding `repo_files`; `policy` names the
        policy in the record. The issue is cut to `config.max_issue_bytes` here. `counter`
        counts tokens for `config.budget` (the trainer's tokenizer; default: `CharEstimate`).
        `tools_tokens`: the tokens the trainer's chat template adds to the prompt for the tool
        schemas (`budget.tools_block_tokens` with its template); None: counted with ms-swift's
        hermes agent template's text."""
        cfg = config or RolloutConfig()
        ps = prompts or PromptSet.load()
        issue, issue_bytes, issue_cut_to = _cut_issue(
            instance.problem_statement, cfg.max_issue_bytes
        )
        # The agent is given the task, never its answer: the gold patch, the tests and any gold
        # files stay out of the episode, its state and what a policy sees.
        instance = Instance(
            instance_id=instance.instance_id,
            repo=instance.repo,
            base_commit=instance.base_commit,
            problem_statement=issue,
        )
        episode = cls(
            instance=instance,
            repo_files=repo_files,
            config=cfg,
            prompts=ps,
            policy=policy,
            issue_bytes=issue_bytes,
            issue_cut_to=issue_cut_to,
            counter=counter,
            tools_tokens=tools_tokens,
        )
        episode._messages = [
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
                    top_levels=render_top_levels(episode._files),
                ),
            ),
        ]
        episode._enter_answer_phase_if_due()
        return episode

    # ------------------------------------------------------------------ reading

    @property
    def config(self) -> RolloutConfig:
        return self._cfg

    @property
    def instance(self) -> Instance:
        """The instance as the policy sees it (its issue cut when it was too long)."""
        return self._instance

    @property
    def policy(self) -> str:
        return self._policy

    @property
    def messages(self) -> tuple[ChatMessage, ...]:
        return tuple(self._messages)

    @property
    def turns(self) -> tuple[TurnRecord, ...]:
        return tuple(self._turns)

    @property
    def stats(self) -> RolloutCounts:
        return rollout_stats(self._turns, max_calls_per_turn=self._cfg.max_calls_per_turn)

    @property
    def answer(self) -> Answer | None:
        return self._answer

    @property
    def status(self) -> Status | None:
        """None while the episode runs."""
        return self._status

    @property
    def done(self) -> bool:
        return self._status is not None

    @property
    def overflow(self) -> OverflowCause | None:
        """The budget limit that ended the rollout, or None."""
        return self._overflow

    @property
    def rollout_tokens(self) -> int:
        """The conversation's tokens so far, as `config.budget` counts them: every message, and
        the tool schemas the chat template writes into the system message (a trainer's rollout
        offers the tools on every turn)."""
        overhead = self._cfg.budget.message_overhead_tokens if self._cfg.budget else 0
        for m in self._messages[len(self._message_tokens) :]:
            self._message_tokens.append(self._counter.count(message_text(m)) + overhead)
        if self._tools_tokens is None:
            system = self._messages[0].content or "" if self._messages else ""
            self._tools_tokens = tools_block_tokens(system, self._tools, self._counter)
        return sum(self._message_tokens) + self._tools_tokens

    @property
    def completion_tokens(self) -> int:
        """The model's output tokens over every turn so far (counted with a budget only)."""
        return self._completion_tokens

    def next_action(self) -> Action:
        """What the driver must do next. Asking twice without feeding anything returns the
        same action."""
        if self._status is not None:
            return Done(self.record())
        if self._pending is not None:
            return RunCalls(tuple(o for o in self._pending.outcomes if isinstance(o, PlannedCall)))
        return AskPolicy(
            PolicyRequest(
                instance=self._instance,
                messages=tuple(self._messages),
                tools=self._tools if self._exploring() else (),
                turn=len(self._turns) + 1,
                exploration_turns=self._cfg.exploration_turns,
                max_calls=self._cfg.max_calls_per_turn,
                observations=self._observations,
                history=tuple(self._history),
                repo_files=self._files,
            )
        )

    def record(self, *, wall_s: float | None = None) -> RolloutRecord:
        """The full record of a finished episode. `wall_s` is the rollout's wall-clock time as
        the driver measured it; None: the sum of the model and tool seconds fed in."""
        if self._status is None:
            raise EpisodeError("the episode is not done: no record yet")
        wall = self._model_s + self._tools_s if wall_s is None else wall_s
        return RolloutRecord(
            instance_id=self._instance.instance_id,
            repo=self._instance.repo,
            commit=self._instance.base_commit,
            policy=self._policy,
            status=self._status,
            answer=self._answer,
            messages=tuple(self._messages),
            turns=tuple(self._turns),
            stats=rollout_stats(self._turns, max_calls_per_turn=self._cfg.max_calls_per_turn),
            usage=self._usage,
            wall_s=wall,
            model_s=self._model_s,
            overhead_s=max(0.0, wall - self._model_s),
            issue_bytes=self._issue_bytes,
            issue_cut_to=self._issue_cut_to,
            error=self._error,
            reward_view=self._reward_view(),
            overflow=self._overflow,
            rollout_tokens=self.rollout_tokens if self._cfg.budget else None,
            completion_tokens=self._completion_tokens if self._cfg.budget else None,
            tool_results_cut=self._results_cut,
        )

    def rollout_info(self) -> rewards.RolloutInfo:
        """What the reward and the rollout log read (`grpo_rewards.RolloutInfo`): T, C_total and
        the calls that ran per turn; in strict mode, once the episode is done, also the parsed
        answer (no answer: `answer.answer` None, and why); with a token budget, its counts."""
        stats = rollout_stats(self._turns, max_calls_per_turn=self._cfg.max_calls_per_turn)
        budget = self._cfg.budget is not None
        return rewards.RolloutInfo(
            num_turns=stats.turns,
            num_tool_calls=stats.tool_calls,
            tool_calls_per_turn=tuple(_executed_per_turn(self._turns)),
            max_calls_per_turn=self._cfg.max_calls_per_turn,
            answer=self._final_parse(),
            overflow=self._overflow if budget else None,
            rollout_tokens=self.rollout_tokens if budget else None,
            completion_tokens=self._completion_tokens if budget else None,
            tool_results_cut=self._results_cut if budget else None,
            token_counter=self._counter.name if budget else None,
        )

    def rollout_infos(self) -> dict[str, Any]:
        """`rollout_info()` in its JSON form, the dict ms-swift carries (`rollout_infos`)."""
        return self.rollout_info().to_infos()

    # ------------------------------------------------------------------ feeding

    def on_reply(self, reply: PolicyReply, *, model_s: float = 0.0, cut: bool = False) -> None:
        """The policy's reply to the last `AskPolicy`; `model_s` is how long it took.

        `cut`: the reply stopped at its length limit (finish reason `length`). It ends the
        rollout, as ms-swift's multi-turn loop ends one on such a reply (`MultiTurnScheduler.
        check_finished`): its calls do not run, and it is read as a last reply is read (an
        answer when it holds one and no call; else no answer, and the record says it was cut).
        """
        if self._status is not None or self._pending is not None:
            raise EpisodeError("the episode is not waiting for a reply")
        reply = _record_reply(reply)
        self._model_s += model_s
        self._usage += reply.usage
        budget = self._cfg.budget
        if budget is not None:
            # the server's count when it gave one, else the counter's on the text it stands for
            self._completion_tokens += reply.usage.completion_tokens or self._counter.count(
                message_text(
                    ChatMessage(
                        role="assistant", content=reply.content, tool_calls=reply.tool_calls
                    )
                )
            )
            cap = budget.max_completion_tokens
            if cap is not None and self._completion_tokens > cap:
                self._spent_reply(reply, model_s)
                return
        if cut:
            self._cut_reply(reply, model_s)
            return
        if self._exploring():
            self._explore_reply(reply, model_s)
        else:
            self._answer_reply(reply, model_s)
        if budget is not None and budget.max_length is not None and self._pending is None:
            # the next reply must fit too (with calls out, the tool turn checks it)
            need = self.rollout_tokens + budget.reply_reserve(self._completion_tokens)
            if self._status is None and need > budget.max_length:
                self._end_overflow("max_length")

    def on_results(self, results: Sequence[AnyResult], *, tools_s: float = 0.0) -> None:
        """The tree's results for the last `RunCalls`, in its order; `tools_s`: how long the
        calls took together."""
        if self._pending is None or self._status is not None:
            raise EpisodeError("the episode is not waiting for tool results")
        planned = sum(isinstance(o, PlannedCall) for o in self._pending.outcomes)
        if len(results) != planned:
            raise EpisodeError(f"{len(results)} results for {planned} calls")
        self._finish_tool_turn(results, tools_s)

    def fail(self, error: BaseException | str) -> None:
        """End the episode with status `error` (the policy failed: infrastructure, not the
        model); no answer."""
        if self._status is not None:
            raise EpisodeError("the episode is already done")
        # the policy's error may quote the server's reply, which may hold a lone surrogate
        self._error = record_text(
            error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        )
        self._answer = None
        self._status = "error"
        self._pending = None
        if self._cfg.strict:
            self._parsed = rewards.ParsedAnswer(
                None, f"no answer: the policy failed ({self._error})"
            )

    # ------------------------------------------------------------------ the rules

    def _spent_reply(self, reply: PolicyReply, model_s: float) -> None:
        """A reply that took the model's output past the budget: recorded, its calls refused,
        its answer not taken; the rollout ends."""
        cap = self._cfg.budget.max_completion_tokens if self._cfg.budget else None
        why = f"the rollout's completion budget ({cap} tokens over all turns) is spent"
        self._messages.append(
            ChatMessage(role="assistant", content=reply.content, tool_calls=reply.tool_calls)
        )
        self._turns.append(
            TurnRecord(
                index=len(self._turns) + 1,
                kind="explore" if self._exploring() else "answer",
                content=reply.content,
                calls=tuple(
                    ToolCallRecord(call=c, status="refused", error=why) for c in reply.tool_calls
                ),
                model_s=model_s,
                usage=reply.usage,
            )
        )
        self._end_overflow("completion_budget")

    def _cut_reply(self, reply: PolicyReply, model_s: float) -> None:
        """A reply cut at its length limit: recorded, its calls refused; it ends the rollout,
        answered when it holds an answer and no call."""
        why = "the reply was cut at its length limit"
        attempt = len(self._turns) - self._cfg.exploration_turns
        kind: Literal["explore", "answer", "rescue"] = (
            "explore" if attempt < 0 else "answer" if attempt == 0 else "rescue"
        )
        self._messages.append(
            ChatMessage(role="assistant", content=reply.content, tool_calls=reply.tool_calls)
        )
        self._turns.append(
            TurnRecord(
                index=len(self._turns) + 1,
                kind=kind,
                content=reply.content,
                calls=tuple(
                    ToolCallRecord(call=c, status="refused", error=why) for c in reply.tool_calls
                ),
                model_s=model_s,
                usage=reply.usage,
            )
        )
        self._observations = ()
        if not reply.tool_calls and self._take_answer(reply.content):
            return
        if self._cfg.strict:
            self._parsed = rewards.ParsedAnswer(None, f"no answer: {why}")
            self._answer = None
            self._status = "unanswered"
        else:
            self._answer = _fallback(self._turns, self._cfg.fallback_max_files)
            self._status = "fallback"

    def _end_overflow(self, cause: OverflowCause) -> None:
        """End the rollout for its token budget: no answer in strict mode (the reward sees none,
        as for a clipped completion), the files read in the other."""
        self._overflow = cause
        self._pending = None
        if self._cfg.strict:
            self._parsed = rewards.ParsedAnswer(
                None, f"no answer: the rollout overflowed ({cause})"
            )
            self._answer = None
            self._status = "unanswered"
        else:
            self._answer = _fallback(self._turns, self._cfg.fallback_max_files)
            self._status = "fallback"

    def _exploring(self) -> bool:
        return len(self._turns) < self._cfg.exploration_turns

    def _enter_answer_phase_if_due(self) -> None:
        # After the last exploration turn the answer prompt closes the conversation (the last
        # reminder already is that prompt when the turn had calls).
        due = len(self._turns) == self._cfg.exploration_turns
        if due and self._messages[-1].content != self._ps.answer():
            self._messages.append(ChatMessage(role="user", content=self._ps.answer()))

    def _take_answer(self, content: str | None) -> bool:
        """Parse `content`; when it holds an answer the episode is answered."""
        answer, parsed = read_answer(content, strict=self._cfg.strict)
        if parsed is not None:
            self._parsed = parsed
        if answer is None:
            return False
        self._answer = answer
        self._status = "answered"
        return True

    def _explore_reply(self, reply: PolicyReply, model_s: float) -> None:
        turn = len(self._turns) + 1
        self._messages.append(
            ChatMessage(role="assistant", content=reply.content, tool_calls=reply.tool_calls)
        )
        if not reply.tool_calls:
            self._turns.append(
                TurnRecord(
                    index=turn,
                    kind="explore",
                    content=reply.content,
                    model_s=model_s,
                    usage=reply.usage,
                )
            )
            if self._take_answer(reply.content):
                return
            self._messages.append(ChatMessage(role="user", content=self._ps.no_calls()))
            self._observations = ()
            self._enter_answer_phase_if_due()
            return
        outcomes = tuple(
            plan_call(c, self._known) for c in reply.tool_calls[: self._cfg.max_calls_per_turn]
        )
        self._pending = Pending(reply=reply, model_s=model_s, outcomes=outcomes)
        if not any(isinstance(o, PlannedCall) for o in outcomes):
            self._finish_tool_turn((), 0.0)  # nothing for the tree

    def _finish_tool_turn(self, results: Sequence[AnyResult], tools_s: float) -> None:
        pending = self._pending
        assert pending is not None
        cap = self._cfg.max_calls_per_turn
        turn = len(self._turns) + 1
        fed = iter(results)
        records: list[ToolCallRecord] = []
        texts: list[str] = []
        observations: list[Observation] = []
        for outcome in pending.outcomes:
            if isinstance(outcome, PlannedCall):
                result = next(fed)
                records.append(executed_record(outcome.call, result))
                texts.append(result.text)
                observations.append(Observation(call=outcome.call, result=result))
            else:
                records.append(outcome.record)
                texts.append(outcome.text)
                observations.append(Observation(call=outcome.record.call, result=None))
        for i, call in enumerate(pending.reply.tool_calls[cap:]):
            msg = self._ps.too_many_calls(max_calls=cap, index=cap + i + 1)
            records.append(ToolCallRecord(call=call, status="refused", error=msg))
            texts.append(msg)
        left = self._cfg.exploration_turns - turn
        fitted = self._fit_results(texts, left)
        if fitted is not None:
            for j, (old, new) in enumerate(zip(texts, fitted, strict=True)):
                if old != new:
                    records[j] = records[j].model_copy(update={"truncated": True})
                    self._results_cut += 1
            texts = fitted
        for record, text in zip(records, texts, strict=True):
            if fitted is None:
                break  # the rollout overflows: no result goes into its conversation
            self._messages.append(
                ChatMessage(
                    role="tool", content=text, tool_call_id=record.call.id, name=record.call.name
                )
            )
        self._observations = tuple(observations)
        self._history.append(self._observations)
        self._turns.append(
            TurnRecord(
                index=turn,
                kind="explore",
                content=pending.reply.content,
                calls=tuple(records),
                model_s=pending.model_s,
                tools_s=tools_s,
                usage=pending.reply.usage,
            )
        )
        self._tools_s += tools_s
        self._pending = None
        if fitted is None:
            self._end_overflow("max_length")
            return
        self._messages.append(ChatMessage(role="user", content=self._ps.reminder(turns_left=left)))
        self._enter_answer_phase_if_due()

    def _fit_results(self, texts: list[str], turns_left: int) -> list[str] | None:
        """The turn's tool results within the budget's max_length, once the prompts that follow
        and the next reply's largest size are set aside; None: not even cut ones fit."""
        budget = self._cfg.budget
        if budget is None or budget.max_length is None:
            return texts
        overhead = budget.message_overhead_tokens
        follow = [self._ps.reminder(turns_left=turns_left)]
        if turns_left == 0 and follow[0] != self._ps.answer():
            follow.append(self._ps.answer())
        room = (
            budget.max_length
            - self.rollout_tokens
            - sum(self._counter.count(f) + overhead for f in follow)
            - overhead * len(texts)
            - budget.reply_reserve(self._completion_tokens)
        )
        if room < 0:
            return None
        # the turns still to explore keep their replies' room and, for their results,
        # tool_turn_floor_tokens each (at least an even split of what is left goes to this
        # turn); a turn whose results cannot fit in that share may take the whole room, and a
        # later one may then overflow
        caps = []
        if budget.max_turn_tokens is not None:
            caps.append(turns_left * budget.max_turn_tokens)
        if budget.max_completion_tokens is not None:
            after_next = budget.max_completion_tokens - self._completion_tokens
            caps.append(max(0, after_next - budget.reply_reserve(self._completion_tokens)))
        later = min(caps) if caps and turns_left else 0
        free = max(0, room - later)
        share = max(free // (turns_left + 1), free - turns_left * budget.tool_turn_floor_tokens)
        return fit_texts(texts, share, self._counter) or fit_texts(texts, room, self._counter)

    def _answer_reply(self, reply: PolicyReply, model_s: float) -> None:
        attempt = len(self._turns) - self._cfg.exploration_turns
        # Calls on a turn without tools are dropped: answering them would need tool messages
        # the protocol has no place for, and the turn is for the answer only.
        self._messages.append(ChatMessage(role="assistant", content=reply.content))
        self._turns.append(
            TurnRecord(
                index=len(self._turns) + 1,
                kind="answer" if attempt == 0 else "rescue",
                content=reply.content,
                model_s=model_s,
                usage=reply.usage,
            )
        )
        if self._take_answer(reply.content):
            return
        if attempt < self._cfg.rescue_attempts:
            self._messages.append(ChatMessage(role="user", content=self._ps.rescue()))
        self._observations = ()
        if attempt < self._cfg.rescue_attempts:
            return
        if self._cfg.strict:
            self._status = "unanswered"  # no fallback: what the reward sees is no answer
        else:
            self._answer = _fallback(self._turns, self._cfg.fallback_max_files)
            self._status = "fallback"

    def _final_parse(self) -> rewards.ParsedAnswer | None:
        """Strict mode, once done: the final answer as the reward reads it."""
        if not self._cfg.strict or self._status is None:
            return None
        return self._parsed or rewards.ParsedAnswer(None, "no answer")

    def _reward_view(self) -> RewardView | None:
        parsed = self._final_parse()
        if parsed is None:
            return None
        stats = rollout_stats(self._turns, max_calls_per_turn=self._cfg.max_calls_per_turn)
        answer = parsed.answer
        # the reward's own parse of the reply (JSON's "\udce9" decodes to a lone surrogate there)
        return RewardView(
            files=None if answer is None else tuple(record_text(f) for f in answer.files),
            line_ranges={}
            if answer is None
            else {
                record_text(f): tuple((r.start, r.end) for r in rs)
                for f, rs in answer.line_ranges.items()
            },
            answer_error=None if parsed.error is None else record_text(parsed.error),
            turns=stats.turns,
            tool_calls=stats.tool_calls,
            tool_calls_per_turn=tuple(_executed_per_turn(self._turns)),
        )
