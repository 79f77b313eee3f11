"""A training rollout whose answer JSON decodes to a lone surrogate (`"\\udce9"`): the reward's
parse the episode hands on and the per-rollout log line built from it are writable, and the
engine's record and the reward's view name the same files."""

from __future__ import annotations

import json
from pathlib import Path

import grpo_rewards as rewards
from codegrep_model import Episode, Instance, PolicyReply, RolloutConfig
from codegrep_model.episode import AskPolicy, Done
from codegrep_model.train import RolloutLogEntry, advantage_scale, read_rollout_log

ANSWER = '{"files": ["shop/cart.py", "shop/r\\udce9sum.py"], "line_ranges": {"r\\ud800.py": [1]}}'
REPLACED = "shop/r\ufffdsum.py"


def _rollout() -> Episode:
    instance = Instance(
        instance_id="o__shop-1",
        repo="o/shop",
        base_commit="0" * 40,
        problem_statement="The cart adds the wrong quantity.",
    )
    episode = Episode.start(
        instance,
        ["shop/cart.py", "shop/pricing.py"],
        policy="scripted",
        config=RolloutConfig(strict=True, exploration_turns=0, rescue_attempts=0),
    )
    action = episode.next_action()
    assert isinstance(action, AskPolicy)
    episode.on_reply(PolicyReply(content=ANSWER))
    assert isinstance(episode.next_action(), Done)
    return episode


def _entry(info: object) -> RolloutLogEntry:
    assert isinstance(info, dict)
    return RolloutLogEntry.of(
        step=1,
        index=0,
        info=info,
        scale=advantage_scale(info),
        reward=0.5,
        rewards={"codegrep_v3": 0.5},
        advantage_group=0.25,
        instance_id="o__shop-1",
    )


def test_a_rollout_log_line_of_a_lone_surrogate_answer_is_written_and_read(
    tmp_path: Path,
) -> None:
    episode = _rollout()
    infos = episode.rollout_infos()
    # what ms-swift gathers and the reward scores: the engine's files, U+FFFD in place
    assert infos["answer_files"] == ["shop/cart.py", REPLACED]
    assert list(episode.record().answer.files) == infos["answer_files"]  # type: ignore[union-attr]
    json.dumps(infos, ensure_ascii=False).encode("utf-8")
    entry = _entry(infos)
    assert json.loads(entry.model_dump_json())["answer_files"] == ["shop/cart.py", REPLACED]
    log = tmp_path / "codegrep_rollouts.jsonl"
    with log.open("a", encoding="utf-8") as fh:  # as the ms-swift plugin writes it
        fh.writelines([entry.to_json_line()])
    [back] = read_rollout_log(log)
    assert back.answer_files == ("shop/cart.py", REPLACED)


def test_a_driver_that_records_a_lone_surrogate_cannot_break_the_log(tmp_path: Path) -> None:
    """Infos from another driver, which kept the surrogates: the log line still writes."""
    info = {
        "num_turns": 1,
        "tool_calls_per_turn": [0],
        "answer_files": None,
        "answer_error": "`files` holds r\udce9",
        "episode_status": "unanswered\udce9",
    }
    entry = _entry(info)
    line = entry.to_json_line()
    line.encode("utf-8")
    assert json.loads(entry.model_dump_json())["answer_error"] == "`files` holds r\ufffd"
    raw = {**info, "answer_files": ["a\udce9.py"], "answer_error": None}
    assert _entry(raw).answer_files == ("a\ufffd.py",)
    (tmp_path / "log.jsonl").write_text(line + _entry(raw).to_json_line(), encoding="utf-8")
    assert len(read_rollout_log(tmp_path / "log.jsonl")) == 2


def test_the_engine_and_the_reward_read_one_answer() -> None:
    parsed = rewards.parse_answer(ANSWER)
    assert parsed.answer is not None
    assert parsed.answer.files == ("shop/cart.py", REPLACED)
