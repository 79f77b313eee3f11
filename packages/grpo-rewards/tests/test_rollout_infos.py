"""The record's JSON form (`rollout_infos`): the keys ms-swift rows carry, read only through
`RolloutInfo`, and an ORM that scores the environment's recorded answer instead of parsing the
completion again."""

from __future__ import annotations

import json

import grpo_rewards
import pytest
from grpo_rewards import (
    Gold,
    InvalidRolloutError,
    ParsedAnswer,
    RolloutInfo,
    RolloutStats,
    parse_answer,
    score_completion,
)
from grpo_rewards._spec import score_parsed
from grpo_rewards.swift_orm import CodeGrepV1ORM, CodeGrepV3ORM, swift_rollout_stats

GOLD = [["a.py"]]


def answer_infos(parsed: ParsedAnswer) -> dict[str, object]:
    """The JSON form of a record holding only `parsed` (what the environment writes for it)."""
    return RolloutInfo(answer=parsed).to_infos()


def test_the_keys_are_the_ones_ms_swift_rows_carry() -> None:
    info = RolloutInfo(
        num_turns=2, tool_calls_per_turn=(1, 0), answer=parse_answer('{"files": ["a.py"]}')
    )
    assert list(info.to_infos()) == [
        "num_turns",
        "tool_calls_per_turn",
        "answer_files",
        "answer_line_ranges",
        "answer_error",
        "schema_version",
    ]
    # the record is the interface: its keys are not exported one by one
    assert {"RolloutInfo", "score_rollout"} <= set(grpo_rewards.__all__)
    assert not [n for n in grpo_rewards.__all__ if n.startswith("INFO_") or "_infos" in n]


def test_stats_are_read_under_the_constants() -> None:
    stats = swift_rollout_stats({"num_turns": 3, "tool_calls_per_turn": [4, 2, 0]}, None)
    assert stats == RolloutStats(turns=3, tool_calls=6)
    assert swift_rollout_stats({"num_turns": 2, "num_tool_calls": 5}, None).tool_calls == 5


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"files": ["/testbed/a.py", "b.py"],\n'
        ' "line_ranges": {"a.py": ["3-5", [9, 9]], "b.py": "x"}}\n```',
        "<think>{\"files\": [\"x.py\"]}</think>\n{'files': ['a.py']}",  # single quotes: no answer
        "I could not find it.",
        '{"files": "a.py"}',
        None,
    ],
)
def test_answer_infos_round_trip(text: str | None) -> None:
    parsed = parse_answer(text)
    infos = json.loads(json.dumps(answer_infos(parsed)))  # JSON-safe
    back = RolloutInfo.from_infos(infos).answer
    assert back is not None
    assert back.error == parsed.error
    if parsed.answer is None:
        assert back.answer is None
    else:
        assert back.answer is not None
        assert (back.answer.files, back.answer.line_ranges) == (
            parsed.answer.files,
            parsed.answer.line_ranges,
        )


def test_the_orm_scores_the_recorded_answer_not_the_completion() -> None:
    counts = {"num_turns": 2, "tool_calls_per_turn": [3, 0]}
    recorded = {**counts, **answer_infos(parse_answer('{"files": ["a.py"]}'))}
    missing = {**counts, **answer_infos(parse_answer("{'files': ['a.py']}"))}
    orm = CodeGrepV3ORM()
    # the completion column says something else each time; the recorded answer wins
    rewards = orm(
        ['{"files": ["b.py"]}', '{"files": ["a.py"]}', '{"files": ["a.py"]}'],
        gold_files=GOLD * 3,
        rollout_infos=[recorded, missing, counts],
    )
    assert rewards == [1.0, 0.0, 1.0]  # the last row recorded no answer: the text is parsed


def test_score_parsed_equals_score_completion() -> None:
    gold = Gold.of(["a.py"], {"a.py": [[1, 10]]})
    stats = RolloutStats(turns=3, tool_calls=6)
    for text in ('{"files": ["a.py", "c.py"], "line_ranges": {"a.py": [[2, 4]]}}', "nothing"):
        for name in ("codegrep_v1", "codegrep_v3", "colgrep_file_f1"):
            direct = score_completion(name, text, gold, stats)
            assert score_parsed(name, parse_answer(text), gold, stats) == direct


def test_v1_line_ranges_come_from_the_recorded_answer() -> None:
    text = '{"files": ["a.py"], "line_ranges": {"a.py": [[1, 10]]}}'
    info = {"num_turns": 2, "num_tool_calls": 2, **answer_infos(parse_answer(text))}
    from_infos = CodeGrepV1ORM()(
        ["(ignored)"], gold_files=GOLD, gold_line_ranges=[{"a.py": [[1, 10]]}], rollout_infos=[info]
    )
    from_text = CodeGrepV1ORM()(
        [text],
        gold_files=GOLD,
        gold_line_ranges=[{"a.py": [[1, 10]]}],
        rollout_infos=[{"num_turns": 2, "num_tool_calls": 2}],
    )
    assert from_infos == from_text == [1.0]


