"""`RolloutEnvironment`: the agent driven from a trainer's per-turn hooks, on a real git repository.

No trainer here: the hooks get what ms-swift hands its scheduler (the row's messages and
columns, the reply's text and parsed calls, the turn number). `test_swift_plugin.py` drives the
same through ms-swift's own scheduler and objects.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from codegrep_model.budget import TokenBudget
from codegrep_model.errors import EpisodeError
from codegrep_model.policies.lexical import LexicalPolicy
from codegrep_model.prompts import PromptSet
from codegrep_model.train import (
    PolicyOverride,
    RolloutEnvironment,
    RolloutLogEntry,
    SandboxHost,
    TrainingSetupError,
    advantage_scale,
)
from grpo_rewards.swift_orm import CodeGrepV3ORM
from worktree_sandbox.tree import Tree

PROMPTS = PromptSet.load()


def block(name: str, arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def calls(*pairs: tuple[str, Any]) -> str:
    return "\n".join(block(n, a) for n, a in pairs)


THREE = calls(
    ("grep", {"pattern": "def add_item"}),
    ("glob", {"pattern": "shop/*.py"}),
    ("read", {"path": "shop/cart.py"}),
)
ANSWER = '{"files": ["shop/cart.py"]}'


@pytest.fixture
async def hooks(tmp_path: Path) -> AsyncIterator[RolloutEnvironment]:
    h = RolloutEnvironment(max_turns=4, host=SandboxHost(workdir=str(tmp_path / "trees")))
    yield h
    h.close()


async def started(hooks: RolloutEnvironment, row: dict[str, Any], uuid: str = "u1") -> str:
    await hooks.start(uuid, row["messages"], row, tools=json.loads(row["tools"]))
    return uuid


async def test_parallel_calls_run_concurrently_and_come_back_in_order(
    hooks: RolloutEnvironment, sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_flight = {"now": 0, "max": 0}
    original = Tree.call

    async def slow_call(self: Tree, name: str, arguments: Any) -> Any:
        in_flight["now"] += 1
        in_flight["max"] = max(in_flight["max"], in_flight["now"])
        await asyncio.sleep(0.05)
        try:
            return await original(self, name, arguments)
        finally:
            in_flight["now"] -= 1

    monkeypatch.setattr(Tree, "call", slow_call)
    uuid = await started(hooks, sandbox.rows()[0])
    out = await hooks.turn(uuid, THREE, None, current_turn=1)

    assert in_flight["max"] == 3
    assert not out.done
    assert out.executed_calls == 3
    counts = {k: out.rollout_infos[k] for k in ("num_turns", "num_tool_calls")}
    assert counts == {"num_turns": 1, "num_tool_calls": 3}
    assert out.rollout_infos["tool_calls_per_turn"] == [3]
    # the training budget's ledger: counted, nothing cut, no overflow
    assert out.rollout_infos["overflow"] is None
    assert out.rollout_infos["tool_results_cut"] == 0
    assert 0 < out.rollout_infos["completion_tokens"] < out.rollout_infos["rollout_tokens"]
    roles = [m["role"] for m in out.messages]
    assert roles == ["tool", "tool", "tool", "user"]
    grep, glob, read = (m["content"] for m in out.messages[:3])
    assert "shop/cart.py" in grep
    assert "def add_item" in grep
    assert "shop/pricing.py" in glob
    assert "raise ValueError" in read
    assert out.messages[3]["content"] == PROMPTS.reminder(turns_left=2)
    assert hooks.take_messages(uuid) == list(out.messages)
    assert hooks.take_messages(uuid) == []


async def test_calls_beyond_eight_are_refused(hooks: RolloutEnvironment, sandbox: Any) -> None:
    uuid = await started(hooks, sandbox.rows()[0])
    ten = calls(*[("grep", {"pattern": f"def {w}"}) for w in "abcdefghij"])
    out = await hooks.turn(uuid, ten, None, current_turn=1)

    assert out.executed_calls == 8
    assert out.rollout_infos["tool_calls_per_turn"] == [8]
    tools = [m["content"] for m in out.messages if m["role"] == "tool"]
    assert len(tools) == 10
    assert tools[8] == PROMPTS.too_many_calls(max_calls=8, index=9)
    assert tools[9] == PROMPTS.too_many_calls(max_calls=8, index=10)


async def test_malformed_calls_get_feedback_and_do_not_count(
    hooks: RolloutEnvironment, sandbox: Any
) -> None:
    uuid = await started(hooks, sandbox.rows()[0])
    text = (
        "<tool_call>\nnot json at all\n</tool_call>\n"
        + block("cat", {"path": "shop/cart.py"})
        + "\n<tool_call>\n"
        + '{"name": "grep", "arguments": "{broken"}'
        + "\n</tool_call>"
    )
    out = await hooks.turn(uuid, text, None, current_turn=1)

    assert out.executed_calls == 0
    assert out.rollout_infos["tool_calls_per_turn"] == [0]
    feedback = [m["content"] for m in out.messages if m["role"] == "tool"]
    assert feedback[0].startswith("Malformed tool call")
    assert feedback[1].startswith("Unknown tool 'cat'")
    assert feedback[2].startswith("Malformed call to grep")
    assert not out.done


async def test_a_rollout_that_never_answers_ends_unanswered(
    hooks: RolloutEnvironment, sandbox: Any
) -> None:
    uuid = await started(hooks, sandbox.rows()[0])
    for turn in (1, 2):
        out = await hooks.turn(uuid, "Let me think about it.", None, current_turn=turn)
        assert [m["content"] for m in out.messages] == [PROMPTS.no_calls()]
    out = await hooks.turn(uuid, "Still thinking.", None, current_turn=3)
    # the last exploration turn is over: the answer-turn demand follows the feedback
    assert [m["content"] for m in out.messages] == [PROMPTS.no_calls(), PROMPTS.answer()]
    out = await hooks.turn(uuid, "I do not know.", None, current_turn=4)

    assert out.done
    assert out.messages == ()
    assert out.rollout_infos["answer_files"] is None
    assert out.rollout_infos["answer_error"]
    assert out.rollout_infos["episode_status"] == "unanswered"
    assert out.rollout_infos["num_turns"] == 4
    assert out.rollout_infos["num_tool_calls"] == 0
    assert hooks.live == 0


async def test_the_answer_turn_follows_three_exploration_turns(
    hooks: RolloutEnvironment, sandbox: Any
) -> None:
    row = sandbox.rows()[0]
    uuid = await started(hooks, row)
    for turn in (1, 2, 3):
        out = await hooks.turn(uuid, THREE, None, current_turn=turn)
        assert not out.done
    assert out.messages[-1] == {"role": "user", "content": PROMPTS.answer()}
    final = await hooks.turn(uuid, ANSWER, None, current_turn=4)

    assert final.done
    infos = final.rollout_infos
    assert infos["answer_files"] == ["shop/cart.py"]
    assert infos["tool_calls_per_turn"] == [3, 3, 3, 0]
    assert (infos["num_turns"], infos["num_tool_calls"]) == (4, 9)
    assert infos["episode_status"] == "answered"
    # what the reward makes of it: F0.5 = 1, c̄ = 9/4 > 0
    reward = CodeGrepV3ORM()([ANSWER], gold_files=[row["gold_files"]], rollout_infos=[infos])
    assert reward == [1.0]


async def test_an_answer_before_any_call_ends_the_rollout(
    hooks: RolloutEnvironment, sandbox: Any
) -> None:
    uuid = await started(hooks, sandbox.rows()[0])
    out = await hooks.turn(uuid, ANSWER, None, current_turn=1)
    assert out.done
    assert out.rollout_infos["answer_files"] == ["shop/cart.py"]
    assert out.rollout_infos["num_tool_calls"] == 0


async def test_parsed_tool_calls_are_taken_when_the_text_has_no_blocks(
    hooks: RolloutEnvironment, sandbox: Any
) -> None:
    uuid = await started(hooks, sandbox.rows()[0])
    parsed = [
        SimpleNamespace(id="a", function=SimpleNamespace(name="glob", arguments='{"pattern":"*"}')),
        {"id": "b", "function": {"name": "read", "arguments": {"path": "README.md"}}},
    ]
    out = await hooks.turn(uuid, "", parsed, current_turn=1)
    assert out.executed_calls == 2
    assert "# shop" in out.messages[1]["content"]


async def test_a_row_rendered_with_other_prompts_is_refused(
    hooks: RolloutEnvironment, sandbox: Any
) -> None:
    row = sandbox.rows()[0]
    row["messages"][1]["content"] += "\nAlso fix the tests."
    with pytest.raises(TrainingSetupError, match="user message differs"):
        await started(hooks, row)
    row = sandbox.rows()[0]
    row["messages"] = row["messages"][1:]
    with pytest.raises(TrainingSetupError, match=r"\['user'\].*\['system', 'user'\]"):
        await started(hooks, row)
    assert hooks.live == 0


async def test_rows_without_the_sandbox_columns_or_with_other_tools_are_refused(
    hooks: RolloutEnvironment, sandbox: Any
) -> None:
    row = sandbox.rows()[0]
    del row["cache_dir"]
    with pytest.raises(TrainingSetupError, match="lacks cache_dir"):
        await started(hooks, row)
    row = sandbox.rows()[0]
    bash = [{"type": "function", "function": {"name": "bash", "parameters": {}}}]
    with pytest.raises(TrainingSetupError, match="offers tools"):
        await hooks.start("u2", row["messages"], row, tools=bash)


async def test_turns_must_match_the_episode(hooks: RolloutEnvironment, sandbox: Any) -> None:
    with pytest.raises(TrainingSetupError, match="no episode"):
        await hooks.turn("nobody", ANSWER, None, current_turn=1)
    uuid = await started(hooks, sandbox.rows()[0])
    with pytest.raises(EpisodeError, match="turn 2, the episode 1"):
        await hooks.turn(uuid, ANSWER, None, current_turn=2)


async def test_a_turn_limit_below_the_episode_is_refused(sandbox: Any, tmp_path: Path) -> None:
    # checked per row: a row may carry a shorter episode (`rollout_config`, test_row_config.py)
    hooks = RolloutEnvironment(max_turns=3, host=SandboxHost(workdir=str(tmp_path / "trees")))
    try:
        with pytest.raises(TrainingSetupError, match="pass --max_turns 4"):
            await started(hooks, sandbox.rows()[0])
    finally:
        hooks.close()


def test_one_tree_per_commit_across_rollouts_and_event_loops(sandbox: Any, tmp_path: Path) -> None:
    # ms-swift makes a new event loop per batch; the trees stay on the host's and are reused
    hooks = RolloutEnvironment(max_turns=4, host=SandboxHost(workdir=str(tmp_path / "trees")))
    row = sandbox.rows()[0]

    async def group(prefix: str) -> list[Any]:
        ids = [f"{prefix}{i}" for i in range(4)]
        await asyncio.gather(*(hooks.start(u, row["messages"], row) for u in ids))
        return list(await asyncio.gather(*(hooks.turn(u, THREE, None) for u in ids)))

    try:
        first = asyncio.run(group("a"))
        second = asyncio.run(group("b"))
        assert [o.executed_calls for o in first + second] == [3] * 8
        pool = hooks.host.pool(sandbox.cache_dir, sandbox.source)
        assert pool.stats.trees_opened == 1
        assert hooks.live == 8
        asyncio.run(hooks.release("a0"))
        assert hooks.live == 7
    finally:
        hooks.close()


async def test_the_test_only_override_drives_real_calls(sandbox: Any, tmp_path: Path) -> None:
    override = PolicyOverride(LexicalPolicy(), alternate=True)
    hooks = RolloutEnvironment(
        max_turns=4, host=SandboxHost(workdir=str(tmp_path / "trees")), test_override=override
    )
    row = sandbox.rows()[0]
    try:
        await hooks.start("lex", row["messages"], row)
        await hooks.start("own", row["messages"], row)
        turn, out = 1, None
        while out is None or not out.done:
            out = await hooks.turn("lex", "random tokens", None, current_turn=turn)
            assert out.replaced_content is not None
            turn += 1
        assert out.rollout_infos["answer_files"] == ["shop/cart.py"]
        assert out.rollout_infos["num_tool_calls"] > 0
        assert out.rollout_infos["test_policy"] == "lexical"
        own = await hooks.turn("own", "random tokens", None, current_turn=1)
        assert own.replaced_content is None
        assert own.rollout_infos["test_policy"] == "model"
    finally:
        hooks.close()


async def test_a_rollout_past_its_completion_budget_ends_with_overflow(
    tmp_path: Path, sandbox: Any
) -> None:
    """The trainer's token count of each reply is summed over rounds: the second reply, each
    within the per-round cap, passes the rollout's budget and ends it."""
    budget = TokenBudget(max_length=32768, max_completion_tokens=1000, max_turn_tokens=800)
    hooks = RolloutEnvironment(
        max_turns=4, host=SandboxHost(workdir=str(tmp_path / "trees")), budget=budget
    )
    try:
        uuid = await started(hooks, sandbox.rows()[0])
        first = await hooks.turn(uuid, THREE, None, current_turn=1, completion_tokens=600)
        assert not first.done
        assert first.rollout_infos["completion_tokens"] == 600
        out = await hooks.turn(uuid, THREE, None, current_turn=2, completion_tokens=600)
        assert out.done
        assert out.messages == ()
        assert out.executed_calls == 0
        assert out.rollout_infos["overflow"] == "completion_budget"
        assert out.rollout_infos["episode_status"] == "unanswered"
        assert out.rollout_infos["answer_files"] is None
        assert hooks.live == 0
        scale = advantage_scale(out.rollout_infos)
        entry = RolloutLogEntry.of(
            step=1,
            index=0,
            info=out.rollout_infos,
            scale=scale,
            reward=0.0,
            rewards={},
            advantage_group=0.0,
        )
        assert entry.stop_cause == "overflow"
        assert entry.overflow == "completion_budget"
        assert entry.completion_tokens == 1200
    finally:
        hooks.close()


