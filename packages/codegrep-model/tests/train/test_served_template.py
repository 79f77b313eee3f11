"""Evaluation shows a trained Qwen3 the conversation training showed it.

An episode runs through `OpenAIPolicy` against a scripted server that answers as vLLM's hermes
tool parser does; every request it sends is rendered with `qwen3_chat_template_path()` the way
`vllm serve --chat-template FILE --default-chat-template-kwargs '{"enable_thinking": false}'`
renders it (transformers' `apply_chat_template`, the request's tools, a generation prompt).
Each rendering must be the start of ms-swift's training encoding of the same rollout (`--template
qwen3`, the hermes agent template, the row's tools), token for token, and end where that turn's
reply begins. Qwen3's own template (`trl.chat_template_utils.qwen3_chat_template`, the copy the
pinned TRL ships) is not: it drops the empty think block ms-swift writes before every earlier
reply. A tokenizer with Qwen's special tokens is trained here; no model runs.

Needs ms-swift: run through packages/codegrep-model/ci/swift-tier.sh.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.train
pytest.importorskip(
    "swift.rollout",
    reason="needs ms-swift 4.6 (the training tier: packages/codegrep-model/ci/swift-tier.sh)",
)

import httpx  # noqa: E402
from codegrep_model import run_rollout  # noqa: E402
from codegrep_model.datasets import TRAINING_CONFIG  # noqa: E402
from codegrep_model.policies.local import training_messages  # noqa: E402
from codegrep_model.policies.served import OpenAIPolicy  # noqa: E402
from codegrep_model.tools import openai_tools  # noqa: E402
from codegrep_model.train import qwen3_chat_template_path  # noqa: E402
from swift import get_processor, get_template  # noqa: E402
from trl.chat_template_utils import qwen3_chat_template  # noqa: E402
from worktree_sandbox import DirectoryTree  # noqa: E402

from .test_swift_train import tiny_qwen3  # noqa: E402

# what vLLM's hermes parser returns for each reply: the calls parsed, or the text
REPLIES: list[dict[str, Any]] = [
    {
        "content": None,
        "tool_calls": [
            ("grep", {"pattern": "def add_item"}),
            ("glob", {"pattern": "shop/*.py"}),
            ("read", {"path": "shop/cart.py"}),
        ],
    },
    {"content": None, "tool_calls": [("read", {"path": "shop/pricing.py"})]},
    {"content": "Not sure yet.", "tool_calls": []},
    {"content": '{"files": ["shop/cart.py"]}', "tool_calls": []},
]


def completion(reply: dict[str, Any], index: int) -> dict[str, Any]:
    calls = [
        {
            "id": f"call_{index}_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
        }
        for i, (name, args) in enumerate(reply["tool_calls"])
    ]
    message = {"role": "assistant", "content": reply["content"], "tool_calls": calls}
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": {}}


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = ["def add_item shop cart grep glob read files <tool_call> </tool_call>"] * 20
    return tiny_qwen3(tmp_path_factory.mktemp("served") / "tiny", corpus)


def episode_requests(sandbox: Any) -> tuple[list[dict[str, Any]], Any]:
    """The requests OpenAIPolicy sent over one episode, and the episode's record."""
    sent: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, json=completion(REPLIES[len(sent) - 1], len(sent)))

    async def go() -> Any:
        client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
        policy = OpenAIPolicy("http://vllm.test/v1", "codegrep", client=client)
        async with client, DirectoryTree(sandbox.root / "src" / "shop") as tree:
            return await run_rollout(policy, tree, sandbox.instance(0), config=TRAINING_CONFIG)

    record = asyncio.run(go())
    return sent, record


def as_vllm_passes_them(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as vLLM hands them to the chat template: a call's JSON arguments parsed into
    an object (`_postprocess_messages` in vLLM's chat utilities)."""
    out = json.loads(json.dumps(messages))
    for m in out:
        for call in m.get("tool_calls") or ():
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    return out


def test_served_prompts_are_the_training_encoding_turn_by_turn(sandbox: Any, model: Path) -> None:
    sent, record = episode_requests(sandbox)
    assert record.status == "answered"
    assert len(sent) == 4
    assert all(r["tools"] == openai_tools() for r in sent)  # the answer turn's too

    processor = get_processor(str(model), model_type="qwen3", use_hf=True)
    template = get_template(processor, template_type="qwen3", agent_template="hermes")
    template.set_mode("train")
    tok = template.tokenizer
    conversation = training_messages(record.messages)
    trained = list(
        template.encode({"messages": conversation, "tools": openai_tools()})["input_ids"]
    )
    trained_text = tok.decode(trained)
    replies = [m["content"] for m in conversation if m["role"] == "assistant"]
    assert len(replies) == 4

    ours = qwen3_chat_template_path().read_text(encoding="utf-8")
    for stock in (False, True):
        for turn, request in enumerate(sent):
            prompt = tok.apply_chat_template(
                as_vllm_passes_them(request["messages"]),
                tools=request["tools"],
                chat_template=qwen3_chat_template if stock else ours,
                add_generation_prompt=True,
                enable_thinking=False,
                tokenize=False,
            )
            ids = tok(prompt, add_special_tokens=False)["input_ids"]
            same = ids == trained[: len(ids)] and trained_text[len(prompt) :].startswith(
                replies[turn]
            )
            if not stock:
                assert same, f"turn {turn + 1}: {prompt[-300:]!r}"
            elif turn == 0:
                assert same  # no earlier reply yet: the two templates agree
            else:
                # Qwen3's own template writes the earlier replies without their think block
                assert not same
                assert trained_text.count("<think>\n\n</think>\n\n") == 4
                assert prompt.count("<think>\n\n</think>\n\n") == 1
