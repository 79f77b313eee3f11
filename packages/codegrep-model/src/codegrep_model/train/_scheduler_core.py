"""The CodeGrep agent inside a trainer's per-turn hooks, without the trainer.

ms-swift drives a multi-turn rollout through hooks on a scheduler: `on_trajectory_start` (the
requests before the first turn), `on_turn_end` (after each assistant reply; async, gathered over
every live rollout), `step` (append what the environment answers) and `check_finished`. This
module maps those hooks onto one `Episode` per rollout, so that training runs the very agent
that `run_rollout` runs at inference: the same prompts, per-turn call cap, refusals, feedback
for malformed calls, answer turn and strict answer parse.

- `EpisodeHooks.start` opens the rollout's tree and starts its `Episode` from the dataset row's
  columns, and refuses a row whose system and user messages are not what the `Episode` renders
  (a dataset built with other prompts or another budget would train another agent).
- `EpisodeHooks.turn` feeds the assistant reply (ms-swift's parsed `tool_calls`, or hermes
  `<tool_call>` blocks in the text, which win when present: they are what was generated, and
  they keep the malformed calls the parser drops), runs the turn's calls concurrently on the
  tree, and says what to append, whether the rollout is done and its `rollout_info`
  (`grpo_rewards.RolloutInfo`, from `Episode.rollout_info`; ms-swift gets it as a dict).
- `EpisodeHooks.take_messages` hands those messages to the synchronous `step`.
- `fold_follow_up` (and `CHATML_TURN_BREAK`), re-exported from `codegrep_model.datasets`: what
  `step` appends after a reply, one user message in the chat template's own tokens; the SFT
  rows (`agent_messages`) write the same, so SFT and GRPO show the model one format.

Trees live in one long-lived `TreePool` per `(cache_dir, source)`, on an event loop of their own
(`SandboxHost`): ms-swift's colocate loop makes a new event loop for every batch and closes it,
and a tree's git processes and locks belong to the loop that made them. The GRPO group of one
prompt shares one tree, a tree stays warm in the pool's LRU after its rollouts end, and the bare
clones stay in the cache: nothing is cloned again per rollout.

Not here: anything that imports ms-swift or torch (`codegrep_model/train/plugins/swift_plugin.py`
is the ms-swift side), the reward (`grpo_rewards.swift_orm`) and the advantage scale
(`codegrep_model.train._advantage`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import threading
import time
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from codegrep_records import parse_json
from grpo_rewards import INFO_EPISODE_STATUS, INFO_TEST_POLICY, RolloutInfo
from worktree_sandbox import BareRepoCache, SandboxLimits, TreePool

from codegrep_model._hermes import split_hermes
from codegrep_model.budget import (
    CharEstimate,
    SystemWithTools,
    TokenBudget,
    TokenCounter,
    tools_block_tokens,
)
from codegrep_model.datasets import (
    CHATML_TURN_BREAK,
    TRAINING_CONFIG,
    config_from_row,
    fold_follow_up,
)
from codegrep_model.engine import ToolTree
from codegrep_model.episode import AskPolicy, Episode, RolloutConfig, RunCalls
from codegrep_model.errors import CodegrepModelError, EpisodeError
from codegrep_model.policies.lexical.policy import LexicalPolicy
from codegrep_model.policies.protocol import Policy, PolicyReply
from codegrep_model.prompts import PromptSet
from codegrep_model.records import ChatMessage, Instance, ToolCall, Usage
from codegrep_model.tools import tool_names

__all__ = [
    "CHATML_TURN_BREAK",
    "INFO_EPISODE_STATUS",
    "INFO_TEST_POLICY",
    "REQUIRED_COLUMNS",
    "TEST_POLICY_ENV",
    "TRAINING_BUDGET",
    "EpisodeHooks",
    "PolicyOverride",
    "SandboxHost",
    "TrainingSetupError",
    "TurnOutcome",
    "fold_follow_up",
    "hermes_text",
    "override_policy_from_env",
    "policy_reply",
]

T = TypeVar("T")

#: Dataset columns a GRPO row must carry (ms-swift hands them to the scheduler as `data_dict`).
REQUIRED_COLUMNS = (
    "instance_id",
    "repo",
    "base_commit",
    "problem_statement",
    "cache_dir",
    "source",
)


#: The token budget the hooks hold rollouts to unless told otherwise: ms-swift's usual
#: `--max_length 32768` over the whole rollout, and the paper's ~2,000 tokens of model output
#: over all turns (`--max_completion_length 2048` caps one round only).
TRAINING_BUDGET = TokenBudget(max_length=32768, max_completion_tokens=2048, max_turn_tokens=2048)


#: TEST ONLY. `CODEGREP_TEST_POLICY=lexical` makes the hooks replace every reply of the model
#: with `LexicalPolicy`'s reply for that turn: a random tiny model makes no tool calls, so a CPU
#: test of the real training entry point gets real calls on a real repository this way.
#: `lexical-alternate` replaces the replies of every other rollout of an instance only, so that a
#: GRPO group holds both (rewards that differ, advantages that are not all 0). Never set it for
#: training: the model would be trained on another policy's text.
TEST_POLICY_ENV = "CODEGREP_TEST_POLICY"
_TEST_POLICIES = ("lexical", "lexical-alternate")


class TrainingSetupError(CodegrepModelError, ValueError):
    """The dataset or the trainer's settings do not fit the agent: a row whose prompts differ
    from what the `Episode` renders, a missing column, a turn limit below the episode's turns,
    a request the hooks never saw start."""


@dataclass(frozen=True)
class PolicyOverride:
    """TEST ONLY: a policy whose replies replace the model's (see `TEST_POLICY_ENV`)."""

    policy: Policy
    #: Every other rollout of an instance (in the order they start) keeps the model's replies.
    alternate: bool = False


