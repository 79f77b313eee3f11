"""`catm mine`'s library side, called directly: inputs prepared, labels mined and written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from catm import JudgeResult, MiningConfig, NoJudge, OpenAIJudge, read_labels
from catm._pipeline import JudgeSpec, MiningProgress, mine_to_file, prepare_mining
from catm.errors import JudgeError
from codegrep_records import GoldRule, LabelRecord


@pytest.fixture
def corpus(small_corpus: tuple[Path, Path]) -> tuple[Path, Path]:
    """conftest's corpus with a second instance whose patch names no file (a skipped row)."""
    trajectories, instances = small_corpus
    second = {"instance_id": "o__p-2", "repo": "o/p", "patch": ""}
    with instances.open("a", encoding="utf-8") as out:
        out.write(json.dumps(second) + "\n")
    return trajectories, instances


def test_mine_to_file_writes_labels_and_reports_progress(
    tmp_path: Path, corpus: tuple[Path, Path]
) -> None:
    trajectories, instances = corpus
    inputs = prepare_mining([instances], JudgeSpec(), GoldRule())
    assert isinstance(inputs.judge, NoJudge)
    assert list(inputs.instances) == ["o__p-1"]
    assert len(inputs.instance_skips) == 1  # the row without patch files
    heard: list[str] = []

    def judged(result: JudgeResult) -> None:
        heard.append(f"judged {result.verdict}")

    output = tmp_path / "labels.jsonl"
    result = mine_to_file(
        [trajectories],
        inputs,
        output,
        config=MiningConfig(threshold=0.15),
        progress=MiningProgress(
            on_trajectory=lambda: heard.append("record"),
            on_judge_start=lambda n: heard.append(f"judge {n}"),
            on_judged=judged,
        ),
    )
    inputs.close()
    assert heard == ["record", "record", "judge 1", "judged UNJUDGED"]
    assert result.stats.records_skipped == 1
    assert result.stats.instance_rows_skipped == 1
    [label] = list(read_labels(output))
    assert isinstance(label, LabelRecord)
    assert label.gold == ["p/a.py", "p/fix.py"]
    stats = json.loads((tmp_path / "labels.jsonl.stats.json").read_text())
    assert stats["instance_rows_skipped"] == 1
    assert stats["labels_written"] == 1


def test_prepare_mining_reads_the_template_first_and_opens_the_judge(
    tmp_path: Path, corpus: tuple[Path, Path]
) -> None:
    _, instances = corpus
    missing = tmp_path / "nope.txt"
    with pytest.raises(JudgeError, match="cannot read judge template"):
        prepare_mining([tmp_path / "no-instances.jsonl"], JudgeSpec(template=missing), GoldRule())
    template = tmp_path / "prompt.txt"
    template.write_text("{path} {issue} {reasoning}")
    spec = JudgeSpec(model="m", endpoint="http://127.0.0.1:9/v1", template=template)
    inputs = prepare_mining([instances], spec, GoldRule())
    try:
        assert isinstance(inputs.judge, OpenAIJudge)
        assert inputs.judge.name == "m"
    finally:
        inputs.close()