@pytest.mark.parametrize(
    ("info", "what"),
    [
        ({"answer_files": "a.py"}, "answer_files"),
        ({"answer_files": ["a.py", 3]}, "answer_files"),
        ({"answer_files": ["a.py"], "answer_line_ranges": [[1, 2]]}, "answer_line_ranges"),
        ({"answer_files": ["a.py"], "answer_line_ranges": {"a.py": [[5, 2]]}}, "a.py"),
        ({"answer_files": ["a.py"], "answer_line_ranges": {"a.py": [["1", 2]]}}, "a.py"),
        ({"answer_files": ["a.py"], "answer_line_ranges": {"a.py": [[True, 2]]}}, "a.py"),
    ],
)
def test_a_bad_recorded_answer_is_a_harness_bug(info: dict[str, object], what: str) -> None:
    with pytest.raises(InvalidRolloutError, match=what):
        RolloutInfo.from_infos(info)


def test_no_answer_without_a_reason_still_scores_zero() -> None:
    parsed = RolloutInfo.from_infos({"answer_files": None}).answer
    assert parsed is not None
    assert (parsed.answer, parsed.error) == (None, "no answer")


def test_the_recorded_call_cap_is_the_one_the_turns_are_held_to() -> None:
    """A driver that ran 12 calls a turn says so; without the key the paper's 8 holds."""
    import grpo_rewards as gr

    per_turn = {"num_turns": 3, "tool_calls_per_turn": [12, 12, 0]}
    with pytest.raises(InvalidRolloutError, match="more than 8 calls"):
        gr.RolloutInfo.from_infos(per_turn).stats()
    capped = gr.RolloutInfo.from_infos({**per_turn, "max_calls_per_turn": 12})
    stats = capped.stats()
    assert stats is not None
    assert (stats.tool_calls, stats.max_calls_per_turn) == (24, 12)
    assert gr.RolloutInfo.from_infos(capped.to_infos()) == capped
    with pytest.raises(InvalidRolloutError, match="max_calls_per_turn must be >= 1"):
        gr.RolloutInfo.from_infos({**per_turn, "max_calls_per_turn": 0})
    with pytest.raises(InvalidRolloutError, match="negative call count"):
        gr.RolloutInfo(num_turns=2, tool_calls_per_turn=(-1, 3)).stats()


def test_the_advantage_scale_has_one_rule_for_every_caller() -> None:
    """`advantage_scale` (the trainer's), `advantage_factor` (verl's) and
    `scale_advantages_for` (TRL's) give the same factor; no known reward means 1.0."""
    import grpo_rewards as gr
    from grpo_rewards._advantages import advantage_factor

    info = gr.RolloutInfo(num_turns=4, tool_calls_per_turn=(1, 1, 0, 0))  # c̄ = 0.5
    for reward in ("codegrep_v1", "codegrep_v2", "codegrep_v3", "fbeta_file", None):
        factor = gr.advantage_scale(info, reward=reward).factor
        assert factor == advantage_factor(reward, 0.5)
        assert gr.scale_advantages_for(reward, [2.0], [0.5]) == [2.0 * factor]
        expected = 8**-0.5 if reward in ("codegrep_v2", "codegrep_v3") else 1.0
        assert factor == pytest.approx(expected)
    scales = gr.advantage_scales([info, info.to_infos()], reward="codegrep_v3")
    assert scales[0] == scales[1]
    with pytest.raises(gr.MissingRolloutStatsError, match="tool-call counts"):
        gr.advantage_scale({"num_turns": 2})


def test_a_reward_the_counts_do_not_scale_trains_without_them() -> None:
    """A tool-free task (the answer turn alone, `fbeta_file`, no multi-turn scheduler) has no
    tool-call counts: its factor is 1.0 and nothing is made up; a reward the counts scale, or
    zeroing unanswered rollouts, still needs them."""
    import grpo_rewards as gr

    for reward in ("fbeta_file", "codegrep_v1", None):
        scale = gr.advantage_scale({}, reward=reward)
        assert (scale.factor, scale.tool_calls, scale.degenerate) == (1.0, 0, None)
    assert gr.advantage_scale({"num_turns": 1}, reward="fbeta_file").turns == 1
    for kw in ({"reward": "codegrep_v3"}, {"reward": "fbeta_file", "zero_unanswered": True}):
        with pytest.raises(gr.MissingRolloutStatsError, match="tool-call counts"):
            gr.advantage_scale({}, **kw)  # type: ignore[arg-type]


def test_trl_and_verl_score_the_environments_record_as_the_orm_does() -> None:
    from grpo_rewards.trl_reward import TRLReward
    from grpo_rewards.verl_score import compute_score

    record = RolloutInfo(
        num_turns=3, tool_calls_per_turn=(4, 2, 0), answer=parse_answer('{"files": ["a.py"]}')
    )
    unparsable = "(the completion is not parsed again)"
    orm = CodeGrepV3ORM()([unparsable], gold_files=GOLD, rollout_infos=[record.to_infos()])
    trl = TRLReward("codegrep_v3")(
        prompts=["issue"], completions=[unparsable], gold_files=GOLD, rollout_infos=[record]
    )
    verl = compute_score("codegrep", unparsable, ["a.py"], {"rollout_info": record.to_infos()})
    assert orm == trl == [verl["score"]] == [1.0]
    assert verl["cbar"] == 2.0
    # a record without an answer: the completion is parsed, as before
    counts = RolloutInfo(num_turns=3, tool_calls_per_turn=(4, 2, 0))
    text = '{"files": ["a.py", "b.py"]}'
    assert TRLReward("codegrep_v3")(
        completions=[text], gold_files=GOLD, rollout_infos=[counts.to_infos()]
    ) == TRLReward("codegrep_v3")(completions=[text], gold_files=GOLD, num_turns=[3],
                                  num_tool_calls=[6])  # fmt: skip