async def test_a_reply_cut_at_the_length_limit_ends_the_rollout(
    hooks: RolloutEnvironment, sandbox: Any
) -> None:
    """ms-swift ends a rollout on a reply with finish reason `length` (its `check_finished`);
    the hooks' `done` overrides that check, so they end it too: the cut call block is neither
    run nor answered as a malformed call, and the record says why there is no answer."""
    uuid = await started(hooks, sandbox.rows()[0])
    first = await hooks.turn(uuid, THREE, None, current_turn=1)
    assert not first.done
    cut = block("read", {"path": "shop/cart.py"}) + '\n<tool_call>\n{"name": "grep", "argu'
    out = await hooks.turn(uuid, cut, None, current_turn=2, length_cut=True)
    assert out.done
    assert out.messages == ()
    assert out.executed_calls == 0
    infos = out.rollout_infos
    assert infos["tool_calls_per_turn"] == [3, 0]
    assert infos["episode_status"] == "unanswered"
    assert infos["answer_files"] is None
    assert infos["answer_error"] == "no answer: the reply was cut at its length limit"
    assert hooks.live == 0
    # a reply that holds a whole answer before the cut is read as a last reply is read
    uuid = await started(hooks, sandbox.rows()[0], "u2")
    await hooks.turn(uuid, THREE, None, current_turn=1)
    out = await hooks.turn(uuid, ANSWER + "\nThe cart", None, current_turn=2, length_cut=True)
    assert out.done
    assert out.rollout_infos["answer_files"] == ["shop/cart.py"]
    assert out.rollout_infos["episode_status"] == "answered"


async def test_the_budget_counts_the_tool_schemas_only_of_a_row_that_has_them(
    tmp_path: Path, sandbox: Any
) -> None:
    """ms-swift writes the schemas into the system prompt when the row has tools, and nothing
    when it has none: the rollout's count follows the row."""
    hooks = RolloutEnvironment(max_turns=4, host=SandboxHost(workdir=str(tmp_path / "trees")))
    try:
        row = sandbox.rows()[0]
        await hooks.start("with", row["messages"], row, tools=json.loads(row["tools"]))
        await hooks.start("without", row["messages"], row, tools=[])
        with_tools = await hooks.turn("with", ANSWER, None, current_turn=1)
        without = await hooks.turn("without", ANSWER, None, current_turn=1)
        schemas = len(json.dumps(json.loads(row["tools"])))
        gap = with_tools.rollout_infos["rollout_tokens"] - without.rollout_infos["rollout_tokens"]
        # the hermes block is the schemas' JSON and some 400 characters of instructions, counted
        # at 3 characters a token
        assert schemas // 3 < gap < (schemas + 600) // 3
    finally:
        hooks.close()
