"""`catm mine`'s library side, called directly: inputs prepared, labels mined and written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from catm import (
    GoldRule,
    JudgeError,
    JudgeResult,
    JudgeSpec,
    LabelRecord,
    MiningConfig,
    MiningProgress,
    NoJudge,
    OpenAIJudge,
    mine_to_file,
    prepare_mining,
    read_labels,
)

WS = "/workspace/o__p__1"


def _corpus(tmp_path: Path) -> tuple[Path, Path]:
    call = {
        "id": "a",
        "type": "function",
        "function": {
            "name": "str_replace_editor",
            "arguments": json.dumps({"command": "view", "path": f"{WS}/p/a.py"}),
        },
    }
    record = {
        "instance_id": "o__p-1",
        "trajectory_id": "t1",
        "messages": [
            {"role": "user", "content": f"<uploaded_files>\n{WS}\n</uploaded_files>"},
            {"role": "assistant", "content": "look", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "a", "content": "1 x"},
            {"role": "assistant", "content": "a.py defines the parser that mis-handles tuples"},
        ],
    }
    trajectories = tmp_path / "t.jsonl"
    trajectories.write_text(json.dumps(record) + "\n{broken\n")
    instances = tmp_path / "i.jsonl"
    rows = [
        {"instance_id": "o__p-1", "repo": "o/p", "patch": "diff --git a/p/fix.py b/p/fix.py\n"},
        {"instance_id": "o__p-2", "repo": "o/p", "patch": ""},
    ]
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return trajectories, instances


def test_mine_to_file_writes_labels_and_reports_progress(tmp_path: Path) -> None:
    trajectories, instances = _corpus(tmp_path)
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


def test_prepare_mining_reads_the_template_first_and_opens_the_judge(tmp_path: Path) -> None:
    _, instances = _corpus(tmp_path)
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
