"""GRPO and SFT training rows: the agent's own prompts, honest drops, a repository-level split,
rejection sampling by reward, and ms-swift's agent format. Real git repositories throughout."""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpo_rewards as rewards
import pytest
from codegrep_model import (
    ChatMessage,
    Episode,
    Instance,
    PolicyReply,
    RolloutConfig,
    RolloutRecord,
    run_rollout,
)
from codegrep_model.dataset_cli import dataset_app
from codegrep_model.datasets import (
    CHATML_TURN_BREAK,
    ROW_SCHEMA_VERSION,
    GrpoDataset,
    GrpoRow,
    SftRow,
    agent_messages,
    fold_follow_up,
    grpo_rows,
    sft_rows,
    split_by_repo,
)
from codegrep_model.policies.scripted import ScriptedPolicy, call
from codegrep_model.tools import openai_tools
from codegrep_records import GoldLabel, RowProblem
from grpo_rewards.trl_reward import TRLReward
from typer.testing import CliRunner
from worktree_sandbox import BareRepoCache, DirectoryTree

MakeRepo = Callable[[Path, dict[str, str]], tuple[Path, str]]

SHOP = {
    "README.md": "# shop\n",
    "shop/cart.py": "class Cart:\n    def add_item(self, sku, qty):\n        return qty\n",
    "shop/pricing.py": "def apply_discount(total, rate):\n    return total * (1 - rate)\n",
    "tests/test_cart.py": "def test_cart():\n    pass\n",
}
TOOLS = {"tools/cli.py": "def main():\n    pass\n", "tools/io.py": "def read():\n    pass\n"}
EXTRA = {"extra/core.py": "X = 1\n"}


