"""The pure parts of training: replies, the follow-up fold, the rows from
`codegrep_model.datasets`, the advantage scale and the per-rollout log."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import codegrep_model.datasets as datasets
import grpo_rewards
import pytest
from codegrep_model import Episode, PolicyReply, RolloutRecord, run_rollout
from codegrep_model.datasets import TRAINING_CONFIG, sft_rows
from codegrep_model.policies.lexical import LexicalPolicy
from codegrep_model.policies.scripted import call
from codegrep_model.tools import openai_tools
from codegrep_model.train import (
    CHATML_TURN_BREAK,
    REQUIRED_COLUMNS,
    TEST_POLICIES,
    RolloutEnvironment,
    RolloutLogEntry,
    TrainingSetupError,
    advantage_scale,
    efficiency_reward,
    fold_follow_up,
    hermes_text,
    named_test_override,
    policy_reply,
    read_rollout_log,
    scheduler_with_test_policy,
)
from worktree_sandbox import BareRepoCache, TreePool

# ------------------------------------------------------------------------------------ replies


def test_blocks_in_the_text_win_over_parsed_calls() -> None:
    text = 'Looking.\n<tool_call>\n{"name": "grep", "arguments": {"pattern": "x"}}\n</tool_call>'
    parsed = [SimpleNamespace(id="p", function=SimpleNamespace(name="glob", arguments="{}"))]
    reply = policy_reply(text, parsed, id_prefix="r")
    assert reply.content == "Looking."
    assert [(c.id, c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("r_0", "grep", {"pattern": "x"})
    ]


def test_parsed_calls_of_every_shape() -> None:
    parsed = [
        SimpleNamespace(
            id="a", function=SimpleNamespace(name=" glob ", arguments='{"pattern":"*"}')
        ),
        {"function": {"name": "read", "arguments": {"path": "a.py"}}},
        {"name": "grep", "arguments": {"pattern": "y"}},
    ]
    reply = policy_reply([{"type": "text", "text": "hi"}], parsed, id_prefix="t")
    assert reply.content == "hi"
    got = [(c.id, c.name, json.loads(c.arguments)) for c in reply.tool_calls]
    assert got == [
        ("a", "glob", {"pattern": "*"}),
        ("t_1", "read", {"path": "a.py"}),
        ("t_2", "grep", {"pattern": "y"}),
    ]


def test_hermes_text_reads_back_as_the_same_calls() -> None:
    reply = PolicyReply(content=None, tool_calls=(call("grep", {"pattern": "é"}), call("glob")))
    text = hermes_text(reply)
    assert text.count("<tool_call>") == 2
    assert "é" in text
    back = policy_reply(text)
    assert [(c.name, json.loads(c.arguments)) for c in back.tool_calls] == [
        ("grep", {"pattern": "é"}),
        ("glob", {}),
    ]
    assert hermes_text(PolicyReply(content='{"files": []}')) == '{"files": []}'


def test_the_test_only_override_is_chosen_by_name_never_by_the_process_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert set(TEST_POLICIES) == {"lexical", "lexical-alternate"}
    plain = named_test_override("lexical")
    assert plain.policy.name == "lexical"
    assert not plain.alternate
    assert named_test_override("lexical-alternate").alternate
    with pytest.raises(TrainingSetupError, match="test-only policies"):
        named_test_override("gpt")
    # the variable that used to choose one is not read any more
    monkeypatch.setenv("CODEGREP_TEST_POLICY", "lexical")
    assert RolloutEnvironment().test_override is None
    assert scheduler_with_test_policy("codegrep_tools", "lexical-alternate") == (
        "codegrep_tools_test_lexical_alternate"
    )


# ------------------------------------------------------------------------------------ the fold


def test_tool_results_and_prompts_fold_into_the_chat_templates_turns() -> None:
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
    with pytest.raises(ValueError, match="tool results, then user prompts"):
        fold_follow_up([{"role": "user", "content": "A"}, {"role": "tool", "content": "R"}])
    # one function for the scheduler and the SFT rows (codegrep_model.datasets defines it)
    assert fold_follow_up is datasets.fold_follow_up
    assert CHATML_TURN_BREAK == datasets.CHATML_TURN_BREAK == "<|im_end|>\n<|im_start|>user\n"


# ------------------------------------------------------------------------------------ rows


def test_the_datasets_grpo_rows_are_what_the_hooks_check(sandbox: Any) -> None:
    row = sandbox.rows()[1]
    inst = sandbox.instance(1)
    episode = Episode.start(inst, sandbox.tree_files, policy="x", config=TRAINING_CONFIG)
    assert row["messages"] == [m.to_openai() for m in episode.messages]
    assert json.loads(row["tools"]) == openai_tools()
    assert all(row[c] for c in REQUIRED_COLUMNS)
    assert row["gold_files"] == ["shop/pricing.py"]


async def lexical_record(sandbox: Any) -> RolloutRecord:
    async with (
        TreePool(BareRepoCache(sandbox.cache_dir, sandbox.source), materialize="never") as pool,
        pool.open(sandbox.repo, sandbox.commit, folders=False) as tree,
    ):
        return await run_rollout(LexicalPolicy(), tree, sandbox.instance(0), config=TRAINING_CONFIG)


async def test_sft_rows_fold_what_follows_a_reply_as_the_scheduler_does(sandbox: Any) -> None:
    record = await lexical_record(sandbox)
    rows = sft_rows([record], [sandbox.instance(0)], threshold=0.0).rows
    assert len(rows) == 1
    sft = [m.model_dump() for m in rows[0].messages]
    assert "tool_response" not in {m["role"] for m in sft}
    # what the scheduler appends after each reply, from the episode's own messages
    expected, pending = [], []
    for m in record.messages[2:]:
        if m.role == "assistant":
            if pending:
                expected.append(fold_follow_up(pending))
            pending = []
        else:
            pending.append({"role": m.role, "content": m.content or ""})
    got = [{"role": m["role"], "content": m["content"]} for m in sft[2:] if m["role"] == "user"]
    assert got == expected


# ------------------------------------------------------------------------------------ scale


@pytest.mark.parametrize(
    ("per_turn", "factor"),
    [([4, 4, 4, 0], math.sqrt(0.75)), ([8, 8, 8, 0], 1.0), ([1, 0, 0, 0], math.sqrt(1 / 16))],
)
def test_the_scale_is_sqrt_of_cbar_over_4_capped_at_1(per_turn: list[int], factor: float) -> None:
    info = {"num_turns": len(per_turn), "tool_calls_per_turn": per_turn, "answer_files": ["a"]}
    scale = advantage_scale(info)
    assert scale.cbar == sum(per_turn) / len(per_turn)
    assert scale.factor == pytest.approx(factor)
    assert scale.degenerate is None


def test_no_call_gets_no_advantage_and_no_answer_keeps_the_formula_s() -> None:
    no_calls = advantage_scale({"num_turns": 4, "tool_calls_per_turn": [0, 0, 0, 0]})
    assert (no_calls.factor, no_calls.degenerate) == (0.0, "no tool call ran")
    unanswered = {
        "num_turns": 4,
        "tool_calls_per_turn": [3, 3, 3, 0],
        "answer_files": None,
        "answer_error": "no JSON object in the answer",
    }
    # c̄ = 9/4: s = sqrt(9/16) = 0.75, so reward 0 below the group mean trains as -|A| · 0.75
    scale = advantage_scale(unanswered)
    assert scale.factor == pytest.approx(0.75)
    assert scale.degenerate == "no answer: no JSON object in the answer"
    assert advantage_scale(unanswered, zero_unanswered=True).factor == 0.0


def test_only_rewards_that_declare_the_advantage_layer_are_scaled() -> None:
    info = {"num_turns": 4, "tool_calls_per_turn": [1, 1, 0, 0], "answer_files": ["a"]}
    # c̄ = 2/4 = 0.5: s = sqrt(0.5/4) = sqrt(1/8)
    for reward in ("codegrep_v2", "codegrep_v3"):
        assert advantage_scale(info, reward=reward).factor == pytest.approx(math.sqrt(1 / 8))
    for reward in ("codegrep_v1", "fbeta_file", "colgrep_file_f1"):
        assert advantage_scale(info, reward=reward).factor == 1.0


def test_the_trainer_reward_comes_from_the_reward_functions_spec() -> None:
    v1 = SimpleNamespace(spec=grpo_rewards.reward_spec("codegrep_v1"))
    assert efficiency_reward([v1, object()], ["my_v1", "format"]) == "codegrep_v1"
    assert efficiency_reward([object()], ["codegrep_v2"]) == "codegrep_v2"
    assert efficiency_reward([object()], ["format"]) is None
    with pytest.raises(TrainingSetupError, match="disagree"):
        efficiency_reward([v1, object()], ["my_v1", "codegrep_v3"])


def test_a_rollout_without_counts_is_a_setup_error() -> None:
    with pytest.raises(TrainingSetupError, match="codegrep_tools"):
        advantage_scale({"num_turns": 2})


def test_the_rollout_log_reads_back(tmp_path: Path) -> None:
    info = {
        "num_turns": 3,
        "tool_calls_per_turn": [2, 2, 0],
        "num_tool_calls": 4,
        "answer_files": ["a.py"],
        "answer_error": None,
        "episode_status": "answered",
        "test_policy": "lexical",
    }
    scale = advantage_scale(info)
    entry = RolloutLogEntry.of(
        step=1,
        index=0,
        info=info,
        scale=scale,
        reward=0.8,
        rewards={"codegrep_v3": 0.8, "other": float("nan")},
        advantage_group=1.5,
        instance_id="i",
    )
    assert entry.advantage == pytest.approx(1.5 * math.sqrt(4 / 3 / 4))
    assert entry.rewards == {"codegrep_v3": 0.8, "other": None}
    path = tmp_path / "log.jsonl"
    path.write_text(entry.to_json_line() + entry.to_json_line())
    assert read_rollout_log(path) == [entry, entry]
    assert read_rollout_log(path)[0].tool_calls_per_turn == (2, 2, 0)
