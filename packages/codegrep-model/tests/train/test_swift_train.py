"""`swift sft` then `swift rlhf --rlhf_type grpo` through ms-swift's real entry points, on CPU.

A tiny Qwen3 with random weights and a tokenizer trained here (no hub access), LoRA, SFT rows
from LexicalPolicy rollouts and GRPO rows for four issues about a real git repository (both from
`codegrep_model.datasets`, as `codegrep-model dataset sft|grpo` makes them), and our plugin
(the `codegrep_tools` scheduler, the `codegrep_v3` reward, the advantage scale). A random model
makes no tool calls, so the TEST-ONLY scheduler `codegrep_tools_test_lexical_alternate` replaces
the replies of every other rollout of an instance with `LexicalPolicy`'s: those make real calls
on the repository, the others keep the model's text. The assertions read the per-rollout log
the trainer writes.

Set `CODEGREP_SWIFT_TIER_SUMMARY` to a path to get the figures as JSON (the tier prints them).
Needs ms-swift: run through packages/codegrep-model/ci/swift-tier.sh.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.train, pytest.mark.slow]
pytest.importorskip(
    "swift.rollout",
    reason="needs ms-swift 4.6 (the training tier: packages/codegrep-model/ci/swift-tier.sh)",
)

from codegrep_model import run_rollout  # noqa: E402
from codegrep_model.datasets import TRAINING_CONFIG, sft_rows  # noqa: E402
from codegrep_model.policies.lexical import LexicalPolicy  # noqa: E402
from codegrep_model.train import (  # noqa: E402
    ROLLOUT_LOG_ENV,
    read_rollout_log,
    scheduler_with_test_policy,
    swift_plugin_path,
)
from worktree_sandbox import BareRepoCache, TreePool  # noqa: E402

SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
]
GRPO_STEPS = 2
GENERATIONS = 4


def tiny_qwen3(out: Path, corpus: list[str]) -> Path:
    """A 2-layer Qwen3 with random weights and a byte-level BPE trained on `corpus`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer)
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIALS[1:],
    )
    hf.save_pretrained(out)
    config = Qwen3Config(
        vocab_size=len(hf),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=32768,
        eos_token_id=hf.eos_token_id,
        pad_token_id=hf.pad_token_id,
        tie_word_embeddings=True,
    )
    Qwen3ForCausalLM(config).save_pretrained(out)
    return out


