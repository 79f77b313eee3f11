"""`write_labels`: labels streamed to a new file beside the output, never through a link."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from catm import read_labels, write_labels
from catm._records import MiningStats
from codegrep_records import LabelRecord


def _stats() -> MiningStats:
    ints = {
        name: 0
        for name, field in MiningStats.model_fields.items()
        if field.is_required() and field.annotation is int
    }
    return MiningStats(
        judge="none",
        tokenizer="t",
        beta=1.0,
        mean_weight_raw=0.0,
        threshold=0.15,
        skip_reasons={},
        reads_dropped={},
        retention=0.0,
        **ints,
    )


def _label(iid: str) -> LabelRecord:
    return LabelRecord(
        instance_id=iid,
        patch_files=["a.py"],
        mined=[],
        gold=["a.py"],
        trajectories=[],
        judge="none",
    )


def test_links_planted_at_the_old_temporary_names_are_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    out = tmp_path / "run" / "labels.jsonl"
    out.parent.mkdir()
    # the names the writer used to open with a plain open(): it wrote through them
    (out.parent / "labels.jsonl.tmp").symlink_to(victim)
    (out.parent / "labels.jsonl.stats.json.tmp").symlink_to(victim)
    write_labels(out, iter([_label("x__y-1"), _label("x__y-2")]), _stats())
    assert victim.read_text() == "keep me\n"
    assert [r.instance_id for r in read_labels(out) if isinstance(r, LabelRecord)] == [
        "x__y-1",
        "x__y-2",
    ]
    assert (
        MiningStats.model_validate_json((out.parent / "labels.jsonl.stats.json").read_text()).judge
        == "none"
    )
    assert sorted(p.name for p in out.parent.iterdir() if not p.is_symlink()) == [
        "labels.jsonl",
        "labels.jsonl.stats.json",
    ]


def test_a_run_that_fails_midway_keeps_the_old_labels(tmp_path: Path) -> None:
    out = tmp_path / "labels.jsonl"
    write_labels(out, iter([_label("x__y-1")]), _stats())
    before = out.read_bytes()

    def broken() -> Iterator[LabelRecord]:
        yield _label("x__y-2")
        raise RuntimeError("the judge went away")

    with pytest.raises(RuntimeError):
        write_labels(out, broken(), _stats())
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["labels.jsonl", "labels.jsonl.stats.json"]
