"""Shared fixtures of catm's tests: a one-trajectory corpus and its instances."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

Corpus = tuple[Path, Path]


@pytest.fixture
def small_corpus(tmp_path: Path) -> Corpus:
    """(trajectories, instances): one OpenHands-style trajectory that views `p/a.py` and ends
    with the agent's reasoning, then a broken line; one instance whose gold is `p/fix.py`."""
    ws = "/workspace/o__p__1"
    call = {
        "id": "a",
        "type": "function",
        "function": {
            "name": "str_replace_editor",
            "arguments": json.dumps({"command": "view", "path": f"{ws}/p/a.py"}),
        },
    }
    record = {
        "instance_id": "o__p-1",
        "trajectory_id": "t1",
        "messages": [
            {"role": "user", "content": f"<uploaded_files>\n{ws}\n</uploaded_files>"},
            {"role": "assistant", "content": "look", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "a", "content": "1 x"},
            {"role": "assistant", "content": "a.py defines the parser that mis-handles tuples"},
        ],
    }
    trajectories = tmp_path / "t.jsonl"
    trajectories.write_text(json.dumps(record) + "\n{broken\n")
    instances = tmp_path / "i.jsonl"
    patch = "diff --git a/p/fix.py b/p/fix.py\n"
    instances.write_text(
        json.dumps({"instance_id": "o__p-1", "repo": "o/p", "patch": patch}) + "\n"
    )
    return trajectories, instances
