"""The ms-swift plugin, loaded the way `--external_plugins` loads it, driven by ms-swift's own
multi-turn loop (`swift.rollout.run_multi_turn`) with its own request and response objects.

Replies are scripted, so no model runs here; `test_swift_train.py` runs the real entry points.
Needs ms-swift: run through packages/codegrep-model/ci/swift-tier.sh.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

pytestmark = pytest.mark.train
pytest.importorskip(
    "swift.rollout",
    reason="needs ms-swift 4.6 (the training tier: packages/codegrep-model/ci/swift-tier.sh)",
)

import torch  # noqa: E402
from codegrep_model.prompts import PromptSet  # noqa: E402
from codegrep_model.train import (  # noqa: E402
    CHATML_TURN_BREAK,
    TEST_POLICIES,
    read_rollout_log,
    scheduler_with_test_policy,
    swift_plugin_path,
)
from swift.infer_engine.protocol import (  # noqa: E402
    ChatCompletionMessageToolCall,
    ChatCompletionResponse,
    ChatCompletionResponseChoice,
    ChatMessage,
    Function,
    RequestConfig,
    RolloutInferRequest,
    RolloutOutput,
    UsageInfo,
)
from swift.rewards import orms  # noqa: E402
from swift.rlhf_trainers.grpo_trainer import GRPOTrainer  # noqa: E402
from swift.rollout import multi_turns, run_multi_turn  # noqa: E402
from swift.trainers import TrainerFactory  # noqa: E402
from swift.utils import import_external_file  # noqa: E402

PROMPTS = PromptSet.load()


def block(name: str, arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


THREE = "\n".join(
    [
        block("grep", {"pattern": "def add_item"}),
        block("glob", {"pattern": "shop/*.py"}),
        block("read", {"path": "shop/cart.py"}),
    ]
)
TEN = "\n".join(block("grep", {"pattern": f"def {w}"}) for w in "abcdefghij")
MALFORMED = "<tool_call>\nnot json\n</tool_call>\n" + block("cat", {"path": "shop/cart.py"})
ANSWER = '{"files": ["shop/cart.py"]}'


@pytest.fixture(scope="module")
def plugin() -> ModuleType:
    module: ModuleType = import_external_file(str(swift_plugin_path()))
    return module


def request(row: dict[str, Any], uuid: str) -> RolloutInferRequest:
    data = {k: v for k, v in row.items() if k not in ("messages", "tools")}
    return RolloutInferRequest(
        messages=[dict(m) for m in row["messages"]],
        tools=json.loads(row["tools"]),
        data_dict=data,
        uuid=uuid,
    )


class Cut(str):
    """A scripted reply that stopped at the length limit (finish reason `length`)."""


def choice(reply: str | tuple[str, list[Any]]) -> ChatCompletionResponseChoice:
    content, tool_calls = (reply, None) if isinstance(reply, str) else reply
    return ChatCompletionResponseChoice(
        index=0,
        message=ChatMessage(role="assistant", content=str(content), tool_calls=tool_calls),
        finish_reason="length" if isinstance(reply, Cut) else "stop",
    )


def output(reply: str | tuple[str, list[Any]]) -> RolloutOutput:
    return RolloutOutput(
        response=ChatCompletionResponse(
            model="scripted", choices=[choice(reply)], usage=UsageInfo(0, 0, 0)
        )
    )


def drive(scheduler: Any, requests: list[RolloutInferRequest], script: dict[str, list[Any]]) -> Any:
    """ms-swift's colocate multi-turn loop, with scripted replies instead of a model."""
    turn = {r.uuid: 0 for r in requests}

    def rollout_fn(reqs: list[RolloutInferRequest], config: RequestConfig) -> list[RolloutOutput]:
        outs = []
        for r in reqs:
            turn[r.uuid] += 1
            outs.append(output(script[r.uuid][turn[r.uuid]]))
        return outs

    from swift.rollout import invoke_async_hook

    invoke_async_hook(scheduler.on_trajectory_start(requests))
    first = [output(script[r.uuid][0]) for r in requests]
    outs = run_multi_turn(
        requests, first, scheduler, rollout_fn, RequestConfig(), max_turns=scheduler.max_turns
    )
    return {r.uuid: o for r, o in zip(requests, outs, strict=True)}


