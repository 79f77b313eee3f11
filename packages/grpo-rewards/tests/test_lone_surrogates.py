"""A model's answer whose JSON decodes to a lone surrogate (`"\\udce9"`): the reward reads it as
U+FFFD, as the engine records it, and nothing it hands on is refused by a UTF-8 writer."""

from __future__ import annotations

import json

import pytest
from grpo_rewards import ParsedAnswer, RolloutInfo, parse_answer
from grpo_rewards._formats import record_text
from grpo_rewards.swift_orm import CodeGrepV3ORM

REPLACED = "\ufffd"

# JSON escapes of a lone surrogate, and one in the text itself (bytes read with surrogateescape)
LONE = [
    '{"files": ["src/a.py", "r\\udce9sum.py"]}',
    '```json\n{"files": ["src/a.py", "r\\ud800sum.py"]}\n```',
    '{"files": ["src/a.py", {"path": "r\\udfffsum.py"}]}',
    '{"files": ["src/a.py", "r\udce9sum.py"]}',
]


def answer_infos(parsed: ParsedAnswer) -> dict[str, object]:
    """The JSON form of a record holding only `parsed` (what the environment writes for it)."""
    return RolloutInfo(answer=parsed).to_infos()


def _utf8_json(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize("text", LONE, ids=ascii)
def test_a_lone_surrogate_in_a_path_is_read_as_the_replacement_character(text: str) -> None:
    parsed = parse_answer(text)
    assert parsed.answer is not None
    assert parsed.answer.files == ("src/a.py", f"r{REPLACED}sum.py")
    # what a driver records for the reward and the log: every UTF-8 writer takes it
    infos = answer_infos(parsed)
    assert json.loads(_utf8_json(infos))["answer_files"] == list(parsed.answer.files)


def test_a_surrogate_in_a_line_range_key_is_replaced_too() -> None:
    parsed = parse_answer('{"files": ["a.py"], "line_ranges": {"r\\udce9.py": [[1, 2]]}}')
    assert parsed.answer is not None
    assert list(parsed.answer.line_ranges) == [f"r{REPLACED}.py"]
    _utf8_json(answer_infos(parsed))


def test_a_pair_is_one_character_and_an_escaped_backslash_is_text() -> None:
    # (a backslash in a path is a separator: `x\\udce9.py` is the folder x and a file)
    pair = parse_answer('{"files": ["\\ud83d\\ude00.py", "x\\\\udce9.py"]}')
    assert pair.answer is not None
    assert pair.answer.files == ("\U0001f600.py", "x/udce9.py")
    # the two halves of a pair side by side in the text are joined, not replaced
    assert parse_answer('{"files": ["\ud83d\ude00.py"]}').answer.files == ("\U0001f600.py",)  # type: ignore[union-attr]


def test_two_surrogates_that_become_one_path_are_one_file() -> None:
    """The engine records both as `r\ufffd.py` and keeps one; the reward counts one too."""
    parsed = parse_answer('{"files": ["r\\udce9.py", "r\\udcea.py", "b.py"]}')
    assert parsed.answer is not None
    assert parsed.answer.files == (f"r{REPLACED}.py", "b.py")


def test_the_error_of_a_bad_entry_is_writable() -> None:
    parsed = parse_answer('{"files": [{"p\\udce9": 1}]}')
    assert parsed.answer is None
    assert parsed.error is not None
    _utf8_json(answer_infos(parsed))


@pytest.mark.parametrize(
    "text",
    ["plain", "caf\u00e9", "r\udce9", "\ud83d\ude00", chr(0xDE00) + chr(0xD83D)],
    ids=ascii,
)
def test_record_text_is_always_utf8(text: str) -> None:
    out = record_text(text)
    out.encode("utf-8")
    if text.isascii() or text == "caf\u00e9":
        assert out == text


def test_the_orm_scores_a_lone_surrogate_as_the_engine_records_it() -> None:
    """The ORM reading the completion and the ORM reading the engine's record of the same
    answer (U+FFFD in place of each lone surrogate) give the same reward."""
    orm = CodeGrepV3ORM()
    raw = '{"files": ["src/a.py", "r\\udce9.py", "r\\udcea.py"]}'
    recorded = '{"files": ["src/a.py", "r\ufffd.py", "r\ufffd.py"]}'
    infos = [{"num_turns": 2, "tool_calls_per_turn": [1, 1]}]
    gold = [["src/a.py"]]
    from_raw = orm([raw], gold_files=gold, rollout_infos=infos)
    from_record = orm([recorded], gold_files=gold, rollout_infos=infos)
    assert from_raw == pytest.approx(from_record)
    # and from the infos a driver records from the reward's parse, without the completion
    recorded_infos = [{**infos[0], **answer_infos(parse_answer(raw))}]
    json.loads(_utf8_json(recorded_infos))
    assert orm([""], gold_files=gold, rollout_infos=recorded_infos) == pytest.approx(from_raw)


def test_trl_and_verl_score_a_lone_surrogate_as_the_engine_records_it() -> None:
    from grpo_rewards.trl_reward import TRLReward
    from grpo_rewards.verl_score import compute_score

    raw = '{"files": ["src/a.py", "r\\udce9.py", "r\\udcea.py"]}'
    recorded = '{"files": ["src/a.py", "r\ufffd.py"]}'
    reward = TRLReward("codegrep_v3", files_column="solution")
    columns = {"solution": [["src/a.py"]] * 2, "num_turns": [2, 2], "num_tool_calls": [2, 2]}
    a, b = reward(prompts=["issue"] * 2, completions=[raw, recorded], **columns)
    assert a == pytest.approx(b)
    extra = {"assistant_turns": 2, "tool_calls": [1, 1]}
    verl = compute_score("codegrep", raw, ["src/a.py"], extra)
    assert verl == pytest.approx(compute_score("codegrep", recorded, ["src/a.py"], extra))
    json.dumps(verl, ensure_ascii=False).encode("utf-8")
