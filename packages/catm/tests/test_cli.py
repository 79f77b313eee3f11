"""The `catm` command line on the shared data and on hand-made files."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from catm import read_labels
from catm._output import label_report
from catm.cli import app
from codegrep_records import LabelRecord
from typer.testing import CliRunner

DATA = Path(
    os.environ.get(
        "CATM_SHARED_DATA", Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
    )
)
needs_data = pytest.mark.skipif(
    not (DATA / "swebench" / "lite.jsonl").exists(),
    reason=f"shared data not found at {DATA} (set CATM_SHARED_DATA)",
)
runner = CliRunner()


def test_mine_and_stats(tmp_path: Path, small_corpus: tuple[Path, Path]) -> None:
    trajectories, instances = small_corpus
    labels = tmp_path / "out" / "labels.jsonl"
    result = runner.invoke(
        app, ["mine", str(trajectories), "-i", str(instances), "-o", str(labels), "-v"]
    )
    assert result.exit_code == 0, result.output
    assert "judge: none" in result.output
    assert "invalid JSON" in result.output  # -v lists the skipped row with file and line
    [label] = list(read_labels(labels))
    assert isinstance(label, LabelRecord)
    assert label.gold == ["p/a.py", "p/fix.py"]
    stats = json.loads((tmp_path / "out" / "labels.jsonl.stats.json").read_text())
    assert stats["records_skipped"] == 1
    result = runner.invoke(app, ["stats", str(labels)])
    assert result.exit_code == 0, result.output
    assert "mined, not in patch: o__p-1: p/a.py" in result.output


def test_unusable_instance_rows_are_counted_and_listed(
    tmp_path: Path, small_corpus: tuple[Path, Path]
) -> None:
    trajectories, instances = small_corpus
    with instances.open("a") as f:
        f.write(json.dumps({"instance_id": "o__p-2", "repo": "o/p", "patch": ""}) + "\n{bad\n")
    labels = tmp_path / "labels.jsonl"
    args = ["mine", str(trajectories), "-i", str(instances), "-o", str(labels)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "2 --instances rows were not usable" in result.output
    stats = json.loads((tmp_path / "labels.jsonl.stats.json").read_text())
    assert stats["instance_rows_skipped"] == 2
    result = runner.invoke(app, [*args, "-v"])
    listed = " ".join(result.output.split())  # rich wraps long lines
    assert "no patch files (no patch, fix_patch or gold_files)" in listed
    assert "i.jsonl:3: not JSON" in listed  # codegrep-records' reader, with file and line


def test_missing_template_is_a_clear_error(tmp_path: Path, small_corpus: tuple[Path, Path]) -> None:
    trajectories, instances = small_corpus
    args = ["mine", str(trajectories), "-i", str(instances), "-o", str(tmp_path / "l.jsonl")]
    result = runner.invoke(app, [*args, "--judge", "m", "--template", str(tmp_path / "no.md")])
    assert result.exit_code == 2, result.output
    assert "cannot read judge template" in result.output


def test_dry_run_writes_nothing(tmp_path: Path, small_corpus: tuple[Path, Path]) -> None:
    trajectories, instances = small_corpus
    labels = tmp_path / "labels.jsonl"
    args = ["mine", str(trajectories), "-i", str(instances), "-o", str(labels), "--dry-run"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert not labels.exists()


def test_missing_input_is_a_clean_error(tmp_path: Path, small_corpus: tuple[Path, Path]) -> None:
    _, instances = small_corpus
    args = ["mine", str(tmp_path / "nope.jsonl"), "-i", str(instances), "-o", str(tmp_path / "l")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "cannot open" in result.output


# A gzip member with a valid header, then a deflate block of type 3, which does not exist: ISA-L
# raises IsalError and zlib raises zlib.error, neither of them an OSError.
_BAD_MEMBER = gzip.compress(b"")[:10] + b"\xff" * 64


@pytest.mark.parametrize("broken", ["trajectories", "instances", "labels"])
def test_corrupt_gzip_is_a_clean_exit_2(
    tmp_path: Path, small_corpus: tuple[Path, Path], broken: str
) -> None:
    trajectories, instances = small_corpus
    labels = tmp_path / "labels.jsonl.gz"
    if broken == "labels":
        result = runner.invoke(
            app, ["mine", str(trajectories), "-i", str(instances), "-o", str(tmp_path / "l.jsonl")]
        )
        assert result.exit_code == 0, result.output
        labels.write_bytes(gzip.compress((tmp_path / "l.jsonl").read_bytes()) + _BAD_MEMBER)
        result = runner.invoke(app, ["stats", str(labels)])
    else:
        source = trajectories if broken == "trajectories" else instances
        packed = source.with_name(source.name + ".gz")
        packed.write_bytes(gzip.compress(source.read_bytes()) + _BAD_MEMBER)
        args = [str(packed if broken == "trajectories" else trajectories)]
        args += ["-i", str(packed if broken == "instances" else instances)]
        result = runner.invoke(app, ["mine", *args, "-o", str(labels)])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # no traceback
    output = " ".join(result.output.split())  # rich wraps long lines, paths anywhere
    assert "error:" in output
    # Instance files are read by codegrep-records, which says it in its own words.
    message = "corrupt gzip data after" if broken == "instances" else "unreadable after line"
    assert message in output
    assert f".gz:{message}".replace(" ", "") in "".join(output.split())


def test_deeply_nested_rows_are_counted_skips(
    tmp_path: Path, small_corpus: tuple[Path, Path]
) -> None:
    trajectories, instances = small_corpus
    deep_object = '{"a":' * 1100 + "1" + "}" * 1100
    deep_list = "[" * 1100 + "]" * 1100
    with trajectories.open("a") as f:
        f.write(deep_object + "\n")
    with instances.open("a") as f:
        f.write(deep_object + "\n" + deep_list + "\n")
    labels = tmp_path / "labels.jsonl"
    args = ["mine", str(trajectories), "-i", str(instances), "-o", str(labels), "-v"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    stats = json.loads((tmp_path / "labels.jsonl.stats.json").read_text())
    assert stats["records_skipped"] == 2  # the broken row of the corpus and the deep one
    assert stats["instance_rows_skipped"] == 2
    assert stats["labels_written"] == 1
    listed = " ".join(result.output.split())
    assert "t.jsonl:3: record nested too deeply" in listed
    assert "i.jsonl:2: not JSON: nested too deeply" in listed
    assert "i.jsonl:3: not JSON: nested too deeply" in listed


@pytest.mark.parametrize("sidecar", ["directory", "invalid_utf8", "binary", "deep", "not_object"])
def test_unreadable_stats_sidecar_is_a_clean_exit_2(
    tmp_path: Path, small_corpus: tuple[Path, Path], sidecar: str
) -> None:
    trajectories, instances = small_corpus
    labels = tmp_path / "labels.jsonl"
    runner.invoke(app, ["mine", str(trajectories), "-i", str(instances), "-o", str(labels)])
    path = tmp_path / "labels.jsonl.stats.json"
    path.unlink()
    if sidecar == "directory":
        path.mkdir()
    else:
        path.write_bytes(
            {
                "invalid_utf8": b'{"judge": "\xff\xfe"}',
                "binary": bytes(range(256)),
                "deep": b"[" * 1100 + b"]" * 1100,
                "not_object": b"[1, 2]",
            }[sidecar]
        )
    result = runner.invoke(app, ["stats", str(labels)])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert "labels.jsonl.stats.json" in "".join(result.output.split())


def test_hostile_label_rows_are_counted_skips(
    tmp_path: Path, small_corpus: tuple[Path, Path]
) -> None:
    trajectories, instances = small_corpus
    labels = tmp_path / "labels.jsonl"
    runner.invoke(app, ["mine", str(trajectories), "-i", str(instances), "-o", str(labels)])
    [good] = labels.read_bytes().splitlines()
    assert b'"weight":1.0' in good
    hostile = [
        bytes(range(1, 10)) + b"\xff",
        b"[" * 1100 + b"]" * 1100,
        b'{"instance_id": "\xff\xfe"}',
        b"42",
        good.replace(b'"weight":1.0', b'"weight":NaN'),
        good.replace(b'"weight":1.0', b'"weight":1e999'),  # parses as infinity
        good.replace(b'"weight":1.0', b'"weight":-Infinity'),
    ]
    labels.write_bytes(b"\n".join([*hostile, good]) + b"\n")
    report = label_report(labels)
    assert (report.labels, report.skipped_rows) == (1, len(hostile))
    result = runner.invoke(app, ["stats", str(labels)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("name", "content", "message", "instance_message"),
    [
        ("dir.jsonl", None, "cannot open", "is a directory"),
        ("empty.json", b"", "not a JSON document", "not JSON"),
        ("garbage.json", bytes(range(256)), "not a JSON document", "not UTF-8"),
        ("deep.json", b"[" * 1100 + b"]" * 1100, "not a JSON document", "nested too deeply"),
        ("garbage.jsonl.gz", bytes(range(256)), "unreadable after line 0", "not a valid gzip"),
    ],
)
def test_unreadable_inputs_are_a_clean_exit_2(
    tmp_path: Path,
    small_corpus: tuple[Path, Path],
    name: str,
    content: bytes | None,
    message: str,
    instance_message: str,
) -> None:
    trajectories, instances = small_corpus
    bad = tmp_path / name
    if content is None:
        bad.mkdir()
    else:
        bad.write_bytes(content)
    out = str(tmp_path / "l.jsonl")
    for args, expected in (
        (["mine", str(bad), "-i", str(instances), "-o", out], message),
        (["mine", str(trajectories), "-i", str(bad), "-o", out], instance_message),
        (["stats", str(bad)], message),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert isinstance(result.exception, SystemExit)
        output = " ".join(result.output.split())
        assert expected in output
        assert name in "".join(output.split())  # the file is named


def test_every_command_has_an_example() -> None:
    for command in ("mine", "stats"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0
        assert "Example: catm " in result.output


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs catm[plot]")
def test_histogram_png(tmp_path: Path, small_corpus: tuple[Path, Path]) -> None:
    trajectories, instances = small_corpus
    labels = tmp_path / "labels.jsonl"
    runner.invoke(app, ["mine", str(trajectories), "-i", str(instances), "-o", str(labels)])
    png = tmp_path / "w.png"
    result = runner.invoke(app, ["stats", str(labels), "--png", str(png)])
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@needs_data
def test_mine_the_shared_lite_sessions(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    args = [
        "mine",
        str(DATA / "openhands_glm46_lite" / "sessions.jsonl.gz"),
        "-i",
        str(DATA / "swebench" / "lite.jsonl"),
        "-o",
        str(labels),
        "--limit",
        "40",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    stats = json.loads(labels.with_name("labels.jsonl.stats.json").read_text())
    assert stats["trajectories"] == 40
    assert stats["records_skipped"] == 0
    assert stats["mined_not_in_patch"] > 0
    rows = list(read_labels(labels))
    assert len(rows) == stats["labels_written"] == stats["instances"]
    for row in rows:
        assert isinstance(row, LabelRecord)
        assert set(row.patch_files) <= set(row.gold)


def test_missing_plot_extra_names_it(
    tmp_path: Path, small_corpus: tuple[Path, Path], hide_modules: Callable[..., None]
) -> None:
    from catm._output import label_report, plot_histogram
    from catm.errors import MissingExtraError

    trajectories, instances = small_corpus
    labels = tmp_path / "labels.jsonl"
    runner.invoke(app, ["mine", str(trajectories), "-i", str(instances), "-o", str(labels)])
    hide_modules("matplotlib")
    with pytest.raises(MissingExtraError, match=r"catm\[plot\]"):
        plot_histogram(label_report(labels), tmp_path / "w.png", 0.15)
