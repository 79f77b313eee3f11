"""The RL environment as one object: `RolloutEnvironment` owns a rollout and scores it.

One `Episode` per rollout (the very agent `run_rollout` runs at inference: the same prompts,
per-turn call cap, refusals, feedback for malformed calls, answer turn and strict answer parse),
the rules that end a rollout (methods: `is_completed`, `turn_limit_reached`), the one record it
writes per rollout (`grpo_rewards.RolloutInfo`: counts, the parsed answer, the status, the token
budget's counts) and the reward read from that record (`score`, through
`grpo_rewards.score_rollout`, which the ms-swift ORMs call too: the answer is parsed once, here).

A trainer adapter is a thin wrapper around it: ms-swift's `MultiTurnScheduler`
(`plugins/swift_plugin.py`) calls `start` from `on_trajectory_start`, `turn` from `on_turn_end`
and `take_messages` from `step`, and hands ms-swift the record's JSON form
(`TurnOutcome.rollout_infos`), which the ORM reads back with `RolloutInfo.from_infos`.

- `start` opens the rollout's tree and starts its `Episode` from the dataset row's columns, and
  refuses a row whose system and user messages are not what the `Episode` renders (a dataset
  built with other prompts or another budget would train another agent).
- `turn` feeds the assistant reply, runs the turn's calls concurrently on the tree, applies the
  stop rules, and says what to append, whether the rollout is done and its record.

Not here: anything that imports ms-swift or torch, and the advantage scale
(`codegrep_model.train._advantage`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from grpo_rewards import Gold, RewardResult, RolloutInfo, score_rollout

from codegrep_model.budget import (
    CharEstimate,
    SystemWithTools,
    TokenBudget,
    TokenCounter,
    tools_block_tokens,
)
from codegrep_model.datasets import TRAINING_CONFIG, config_from_row
from codegrep_model.engine import ToolTree
from codegrep_model.episode import AskPolicy, Episode, RolloutConfig, RunCalls
from codegrep_model.errors import EpisodeError
from codegrep_model.policies.protocol import Policy, PolicyReply
from codegrep_model.prompts import PromptSet
from codegrep_model.records import ChatMessage, Instance, Usage
from codegrep_model.tools import tool_names
from codegrep_model.train._scheduler_core import (
    REQUIRED_COLUMNS,
    TRAINING_BUDGET,
    PolicyOverride,
    SandboxHost,
    TrainingSetupError,
    field_of,
    hermes_text,
    policy_reply,
)

__all__ = ["RolloutEnvironment", "TurnOutcome"]


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
        """`rollout_info` in its JSON form, the dict ms-swift carries (`RolloutInfo.to_infos`)."""
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
    names = sorted(str(field_of(field_of(t, "function") or t, "name")) for t in tools)
    if names != sorted(tool_names()):
        raise TrainingSetupError(
            f"{instance_id}: the row offers tools {names}, the agent's are "
            f"{sorted(tool_names())}: write the tools column from codegrep_model.openai_tools()."
        )


class RolloutEnvironment:
    """The RL environment: one `Episode` per rollout, keyed by the trainer's request id, its
    stop rules and its reward.

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

    # -- stop rules ----------------------------------------------------------------------------

    def is_completed(self, episode: Episode) -> bool:
        """The episode ended itself: it answered, gave up, failed, hit a token limit, or its
        reply was cut at the trainer's per-round length limit (`turn(length_cut=True)`)."""
        return episode.done

    def turn_limit_reached(self, turns: int) -> bool:
        """`turns` assistant replies spend the trainer's `max_turns` (a row whose episode takes
        more turns is refused at `start`, so this ends only rollouts the trainer cut short)."""
        return self.max_turns is not None and turns >= self.max_turns

    def _apply_stop_rules(self, episode: Episode, turns: int) -> None:
        if not self.is_completed(episode) and self.turn_limit_reached(turns):
            episode.fail(f"the trainer's max_turns={self.max_turns} ended the rollout")

    # -- the reward ----------------------------------------------------------------------------

    @staticmethod
    def score(
        info: RolloutInfo,
        completion: object,
        gold: Gold,
        *,
        reward: str = "codegrep_v3",
        params: Mapping[str, object] | None = None,
    ) -> RewardResult:
        """The reward of one rollout from its record (`TurnOutcome.rollout_info` once done): the
        answer the episode parsed, the record's T and C_total; `completion` (the final reply)
        is parsed only for a record that holds no answer. The ms-swift ORMs score the same way
        (`grpo_rewards.score_rollout` on the record ms-swift hands them)."""
        return score_rollout(reward, info, completion, gold, info.stats(), params=params)

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

    def _record(self, live: _Live) -> RolloutInfo:
        """The rollout's one record as of this turn: the episode's counts, its parsed answer
        once done and its token budget, its status, and (test runs) whose replies it holds."""
        return replace(
            live.episode.rollout_info(),
            episode_status=live.episode.status,
            test_policy=None
            if self.test_override is None
            else ("model" if live.replace is None else live.replace.name),
        )

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
        self._apply_stop_rules(episode, turn)
        info = self._record(live)
        executed = (info.tool_calls_per_turn or ())[-1]
        # everything after the assistant message the episode recorded for this reply
        added = tuple(
            {"role": m.role, "content": m.content or ""} for m in episode.messages[before + 1 :]
        )
        if self.is_completed(episode):
            await self._release(uuid)
        else:
            live.outbox = list(added)
        return TurnOutcome(
            messages=added,
            done=self.is_completed(episode),
            rollout_info=info,
            executed_calls=executed,
            replaced_content=replaced,
        )