def override_policy_from_env(environ: Mapping[str, str] | None = None) -> PolicyOverride | None:
    """The test-only override `CODEGREP_TEST_POLICY` names, or None when it is unset or empty."""
    name = (os.environ if environ is None else environ).get(TEST_POLICY_ENV, "").strip()
    if not name:
        return None
    if name in _TEST_POLICIES:
        return PolicyOverride(LexicalPolicy(), alternate=name.endswith("-alternate"))
    raise TrainingSetupError(
        f"{TEST_POLICY_ENV}={name!r}: the test-only policies are {', '.join(_TEST_POLICIES)}"
    )


# ---------------------------------------------------------------------------- replies


def _text(content: object) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # OpenAI content parts
        parts = [p.get("text", "") for p in content if isinstance(p, Mapping)]
        return "".join(str(p) for p in parts)
    raise TypeError(f"reply content is a {type(content).__name__}, not text")


def _field(obj: object, name: str) -> object:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _tool_call(raw: object, fallback_id: str) -> ToolCall:
    """One parsed call: ms-swift's `ChatCompletionMessageToolCall` (`.function.name` /
    `.function.arguments`), an OpenAI dict, or a bare `{"name", "arguments"}` dict."""
    function = _field(raw, "function")
    source = function if function is not None else raw
    name = _field(source, "name")
    args = _field(source, "arguments")
    if args is None:
        args = "{}"
    call_id = _field(raw, "id")
    return ToolCall(
        id=str(call_id) if call_id else fallback_id,
        name=name.strip() if isinstance(name, str) else "",
        arguments=args if isinstance(args, str) else json.dumps(args),
    )


def policy_reply(
    content: object, tool_calls: Sequence[object] | None = None, *, id_prefix: str = "call"
) -> PolicyReply:
    """The `PolicyReply` an assistant message stands for.

    Hermes `<tool_call>` blocks in the text win over `tool_calls`: the text is what the model
    generated and what the loss trains, and a block the trainer's parser could not read (and so
    left out of `tool_calls`) must still reach the episode, which answers it as malformed. Without
    blocks, `tool_calls` are taken (a server whose tool parser moved them out of the text).
    """
    text = _text(content)
    if text is not None and "<tool_call>" in text:
        rest, calls = split_hermes(text, id_prefix=id_prefix)
        return PolicyReply(content=rest, tool_calls=calls)
    parsed = tuple(_tool_call(tc, f"{id_prefix}_{i}") for i, tc in enumerate(tool_calls or ()))
    return PolicyReply(content=text, tool_calls=parsed)