def swift(*args: str, env: dict[str, str], cwd: Path, log: Path, timeout: int) -> float:
    """Run the `swift` CLI of this interpreter; its wall time. Fails with the log's tail."""
    exe = Path(sys.executable).parent / "swift"
    t0 = time.perf_counter()
    with log.open("w") as fh:
        proc = subprocess.run(
            [str(exe), *args],
            cwd=cwd,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
        pytest.fail(f"swift {args[0]} exited {proc.returncode} after {wall:.0f} s:\n{tail}")
    return wall


COMMON = [
    "--model_type", "qwen3", "--template", "qwen3",
    "--use_hf", "true", "--check_model", "false",  # no hub: ModelScope's freshness check retries
    "--tuner_type", "lora", "--torch_dtype", "float32",
    "--split_dataset_ratio", "0", "--report_to", "none", "--logging_steps", "1",
    "--gradient_checkpointing", "false", "--dataloader_num_workers", "0",
    "--max_length", "16384",
]  # fmt: skip


async def sft_dataset(sandbox: Any) -> list[dict[str, Any]]:
    """Agent-format SFT rows (`codegrep_model.datasets.sft_rows`) from LexicalPolicy rollouts."""
    records = []
    async with (
        TreePool(BareRepoCache(sandbox.cache_dir, sandbox.source), materialize="never") as pool,
        pool.open(sandbox.repo, sandbox.commit, folders=False) as tree,
    ):
        for i in range(len(sandbox.issues)):
            record = await run_rollout(
                LexicalPolicy(), tree, sandbox.instance(i), config=TRAINING_CONFIG
            )
            records.append(record)
    instances = [sandbox.instance(i) for i in range(len(sandbox.issues))]
    dataset = sft_rows(records, instances)
    assert len(dataset.rows) == len(records), dataset.report
    return [r.model_dump(mode="json", exclude_none=True) for r in dataset.rows]


async def test_sft_then_grpo_through_the_real_entry_points(sandbox: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    grpo = sandbox.rows()
    sft = await sft_dataset(sandbox)
    for name, rows in (("grpo.jsonl", grpo), ("sft.jsonl", sft)):
        (work / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    corpus = [json.dumps(r) for r in grpo + sft] + list(sandbox.files_text)
    model = tiny_qwen3(work / "tiny-qwen3", corpus * 3)

    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf"),
        "MODELSCOPE_CACHE": str(tmp_path / "modelscope"),
        "TOKENIZERS_PARALLELISM": "false",
        "CUDA_VISIBLE_DEVICES": "",
    }
    sft_wall = swift(
        "sft", "--model", str(model), *COMMON,
        "--dataset", "sft.jsonl", "--max_steps", "3", "--save_steps", "3",
        "--save_only_model", "true", "--per_device_train_batch_size", "1",
        "--gradient_accumulation_steps", "1", "--output_dir", "sft", "--add_version", "false",
        env=env, cwd=work, log=work / "sft.log", timeout=420,
    )  # fmt: skip
    adapter = work / "sft" / "checkpoint-3"
    assert (adapter / "adapter_model.safetensors").is_file()

    log = work / "rollouts.jsonl"
    grpo_env = {**env, ROLLOUT_LOG_ENV: str(log)}
    grpo_wall = swift(
        "rlhf", "--rlhf_type", "grpo", "--model", str(model), "--adapters", str(adapter),
        *COMMON,
        "--external_plugins", str(swift_plugin_path()),
        "--multi_turn_scheduler", scheduler_with_test_policy("codegrep_tools", "lexical-alternate"),
        "--max_turns", "4", "--reward_funcs", "codegrep_v3", "--use_vllm", "false",
        "--dataset", "grpo.jsonl", "--num_generations", str(GENERATIONS),
        "--per_device_train_batch_size", str(GENERATIONS), "--gradient_accumulation_steps", "1",
        "--max_completion_length", "16", "--temperature", "1.0", "--beta", "0.0",
        "--max_steps", str(GRPO_STEPS), "--save_strategy", "no", "--output_dir", "grpo",
        env=grpo_env, cwd=work, log=work / "grpo.log", timeout=480,
    )  # fmt: skip

    assert "TEST ONLY" in (work / "grpo.log").read_text(errors="replace")
    entries = read_rollout_log(log)
    assert len(entries) == GRPO_STEPS * GENERATIONS
    assert sorted({e.step for e in entries}) == list(range(1, GRPO_STEPS + 1))
    rewards = [e.reward for e in entries]
    assert all(r is not None and 0.0 <= r <= 1.0 for r in rewards)
    assert any(r is not None and r > 0 for r in rewards)
    lexical = [e for e in entries if e.test_policy == "lexical"]
    own = [e for e in entries if e.test_policy == "model"]
    assert lexical
    assert own
    for e in entries:
        assert len(e.tool_calls_per_turn) == e.num_turns <= 4
        assert all(0 <= c <= 8 for c in e.tool_calls_per_turn)
        cbar = sum(e.tool_calls_per_turn) / e.num_turns
        assert e.cbar == pytest.approx(cbar)
        # v3 scales every rollout by s(c̄), an unanswered one included; s(0) = 0
        expected = math.sqrt(min(cbar / 4, 1.0))
        assert e.factor == pytest.approx(expected)
        assert e.advantage == pytest.approx(e.advantage_group * e.factor)
    for e in lexical:
        assert any(c > 0 for c in e.tool_calls_per_turn)
        assert e.factor > 0
        assert e.answer_files
    assert all(e.factor == 0.0 and e.degenerate for e in own if e.num_tool_calls == 0)
    # each group mixes the two kinds of rollout, so its advantages are not all zero
    assert any(abs(e.advantage_group) > 0 for e in entries)

    summary_path = os.environ.get("CODEGREP_SWIFT_TIER_SUMMARY")
    if summary_path:
        summary = {
            "sft_wall_s": round(sft_wall, 1),
            "sft_steps": 3,
            "grpo_wall_s": round(grpo_wall, 1),
            "grpo_steps": GRPO_STEPS,
            "rollouts": [
                {
                    "step": e.step,
                    "instance": e.instance_id,
                    "policy": e.test_policy,
                    "reward": e.reward,
                    "calls_per_turn": list(e.tool_calls_per_turn),
                    "cbar": round(e.cbar, 3),
                    "factor": round(e.factor, 4),
                    "advantage_group": round(e.advantage_group, 4),
                    "advantage": round(e.advantage, 4),
                    "degenerate": e.degenerate,
                }
                for e in entries
            ],
        }
        Path(summary_path).write_text(json.dumps(summary, indent=1))
