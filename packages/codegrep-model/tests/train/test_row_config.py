"""A GRPO row may carry its episode's shape (`rollout_config`): the prompt is rendered with it,
and the training scheduler runs the rollout with it, so a CPU run with one tool turn trains on
the episode its rows describe. Anything else in the column is refused before a tree opens."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from codegrep_model.datasets import (
    TRAINING_CONFIG,
    config_from_row,
    grpo_rows,
    row_config_json,
)
from codegrep_model.prompts import PromptSet
from codegrep_model.train import RolloutEnvironment, SandboxHost, TrainingSetupError
from worktree_sandbox import BareRepoCache

PROMPTS = PromptSet.load()
ONE_TURN = config_from_row('{"exploration_turns": 1, "max_calls_per_turn": 2}')
GLOB = '<tool_call>\n{"name": "glob", "arguments": {"pattern": "**/cart.py"}}\n</tool_call>'


def _rows(sandbox: Any, config: Any) -> list[dict[str, Any]]:
    instances = [sandbox.instance(0)]
    cache = BareRepoCache(sandbox.cache_dir, sandbox.source)
    data = asyncio.run(grpo_rows(instances, cache, val_fraction=0.0, config=config))
    return [r.model_dump(mode="json") for r in data.train]


def test_the_column_is_empty_for_the_papers_episode_and_reads_back() -> None:
    assert row_config_json(TRAINING_CONFIG) == ""
    assert config_from_row("") is TRAINING_CONFIG
    assert config_from_row(None) is TRAINING_CONFIG
    text = row_config_json(ONE_TURN)
    assert json.loads(text) == {"exploration_turns": 1, "max_calls_per_turn": 2}
    assert config_from_row(text) == ONE_TURN
    assert ONE_TURN.strict  # the rest is TRAINING_CONFIG's
    assert ONE_TURN.rescue_attempts == 0


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("[1]", "not a JSON object"),
        ('{"strict": false}', "may set only"),
        ('{"exploration_turns": "1"}', "must be integers"),
        ('{"exploration_turns": true}', "must be integers"),
        ('{"max_calls_per_turn": 0}', "greater than or equal to 1"),
        ('{"exploration_turns": 1' + "]" * 3, "not JSON"),
        ("[" * 5000 + "]" * 5000, "not JSON"),
        ('{"max_issue_bytes": 1' + "0" * 5000 + "}", "not JSON"),
        (3, "not a JSON string"),
    ],
)
def test_a_bad_column_says_what_is_wrong(value: object, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        config_from_row(value)


def test_rows_render_the_shape_and_the_scheduler_runs_it(sandbox: Any, tmp_path: Path) -> None:
    (row,) = _rows(sandbox, ONE_TURN)
    assert json.loads(row["rollout_config"]) == {"exploration_turns": 1, "max_calls_per_turn": 2}
    assert "up to 2 calls" in row["messages"][0]["content"]
    assert "You have 1 turns with tools" in row["messages"][0]["content"]

    async def go() -> tuple[Any, Any]:
        hooks = RolloutEnvironment(max_turns=2, host=SandboxHost(workdir=str(tmp_path / "t")))
        try:
            await hooks.start("u", row["messages"], row, tools=json.loads(row["tools"]))
            first = await hooks.turn("u", GLOB, None, current_turn=1)
            answer = await hooks.turn("u", '{"files": ["shop/cart.py"]}', None, current_turn=2)
            return first, answer
        finally:
            hooks.close()

    first, answer = asyncio.run(go())
    assert not first.done
    # after the one tool turn comes the answer demand, not a reminder of turns left
    assert first.messages[-1]["role"] == "user"
    assert first.messages[-1]["content"] == PROMPTS.answer()
    assert answer.done
    assert answer.rollout_infos["num_turns"] == 2


def test_a_row_whose_shape_needs_more_turns_than_the_trainer_gives_is_refused(
    sandbox: Any, tmp_path: Path
) -> None:
    (row,) = _rows(sandbox, config_from_row('{"exploration_turns": 2}'))
    bad = dict(row, rollout_config='{"strict": false}')

    async def start(r: dict[str, Any], max_turns: int) -> None:
        hooks = RolloutEnvironment(
            max_turns=max_turns, host=SandboxHost(workdir=str(tmp_path / "t"))
        )
        try:
            await hooks.start("u", r["messages"], r, tools=json.loads(r["tools"]))
        finally:
            hooks.close()

    with pytest.raises(TrainingSetupError, match="more than --max_turns 2"):
        asyncio.run(start(row, 2))
    with pytest.raises(TrainingSetupError, match="may set only"):
        asyncio.run(start(bad, 4))
    asyncio.run(start(row, 3))  # 2 exploring + 1 answering fit
