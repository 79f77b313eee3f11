"""The engine against a real OpenAI-compatible HTTP server on 127.0.0.1 with scripted replies,
over a real git repository (DirectoryTree)."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from codegrep_model import EndpointTimeoutError, Instance, RolloutConfig, RolloutRecord, run_rollout
from codegrep_model.policies.served import OpenAIPolicy
from worktree_sandbox import DirectoryTree

if TYPE_CHECKING:
    from conftest import ChatServer

ISSUE = Instance(
    instance_id="shop-1",
    repo="acme/shop",
    base_commit="HEAD",
    problem_statement="Cart.add_item raises ValueError for qty=0; it should ignore it.",
)


def run(
    server: ChatServer, repo: Path, *, config: RolloutConfig | None = None, **policy_kw: Any
) -> RolloutRecord:
    async def go() -> RolloutRecord:
        policy = OpenAIPolicy(server.base_url, "test-model", backoff_s=0.01, **policy_kw)
        async with policy, DirectoryTree(repo) as tree:
            return await run_rollout(policy, tree, ISSUE, config=config)

    return asyncio.run(go())


def tool_messages(record: RolloutRecord) -> list[str]:
    return [m.content or "" for m in record.messages if m.role == "tool"]


def test_parallel_calls_then_answer(chat_server: ChatServer, small_repo: Path) -> None:
    chat_server.script = [
        chat_server.tool_reply(
            ("grep", {"pattern": r"def add_item"}),
            ("glob", {"pattern": "*.py"}),
            ("read", {"path": "shop/cart.py", "start_line": 1, "end_line": 8}),
        ),
        chat_server.text_reply('Found it.\n```json\n{"files": ["shop/cart.py"]}\n```'),
    ]
    rec = run(chat_server, small_repo)
    assert rec.status == "answered"
    assert rec.answer is not None
    assert rec.answer.files == ("shop/cart.py",)
    assert rec.stats.turns == 2
    assert rec.stats.tool_calls == 3
    assert rec.stats.calls_per_turn == 1.5
    texts = tool_messages(rec)
    assert "shop/cart.py" in texts[0]
    assert "tests/test_cart.py" in texts[1]
    assert "raise ValueError" in texts[2]
    # each tool message answers its call, in order
    first = chat_server.requests[1]["messages"]
    ids = [c["id"] for c in first[2]["tool_calls"]]
    assert [m["tool_call_id"] for m in first[3:6]] == ids
    assert first[0]["role"] == "system"
    assert "acme/shop" in first[1]["content"]
    assert "shop/" in first[1]["content"]  # the top levels are in the user turn
    assert rec.usage.prompt_tokens == 200
    assert rec.usage.completion_tokens == 20
    assert {t["function"]["name"] for t in chat_server.requests[0]["tools"]} == {
        "grep",
        "glob",
        "read",
    }


def test_more_than_eight_calls_are_refused(chat_server: ChatServer, small_repo: Path) -> None:
    calls = [("grep", {"pattern": f"item{i}|Cart"}) for i in range(11)]
    chat_server.script = [
        chat_server.tool_reply(*calls),
        chat_server.text_reply('{"files": ["shop/cart.py"]}'),
    ]
    rec = run(chat_server, small_repo)
    statuses = [c.status for c in rec.turns[0].calls]
    assert statuses == ["ok"] * 8 + ["refused"] * 3
    assert rec.stats.tool_calls == 8
    assert rec.stats.refused_calls == 3
    texts = tool_messages(rec)
    assert len(texts) == 11  # every call id gets an answer, refused ones too
    assert all("at most 8 tool calls" in t for t in texts[8:])


def test_calls_run_concurrently(chat_server: ChatServer, small_repo: Path) -> None:
    peak = 0
    running = 0

    class SlowTree(DirectoryTree):
        async def call(self, name: str, arguments: Any) -> Any:
            nonlocal peak, running
            running += 1
            peak = max(peak, running)
            try:
                await asyncio.sleep(0.3)
                return await super().call(name, arguments)
            finally:
                running -= 1

    chat_server.script = [
        chat_server.tool_reply(*[("read", {"path": "shop/cart.py"})] * 8),
        chat_server.text_reply('{"files": ["shop/cart.py"]}'),
    ]

    async def go() -> RolloutRecord:
        async with OpenAIPolicy(chat_server.base_url, "m") as policy, SlowTree(small_repo) as tree:
            return await run_rollout(policy, tree, ISSUE)

    t0 = time.perf_counter()
    rec = asyncio.run(go())
    assert peak == 8
    assert rec.turns[0].tools_s < 8 * 0.3 / 2  # serial execution would take 2.4 s
    assert time.perf_counter() - t0 < 2.4


def test_malformed_arguments_get_feedback(chat_server: ChatServer, small_repo: Path) -> None:
    chat_server.script = [
        chat_server.tool_reply(
            ("grep", '{"pattern": "Cart"'),  # truncated JSON
            ("grep", {"patern": "Cart"}),  # wrong field name
            ("find", {"name": "cart.py"}),  # no such tool
        ),
        chat_server.tool_reply(("grep", {"pattern": "class Cart"})),
        chat_server.text_reply('{"files": ["shop/cart.py"]}'),
    ]
    rec = run(chat_server, small_repo)
    assert [c.status for c in rec.turns[0].calls] == ["malformed"] * 3
    texts = tool_messages(rec)
    assert "not valid JSON" in texts[0]
    assert "pattern" in texts[1]
    assert "Unknown tool 'find'" in texts[2]
    assert rec.stats.malformed_calls == 3
    assert rec.stats.tool_calls == 1
    assert rec.status == "answered"


def test_tool_error_is_a_result(chat_server: ChatServer, small_repo: Path) -> None:
    chat_server.script = [
        chat_server.tool_reply(("read", {"path": "shop/missing.py"}), ("read", {"path": "../x"})),
        chat_server.text_reply('{"files": ["shop/cart.py"]}'),
    ]
    rec = run(chat_server, small_repo)
    calls = rec.turns[0].calls
    assert [c.status for c in calls] == ["tool_error", "tool_error"]
    assert rec.stats.tool_errors == 2
    assert rec.status == "answered"


def test_turn_limit_and_answer_turn_with_no_call_to_make(
    chat_server: ChatServer, small_repo: Path
) -> None:
    chat_server.script = [
        chat_server.tool_reply(("grep", {"pattern": "Cart"})),
        chat_server.tool_reply(("grep", {"pattern": "add_item"})),
        chat_server.tool_reply(("read", {"path": "shop/cart.py"})),
        chat_server.text_reply(
            '{"files": ["shop/cart.py"], "line_ranges": {"shop/cart.py": [[5, 8]]}}'
        ),
    ]
    rec = run(chat_server, small_repo)
    assert len(chat_server.requests) == 4
    assert all(r["tool_choice"] == "auto" for r in chat_server.requests[:3])
    # the answer turn shows the schemas as every turn of a training rollout does (ms-swift
    # writes a row's tools into each encoding), with no call to make
    answer_turn = chat_server.requests[3]
    assert answer_turn["tools"] == chat_server.requests[0]["tools"]
    assert answer_turn["tool_choice"] == "none"
    assert "parallel_tool_calls" not in answer_turn
    reminders = [m["content"] for m in chat_server.requests[3]["messages"] if m["role"] == "user"][
        1:
    ]
    assert reminders[0].startswith("2 turns")
    assert reminders[1].startswith("1 turn")
    assert "No tools are available" in reminders[2]
    assert [t.kind for t in rec.turns] == ["explore", "explore", "explore", "answer"]
    assert rec.stats.turns == 4
    assert rec.stats.tool_calls == 3
    assert rec.answer is not None
    assert rec.answer.line_ranges == {"shop/cart.py": ((5, 8),)}


def test_500_is_retried(chat_server: ChatServer, small_repo: Path) -> None:
    chat_server.script = [
        chat_server.failure(500),
        chat_server.text_reply('{"files": ["shop/cart.py"]}'),
    ]
    rec = run(chat_server, small_repo)
    assert rec.status == "answered"
    assert len(chat_server.requests) == 2


def test_persistent_500_is_an_infrastructure_error(
    chat_server: ChatServer, small_repo: Path
) -> None:
    chat_server.script = [chat_server.failure(500)] * 3
    rec = run(chat_server, small_repo, max_retries=2)
    assert rec.status == "error"
    assert rec.answer is None
    assert rec.error is not None
    assert "HTTP 500" in rec.error
    assert len(chat_server.requests) == 3


@pytest.mark.parametrize(
    "payload",
    [
        {"choices": [{"message": "oops"}]},
        {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": ["x"]}}]},
        {"choices": [{"message": {"role": "assistant", "content": 7}}]},
        {"choices": [{"message": {"role": "assistant", "content": "{}"}}], "usage": [1]},
    ],
)
def test_a_reply_of_the_wrong_shape_is_an_infrastructure_error(
    chat_server: ChatServer, small_repo: Path, payload: dict[str, Any]
) -> None:
    step = chat_server.text_reply("")
    step.raw = json.dumps(payload)  # sent as it is, in place of a well-formed completion
    chat_server.script = [step]
    rec = run(chat_server, small_repo)
    assert rec.status == "error"
    assert rec.error is not None
    assert "not a chat completion" in rec.error


def test_slow_reply_hits_the_timeout(chat_server: ChatServer, small_repo: Path) -> None:
    chat_server.script = [chat_server.text_reply('{"files": ["a.py"]}', delay_s=1.5)]
    t0 = time.perf_counter()
    rec = run(chat_server, small_repo, timeout_s=0.3)
    assert time.perf_counter() - t0 < 1.4
    assert rec.status == "error"
    assert rec.error is not None
    assert EndpointTimeoutError.__name__ in rec.error


def test_no_final_answer_falls_back_to_files_read(
    chat_server: ChatServer, small_repo: Path
) -> None:
    chat_server.script = [
        chat_server.tool_reply(("read", {"path": "shop/cart.py"})),
        chat_server.text_reply("Let me think about it."),  # no calls, no answer: feedback
        chat_server.tool_reply(("read", {"path": "shop/pricing.py"})),
        chat_server.text_reply("I believe the cart is involved."),  # answer turn: no JSON
        chat_server.text_reply("Still thinking."),  # rescue: no JSON
    ]
    rec = run(chat_server, small_repo)
    assert rec.status == "fallback"
    assert rec.answer is not None
    assert rec.answer.files == ("shop/cart.py", "shop/pricing.py")
    assert [t.kind for t in rec.turns] == ["explore", "explore", "explore", "answer", "rescue"]
    user = [m.content or "" for m in rec.messages if m.role == "user"]
    assert any("neither a tool call nor a valid JSON answer" in u for u in user)
    assert "did not contain a valid answer" in user[-1]


def test_a_list_in_prose_is_not_an_answer(chat_server: ChatServer, small_repo: Path) -> None:
    chat_server.script = [
        chat_server.text_reply("Maybe `Cart.add_item([])` is the culprit; let me look."),
        chat_server.tool_reply(("grep", {"pattern": "def add_item"})),
        chat_server.text_reply('{"files": ["shop/cart.py"]}'),
    ]
    rec = run(chat_server, small_repo, config=RolloutConfig(exploration_turns=2))
    assert rec.status == "answered"
    assert rec.answer is not None
    assert rec.answer.files == ("shop/cart.py",)
    assert [t.kind for t in rec.turns] == ["explore", "explore", "answer"]
    sent = chat_server.requests[1]["messages"]
    assert "neither a tool call nor a valid JSON answer" in sent[-1]["content"]


def test_hermes_blocks_in_plain_text(chat_server: ChatServer, small_repo: Path) -> None:
    text = (
        "I will search.\n<tool_call>\n"
        + json.dumps({"name": "grep", "arguments": {"pattern": "class Cart"}})
        + "\n</tool_call>\n<tool_call>\n"
        + json.dumps({"name": "glob", "arguments": {"pattern": "cart.py"}})
        + "\n</tool_call>\n<tool_call>{broken</tool_call>"
    )
    chat_server.script = [
        chat_server.text_reply(text),
        chat_server.text_reply('<think>done</think>{"files": ["shop/cart.py"]}'),
    ]
    rec = run(chat_server, small_repo)
    calls = rec.turns[0].calls
    assert [c.call.name for c in calls] == ["grep", "glob", ""]
    assert [c.status for c in calls] == ["ok", "ok", "malformed"]
    assert rec.turns[0].content == "I will search."
    assert rec.answer is not None
    assert rec.answer.files == ("shop/cart.py",)
    # the next request carries the calls as native tool calls with matching tool messages
    sent = chat_server.requests[1]["messages"]
    assert len(sent[2]["tool_calls"]) == 3
    assert sent[3]["role"] == "tool"


@pytest.mark.parametrize("turns", [1, 2])
def test_exploration_budget_is_configurable(
    chat_server: ChatServer, small_repo: Path, turns: int
) -> None:
    chat_server.script = [chat_server.tool_reply(("grep", {"pattern": "Cart"}))] * turns + [
        chat_server.text_reply('{"files": ["shop/cart.py"]}')
    ]
    rec = run(
        chat_server,
        small_repo,
        config=RolloutConfig(exploration_turns=turns),
        tools_on_answer_turn=False,
    )
    assert rec.stats.turns == turns + 1
    assert "tools" not in chat_server.requests[-1]


@pytest.mark.parametrize("strict", [False, True], ids=["inference", "training"])
def test_a_reply_that_decodes_to_lone_surrogates_is_recorded(
    chat_server: ChatServer, small_repo: Path, strict: bool
) -> None:
    """JSON's `"\\udce9"` decodes to a lone surrogate, which no UTF-8 writer takes: in a reply's
    content, a call's id, name or arguments or an answer's files it made the rollout record
    unwritable (`PydanticSerializationError`). The episode records each as U+FFFD."""
    lone = "\udce9"
    chat_server.script = [
        chat_server.tool_reply(
            (f"gr{lone}p", {"pattern": "x"}),
            ("grep", json.dumps({"pattern": f"add{lone}"}, ensure_ascii=False)),
            content=f"looking for r{lone}sum{lone}",
        ),
        chat_server.text_reply(json.dumps({"files": [f"shop/{lone}.py", "shop/cart.py"]})),
    ]
    rec = run(chat_server, small_repo, config=RolloutConfig(strict=strict))
    data = json.loads(rec.model_dump_json())
    assert rec.answer is not None
    assert rec.answer.files == ("shop/\ufffd.py", "shop/cart.py")
    assert data["messages"][2]["content"] == "looking for r\ufffdsum\ufffd"
    names = [c["call"]["name"] for c in data["turns"][0]["calls"]]
    assert names == ["gr\ufffdp", "grep"]
    if strict:
        assert data["reward_view"]["files"] == ["shop/\ufffd.py", "shop/cart.py"]


def test_an_endpoint_error_quoting_a_lone_surrogate_is_recorded(
    chat_server: ChatServer, small_repo: Path
) -> None:
    """A policy's error is the record's `error`; one quoting a lone surrogate (a server's
    message) made the record unwritable."""
    from codegrep_model import Episode

    failure = chat_server.failure(400)
    chat_server.script = [replace(failure, raw='{"error": {"message": "bad \\udce9"}}')]
    rec = run(chat_server, small_repo)
    assert rec.status == "error"
    json.loads(rec.model_dump_json())
    episode = Episode.start(ISSUE, ("shop/cart.py",), policy="p")
    episode.fail(RuntimeError("the server said: bad \udce9"))
    assert episode.record().error == "RuntimeError: the server said: bad \ufffd"