def test_importing_the_plugin_registers_everything(plugin: ModuleType) -> None:
    for name in ("codegrep_v1", "codegrep_v2", "codegrep_v3", "colgrep_file_f1"):
        assert name in orms
    assert multi_turns["codegrep_tools"] is plugin.CodegrepToolsScheduler
    assert plugin.CodegrepToolsScheduler.test_policy is None  # the real one replaces nothing
    # TEST ONLY schedulers, chosen by name on the command line
    for policy in TEST_POLICIES:
        test_cls = multi_turns[scheduler_with_test_policy("codegrep_tools", policy)]
        assert issubclass(test_cls, plugin.CodegrepToolsScheduler)
        assert test_cls.test_policy == policy
    args = SimpleNamespace(rlhf_type="grpo")
    trainer_cls = TrainerFactory.get_cls(args, TrainerFactory.TRAINER_MAPPING)
    assert trainer_cls is plugin.CodegrepGRPOTrainer


def test_rollouts_through_ms_swifts_own_loop(plugin: ModuleType, sandbox: Any) -> None:
    scheduler = plugin.CodegrepToolsScheduler(max_turns=4)
    row = sandbox.rows()[0]
    parsed_only = (
        "",
        [
            ChatCompletionMessageToolCall(function=Function("glob", {"pattern": "shop/*.py"})),
            ChatCompletionMessageToolCall(function=Function("read", {"path": "README.md"})),
        ],
    )
    script = {
        "answers": [THREE, parsed_only, THREE, ANSWER],
        "wanders": [TEN, MALFORMED, "Not sure yet.", "I cannot tell."],
        "hasty": [ANSWER],
    }
    outs = drive(scheduler, [request(row, u) for u in script], script)

    answers = outs["answers"]
    assert answers.rollout_infos["tool_calls_per_turn"] == [3, 2, 3, 0]
    assert answers.rollout_infos["num_turns"] == 4
    assert answers.rollout_infos["answer_files"] == ["shop/cart.py"]
    roles = [m["role"] for m in answers.messages]
    assert roles == ["system", "user"] + ["assistant", "user"] * 3 + ["assistant"]
    first_results = answers.messages[3]["content"]
    assert first_results.startswith("<tool_response>\n")
    assert first_results.count("<tool_response>") == 3
    assert first_results.endswith(CHATML_TURN_BREAK + PROMPTS.reminder(turns_left=2))
    assert answers.messages[-2]["content"].endswith(CHATML_TURN_BREAK + PROMPTS.answer())

    wanders = outs["wanders"].rollout_infos
    assert wanders["tool_calls_per_turn"] == [8, 0, 0, 0]
    assert wanders["answer_files"] is None
    assert wanders["episode_status"] == "unanswered"
    refused = outs["wanders"].messages[3]["content"]
    assert refused.count("<tool_response>") == 10
    assert PROMPTS.too_many_calls(max_calls=8, index=10) in refused
    feedback = outs["wanders"].messages[5]["content"]
    assert "Malformed tool call" in feedback
    assert "Unknown tool 'cat'" in feedback

    hasty = outs["hasty"].rollout_infos
    assert (hasty["num_turns"], hasty["num_tool_calls"]) == (1, 0)

    v3 = orms["codegrep_v3"]()
    names = list(script)
    rewards = v3(
        [outs[u].messages[-1]["content"] for u in names],
        gold_files=[row["gold_files"]] * len(names),
        rollout_infos=[outs[u].rollout_infos for u in names],
        messages=[outs[u].messages for u in names],
    )
    assert rewards == [1.0, 0.0, 0.0]  # hasty: c̄ = 0, so v3's mask zeroes a right answer
    assert scheduler.environment.live == 0
    scheduler.environment.close()


def test_a_reply_cut_at_the_length_limit_ends_the_rollout(plugin: ModuleType, sandbox: Any) -> None:
    """ms-swift's loop ends a rollout whose reply stopped at --max_completion_length
    (`check_finished`), unless the scheduler's `done` says otherwise: the scheduler ends it
    too, so the cut call is not answered as malformed and the episode does not go on; the
    rollout's last choice keeps finish reason `length`, which `--overlong_filter` reads."""
    scheduler = plugin.CodegrepToolsScheduler(max_turns=4)
    row = sandbox.rows()[0]
    partial = Cut('<tool_call>\n{"name": "grep", "arguments": {"pattern": "def add')
    script = {"cut": [THREE, partial, THREE, ANSWER], "whole": [THREE, THREE, THREE, ANSWER]}
    outs = drive(scheduler, [request(row, u) for u in script], script)

    cut = outs["cut"]
    assert cut.rollout_infos["num_turns"] == 2
    assert cut.rollout_infos["tool_calls_per_turn"] == [3, 0]
    assert cut.rollout_infos["episode_status"] == "unanswered"
    assert cut.rollout_infos["answer_error"] == "no answer: the reply was cut at its length limit"
    assert cut.response.choices[0].finish_reason == "length"
    assert [m["role"] for m in cut.messages][-2:] == ["user", "assistant"]
    assert not any("Malformed tool call" in str(m["content"]) for m in cut.messages)
    assert outs["whole"].rollout_infos["num_turns"] == 4
    assert outs["whole"].rollout_infos["answer_files"] == ["shop/cart.py"]
    assert scheduler.environment.live == 0
    scheduler.environment.close()


