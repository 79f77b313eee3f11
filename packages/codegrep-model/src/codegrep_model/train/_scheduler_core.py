"""What the RL environment needs of a trainer's side, without the trainer: replies, trees, setup.

- `policy_reply` / `hermes_text`: an assistant message as the `PolicyReply` it stands for
  (ms-swift's parsed `tool_calls`, or hermes `<tool_call>` blocks in the text, which win when
  present: they are what was generated, and they keep the malformed calls the parser drops),
  and a reply as the text a Qwen model writes;
- `SandboxHost`: the tree pools on an event loop of their own. ms-swift's colocate loop makes a
  new event loop for every batch and closes it, and a tree's git processes and locks belong to
  the loop that made them. The GRPO group of one prompt shares one tree, a tree stays warm in
  the pool's LRU after its rollouts end, and the bare clones stay in the cache: nothing is cloned
  again per rollout;
- `REQUIRED_COLUMNS`, `TRAINING_BUDGET`, `TrainingSetupError`: what a row and a run must give;
- `PolicyOverride`, `TEST_POLICIES`: TEST ONLY, a policy whose replies replace the model's,
  chosen explicitly (never by the environment of the process);
- `fold_follow_up` (and `CHATML_TURN_BREAK`), re-exported from `codegrep_model.datasets`: what
  `step` appends after a reply, one user message in the chat template's own tokens; the SFT
  rows (`agent_messages`) write the same, so SFT and GRPO show the model one format.

The environment itself (one `Episode` per rollout, its stop rules, its reward) is
`RolloutEnvironment` (`_environment.py`). Not here: anything that imports ms-swift or torch
(`codegrep_model/train/plugins/swift_plugin.py` is the ms-swift side), and the advantage scale
(`codegrep_model.train._advantage`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from codegrep_records.io import parse_json
from worktree_sandbox import BareRepoCache, SandboxLimits, TreePool

from codegrep_model._hermes import split_hermes
from codegrep_model.budget import TokenBudget
from codegrep_model.datasets import CHATML_TURN_BREAK, fold_follow_up
from codegrep_model.errors import CodegrepModelError
from codegrep_model.policies.protocol import Policy, PolicyReply
from codegrep_model.policies.spec import policy_from_spec
from codegrep_model.records import ToolCall

__all__ = [
    "CHATML_TURN_BREAK",
    "REQUIRED_COLUMNS",
    "TEST_POLICIES",
    "TRAINING_BUDGET",
    "PolicyOverride",
    "SandboxHost",
    "TrainingSetupError",
    "field_of",
    "fold_follow_up",
    "hermes_text",
    "named_test_override",
    "policy_reply",
    "scheduler_with_test_policy",
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


class TrainingSetupError(CodegrepModelError, ValueError):
    """The dataset or the trainer's settings do not fit the agent: a row whose prompts differ
    from what the `Episode` renders, a missing column, a turn limit below the episode's turns,
    a request the hooks never saw start."""


@dataclass(frozen=True)
class PolicyOverride:
    """TEST ONLY: a policy whose replies replace the model's. A random tiny model makes no tool
    calls, so a CPU test of the real training entry point gets real calls on a real repository
    this way. Never use one for training: the model would be trained on another policy's text.
    Chosen explicitly: passed to `RolloutEnvironment(test_override=...)`, or named by the
    scheduler a run asks for (`TEST_POLICIES`)."""

    policy: Policy
    #: Every other rollout of an instance (in the order they start) keeps the model's replies,
    #: so that a GRPO group holds both (rewards that differ, advantages that are not all 0).
    alternate: bool = False


#: TEST ONLY: the policy overrides a run can name, each made by its factory when asked for. The
#: ms-swift plugin registers one scheduler per name beside `codegrep_tools`
#: (`codegrep_tools_test_lexical`, `codegrep_tools_test_lexical_alternate`; see
#: `scheduler_with_test_policy`).
TEST_POLICIES: Mapping[str, Callable[[], PolicyOverride]] = MappingProxyType(
    {
        "lexical": lambda: PolicyOverride(policy_from_spec("lexical")),
        "lexical-alternate": lambda: PolicyOverride(policy_from_spec("lexical"), alternate=True),
    }
)


def named_test_override(name: str) -> PolicyOverride:
    """The test-only override `TEST_POLICIES` registers under `name`."""
    factory = TEST_POLICIES.get(name)
    if factory is None:
        raise TrainingSetupError(
            f"test policy {name!r}: the test-only policies are {', '.join(TEST_POLICIES)}"
        )
    return factory()


def scheduler_with_test_policy(scheduler: str, policy: str) -> str:
    """The name the ms-swift plugin registers the `scheduler` under with test policy `policy`
    (`--multi_turn_scheduler codegrep_tools_test_lexical_alternate`)."""
    return f"{scheduler}_test_{policy.replace('-', '_')}"


# ---------------------------------------------------------------------------- replies


def _text(content: object) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # OpenAI content parts
        parts = [p.get("text", "") for p in content if isinstance(p, Mapping)]
        return "".join(str(p) for p in parts)
    raise TypeError(f"reply content is a {type(content).__name__}, not text")


def field_of(obj: object, name: str) -> object:
    """`obj[name]` of a mapping, else its attribute (None when it has neither)."""
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _tool_call(raw: object, fallback_id: str) -> ToolCall:
    """One parsed call: ms-swift's `ChatCompletionMessageToolCall` (`.function.name` /
    `.function.arguments`), an OpenAI dict, or a bare `{"name", "arguments"}` dict."""
    function = field_of(raw, "function")
    source = function if function is not None else raw
    name = field_of(source, "name")
    args = field_of(source, "arguments")
    if args is None:
        args = "{}"
    call_id = field_of(raw, "id")
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
