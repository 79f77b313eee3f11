"""The SFT rows through ms-swift's own template encoder (`--template qwen3`, the hermes agent
template): the chat-mode rows of `codegrep_model.datasets.sft_rows` encode, in the tokens the
GRPO scheduler's conversations have, and the kept (`tool_response`) rows do not.

A tokenizer with Qwen's special tokens is trained here (no hub access); no model runs.
Needs ms-swift: run through packages/codegrep-model/ci/swift-tier.sh.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, Literal

import pytest

pytestmark = pytest.mark.train
pytest.importorskip(
    "swift.rollout",
    reason="needs ms-swift 4.6 (the training tier: packages/codegrep-model/ci/swift-tier.sh)",
)

from codegrep_model import run_rollout  # noqa: E402
from codegrep_model.budget import TokenizerCounter  # noqa: E402
from codegrep_model.datasets import CHATML_TURN_BREAK, TRAINING_CONFIG, sft_rows  # noqa: E402
from codegrep_model.policies.lexical import LexicalPolicy  # noqa: E402
from codegrep_model.train import TrainingSetupError, swift_plugin_path  # noqa: E402
from swift import get_processor, get_template  # noqa: E402
from swift.infer_engine.protocol import RolloutInferRequest  # noqa: E402
from swift.rollout import invoke_async_hook  # noqa: E402
from swift.utils import import_external_file  # noqa: E402
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


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """ms-swift's qwen3 template (hermes agent template) on a byte-level tokenizer trained here
    with Qwen's special tokens; train mode, so labels come back."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config

    out: Path = tmp_path_factory.mktemp("tokenizer")
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=500,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(["def add_item shop cart grep glob read files"] * 20, trainer)
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIALS[1:],
    )
    hf.save_pretrained(out)
    Qwen3Config(
        vocab_size=len(hf),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        eos_token_id=hf.eos_token_id,
        pad_token_id=hf.pad_token_id,
    ).save_pretrained(out)
    processor = get_processor(str(out), model_type="qwen3", use_hf=True)
    tmpl = get_template(processor, template_type="qwen3", agent_template="hermes")
    tmpl.set_mode("train")
    return tmpl


async def lexical_rows(sandbox: Any, mode: Literal["chat", "keep"]) -> list[dict[str, Any]]:
    async with (
        TreePool(BareRepoCache(sandbox.cache_dir, sandbox.source), materialize="never") as pool,
        pool.open(sandbox.repo, sandbox.commit, folders=False) as tree,
    ):
        record = await run_rollout(
            LexicalPolicy(), tree, sandbox.instance(0), config=TRAINING_CONFIG
        )
    rows = sft_rows([record], [sandbox.instance(0)], threshold=0.0, user_after_tools=mode)
    assert len(rows.rows) == 1, rows.report
    return [r.model_dump(mode="json", exclude_none=True) for r in rows.rows]


def trained_spans(ids: list[int], labels: list[int]) -> list[list[int]]:
    spans: list[list[int]] = []
    run: list[int] = []
    for i, label in zip(ids, labels, strict=True):
        if label != -100:
            run.append(i)
        elif run:
            spans.append(run)
            run = []
    return spans + ([run] if run else [])


