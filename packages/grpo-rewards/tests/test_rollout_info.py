"""`RolloutInfo`: the record an episode hands the reward and the log, and the dict ms-swift carries
it as; the conversion at that boundary is tested here, without ms-swift."""

from __future__ import annotations

import json

import pytest
from grpo_rewards import (
    ROLLOUT_INFO_SCHEMA_VERSION,
    InvalidRolloutError,
    RolloutInfo,
    parse_answer,
)
from grpo_rewards.swift_orm import CodeGrepV3ORM

FULL = RolloutInfo(
    num_turns=3,
    num_tool_calls=4,
    tool_calls_per_turn=(2, 2, 0),
    answer=parse_answer('{"files": ["a.py"], "line_ranges": {"a.py": [[3, 5]]}}'),
    episode_status="answered",
    test_policy="model",
    overflow=None,
    rollout_tokens=900,
    completion_tokens=120,
    tool_results_cut=0,
    token_counter="chars/4",
)


def test_the_dict_is_json_safe_and_reads_back_as_the_same_record() -> None:
    infos = FULL.to_infos()
    assert infos["schema_version"] == ROLLOUT_INFO_SCHEMA_VERSION
    assert infos["overflow"] is None  # a budgeted rollout records "no overflow" explicitly
    back = RolloutInfo.from_infos(json.loads(json.dumps(infos)))
    assert back == FULL


def test_a_dict_written_before_schema_version_reads_as_version_1() -> None:
    old = {"num_turns": 2, "tool_calls_per_turn": [1, 0], "answer_files": None,
           "answer_error": "no JSON object in the answer"}  # fmt: skip
    info = RolloutInfo.from_infos(old)
    assert info.schema_version == 1
    stats = info.stats()
    assert stats is not None
    assert (stats.turns, stats.tool_calls) == (2, 1)
    assert info.answer is not None
    assert info.answer.answer is None
    assert info.answer.error == "no JSON object in the answer"
    assert not info.budgeted


def test_what_is_not_a_mapping_holds_nothing() -> None:
    assert RolloutInfo.from_infos(None) == RolloutInfo()
    assert RolloutInfo.from_infos(None).stats() is None


@pytest.mark.parametrize(
    ("infos", "key"),
    [
        ({"schema_version": 2}, "schema_version"),
        ({"episode_status": 3}, "episode_status"),
        ({"rollout_tokens": "many"}, "rollout_tokens"),
        ({"tool_calls_per_turn": "3"}, "tool_calls_per_turn"),
        ({"answer_files": "a.py"}, "answer_files"),
    ],
)
def test_a_value_of_the_wrong_shape_names_its_key(infos: dict[str, object], key: str) -> None:
    with pytest.raises(InvalidRolloutError, match=key):
        RolloutInfo.from_infos(infos)


def test_the_orm_reads_the_record_or_its_dict_alike() -> None:
    orm = CodeGrepV3ORM(args=None)
    completion = ["no answer in this text"]  # the recorded answer is scored, not this
    as_dict = orm(completion, gold_files=[["a.py"]], rollout_infos=[FULL.to_infos()])
    as_record = orm(completion, gold_files=[["a.py"]], rollout_infos=[FULL])
    assert as_dict == as_record == [1.0]