def test_a_row_with_other_prompts_stops_training(plugin: ModuleType, sandbox: Any) -> None:
    scheduler = plugin.CodegrepToolsScheduler(max_turns=4)
    row = sandbox.rows()[0]
    row["messages"][0]["content"] = "You are a helpful assistant."
    from swift.rollout import invoke_async_hook

    with pytest.raises(ValueError, match="system message differs"):
        invoke_async_hook(scheduler.on_trajectory_start([request(row, "r")]))
    scheduler.environment.close()
    # the row's episode takes 4 assistant turns (2 exploring, 1 answering, 1 rescue): a trainer
    # cut at 2 would end every rollout before its answer, so the first request stops training
    short = plugin.CodegrepToolsScheduler(max_turns=2)
    with pytest.raises(ValueError, match="pass --max_turns 4"):
        invoke_async_hook(short.on_trajectory_start([request(sandbox.rows()[0], "s")]))
    short.environment.close()


def _bare_trainer(plugin: ModuleType, rollout_log: Path, step: int) -> Any:
    """The plugin's trainer without ms-swift's setup: what its advantage and sampling hooks
    read, for a v3 run at `step` (the main process, training) logging to `rollout_log`."""
    trainer = object.__new__(plugin.CodegrepGRPOTrainer)
    trainer.accelerator = SimpleNamespace(is_main_process=True)
    trainer.model = SimpleNamespace(training=True)
    trainer._metrics = {"train": defaultdict(list)}
    trainer.codegrep_zero_unanswered = False
    trainer.codegrep_reward = "codegrep_v3"
    trainer.codegrep_rollout_log = rollout_log
    trainer.reward_weights = torch.tensor([1.0])
    trainer.reward_func_names = ["codegrep_v3"]
    trainer.state = SimpleNamespace(global_step=step)
    return trainer


