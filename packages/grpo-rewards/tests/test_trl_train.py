"""TRL's real GRPOTrainer runs with our reward and the advantage-layer efficiency scale.

Training tier (`-m train`): needs trl, torch, transformers, tokenizers and datasets, e.g.
`pip install torch==2.13.0 trl==1.16.0` in a separate environment (they are kept out of the
workspace lock). The model is a tiny random Qwen3 built from a config here, with a BPE tokenizer
trained offline on a few strings: no hub access.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from grpo_rewards import scale_advantages_for
from grpo_rewards.errors import MissingRolloutStatsWarning
from grpo_rewards.trl_reward import TRLReward

NEEDED = ("trl", "torch", "transformers", "tokenizers", "datasets")
MISSING = [m for m in NEEDED if importlib.util.find_spec(m) is None]

pytestmark = [
    pytest.mark.train,
    pytest.mark.skipif(bool(MISSING), reason=f"training extra not installed: {MISSING}"),
]


def _tiny_qwen3(out: Path) -> Path:
    import trl
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
                "<think>", "</think>"]  # fmt: skip
    corpus = ['{"files": ["a.py", "b.py"]}', "grep glob read file path", "user assistant"] * 50
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=specials[1:],
    )
    hf_tok.chat_template = (
        Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja"
    ).read_text()
    hf_tok.save_pretrained(out)
    cfg = Qwen3Config(
        vocab_size=len(hf_tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=512,
        eos_token_id=hf_tok.eos_token_id,
        pad_token_id=hf_tok.pad_token_id,
        tie_word_embeddings=True,
    )
    Qwen3ForCausalLM(cfg).save_pretrained(out)
    return out


def test_grpo_trainer_runs_with_codegrep_reward(tmp_path: Path) -> None:
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    model_dir = _tiny_qwen3(tmp_path / "tiny-qwen3")
    seen: list[dict[str, Any]] = []
    inner = TRLReward("codegrep_v3")

    def codegrep_v3(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[Any]:
        out = inner(prompts, completions, **kwargs)
        seen.append({"n": len(completions), "gold": kwargs["gold_files"], "out": out})
        return out

    scales: list[float] = []

    class EfficiencyGRPOTrainer(GRPOTrainer):  # type: ignore[misc]
        def _generate_and_score_completions(self, inputs: Any) -> Any:
            out = super()._generate_and_score_completions(inputs)
            # no tools in this run: every rollout has c̄ = 0, so the scale is 0 everywhere
            n = out["advantages"].shape[0]
            factors = scale_advantages_for("codegrep_v3", [1.0] * n, [0.0] * n)
            scales.extend(factors)
            out["advantages"] = out["advantages"] * torch.tensor(
                factors, dtype=out["advantages"].dtype, device=out["advantages"].device
            )
            return out

    ds = Dataset.from_list(
        [
            {"prompt": [{"role": "user", "content": f"bug {i}"}], "gold_files": ["a.py"]}
            for i in range(8)
        ]
    )
    cfg = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        bf16=False,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=16,
        max_steps=2,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        beta=0.0,
    )
    trainer = EfficiencyGRPOTrainer(
        model=str(model_dir), reward_funcs=[codegrep_v3], args=cfg, train_dataset=ds
    )
    # v3 from plain TRL without turn/call columns: c̄ is unknown, and the reward says so once
    with pytest.warns(MissingRolloutStatsWarning, match="fbeta_file"):
        trainer.train()
    assert trainer.state.global_step == 2
    assert seen
    assert all(call["gold"] == [["a.py"]] * call["n"] for call in seen)
    # a random model writes no JSON answer and calls no tool: every reward is a float 0.0
    assert all(r == 0.0 for call in seen for r in call["out"])
    assert scales
    assert all(s == 0.0 for s in scales)
    logged = {k for entry in trainer.state.log_history for k in entry}
    assert "rewards/codegrep_v3/mean" in logged