def diff(path: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"


def added(path: str) -> str:
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"


def git_files(repo: Path) -> tuple[str, ...]:
    out = subprocess.run(
        ["git", "-C", str(repo), "ls-files"], check=True, capture_output=True, text=True
    ).stdout
    return tuple(sorted(out.split()))


class World:
    """Three repositories under one source folder, and instances on them."""

    def __init__(self, root: Path, make_repo: MakeRepo) -> None:
        self.src = root / "src"
        self.paths: dict[str, Path] = {}
        self.shas: dict[str, str] = {}
        for name, files in (("shop", SHOP), ("tools", TOOLS), ("extra", EXTRA)):
            self.paths[name], self.shas[name] = make_repo(self.src / name, files)
        self.cache = BareRepoCache(root / "cache", source=str(self.src / "{name}"))

    def inst(self, iid: str, name: str, patch: str, **kw: Any) -> Instance:
        fields: dict[str, Any] = {
            "instance_id": iid,
            "repo": f"acme/{name}",
            "base_commit": self.shas.get(name, "0" * 40),
            "problem_statement": f"`{iid}` is broken: Cart.add_item ignores the quantity",
            "patch": patch,
        }
        fields.update(kw)
        return Instance.model_validate(fields)

    def good(self) -> list[Instance]:
        return [
            self.inst("shop-1", "shop", diff("shop/cart.py")),
            self.inst("shop-2", "shop", diff("shop/pricing.py") + diff("tests/test_cart.py")),
            self.inst("shop-3", "shop", diff("shop/cart.py")),
            self.inst("tools-1", "tools", diff("tools/cli.py")),
            self.inst("tools-2", "tools", diff("tools/io.py")),
            self.inst("extra-1", "extra", diff("extra/core.py")),
        ]


@pytest.fixture
def world(tmp_path: Path, repo_factory: MakeRepo) -> World:
    return World(tmp_path, repo_factory)


def build(world: World, instances: list[Instance], **kw: Any) -> GrpoDataset:
    return asyncio.run(grpo_rows(instances, world.cache, **kw))


# ------------------------------------------------------------------------------------- GRPO


def test_grpo_rows_are_the_episodes_own_prompt(world: World) -> None:
    ds = build(world, world.good(), val_fraction=0.0)
    rows = ds.train
    assert [r.instance_id for r in rows] == [i.instance_id for i in world.good()]
    assert ds.val == []
    assert ds.report.trees == 3
    for inst, row in zip(world.good(), rows, strict=True):
        files = git_files(world.paths[inst.repo.split("/")[1]])
        episode = Episode.start(inst, files, policy="any", config=RolloutConfig(strict=True))
        want = [{"role": m.role, "content": m.content} for m in episode.messages]
        assert [m.model_dump() for m in row.messages] == want
        assert [m.role for m in row.messages] == ["system", "user"]
        assert json.loads(row.tools) == openai_tools()
        assert row.base_commit == inst.base_commit
        assert row.repo == inst.repo
        assert row.problem_statement == inst.problem_statement
        # the scheduler reopens the same tree from these two columns
        assert row.cache_dir == str(world.cache.root)
        assert row.source == world.cache.source
        assert row.gold_source == "patch"
    assert rows[1].solution == ("shop/pricing.py",)  # a test file is not gold under the rule
    line = json.loads(rows[0].model_dump_json(exclude_none=True))
    assert set(line) >= {"messages", "tools", "solution", "gold_files", "cache_dir", "source"}
    assert line["gold_files"] == line["solution"] == ["shop/cart.py"]
    assert isinstance(line["tools"], str)  # ms-swift parses the tools from a JSON string


def test_every_instance_left_out_is_in_the_report_with_its_reason(world: World) -> None:
    instances = [
        *world.good(),
        world.inst("shop-1", "shop", diff("shop/cart.py")),  # the id again
        world.inst("nocommit-1", "shop", diff("shop/cart.py"), base_commit=None),
        world.inst("nogold-1", "shop", diff("tests/test_cart.py") + added("shop/new.py")),
        world.inst("badcommit-1", "shop", diff("shop/cart.py"), base_commit="f" * 40),
        world.inst("missing-1", "missing", diff("a.py")),
        world.inst("missing-2", "missing", diff("b.py"), base_commit="e" * 40),
    ]
    problems = [RowProblem("i.jsonl", 9, "not JSON: Expecting value")]
    ds = build(world, instances, val_fraction=0.0, bad_rows=problems)
    report = ds.report
    reasons = {(d.instance_id, d.reason) for d in report.dropped}
    assert reasons == {
        ("shop-1", "duplicate_id"),
        ("nocommit-1", "no_base_commit"),
        ("nogold-1", "no_gold"),
        ("badcommit-1", "tree_error"),
        ("missing-1", "tree_error"),
        ("missing-2", "tree_error"),
    }
    assert report.bad_rows == ["i.jsonl:9: not JSON: Expecting value"]
    assert report.instances == len(instances)
    assert report.instances == report.train + report.val + len(report.dropped)
    assert report.dropped_by_reason == {
        "duplicate_id": 1,
        "no_base_commit": 1,
        "no_gold": 1,
        "tree_error": 3,
    }
    assert report.tree_errors == 3
    missing = [d.detail for d in report.dropped if d.repo == "acme/missing"]
    assert all("RepositoryNotFoundError" in m for m in missing)
    assert report.per_repo["acme/shop"] == {"split": "train", "rows": 3, "dropped": 4}
    assert report.per_repo["acme/missing"] == {"split": None, "rows": 0, "dropped": 2}
    # a repository filter and a limit are accounted for too
    ds = build(world, instances, val_fraction=0.0, repos={"acme/shop"}, limit=2)
    assert {d.reason for d in ds.report.dropped} == {"repo_filtered", "duplicate_id"}
    assert ds.report.beyond_limit == 4  # 6 distinct shop instances, the first 2 considered
    assert ds.report.train == 2
    r = ds.report
    assert r.instances == r.train + r.val + len(r.dropped) + r.beyond_limit
    json.dumps(r.to_dict())  # the report is written as JSON


def test_no_repository_is_in_both_splits(world: World) -> None:
    ds = build(world, world.good(), val_fraction=0.3, seed=1)
    train_repos = {r.repo for r in ds.train}
    val_repos = {r.repo for r in ds.val}
    assert train_repos
    assert val_repos
    assert not train_repos & val_repos
    assert ds.report.val_repos == sorted(val_repos)
    assert ds.report.train + ds.report.val == 6
    again = build(world, world.good(), val_fraction=0.3, seed=1)
    assert [r.instance_id for r in again.val] == [r.instance_id for r in ds.val]  # seeded
    chosen = build(world, world.good(), val_repos=["acme/tools", "acme/nowhere"])
    assert {r.repo for r in chosen.val} == {"acme/tools"}
    assert {r.repo for r in chosen.train} == {"acme/shop", "acme/extra"}
    assert chosen.report.unknown_val_repos == ["acme/nowhere"]


def test_split_by_repo_takes_whole_repositories_near_the_fraction() -> None:
    counts = {"a": 50, "b": 30, "c": 10, "d": 10}
    for seed in range(20):
        val = split_by_repo(counts, val_fraction=0.2, seed=seed)
        assert 0 < sum(counts[r] for r in val) <= 30  # within 10 of the 20 asked for
        assert set(counts) - val  # something stays in train
    assert split_by_repo(counts, val_fraction=0.0) == frozenset()
    assert split_by_repo({"a": 5}, val_fraction=0.5) == frozenset()  # one repo: train only
    # a fraction too small for any repository still yields one (the smallest)
    assert split_by_repo({"a": 90, "b": 80}, val_fraction=0.01) == frozenset({"b"})
    with pytest.raises(ValueError, match="val_fraction"):
        split_by_repo(counts, val_fraction=1.0)


def test_grpo_rows_carry_the_gold_files_hunks_as_line_ranges(world: World) -> None:
    patch = (
        "diff --git a/shop/cart.py b/shop/cart.py\n--- a/shop/cart.py\n+++ b/shop/cart.py\n"
        "@@ -4,3 +4,3 @@ class Cart:\n     def add_item(self, sku, qty):\n"
        "-        self.items.append(sku)\n+        self.items += [sku] * qty\n \n"
        "@@ -9,0 +10,2 @@\n+\n+    def clear(self):\n"
        + diff("tests/test_cart.py")  # not gold under the rule: its hunk is not either
        + added("shop/new.py")
    )
    labelled = world.inst("shop-9", "shop", diff("shop/pricing.py"))
    ds = build(
        world,
        [world.inst("shop-8", "shop", patch), labelled],
        val_fraction=0.0,
        labels=[GoldLabel(instance_id="shop-9", files=frozenset({"x.py"}), source="l.jsonl")],
    )
    by_id = {r.instance_id: r for r in ds.train}
    # -4,3: lines 4..6; -9,0 inserts after line 9: the line it follows, [9, 9]
    assert [r.model_dump() for r in by_id["shop-8"].gold_line_ranges] == [
        {"path": "shop/cart.py", "start": 4, "end": 6},
        {"path": "shop/cart.py", "start": 9, "end": 9},
    ]
    assert by_id["shop-9"].gold_line_ranges == ()  # a label names files, not lines
    # the column the rewards read: a perfect answer now scores 1.0 under v1 (c̄ = 1), not 0.5
    row = json.loads(by_id["shop-8"].model_dump_json())
    answer = '{"files": ["shop/cart.py"], "line_ranges": {"shop/cart.py": [[4, 6], [9, 9]]}}'
    got = TRLReward("codegrep_v1")(
        prompts=["issue"],
        completions=[answer],
        gold_files=[row["gold_files"]],
        gold_line_ranges=[row["gold_line_ranges"]],
        num_turns=[2],
        num_tool_calls=[2],
    )
    assert got == [1.0]


def test_labels_replace_the_patch_gold(world: World) -> None:
    labels = [
        GoldLabel(instance_id="shop-1", files=frozenset({"shop/pricing.py"}), source="l.jsonl"),
        GoldLabel(instance_id="tools-1", files=frozenset(), source="l.jsonl"),  # empty: dropped
        GoldLabel(instance_id="elsewhere-9", files=frozenset({"x.py"}), source="l.jsonl"),
    ]
    ds = build(world, world.good(), val_fraction=0.0, labels=labels)
    by_id = {r.instance_id: r for r in ds.train}
    assert by_id["shop-1"].solution == ("shop/pricing.py",)
    assert by_id["shop-1"].gold_source == "label"
    assert by_id["shop-3"].solution == ("shop/cart.py",)
    assert by_id["shop-3"].gold_source == "patch"
    assert [(d.instance_id, d.reason) for d in ds.report.dropped] == [("tools-1", "no_gold")]
    assert ds.report.gold_sources == {"label": 1, "patch": 4}
    assert ds.report.labels == 3
    assert ds.report.labels_unmatched == 1


def test_a_dry_run_opens_no_tree(world: World) -> None:
    ds = asyncio.run(grpo_rows(world.good(), None, dry_run=True))
    assert (ds.train, ds.val) == ([], [])
    assert (ds.report.candidates, ds.report.trees) == (6, 3)
    assert not (world.cache.root / "repos" / "acme__shop.git").exists()


# -------------------------------------------------------------------------------------- SFT


def say(text: str | None, *calls: Any) -> PolicyReply:
    return PolicyReply(content=text, tool_calls=tuple(calls))


def rollout(world: World, inst: Instance, steps: list[PolicyReply]) -> RolloutRecord:
    async def go() -> RolloutRecord:
        async with DirectoryTree(world.paths[inst.repo.split("/")[1]]) as tree:
            return await run_rollout(ScriptedPolicy(steps), tree, inst)

    return asyncio.run(go())


def good_steps(answer: str = '{"files": ["shop/cart.py"]}') -> list[PolicyReply]:
    return [
        say(
            "Looking at the cart.",
            call("grep", {"pattern": "add_item"}, id="a"),
            call("glob", {"pattern": "shop/*.py"}, id="b"),
            call("read", {"path": "shop/nope.py"}, id="c"),  # a tool error: a result all the same
        ),
        say(None, call("read", {"path": "shop/cart.py"}, id="d")),
        say(None, call("grep", {"pattern": "qty"}, id="e")),
        say(answer),
    ]


def test_sft_keeps_answered_rollouts_above_the_threshold_weighted_by_reward(
    world: World,
) -> None:
    shop1, shop2, shop3 = world.good()[:3]
    exact = rollout(world, shop1, good_steps())
    half = rollout(world, shop3, good_steps('{"files": ["shop/cart.py", "README.md"]}'))
    wrong = rollout(world, shop2, good_steps())  # gold is shop/pricing.py
    unknown = exact.model_copy(update={"instance_id": "nobody-1"})
    no_calls = rollout(world, shop1, [say('{"files": ["shop/cart.py"]}')])  # c̄ = 0: v3 is 0
    failed = exact.model_copy(update={"status": "error", "error": "PolicyError: down"})
    fallback = exact.model_copy(update={"status": "fallback"})
    bad = rollout(
        world,
        shop1,
        [say(None, call("grep", '{"pattern": ', id="m")), *good_steps()[1:]],
    )
    records = [exact, half, wrong, unknown, no_calls, failed, fallback, bad]
    ds = sft_rows(records, world.good(), threshold=0.5)
    report = ds.report
    assert [r.instance_id for r in ds.rows] == ["shop-1", "shop-3"]
    gold = {"shop-1": ["shop/cart.py"], "shop-3": ["shop/cart.py"]}
    for row, rec in zip(ds.rows, [exact, half], strict=True):
        stats = rewards.RolloutStats(turns=rec.stats.turns, tool_calls=rec.stats.tool_calls)
        final = rec.messages[-1].content
        want = rewards.codegrep_v3(
            rewards.parse_answer(final), rewards.Gold.of(gold[row.instance_id]), stats
        )
        assert row.weight == pytest.approx(want.reward)
    assert ds.rows[0].weight == pytest.approx(1.0)
    assert 0.5 <= ds.rows[1].weight < 1.0  # F0.5 of one right file of two
    assert {(d.instance_id, d.reason) for d in report.dropped} == {
        ("shop-2", "below_threshold"),
        ("nobody-1", "no_gold"),
        ("shop-1", "below_threshold"),  # no tool call
        ("shop-1", "error"),
        ("shop-1", "fallback"),
        ("shop-1", "bad_calls"),
    }
    assert report.rollouts == len(records) == report.kept + len(report.dropped)
    assert report.kept_per_repo == {"acme/shop": 2}
    # a higher threshold keeps only exact answers; plain F-beta has no c̄ mask, so the
    # rollout without a tool call now counts too
    strict = sft_rows(records, world.good(), threshold=0.9, reward="fbeta_file")
    assert [r.instance_id for r in strict.rows] == ["shop-1", "shop-1"]
    assert strict.rows[1].messages[-1].role == "assistant"
    assert len(strict.rows[1].messages) == 3
    assert strict.report.reward == "fbeta_file"
    with pytest.raises(rewards.UnknownRewardError):
        sft_rows(records, world.good(), reward="v9")


def test_sft_writes_parallel_calls_as_consecutive_tool_calls(world: World) -> None:
    rec = rollout(world, world.good()[0], good_steps())
    row = sft_rows([rec], world.good()).rows[0]
    roles = [m.role for m in row.messages]
    assert roles == [
        "system",
        "user",
        "assistant",  # the turn's text, then its three parallel calls
        "tool_call",
        "tool_call",
        "tool_call",
        "user",  # their three results and the turn reminder, one user message
        "tool_call",
        "user",
        "tool_call",
        "user",
        "assistant",
    ]
    calls = [json.loads(m.content) for m in row.messages if m.role == "tool_call"]
    assert calls[:3] == [
        {"name": "grep", "arguments": {"pattern": "add_item"}},
        {"name": "glob", "arguments": {"pattern": "shop/*.py"}},
        {"name": "read", "arguments": {"path": "shop/nope.py"}},
    ]
    assert row.messages[2].content == "Looking at the cart."
    assert row.messages[-1].content == '{"files": ["shop/cart.py"]}'
    assert json.loads(row.tools) == openai_tools()
    assert swift_encodes(row.model_dump()["messages"])


def swift_encodes(messages: list[dict[str, Any]]) -> bool:
    """Whether ms-swift 4.6's own template backend can pair these messages, as its source reads
    (swift/template/base.py: `_preprocess_tool_call` joins consecutive tool_call messages into
    one assistant turn, `_swift_prepare_inputs` joins an assistant turn with the tool results
    after it, and assistant+assistant and user+user; `_swift_encode` then takes (query,
    response) pairs and asserts query in {user, tool} and response == assistant)."""
    roles = [m["role"] for m in messages if m["role"] != "system"]
    roles = ["assistant" if r == "tool_call" else "tool" if r == "tool_response" else r
             for r in roles]  # fmt: skip
    merged: list[str] = []
    for r in roles:
        if merged and (merged[-1], r) in {("assistant", "assistant"), ("user", "user")}:
            continue
        if merged and merged[-1] in ("tool", "tool_merged") and r == "tool":
            continue
        if merged and merged[-1] == "assistant" and r == "tool":
            merged.append("tool_merged")  # folded into the assistant's turn as its follow-up
            continue
        merged.append(r)
    queries = [r if r != "tool_merged" else "tool" for r in merged[::2]]
    return all(q in ("user", "tool") for q in queries) and all(
        r == "assistant" for r in merged[1::2]
    )


def follow_ups(messages: list[ChatMessage]) -> list[list[ChatMessage]]:
    """What follows each assistant reply, up to the next one (or the end)."""
    groups: list[list[ChatMessage]] = []
    for m in messages:
        if m.role == "assistant":
            groups.append([])
        elif groups:
            groups[-1].append(m)
    return [g for g in groups if g]


def test_sft_tool_results_round_trip(world: World) -> None:
    rec = rollout(world, world.good()[0], good_steps())
    results = [m.content for m in rec.messages if m.role == "tool"]
    assert any("shop/nope.py" in (r or "") for r in results)  # the tool error is kept
    users = [m.content for m in rec.messages if m.role == "user"]
    kept = agent_messages(rec.messages, user_after_tools="keep")
    assert [m.content for m in kept if m.role == "tool_response"] == results
    assert [m.content for m in kept if m.role == "user"] == users
    # kept as they are, the reminders break ms-swift's pairing: why "chat" is the default
    assert not swift_encodes([m.model_dump() for m in kept])
    chat = agent_messages(rec.messages)
    assert swift_encodes([m.model_dump() for m in chat])
    assert "tool_response" not in {m.role for m in chat}
    # chat: what follows a reply is one user message, the results as the Qwen chat template
    # writes tool messages, each prompt after them a user turn of its own
    want = []
    for group in follow_ups(list(rec.messages)):
        tools = [m.content or "" for m in group if m.role == "tool"]
        prompts = [m.content or "" for m in group if m.role == "user"]
        text = "\n".join(f"<tool_response>\n{t}\n</tool_response>" for t in tools)
        want.append(CHATML_TURN_BREAK.join(([text] if tools else []) + prompts))
    assert [m.content for m in chat if m.role == "user"] == users[:1] + want
    assert len(want) == 3  # three turns of calls, each with its reminder or the answer demand
    assert all(w.count(CHATML_TURN_BREAK) == 1 for w in want)
    assert want[0].count("<tool_response>") == 3
    assert [m.content for m in chat if m.role == "user"][1:] == [
        (fold_follow_up([m.to_openai() for m in g]) or {})["content"]
        for g in follow_ups(list(rec.messages))
    ]


def test_what_follows_a_reply_folds_into_the_chat_templates_turns() -> None:
    folded = fold_follow_up(
        [
            {"role": "tool", "content": "R1"},
            {"role": "tool", "content": "R2"},
            {"role": "user", "content": "2 turns left."},
        ]
    )
    assert folded == {
        "role": "user",
        "content": "<tool_response>\nR1\n</tool_response>\n<tool_response>\nR2\n</tool_response>"
        "<|im_end|>\n<|im_start|>user\n2 turns left.",
    }
    two_prompts = [{"role": "user", "content": "A"}, {"role": "user", "content": "B"}]
    assert fold_follow_up(two_prompts, turn_break="|") == {"role": "user", "content": "A|B"}
    assert fold_follow_up([]) is None
    for bad in (
        [{"role": "user", "content": "A"}, {"role": "tool", "content": "R"}],
        [{"role": "system", "content": "S"}],
    ):
        with pytest.raises(ValueError, match="tool results, then user prompts"):
            fold_follow_up(bad)


def test_chat_mode_refuses_what_it_cannot_write() -> None:
    reply = ChatMessage(role="assistant", content=None, tool_calls=(call("glob", id="g"),))
    out_of_order = [
        ChatMessage(role="user", content="u"),
        reply,
        ChatMessage(role="user", content="reminder"),
        ChatMessage(role="tool", content="R", tool_call_id="g"),
        ChatMessage(role="assistant", content='{"files": []}'),
    ]
    with pytest.raises(ValueError, match="tool results, then user prompts"):
        agent_messages(out_of_order)
    assert [m.role for m in agent_messages(out_of_order, user_after_tools="keep")] == [
        "user",
        "tool_call",
        "user",
        "tool_response",
        "assistant",
    ]
    early = [ChatMessage(role="tool", content="R"), ChatMessage(role="assistant", content="x")]
    with pytest.raises(ValueError, match="before any assistant reply"):
        agent_messages(early)
    with pytest.raises(ValueError, match="chat or keep"):
        agent_messages(early, user_after_tools="fold")  # type: ignore[arg-type]
    # what follows the last reply is written too (an unanswered rollout's last results)
    tail = agent_messages([ChatMessage(role="user", content="u"), reply, out_of_order[3]])
    assert [(m.role, m.content) for m in tail][-1] == (
        "user",
        "<tool_response>\nR\n</tool_response>",
    )


def test_only_replies_that_led_somewhere_are_trained() -> None:
    msgs = [
        ChatMessage(role="system", content="s"),
        ChatMessage(role="user", content="u"),
        ChatMessage(role="assistant", content="thinking, no call"),
        ChatMessage(role="user", content="call a tool or answer"),
        ChatMessage(role="user", content="answer now"),
        ChatMessage(role="assistant", content="not json"),
        ChatMessage(role="user", content="rescue"),
        ChatMessage(role="assistant", content='{"files": ["a.py"]}'),
    ]
    out = agent_messages(msgs, loss_scale=0.75)
    assert [(m.role, m.loss, m.loss_scale) for m in out] == [
        ("system", None, None),
        ("user", None, None),
        ("assistant", False, None),
        ("user", None, None),
        ("assistant", False, None),
        ("user", None, None),
        ("assistant", None, 0.75),
    ]
    # two prompts after one reply: one user message, each prompt its own chat template turn
    assert out[3].content == f"call a tool or answer{CHATML_TURN_BREAK}answer now"
    assert swift_encodes([m.model_dump() for m in out])
    kept = agent_messages(msgs, user_after_tools="keep")
    assert [m.role for m in kept].count("user") == 4


# -------------------------------------------------------------------------------------- CLI


def test_cli_builds_grpo_and_sft_files(world: World, tmp_path: Path) -> None:
    instances = tmp_path / "i.jsonl"
    rows = [json.loads(i.model_dump_json()) for i in world.good()]
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{broken\n")
    out = tmp_path / "grpo"
    base = ["grpo", "-i", str(instances), "-o", str(out), "--cache", str(world.cache.root)]
    base += ["--source", world.cache.source]
    runner = CliRunner()
    res = runner.invoke(dataset_app, [*base, "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "6 would become rows, from 3 trees" in res.output
    assert not out.exists()
    res = runner.invoke(dataset_app, [*base, "--val-repo", "acme/extra"])
    assert res.exit_code == 0, res.output
    assert "skipped bad row" in res.output
    train = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines()]
    val = [json.loads(x) for x in (out / "val.jsonl").read_text().splitlines()]
    assert (len(train), [v["instance_id"] for v in val]) == (5, ["extra-1"])
    report = json.loads((out / "report.json").read_text())
    assert report["bad_rows"]
    assert report["train"] == 5
    assert report["val"] == 1

    rec = rollout(world, world.good()[0], good_steps())
    rollouts = tmp_path / "r.rollouts.jsonl"
    rollouts.write_text(rec.model_dump_json() + "\n" + "not json\n")
    sft_out = tmp_path / "sft" / "rows.jsonl"
    res = runner.invoke(
        dataset_app, ["sft", str(rollouts), "-i", str(instances), "-o", str(sft_out)]
    )
    assert res.exit_code == 0, res.output
    assert "kept 1" in res.output
    (line,) = sft_out.read_text().splitlines()
    assert json.loads(line)["weight"] == pytest.approx(1.0)
    assert_versioned_rows(SftRow, [json.loads(line)])
    assert_versioned_rows(GrpoRow, train + val)
    sft_report = json.loads((tmp_path / "sft" / "rows.report.json").read_text())
    assert sft_report["kept"] == 1
    assert len(sft_report["bad_rows"]) == 2
    res = runner.invoke(
        dataset_app,
        ["sft", str(rollouts), "-i", str(instances), "-o", str(sft_out), "--threshold", "2"],
    )
    assert res.exit_code == 1  # ran, kept nothing


def assert_versioned_rows(model: type[GrpoRow] | type[SftRow], rows: list[dict[str, Any]]) -> None:
    """Every written row says its schema_version; a row without one (written before it was
    added) still reads, a newer one is refused."""
    assert {r["schema_version"] for r in rows} == {ROW_SCHEMA_VERSION}
    old = {k: v for k, v in rows[0].items() if k != "schema_version"}
    assert model.model_validate(old) == model.model_validate(rows[0])
    with pytest.raises(ValueError, match="newer than this reader knows"):
        model.model_validate({**rows[0], "schema_version": ROW_SCHEMA_VERSION + 1})


def test_cli_bad_input_exits_2_before_any_work(world: World, tmp_path: Path) -> None:
    instances = tmp_path / "i.jsonl"
    instances.write_text(world.good()[0].model_dump_json() + "\n")
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    cache = ["--cache", str(tmp_path / "cache2")]
    runner = CliRunner()

    def grpo(*args: str) -> Any:
        return runner.invoke(dataset_app, ["grpo", *cache, *args])

    cases = [
        (grpo("-i", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "o")), "no such file"),
        (grpo("-i", str(tmp_path), "-o", str(tmp_path / "o")), "is a directory"),
        (grpo("-i", str(instances), "-o", str(a_file)), "not a folder"),
        (grpo("-i", str(instances), "-o", str(tmp_path / "o"), "--source", "/x"), "names no"),
        (grpo("-i", str(instances), "-o", str(tmp_path / "o"), "--val-fraction", "1"), "below 1"),
        (grpo("-i", str(instances), "-o", str(tmp_path / "o"), "--limit", "-1"), ""),
        (
            grpo("-i", str(instances), "-o", str(tmp_path / "o"), "--labels", str(a_file) + "x"),
            "no such file",
        ),
    ]
    (tmp_path / "r.jsonl").write_text("")

    def sft(*args: str, rollouts: Path = tmp_path / "r.jsonl") -> Any:
        return runner.invoke(dataset_app, ["sft", str(rollouts), "-i", str(instances), *args])

    o = str(tmp_path / "o.jsonl")
    cases += [
        (sft("-o", str(tmp_path)), "is a directory"),
        (sft("-o", str(a_file / "x.jsonl")), "is not a directory"),
        (sft("-o", o, "--reward", "v9"), "unknown reward"),
        (sft("-o", o, rollouts=tmp_path / "nope.jsonl"), "no such file"),
        (sft("-o", o, "--user-after-tools", "fold"), "chat or keep"),
        (sft("-o", o, "--threshold", "nan"), "finite"),
    ]
    for res, said in cases:
        assert res.exit_code == 2, res.output
        assert said in " ".join(res.output.split())
        assert "Traceback" not in res.output
    assert not (tmp_path / "o").exists()
    assert not (tmp_path / "o.jsonl").exists()
    assert not (tmp_path / "cache2" / "repos").exists()


# ------------------------------------------------------------------------- hostile rollouts

_DEEP = "[" * 100_000 + "]" * 100_000


def test_sft_counts_hostile_rollout_rows_and_drops_deep_arguments(
    world: World, tmp_path: Path
) -> None:
    instances = tmp_path / "i.jsonl"
    instances.write_text("".join(i.model_dump_json() + "\n" for i in world.good()))
    rec = rollout(world, world.good()[0], good_steps())
    deep = json.loads(rec.model_dump_json())
    calls = [m for m in deep["messages"] if m.get("tool_calls")]
    calls[0]["tool_calls"][0]["arguments"] = _DEEP  # a string holding JSON nested too deeply
    rollouts = tmp_path / "r.rollouts.jsonl"
    rollouts.write_bytes(
        _DEEP.encode()
        + b"\n"
        + rec.model_dump_json().replace('"turns":', '"reward_x": 1e999, "turns":', 1).encode()
        + b"\n"
        + b'{"instance_id": 1'
        + b"0" * 5000
        + b"}\n"
        + b'{"instance_id": "\xff"}\n'
        + json.dumps(deep).encode()
        + b"\n"
        + rec.model_dump_json().encode()
        + b"\n"
    )
    out = tmp_path / "sft.jsonl"
    res = CliRunner().invoke(
        dataset_app, ["sft", str(rollouts), "-i", str(instances), "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "kept 1" in res.output
    report = json.loads((tmp_path / "sft.report.json").read_text())
    assert [b.split(": ", 1)[0] for b in report["bad_rows"]] == [
        f"{rollouts}:{n}" for n in (1, 2, 3, 4)
    ]
    assert [d["detail"] for d in report["dropped"]] == ["message 3: arguments of grep are not JSON"]


def test_sft_on_a_corrupt_gzip_rollouts_file_exits_2_with_one_line(
    world: World, tmp_path: Path
) -> None:
    instances = tmp_path / "i.jsonl"
    instances.write_text(world.good()[0].model_dump_json() + "\n")
    rollouts = tmp_path / "r.rollouts.jsonl.gz"
    rollouts.write_bytes(gzip.compress(b'{"a": 1}\n' * 1000)[:40])
    res = CliRunner().invoke(
        dataset_app, ["sft", str(rollouts), "-i", str(instances), "-o", str(tmp_path / "o.jsonl")]
    )
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert f"{rollouts}: truncated gzip file" in " ".join(res.output.split())