def test_dynamic_sampling_logs_the_rollouts_it_sets_aside(
    plugin: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DAPO resampling (ms-swift's `_dynamic_sampling`) draws new groups when a group has no
    reward variance; the ones it does not train on are logged beside the rollout log."""

    def batch(tag: str) -> list[Any]:
        info = {"num_turns": 2, "tool_calls_per_turn": [1, 0], "answer_files": ["a"]}
        # ms-swift gives every sample a request_id (`chatcmpl-<uuid4>`); the trainer matches by it
        return [
            SimpleNamespace(rollout_infos=info, extra={"instance_id": tag}, request_id=f"{tag}-{i}")
            for i in range(4)
        ]

    first, second, third = batch("first"), batch("second"), batch("third")
    resamples = iter([second, third])

    def keeps(keep: str) -> Any:
        def dynamic(self: Any, samples: list[Any], rewards: Any) -> Any:
            drawn = {"first": (samples, rewards)}
            for b in resamples:  # what ms-swift does: resample, score, keep a varied group
                drawn[b[0].extra["instance_id"]] = (b, self._compute_rewards_per_func(b))
            return drawn[keep]

        return dynamic

    trainer = _bare_trainer(plugin, tmp_path / "codegrep_rollouts.jsonl", step=2)
    trainer.codegrep_set_aside_log = tmp_path / "codegrep_rollouts.set_aside.jsonl"
    scored = {"second": [0.0] * 4, "third": [1.0, 0.0, 0.0, 0.0]}
    monkeypatch.setattr(
        GRPOTrainer,
        "_compute_rewards_per_func",
        lambda self, b: torch.tensor([[r] for r in scored[b[0].extra["instance_id"]]]),
        raising=False,
    )
    monkeypatch.setattr(GRPOTrainer, "_dynamic_sampling", keeps("third"))
    kept, _ = trainer._dynamic_sampling(first, torch.zeros(4, 1))
    assert kept is third
    aside = read_rollout_log(trainer.codegrep_set_aside_log)
    assert [e.instance_id for e in aside] == ["first"] * 4 + ["second"] * 4
    assert {e.advantage for e in aside} == {0.0}
    assert {e.step for e in aside} == {3}
    assert not trainer.codegrep_rollout_log.exists()  # the trained batch is logged as before
    assert "_compute_rewards_per_func" not in vars(trainer)  # the method is back
    # every retry failed: ms-swift trains on the first batch, and the resamples are set aside
    trainer.codegrep_set_aside_log.unlink()
    resamples = iter([batch("second"), batch("third")])
    monkeypatch.setattr(GRPOTrainer, "_dynamic_sampling", keeps("first"))
    kept, _ = trainer._dynamic_sampling(first, torch.zeros(4, 1))
    assert kept is first
    aside = read_rollout_log(trainer.codegrep_set_aside_log)
    assert [e.instance_id for e in aside] == ["second"] * 4 + ["third"] * 4
    assert [e.reward for e in aside] == [0.0] * 4 + [1.0, 0.0, 0.0, 0.0]


def test_the_trainer_scales_group_advantages(
    plugin: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    group = torch.tensor([1.5, -0.5, -0.5, -0.5])
    monkeypatch.setattr(GRPOTrainer, "_compute_advantages", lambda self, s, r, b: group.clone())
    trainer = _bare_trainer(plugin, tmp_path / "rollouts.jsonl", step=7)
    infos = [
        {"num_turns": 4, "tool_calls_per_turn": [4, 4, 4, 0], "answer_files": ["a"]},
        {"num_turns": 4, "tool_calls_per_turn": [1, 1, 0, 0], "answer_files": ["b"]},
        {"num_turns": 4, "tool_calls_per_turn": [0, 0, 0, 0], "answer_files": None},
        {"num_turns": 4, "tool_calls_per_turn": [2, 2, 2, 0], "answer_files": None},
    ]
    samples = [SimpleNamespace(rollout_infos=i, extra={"instance_id": "x"}) for i in infos]
    rewards = torch.tensor([[1.0], [0.0], [0.0], [0.0]])

    scaled = trainer._compute_advantages(samples, rewards, [])

    # the unanswered rollout with 6 calls in 4 turns keeps -0.5 · sqrt(6/16): the paper's penalty
    factors = [math.sqrt(12 / 16), math.sqrt(2 / 16), 0.0, math.sqrt(6 / 16)]
    expected = [a * f for a, f in zip(group.tolist(), factors, strict=True)]
    assert scaled.tolist() == pytest.approx(expected)
    assert scaled.tolist()[3] < 0
    log = read_rollout_log(trainer.codegrep_rollout_log)
    assert [e.factor for e in log] == pytest.approx(factors)
    assert [e.degenerate for e in log][2:] == ["no tool call ran", "no answer"]
    assert {e.step for e in log} == {8}  # global_step 7: these rollouts train step 8
    metric = trainer._metrics["train"]["codegrep/advantage_scale"]
    assert metric == [pytest.approx(sum(factors) / 4)]
    # v1 carries its efficiency term in the reward: its advantages are not scaled
    trainer.codegrep_reward = "codegrep_v1"
    assert trainer._compute_advantages(samples, rewards, []).tolist() == group.tolist()


def test_a_lone_surrogate_in_a_rollout_cannot_break_the_rollout_log(
    plugin: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A driver's infos holding a lone surrogate (JSON's "\\udce9" in an answer's path or an
    error): the trainer still writes every line, with U+FFFD in its place."""
    monkeypatch.setattr(
        GRPOTrainer, "_compute_advantages", lambda self, s, r, b: torch.tensor([0.5, -0.5])
    )
    trainer = _bare_trainer(plugin, tmp_path / "rollouts.jsonl", step=0)
    infos = [
        {"num_turns": 2, "tool_calls_per_turn": [1, 0], "answer_files": ["r\udce9.py"]},
        {
            "num_turns": 2,
            "tool_calls_per_turn": [1, 0],
            "answer_files": None,
            "answer_error": "`files` holds \udce9",
        },
    ]
    samples = [SimpleNamespace(rollout_infos=i, extra={"instance_id": "x\udce9"}) for i in infos]
    trainer._compute_advantages(samples, torch.tensor([[1.0], [0.0]]), [])
    log = read_rollout_log(trainer.codegrep_rollout_log)
    assert log[0].answer_files == ("r\ufffd.py",)
    assert log[1].answer_error == "`files` holds \ufffd"
    assert {e.instance_id for e in log} == {"x\ufffd"}
