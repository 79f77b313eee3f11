"""The per-rollout log line is built from the episode's `RolloutInfo`, the same from the record or
from the dict ms-swift carries it as, and says its `schema_version`."""

from __future__ import annotations

import json
from pathlib import Path

from codegrep_model.train import (
    ROLLOUT_LOG_FILE,
    ROLLOUT_LOG_SCHEMA_VERSION,
    RolloutLogEntry,
    advantage_scale,
    read_rollout_log,
)
from grpo_rewards import RolloutInfo, parse_answer

INFO = RolloutInfo(
    num_turns=3,
    num_tool_calls=4,
    tool_calls_per_turn=(2, 2, 0),
    answer=parse_answer("no answer here"),
    episode_status="unanswered",
    overflow="max_length",
    rollout_tokens=32768,
    completion_tokens=900,
    tool_results_cut=1,
    token_counter="chars/4",
)


def _entry(info: object) -> RolloutLogEntry:
    scale = advantage_scale(info, reward="codegrep_v3")  # type: ignore[arg-type]
    return RolloutLogEntry.of(
        step=5, index=0, info=info, scale=scale, reward=0.0, rewards={"codegrep_v3": 0.0},
        advantage_group=-0.5,
    )  # fmt: skip


def test_the_log_line_is_the_same_from_the_record_or_its_dict(tmp_path: Path) -> None:
    entry = _entry(INFO)
    assert entry == _entry(INFO.to_infos())
    assert (entry.stop_cause, entry.overflow, entry.tool_results_cut) == (
        "overflow",
        "max_length",
        1,
    )
    assert entry.answer_files is None
    assert entry.answer_error == "no JSON object in the answer"
    assert entry.tool_calls_per_turn == (2, 2, 0)
    line = entry.to_json_line()
    assert json.loads(line)["schema_version"] == ROLLOUT_LOG_SCHEMA_VERSION
    log = tmp_path / ROLLOUT_LOG_FILE
    log.write_text(line)
    assert read_rollout_log(log) == [entry]