async def test_chat_mode_sft_rows_encode_as_the_chat_template_writes(
    sandbox: Any, template: Any
) -> None:
    (row,) = await lexical_rows(sandbox, "chat")
    msgs = row["messages"]
    assert "tool_response" not in {m["role"] for m in msgs}
    calls = [m for m in msgs if m["role"] == "tool_call"]
    assert calls
    reply = ("assistant", "tool_call")
    replies = [
        i for i, m in enumerate(msgs) if m["role"] in reply and msgs[i - 1]["role"] not in reply
    ]
    encoded = template.encode(row)
    tok = template.tokenizer
    ids, labels = list(encoded["input_ids"]), list(encoded["labels"])
    text = tok.decode(ids)
    # each reply is one trained assistant turn, its calls hermes `<tool_call>` blocks
    trained = [tok.decode(s) for s in trained_spans(ids, labels)]
    assert len(trained) == len(replies) >= 2
    assert all(t.endswith("<|im_end|>\n") for t in trained)
    assert sum(t.count("<tool_call>") for t in trained) == len(calls)
    for c in calls:
        body = json.dumps(json.loads(c["content"]), ensure_ascii=False)
        assert any(f"<tool_call>\n{body}\n</tool_call>" in t for t in trained)
    # what followed each reply is one user turn holding the results, then a turn per prompt,
    # with the chat template's own special tokens (not their characters spelled out)
    for m in msgs[2:]:
        if m["role"] == "user":
            assert f"<|im_start|>user\n{m['content']}<|im_end|>\n" in text
            assert m["content"].startswith("<tool_response>\n")
            assert CHATML_TURN_BREAK in m["content"]
            assert not any(m["content"] in t for t in trained)
    for special in ("<|im_start|>", "<|im_end|>", "<tool_response>", "<tool_call>"):
        assert ids.count(tok.convert_tokens_to_ids(special)) == text.count(special), special


async def test_kept_sft_rows_do_not_encode(sandbox: Any, template: Any) -> None:
    (row,) = await lexical_rows(sandbox, "keep")
    assert "tool_response" in {m["role"] for m in row["messages"]}
    with pytest.raises(AssertionError, match="response_role"):
        template.encode(row)


def test_the_budget_counts_the_tool_schemas_as_the_template_encodes_them(
    sandbox: Any, template: Any
) -> None:
    """The rows' `tools` column makes ms-swift's template write the schemas into the system
    message of every encoding of a rollout: the scheduler's budget counts them with that
    template and its tokenizer, to the token."""
    plugin: ModuleType = import_external_file(str(swift_plugin_path()))
    scheduler = plugin.CodegrepToolsScheduler(
        max_turns=4, template=template, tokenizer=template.tokenizer
    )
    row = sandbox.rows()[0]
    tools = json.loads(row["tools"])
    prompt = [dict(m) for m in row["messages"]]
    request = RolloutInferRequest(
        messages=[dict(m) for m in prompt],
        tools=tools,
        data_dict={k: v for k, v in row.items() if k not in ("messages", "tools")},
        uuid="b",
    )
    answer = '{"files": ["shop/cart.py"]}'
    try:
        invoke_async_hook(scheduler.on_trajectory_start([request]))
        out = invoke_async_hook(scheduler.environment.turn("b", answer, None, current_turn=1))
    finally:
        scheduler.environment.close()
    counter = TokenizerCounter(template.tokenizer)
    texts = [m["content"] for m in prompt] + [answer]
    messages_only = sum(counter.count(t) + 8 for t in texts)
    template.set_mode("pt")
    try:
        with_tools = template.encode({"messages": prompt, "tools": tools})["input_ids"]
        without = template.encode({"messages": prompt})["input_ids"]
    finally:
        template.set_mode("train")
    schemas = len(with_tools) - len(without)
    assert schemas > 300  # some 2,100 characters of JSON schemas and instructions
    assert out.rollout_infos["rollout_tokens"] == messages_only + schemas


def test_a_malformed_follow_up_stops_training() -> None:
    plugin: ModuleType = import_external_file(str(swift_plugin_path()))
    scheduler = plugin.CodegrepToolsScheduler(max_turns=4)
    wrong = [{"role": "user", "content": "A"}, {"role": "tool", "content": "R"}]
    scheduler.environment.take_messages = lambda uuid: wrong
    request = SimpleNamespace(uuid="r", messages=[])
    with pytest.raises(TrainingSetupError, match="r: tool results, then user prompts"):
        scheduler.step(request, None, 1)
    assert request.messages == []
    scheduler.environment.close()
