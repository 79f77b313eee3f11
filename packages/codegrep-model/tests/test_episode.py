"""The `Episode` state machine: driven by hand it gives what `run_rollout` gives, it survives a
JSON round trip of its state at every step, and strict mode reads answers as the reward does.

The tree is an in-memory fake behind the `ToolTree` interface (arguments validated by the
sandbox's own args models), so a hand-driven episode and the engine see the same results.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import re
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpo_rewards as rewards
import pytest
from codegrep_model import (
    Episode,
    EpisodeError,
    Instance,
    PolicyError,
    PolicyReply,
    PolicyRequest,
    RolloutConfig,
    RolloutRecord,
    ToolCall,
    Usage,
    run_batch,
    run_rollout,
)
from codegrep_model.episode import AskPolicy, Done, RunCalls
from codegrep_model.policies.scripted import ScriptedPolicy, call
from codegrep_model.prompts import PromptSet
from codegrep_records import load_predictions
from grpo_rewards.swift_orm import CodeGrepV3ORM
from pydantic import ValidationError
from worktree_sandbox import TOOL_ARGS, GlobResult, GrepResult, ReadResult, ToolErrorKind
from worktree_sandbox.models import GrepMatch

Result = GrepResult | GlobResult | ReadResult

FILES = {
    "README.md": "# shop\n",
    "shop/__init__.py": "from shop.cart import Cart\n",
    "shop/cart.py": (
        "class Cart:\n"
        "    def add_item(self, sku, qty):\n"
        "        if qty <= 0:\n"
        "            raise ValueError('quantity must be positive')\n"
    ),
    "shop/pricing.py": "def apply_discount(total, rate):\n    return total * (1 - rate)\n",
    "x.py": "X = 1\n",
}

ISSUE = Instance(
    instance_id="shop-1",
    repo="acme/shop",
    base_commit="HEAD",
    problem_statement="`Cart.add_item` raises ValueError for qty=0; it should ignore it.",
)


class MemoryTree:
    """A read-only tree in memory: grep (regex per line), glob (fnmatch), read (line ranges)."""

    def __init__(self, files: dict[str, str]) -> None:
        self._files = dict(sorted(files.items()))

    async def files(self) -> tuple[str, ...]:
        return tuple(self._files)

    async def call(self, name: str, arguments: dict[str, Any] | str) -> Result:
        return self.run(name, arguments)

    def run(self, name: str, arguments: dict[str, Any] | str) -> Result:
        kind = {"grep": GrepResult, "glob": GlobResult, "read": ReadResult}[name]
        try:
            args = TOOL_ARGS[name].model_validate(arguments)
        except ValidationError as exc:
            text = f"Invalid arguments for {name}: {exc.errors()[0]['msg']}"
            return kind(ok=False, text=text, error=ToolErrorKind.INVALID_ARGUMENTS)
        values = args.model_dump()
        if name == "grep":
            rx = re.compile(values["pattern"], re.I if values["ignore_case"] else 0)
            matches = tuple(
                GrepMatch(path=p, line=i, text=line)
                for p, text in self._files.items()
                for i, line in enumerate(text.splitlines(), 1)
                if rx.search(line)
            )
            out = "\n".join(f"{m.path}:{m.line}: {m.text}" for m in matches)
            return GrepResult(
                text=out or "No matches.", matches=matches, total_matches=len(matches)
            )
        if name == "glob":
            paths = tuple(p for p in self._files if fnmatch.fnmatch(p, values["pattern"]))
            return GlobResult(text="\n".join(paths) or "No files.", paths=paths)
        path = values["path"]
        if path not in self._files:
            return ReadResult(ok=False, text=f"No file {path!r}.", error=ToolErrorKind.NOT_FOUND)
        lines = self._files[path].splitlines()
        start = values["start_line"] or 1
        end = min(values["end_line"] or len(lines), len(lines))
        body = "\n".join(f"{i}: {lines[i - 1]}" for i in range(start, end + 1))
        return ReadResult(
            text=body,
            path=path,
            start_line=start,
            end_line=end,
            total_lines=len(lines),
            content="\n".join(lines[start - 1 : end]),
        )


Step = PolicyReply | Callable[[PolicyRequest], PolicyReply]


def say(text: str | None, *calls: ToolCall) -> PolicyReply:
    return PolicyReply(
        content=text, tool_calls=calls, usage=Usage(prompt_tokens=9, completion_tokens=4)
    )


def calls(*items: ToolCall) -> PolicyReply:
    return say(None, *items)


ANSWER = '{"files": ["shop/cart.py"]}'
SINGLE_QUOTED = "{'files': ['/testbed/x.py']}"
READ_CART = call("read", {"path": "shop/cart.py"}, id="read-cart")

SCRIPTS: dict[str, tuple[list[Step], RolloutConfig]] = {
    "tool turns then the answer turn": (
        [
            calls(
                call("grep", {"pattern": "def add_item"}, id="g1"),
                call("glob", {"pattern": "*.py"}, id="g2"),
            ),
            calls(READ_CART, call("read", {"path": "shop/pricing.py", "end_line": 1}, id="r2")),
            calls(call("grep", {"pattern": "ValueError"}, id="g3")),
            say(
                "Found it.\n```json\n"
                '{"files": ["shop/cart.py"], "line_ranges": {"shop/cart.py": [[2, 4]]}}\n```'
            ),
        ],
        RolloutConfig(),
    ),
    "malformed and unknown calls": (
        [
            calls(
                call("grep", '{"pattern": "Cart"', id="m1"),  # truncated JSON
                call("grep", "[1, 2]", id="m2"),  # not an object
                call("grep", {"patern": "Cart"}, id="m3"),  # the tree rejects the field
                call("find", {"name": "cart.py"}, id="m4"),  # no such tool
                ToolCall(id="m5", name="", arguments="<garbled>"),  # no name at all
                call("read", {"path": "shop/missing.py"}, id="m6"),  # a tool error
                call("glob", "", id="m7"),  # empty arguments: {}, which the tree rejects
            ),
            calls(call("grep", {"pattern": "class Cart"}, id="ok")),
            say(ANSWER),
        ],
        RolloutConfig(),
    ),
    "hostile arguments and a hostile answer": (
        [
            calls(
                call("grep", "[" * 100_000, id="h1"),  # nesting past any recursion limit
                call("grep", '{"pattern": "x", "max_results": ' + "9" * 5000 + "}", id="h2"),
                call("read", '{"path": "shop/cart.py", "start_line": 1e999}', id="h3"),
            ),
            say("```json\n" + '{"files": ' * 50_000 + "```"),
            say(ANSWER),  # asked again after an answer that does not parse
        ],
        RolloutConfig(exploration_turns=1),
    ),
    "every call malformed": (
        [calls(call("find", {}, id="f1"), call("grep", "{", id="f2")), say(ANSWER)],
        RolloutConfig(exploration_turns=1),
    ),
    "calls over the cap are refused": (
        [
            calls(*[call("grep", {"pattern": f"item{i}|Cart"}, id=f"c{i}") for i in range(11)]),
            say(ANSWER),
        ],
        RolloutConfig(),
    ),
    "a small cap": (
        [
            calls(READ_CART, call("glob", {"pattern": "*.md"}, id="gl"), call("find", {}, id="u")),
            say(ANSWER),
        ],
        RolloutConfig(max_calls_per_turn=2, exploration_turns=1),
    ),
    "no calls, already an answer": (
        [say('Sure:\n```json\n{"files": ["shop/cart.py"]}\n```')],
        RolloutConfig(),
    ),
    "no calls and no answer": (
        [say("Let me think."), calls(READ_CART), say("Still thinking."), say(ANSWER)],
        RolloutConfig(),
    ),
    "no calls and no answer on the last exploration turn": (
        [calls(READ_CART), say("hmm"), say(ANSWER)],
        RolloutConfig(exploration_turns=2),
    ),
    "calls on the answer turn are dropped": (
        [calls(READ_CART), say(ANSWER, call("grep", {"pattern": "x"}, id="late"))],
        RolloutConfig(exploration_turns=1),
    ),
    "rescue": (
        [calls(READ_CART), say("It is the cart module."), say("['shop/cart.py']")],
        RolloutConfig(exploration_turns=1),
    ),
    "fallback": (
        [
            calls(READ_CART, call("read", {"path": "shop/pricing.py"}, id="r2")),
            say("No idea."),
            say(None),
            say("Sorry."),
        ],
        RolloutConfig(exploration_turns=1, rescue_attempts=2, fallback_max_files=1),
    ),
    "no exploration turns": ([say("?"), say(ANSWER)], RolloutConfig(exploration_turns=0)),
    "the issue is cut": ([say(ANSWER)], RolloutConfig(max_issue_bytes=12)),
    "strict: the single-quoted answer is no answer": (
        [calls(READ_CART), say(SINGLE_QUOTED), say(SINGLE_QUOTED)],
        RolloutConfig(exploration_turns=1, strict=True),
    ),
    "strict: an answer as the reward reads it": (
        [
            calls(READ_CART),
            say(
                '<think>maybe {"files": ["wrong.py"]}</think>'
                '{"files": ["/testbed/x.py", "./shop/cart.py"]}'
            ),
        ],
        RolloutConfig(exploration_turns=1, strict=True),
    ),
    "strict: an early answer must parse as the reward's": (
        [
            say("{'files': ['x.py']}"),
            say('```json\n{"files": ["x.py"], "line_ranges": {"x.py": ["1-1"]}}\n```'),
        ],
        RolloutConfig(strict=True, rescue_attempts=0),
    ),
    "the policy fails": ([calls(READ_CART)], RolloutConfig()),
    "strict: the policy fails": ([calls(READ_CART)], RolloutConfig(strict=True)),
}


class Driver:
    """Drives an episode by hand, one action per `step`, as a trainer's hooks would; `used`
    counts the scripted replies already given (a rebuilt episode's driver starts there)."""

    def __init__(self, script: Sequence[Step], tree: MemoryTree, *, used: int = 0) -> None:
        self.script = script
        self.tree = tree
        self.used = used
        self.requests: list[PolicyRequest] = []
        self.steps = 0

    def step(self, episode: Episode) -> bool:
        """One action; False when the episode is done."""
        action = episode.next_action()
        if isinstance(action, Done):
            return False
        self.steps += 1
        if isinstance(action, RunCalls):
            episode.on_results([self.tree.run(c.name, c.arguments) for c in action.calls])
            return True
        assert isinstance(action, AskPolicy)
        self.requests.append(action.request)
        self.used += 1
        if self.used > len(self.script):
            episode.fail(PolicyError(f"script has {len(self.script)} replies; asked for another"))
            return True
        step = self.script[self.used - 1]
        episode.on_reply(step(action.request) if callable(step) else step)
        return True

    def finish(self, episode: Episode) -> RolloutRecord:
        while self.step(episode):
            pass
        action = episode.next_action()
        assert isinstance(action, Done)
        return action.record


def engine(
    script: Sequence[Step], config: RolloutConfig
) -> tuple[RolloutRecord, list[PolicyRequest]]:
    policy = ScriptedPolicy(script)
    record = asyncio.run(run_rollout(policy, MemoryTree(FILES), ISSUE, config=config))
    return record, policy.requests


def timeless(record: RolloutRecord) -> dict[str, Any]:
    """The record without what the clock measured."""
    data = record.model_dump(mode="json", exclude={"wall_s", "model_s", "overhead_s"})
    for turn in data["turns"]:
        del turn["model_s"], turn["tools_s"]
    return data


def start(config: RolloutConfig) -> Episode:
    return Episode.start(ISSUE, tuple(FILES), policy="scripted", config=config)


def by_hand(
    script: Sequence[Step], config: RolloutConfig
) -> tuple[RolloutRecord, list[PolicyRequest]]:
    episode = start(config)
    driver = Driver(script, MemoryTree(FILES))
    record = driver.finish(episode)
    assert record == episode.record()
    return record, driver.requests


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_by_hand_equals_the_engine(name: str) -> None:
    script, config = SCRIPTS[name]
    ours, our_requests = by_hand(script, config)
    theirs, their_requests = engine(script, config)
    assert ours.messages == theirs.messages
    assert ours.stats == theirs.stats
    assert ours.answer == theirs.answer
    assert ours.status == theirs.status
    assert ours.reward_view == theirs.reward_view
    assert timeless(ours) == timeless(theirs)
    assert our_requests == their_requests  # the policy saw the same requests, results included


def test_the_scenarios_do_what_their_names_say() -> None:
    def run(name: str) -> RolloutRecord:
        return by_hand(*SCRIPTS[name])[0]

    normal = run("tool turns then the answer turn")
    assert normal.status == "answered"
    assert [t.kind for t in normal.turns] == ["explore"] * 3 + ["answer"]
    assert (normal.stats.turns, normal.stats.tool_calls) == (4, 5)
    assert normal.answer is not None
    assert normal.answer.line_ranges == {"shop/cart.py": ((2, 4),)}

    bad = run("malformed and unknown calls")
    statuses = [c.status for c in bad.turns[0].calls]
    assert statuses == ["malformed"] * 5 + ["tool_error", "malformed"]
    texts = [m.content or "" for m in bad.messages if m.role == "tool"]
    assert "not valid JSON" in texts[0]
    assert "must be a JSON object" in texts[1]
    assert "Unknown tool 'find'" in texts[3]
    assert "Malformed tool call" in texts[4]
    assert bad.stats.tool_calls == 2  # the tool error ran; malformed calls did not count

    hostile = run("hostile arguments and a hostile answer")
    assert [c.status for c in hostile.turns[0].calls] == ["malformed"] * 3
    texts = [m.content or "" for m in hostile.messages if m.role == "tool"]
    assert "nested too deeply" in texts[0]
    assert "number too long" in texts[1]
    assert "out of range" in texts[2]
    assert hostile.status == "answered"
    assert hostile.answer is not None
    assert hostile.answer.files == ("shop/cart.py",)

    capped = run("calls over the cap are refused")
    assert [c.status for c in capped.turns[0].calls] == ["ok"] * 8 + ["refused"] * 3
    assert capped.stats.refused_calls == 3
    assert all("at most 8 tool calls" in (c.error or "") for c in capped.turns[0].calls[8:])

    early = run("no calls, already an answer")
    assert (early.status, early.stats.turns, len(early.turns)) == ("answered", 1, 1)

    idle = run("no calls and no answer")
    assert PromptSet.load().no_calls() in [m.content for m in idle.messages]
    assert idle.stats.turns == 4

    dropped = run("calls on the answer turn are dropped")
    assert dropped.messages[-1].tool_calls == ()
    assert dropped.status == "answered"

    rescued = run("rescue")
    assert [t.kind for t in rescued.turns] == ["explore", "answer", "rescue"]
    assert rescued.status == "answered"
    assert rescued.messages[-2].content == PromptSet.load().rescue()

    fell = run("fallback")
    assert fell.status == "fallback"
    assert fell.answer is not None
    assert fell.answer.files == ("shop/cart.py",)  # the files read, at most fallback_max_files

    cut = run("the issue is cut")
    assert (cut.issue_bytes, cut.issue_cut_to) == (len(ISSUE.problem_statement), 12)

    failed = run("the policy fails")
    assert failed.status == "error"
    assert failed.answer is None
    assert failed.error is not None
    assert failed.error.startswith("PolicyError: script has 1 replies")


def test_a_reply_timeout_is_a_policy_error() -> None:
    policy = ScriptedPolicy([say(ANSWER)], delay_s=0.5)
    cfg = RolloutConfig(reply_timeout_s=0.01)
    record = asyncio.run(run_rollout(policy, MemoryTree(FILES), ISSUE, config=cfg))
    assert record.status == "error"
    assert record.error == "PolicyError: no reply within 0.01 s"
    episode = start(cfg)
    episode.fail(PolicyError("no reply within 0.01 s"))
    assert timeless(episode.record()) == timeless(record)


# ---------------------------------------------------------------- strict mode


def test_strict_mode_has_no_fallback_and_says_why() -> None:
    script, config = SCRIPTS["strict: the single-quoted answer is no answer"]
    tolerant, _ = by_hand(script, config.model_copy(update={"strict": False}))
    assert tolerant.status == "answered"  # the inference parser accepts single quotes
    assert tolerant.answer is not None
    assert tolerant.answer.files[0].endswith("x.py")
    assert tolerant.reward_view is None

    strict, _ = by_hand(script, config)
    assert strict.status == "unanswered"
    assert strict.answer is None
    assert strict.reward_view is not None
    assert strict.reward_view.files is None
    assert strict.reward_view.answer_error == rewards.parse_answer(SINGLE_QUOTED).error
    assert strict.reward_view.answer_error == "no JSON object in the answer"
    assert (strict.reward_view.turns, strict.reward_view.tool_calls) == (3, 1)
    assert strict.reward_view.tool_calls_per_turn == (1, 0, 0)


def test_strict_answer_is_the_rewards_parse() -> None:
    script, config = SCRIPTS["strict: an answer as the reward reads it"]
    record, _ = by_hand(script, config)
    final = record.messages[-1].content
    expected = rewards.parse_answer(final).answer
    assert expected is not None
    assert record.status == "answered"
    assert record.reward_view is not None
    assert record.reward_view.files == expected.files == ("x.py", "shop/cart.py")
    assert record.answer is not None
    assert record.answer.files == expected.files


def test_strict_rollout_infos_are_what_the_orm_scores() -> None:
    gold = [["x.py"]]
    for name in (
        "strict: an answer as the reward reads it",
        "strict: the single-quoted answer is no answer",
        "strict: an early answer must parse as the reward's",
    ):
        script, config = SCRIPTS[name]
        episode = start(config)
        Driver(script, MemoryTree(FILES)).finish(episode)
        infos = episode.rollout_infos()
        assert json.loads(json.dumps(infos)) == infos
        view = episode.record().reward_view
        assert view is not None
        assert infos["num_turns"] == view.turns
        assert infos["num_tool_calls"] == view.tool_calls
        assert infos["tool_calls_per_turn"] == list(view.tool_calls_per_turn)
        files = infos["answer_files"]
        assert files == (None if view.files is None else list(view.files))
        assert infos["answer_error"] == view.answer_error
        # the ORM scores the recorded answer: the same as parsing the final message, and it
        # ignores whatever the completion column holds
        final = episode.messages[-1].content
        orm = CodeGrepV3ORM()
        from_infos = orm(["(not parsed)"], gold_files=gold, rollout_infos=[infos])
        counts = {k: infos[k] for k in ("num_turns", "tool_calls_per_turn")}
        from_text = orm([final], gold_files=gold, rollout_infos=[counts])
        assert from_infos == from_text


def test_non_strict_rollout_infos_hold_the_counts_only() -> None:
    script, config = SCRIPTS["tool turns then the answer turn"]
    episode = start(config)
    assert episode.rollout_infos() == {
        "num_turns": 1,
        "num_tool_calls": 0,
        "tool_calls_per_turn": [],
        "max_calls_per_turn": rewards.MAX_CALLS_PER_TURN,
        "schema_version": rewards.ROLLOUT_INFO_SCHEMA_VERSION,
    }
    Driver(script, MemoryTree(FILES)).finish(episode)
    assert episode.rollout_infos() == {
        "num_turns": 4,
        "num_tool_calls": 5,
        "tool_calls_per_turn": [2, 2, 1, 0],
        "max_calls_per_turn": rewards.MAX_CALLS_PER_TURN,
        "schema_version": rewards.ROLLOUT_INFO_SCHEMA_VERSION,
    }


def test_timings_are_what_the_driver_fed() -> None:
    episode = Episode.start(
        ISSUE, tuple(FILES), policy="p", config=RolloutConfig(exploration_turns=1)
    )
    episode.on_reply(calls(READ_CART), model_s=1.5)
    action = episode.next_action()
    assert isinstance(action, RunCalls)
    episode.on_results([MemoryTree(FILES).run("read", {"path": "shop/cart.py"})], tools_s=0.25)
    episode.on_reply(say(ANSWER), model_s=0.5)
    record = episode.record()
    assert (record.model_s, record.wall_s, record.overhead_s) == (2.0, 2.25, 0.25)
    assert episode.record(wall_s=3.0).overhead_s == 1.0
    assert [t.tools_s for t in record.turns] == [0.25, 0.0]


# ---------------------------------------------------------------- misuse


def test_out_of_order_feeding_is_refused() -> None:
    episode = Episode.start(ISSUE, tuple(FILES), policy="p")
    with pytest.raises(EpisodeError, match="tool results"):
        episode.on_results([])
    with pytest.raises(EpisodeError, match="not done"):
        episode.record()
    episode.on_reply(calls(READ_CART, call("glob", {"pattern": "*.md"}, id="gl")))
    with pytest.raises(EpisodeError, match="not waiting for a reply"):
        episode.on_reply(say(ANSWER))
    with pytest.raises(EpisodeError, match="1 results for 2 calls"):
        episode.on_results([MemoryTree(FILES).run("read", {"path": "shop/cart.py"})])
    episode.fail("endpoint down")
    assert episode.status == "error"
    with pytest.raises(EpisodeError, match="already done"):
        episode.fail("again")
    with pytest.raises(EpisodeError):
        episode.on_reply(say(ANSWER))


def test_a_strict_batch_counts_the_unanswered(tmp_path: Path) -> None:
    @asynccontextmanager
    async def open_tree(inst: Instance) -> AsyncIterator[MemoryTree]:
        yield MemoryTree(FILES)

    script, config = SCRIPTS["strict: the single-quoted answer is no answer"]
    summary = asyncio.run(
        run_batch(
            ScriptedPolicy(script),
            [ISSUE],
            open_tree,
            predictions=tmp_path / "pred.jsonl",
            config=config,
        )
    )
    assert (summary.answered, summary.fallback, summary.unanswered, summary.errors) == (0, 0, 1, 0)
    [pred] = load_predictions(tmp_path / "pred.jsonl").records
    assert (pred.files, pred.fallback) == ((), False)
    meta = json.loads((tmp_path / "pred.jsonl.meta.json").read_text())
    assert meta["unanswered"] == 1


def test_a_cap_above_the_papers_reaches_the_reward_and_the_advantage_scale() -> None:
    """The per-turn call cap is one setting: an episode allowed 12 calls a turn records its cap,
    and the reward and the advantage scale hold its turns to that cap, not to the default 8."""
    from codegrep_model.train import advantage_scale

    greps = [call("grep", {"pattern": f"p{i}"}, id=f"g{i}") for i in range(12)]
    config = RolloutConfig(max_calls_per_turn=12, exploration_turns=3, strict=True)
    script = [calls(*greps), calls(*greps), calls(*greps), say(f"```json\n{ANSWER}\n```")]
    episode = start(config)
    Driver(script, MemoryTree(FILES)).finish(episode)
    infos = episode.rollout_infos()
    assert infos["tool_calls_per_turn"] == [12, 12, 12, 0]
    assert infos["max_calls_per_turn"] == 12
    stats = rewards.RolloutInfo.from_infos(infos).stats()
    assert stats is not None
    assert stats.cbar == 9.0
    orm = CodeGrepV3ORM()
    assert orm(["(not parsed)"], gold_files=[["shop/cart.py"]], rollout_infos=[infos]) == [1.0]
    assert advantage_scale(infos).factor == 1.0  # c̄ = 36/4 = 9 saturates s(c̄)
    # a turn over the cap the rollout recorded is still a harness error
    over = {**infos, "tool_calls_per_turn": [13, 12, 11, 0]}
    with pytest.raises(rewards.InvalidRolloutError, match="more than 12"):
        rewards.RolloutInfo.from_infos(over).stats()
    assert RolloutConfig().max_calls_per_turn == rewards.MAX_CALLS_PER_TURN