def hermes_text(reply: PolicyReply) -> str:
    """A reply as the text a Qwen model writes: its content, then one `<tool_call>` block per
    call (the arguments as a JSON object when they are one)."""
    parts = [reply.content] if reply.content else []
    for call in reply.tool_calls:
        try:
            arguments: object = parse_json(call.arguments)
        except ValueError:
            arguments = call.arguments
        body = json.dumps({"name": call.name, "arguments": arguments}, ensure_ascii=False)
        parts.append(f"<tool_call>\n{body}\n</tool_call>")
    return "\n".join(parts)


# ---------------------------------------------------------------------------- the sandbox loop


class SandboxHost:
    """An event loop on a daemon thread that owns the tree pools and runs every tree call.

    `run` may be awaited from any event loop (ms-swift's per-batch loops, its rollout server's
    loop); the work itself always runs here, on one loop, so pooled trees outlive the callers'
    loops.
    """

    def __init__(
        self,
        *,
        workdir: str | None = None,
        limits: SandboxLimits | None = None,
        max_idle_trees: int = 32,
    ) -> None:
        self._workdir = workdir
        self._limits = limits
        self._max_idle = max_idle_trees
        self._pools: dict[tuple[str, str], TreePool] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise TrainingSetupError("the sandbox host is closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="codegrep-sandbox", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on the host's loop (never from that loop: it would wait on itself)."""
        loop = self._ensure_loop()
        if threading.current_thread() is self._thread:
            coro.close()
            raise TrainingSetupError("SandboxHost work submitted from the host's own loop")
        return asyncio.run_coroutine_threadsafe(coro, loop)

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the host's loop and await its result from the caller's loop."""
        return await asyncio.wrap_future(self.submit(coro))

    def pool(self, cache_dir: str, source: str) -> TreePool:
        """The pool of one clone cache, made on first use (call on the host's loop)."""
        key = (cache_dir, source)
        pool = self._pools.get(key)
        if pool is None:
            pool = TreePool(
                lambda: BareRepoCache(cache_dir, source),
                limits=self._limits,
                workdir=self._workdir,
                max_idle_trees=self._max_idle,
            )
            self._pools[key] = pool
        return pool

    def close(self) -> None:
        """Close every pool (their checkouts go) and stop the loop; safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        async def shut() -> None:
            for pool in self._pools.values():
                await pool.close()
            self._pools.clear()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(shut(), loop).result(timeout=60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        if not thread.is_alive():
            loop.close()


# ---------------------------------------------------------------------------- the hooks


@dataclass(frozen=True)
class TurnOutcome:
    """What one assistant turn led to."""

    #: Messages to append after the assistant's, as the trainer's chat messages: one `tool`
    #: message per call (refusals and malformed-call feedback included), then the user prompt
    #: the episode adds (the turns-left reminder, or the answer-turn demand).
    messages: tuple[dict[str, str], ...]
    done: bool
    #: What the reward and the log read (T, C_total, calls per turn; the parsed answer once
    #: done; the episode's status; the token budget's counts).
    rollout_info: RolloutInfo
    #: Calls that ran this turn (refused and malformed ones did not).
    executed_calls: int
    #: The test-only policy's reply text that replaced the model's; None in real training.
    replaced_content: str | None = None

    @property
    def rollout_infos(self) -> dict[str, Any]:
        """`rollout_info` as the dict ms-swift carries, under `grpo_rewards`' `INFO_*` keys."""
        return self.rollout_info.to_infos()


@dataclass
class _Live:
    episode: Episode
    tree: ToolTree
    lease: contextlib.AsyncExitStack
    replace: Policy | None  # TEST ONLY: the policy whose replies stand in for the model's
    outbox: list[dict[str, str]] = field(default_factory=list)


def _columns(data_dict: Mapping[str, Any] | None, uuid: str) -> dict[str, str]:
    row = data_dict or {}
    missing = [c for c in REQUIRED_COLUMNS if not row.get(c)]
    if missing:
        raise TrainingSetupError(
            f"request {uuid}: the dataset row lacks {', '.join(missing)} (have: "
            f"{', '.join(sorted(row)) or 'nothing'}). Build rows with `codegrep-model dataset "
            "grpo` (codegrep_model.datasets.grpo_rows); with a rollout server, pass them with "
            "--vllm_server_pass_dataset true."
        )
    return {c: str(row[c]) for c in REQUIRED_COLUMNS}


def _prompt_messages(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for m in messages:
        role, content = str(m.get("role")), m.get("content")
        if role == "assistant" and not content:
            continue  # the empty response slot a trainer may keep at the end of a prompt
        out.append((role, content if isinstance(content, str) else repr(content)))
    return out


def _first_difference(a: str, b: str) -> str:
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False)):
        if x != y:
            return f"line {i + 1}: the row has {x[:120]!r}, the episode renders {y[:120]!r}"
    return f"the row has {len(a)} characters, the episode renders {len(b)}"


def _check_prompts(
    row: Sequence[Mapping[str, Any]], rendered: Sequence[ChatMessage], instance_id: str
) -> None:
    got = _prompt_messages(row)
    want = [(m.role, m.content or "") for m in rendered]
    hint = (
        "The row's prompts must be the ones the Episode renders (one agent implementation): "
        "rebuild the dataset with `codegrep-model dataset grpo` (codegrep_model.datasets."
        "grpo_rows), with the same prompts and rollout config as the scheduler."
    )
    if [r for r, _ in got] != [r for r, _ in want]:
        raise TrainingSetupError(
            f"{instance_id}: the row's prompt messages are {[r for r, _ in got]}, the episode "
            f"renders {[r for r, _ in want]}. {hint}"
        )
    for (role, text), (_, expected) in zip(got, want, strict=True):
        if text.strip() != expected.strip():
            raise TrainingSetupError(
                f"{instance_id}: the row's {role} message differs from the episode's "
                f"({_first_difference(text.strip(), expected.strip())}). {hint}"
            )


def _check_tools(tools: Sequence[object] | None, instance_id: str) -> None:
    if not tools:
        return
    names = sorted(str(_field(_field(t, "function") or t, "name")) for t in tools)
    if names != sorted(tool_names()):
        raise TrainingSetupError(
            f"{instance_id}: the row offers tools {names}, the agent's are "
            f"{sorted(tool_names())}: write the tools column from codegrep_model.openai_tools()."
        )


class EpisodeHooks:
    """One `Episode` per rollout, keyed by the trainer's request id, driven from its hooks.

    Every method may be awaited from any event loop; the episodes and trees live on the
    `SandboxHost`'s loop. ``config`` is the rows' (`codegrep_model.datasets.TRAINING_CONFIG`:
    the paper's 3 + 1 turns of up to 8 calls, strict answers, no rescue turn, so
    `--max_turns 4`). ``test_override``: TEST ONLY; its policy's reply replaces the model's
    on every turn (a random tiny model makes no tool calls, so a CPU test gets real calls this
    way). ``budget``: the rollout's token limits (`TRAINING_BUDGET` by default; None: none),
    counted with ``counter`` (set it to the trainer's tokenizer, `TokenizerCounter`; None: the
    character estimate `CharEstimate`); the row's tool schemas count as ``tools_system`` (the
    trainer's template: the system message with the tools) writes them, by default as ms-swift's
    hermes agent template does.
    """

    def __init__(
        self,
        *,
        config: RolloutConfig = TRAINING_CONFIG,
        prompts: PromptSet | None = None,
        max_turns: int | None = None,
        host: SandboxHost | None = None,
        policy_name: str = "trainer",
        test_override: PolicyOverride | None = None,
        budget: TokenBudget | None = TRAINING_BUDGET,
        counter: TokenCounter | None = None,
        tools_system: SystemWithTools | None = None,
    ) -> None:
        self.config = config.model_copy(update={"budget": budget})
        self.counter = counter
        self.tools_system = tools_system
        self.prompts = prompts or PromptSet.load()
        self.max_turns = max_turns
        self.host = host or SandboxHost()
        self.policy_name = policy_name
        self.test_override = test_override
        self._live: dict[str, _Live] = {}
        self._started: dict[str, int] = {}  # rollouts started per instance (alternate override)

    def set_budget(
        self,
        budget: TokenBudget | None,
        counter: TokenCounter | None,
        *,
        tools_system: SystemWithTools | None = None,
    ) -> None:
        """Hold the rollouts started from now on to `budget`, counted with `counter` (a trainer
        knows its tokenizer, template and max_length only once it runs); `tools_system`: the
        template's system message with the tools, whose extra tokens the budget counts."""
        self.config = self.config.model_copy(update={"budget": budget})
        self.counter = counter
        self.tools_system = tools_system

    @property
    def live(self) -> int:
        """Rollouts started and not yet done."""
        return len(self._live)

    # -- hooks ---------------------------------------------------------------------------------

    async def start(
        self,
        uuid: str,
        messages: Sequence[Mapping[str, Any]],
        data_dict: Mapping[str, Any] | None,
        *,
        tools: Sequence[object] | None = None,
    ) -> None:
        """Open the rollout's tree and start its episode; refuse a row that does not fit."""
        await self.host.run(self._start(uuid, list(messages), dict(data_dict or {}), tools))

    async def turn(
        self,
        uuid: str,
        content: object,
        tool_calls: Sequence[object] | None = None,
        *,
        current_turn: int | None = None,
        completion_tokens: int | None = None,
        length_cut: bool = False,
    ) -> TurnOutcome:
        """Feed one assistant reply, run its calls, and say what follows. `completion_tokens`:
        the reply's length in the trainer's tokens (its token ids), counted against the budget;
        None: the episode counts its text. `length_cut`: the reply stopped at the trainer's
        per-round length limit (finish reason `length`); it ends the rollout (`done`), as
        ms-swift's own `check_finished` would, its calls not run (`Episode.on_reply(cut=True)`)."""
        return await self.host.run(
            self._turn(uuid, content, tool_calls, current_turn, completion_tokens, length_cut)
        )

    def take_messages(self, uuid: str) -> list[dict[str, str]]:
        """The messages the last `turn` left to append (for the synchronous `step` hook)."""
        live = self._live.get(uuid)
        if live is None:
            return []
        out, live.outbox = live.outbox, []
        return out

    async def release(self, uuid: str) -> None:
        """Drop a rollout the trainer gave up on (its tree lease goes back to the pool)."""
        await self.host.run(self._release(uuid))

    def close(self) -> None:
        self.host.close()

    # -- on the host's loop --------------------------------------------------------------------

    async def _start(
        self,
        uuid: str,
        messages: list[Mapping[str, Any]],
        data_dict: dict[str, Any],
        tools: Sequence[object] | None,
    ) -> None:
        if not uuid:
            raise TrainingSetupError("a request without an id: the hooks key rollouts by it")
        cols = _columns(data_dict, uuid)
        instance = Instance(
            instance_id=cols["instance_id"],
            repo=cols["repo"],
            base_commit=cols["base_commit"],
            problem_statement=cols["problem_statement"],
        )
        _check_tools(tools, instance.instance_id)
        config = self._row_config(data_dict, uuid)
        pool = self.host.pool(cols["cache_dir"], cols["source"])
        lease = contextlib.AsyncExitStack()
        try:
            tree = await lease.enter_async_context(
                pool.open(instance.repo, instance.base_commit, folders=False)
            )
            files = await tree.files()
            episode = Episode.start(
                instance,
                files,
                policy=self.policy_name,
                config=config,
                prompts=self.prompts,
                counter=self.counter,
                tools_tokens=self._tools_tokens(messages, tools),
            )
            _check_prompts(messages, episode.messages, instance.instance_id)
        except BaseException:
            await lease.aclose()
            raise
        await self._release(uuid)  # a request id seen again starts over
        replace = None
        if self.test_override is not None:
            nth = self._started.get(instance.instance_id, 0)
            self._started[instance.instance_id] = nth + 1
            if not (self.test_override.alternate and nth % 2):
                replace = self.test_override.policy
        self._live[uuid] = _Live(episode=episode, tree=tree, lease=lease, replace=replace)

    def _tools_tokens(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[object] | None
    ) -> int | None:
        """The row's tool schemas in the trainer's template, in tokens (what ms-swift adds to
        the system message of every encoding of the rollout; 0 for a row without tools); None:
        the episode counts the hermes template's text of its own tools."""
        if self.config.budget is None:
            return None
        if not tools:
            return 0  # ms-swift writes no tools block for a row without tools
        if self.tools_system is None:
            return None
        system = messages[0].get("content") if messages else None
        schemas = [t for t in tools if isinstance(t, Mapping)]
        return tools_block_tokens(
            system if isinstance(system, str) else "",
            schemas,
            self.counter or CharEstimate(),
            self.tools_system,
        )

    def _row_config(self, data_dict: Mapping[str, Any], uuid: str) -> RolloutConfig:
        """The row's episode shape (`rollout_config`, rendered into its prompt) under the hooks'
        budget; a shape that needs more turns than the trainer's --max_turns is refused."""
        try:
            shape = config_from_row(data_dict.get("rollout_config"))
        except ValueError as exc:
            raise TrainingSetupError(f"request {uuid}: {exc}") from exc
        if shape is TRAINING_CONFIG:
            config = self.config
        else:
            config = shape.model_copy(update={"budget": self.config.budget})
        needed = config.exploration_turns + 1 + config.rescue_attempts
        if self.max_turns is not None and self.max_turns < needed:
            raise TrainingSetupError(
                f"request {uuid}: max_turns={self.max_turns} cuts rollouts short: the row's "
                f"episode takes up to {needed} assistant turns ({config.exploration_turns} "
                f"exploring, 1 answering, {config.rescue_attempts} rescue), more than "
                f"--max_turns {self.max_turns}; pass --max_turns {needed}"
            )
        return config

    async def _release(self, uuid: str) -> None:
        live = self._live.pop(uuid, None)
        if live is not None:
            await live.lease.aclose()

    async def _turn(
        self,
        uuid: str,
        content: object,
        tool_calls: Sequence[object] | None,
        current: int | None,
        completion_tokens: int | None = None,
        length_cut: bool = False,
    ) -> TurnOutcome:
        live = self._live.get(uuid)
        if live is None:
            raise TrainingSetupError(
                f"request {uuid}: no episode (on_trajectory_start never saw it, or it is done)"
            )
        episode = live.episode
        turn = len(episode.turns) + 1
        if current is not None and current != turn:
            raise EpisodeError(
                f"request {uuid}: the trainer is at turn {current}, the episode {turn}"
            )
        action = episode.next_action()
        if not isinstance(action, AskPolicy):
            raise EpisodeError(f"request {uuid}: the episode is not waiting for a reply")
        replaced: str | None = None
        if live.replace is not None:
            replaced = hermes_text(await live.replace.reply(action.request))
            content, tool_calls = replaced, None
            completion_tokens = None  # the model's count is not the replacing text's
            length_cut = False  # nor is its cut: the replacing text is whole
        reply = policy_reply(content, tool_calls, id_prefix=f"{uuid}_t{turn}")
        if completion_tokens:
            reply = PolicyReply(
                reply.content, reply.tool_calls, Usage(completion_tokens=completion_tokens)
            )
        before = len(episode.messages)
        episode.on_reply(reply, cut=length_cut)
        follow = episode.next_action()
        if isinstance(follow, RunCalls):
            t0 = time.perf_counter()
            results = await asyncio.gather(
                *(live.tree.call(c.name, c.arguments) for c in follow.calls)
            )
            episode.on_results(results, tools_s=time.perf_counter() - t0)
        if not episode.done and self.max_turns is not None and turn >= self.max_turns:
            episode.fail(f"the trainer's max_turns={self.max_turns} ended the rollout")
        info = episode.rollout_info()
        executed = (info.tool_calls_per_turn or ())[-1]
        info = replace(
            info,
            episode_status=episode.status,
            test_policy=None
            if self.test_override is None
            else ("model" if live.replace is None else live.replace.name),
        )
        # everything after the assistant message the episode recorded for this reply
        added = tuple(
            {"role": m.role, "content": m.content or ""} for m in episode.messages[before + 1 :]
        )
        if episode.done:
            await self._release(uuid)
        else:
            live.outbox = list(added)
        return TurnOutcome(
            messages=added,
            done=episode.done,
            rollout_info=info,
            executed_calls=executed,
            replaced_content=replaced,
        )
