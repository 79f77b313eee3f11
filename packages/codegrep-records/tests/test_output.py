"""Writing outputs: a link planted at an output's name (or in place of its folder) is never
followed, and the file it points to is left as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from codegrep_records.io import open_appending, open_replacing, write_atomically


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    target = tmp_path / "outside" / "precious.txt"
    target.parent.mkdir()
    target.write_text("keep me\n")
    return target


def test_write_atomically_replaces_the_file_in_one_step(tmp_path: Path) -> None:
    out = tmp_path / "run" / "report.json"
    out.parent.mkdir()
    out.write_text("old\n")
    assert write_atomically(out, "new\n") == out
    assert out.read_text() == "new\n"
    write_atomically(out, b"\x00bytes")
    assert out.read_bytes() == b"\x00bytes"
    assert sorted(p.name for p in out.parent.iterdir()) == ["report.json"]  # no temp left


def test_a_link_at_the_output_is_replaced_not_followed(tmp_path: Path, outside: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "report.json").symlink_to(outside)
    write_atomically(run / "report.json", "the report\n", within=run)
    assert outside.read_text() == "keep me\n"
    assert not (run / "report.json").is_symlink()
    assert (run / "report.json").read_text() == "the report\n"


def test_a_folder_that_is_a_link_out_is_refused(tmp_path: Path, outside: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "monitor").symlink_to(outside.parent, target_is_directory=True)
    for write in (
        lambda: write_atomically(run / "monitor" / "precious.txt", "x", within=run),
        lambda: open_appending(run / "monitor" / "precious.txt", within=run).close(),
    ):
        with pytest.raises(OSError, match="outside"):
            write()
    assert outside.read_text() == "keep me\n"
    assert sorted(p.name for p in outside.parent.iterdir()) == ["precious.txt"]
    # a link inside `within` is the run's own layout: followed
    (run / "real").mkdir()
    (run / "alias").symlink_to(run / "real", target_is_directory=True)
    write_atomically(run / "alias" / "f.txt", "ok", within=run)
    assert (run / "real" / "f.txt").read_text() == "ok"


def test_a_destination_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    for name in ("dir", "fifo"):
        with pytest.raises(OSError, match="not a regular file"):
            write_atomically(tmp_path / name, "x")
        with pytest.raises(OSError, match="not a regular file"):
            open_appending(tmp_path / name)
    assert (tmp_path / "dir").is_dir()


def test_open_appending_appends_and_refuses_a_link(tmp_path: Path, outside: Path) -> None:
    log = tmp_path / "stage.log"
    for line in ("one\n", "two\n"):
        with open_appending(log) as fh:
            fh.write(line)
    assert log.read_text() == "one\ntwo\n"
    (tmp_path / "planted.log").symlink_to(outside)
    with pytest.raises(OSError, match="link"):
        open_appending(tmp_path / "planted.log")
    assert outside.read_text() == "keep me\n"


def test_open_replacing_streams_then_replaces_and_never_follows_a_link(
    tmp_path: Path, outside: Path
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "rows.jsonl").symlink_to(outside)
    with open_replacing(run / "rows.jsonl", within=run) as fh:
        fh.write("{}\n")
        assert outside.read_text() == "keep me\n"
        assert (run / "rows.jsonl").is_symlink()  # replaced when the block ends, not before
    assert outside.read_text() == "keep me\n"
    assert (run / "rows.jsonl").read_text() == "{}\n"
    assert not (run / "rows.jsonl").is_symlink()

    def half_then_fail() -> None:
        with open_replacing(run / "rows.jsonl") as fh:
            fh.write("half\n")
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        half_then_fail()
    assert (run / "rows.jsonl").read_text() == "{}\n"
    assert sorted(p.name for p in run.iterdir()) == ["rows.jsonl"]  # the temporary file is gone
    write_atomically(run / "go.sh", "echo\n", mode=0o755)
    assert (run / "go.sh").stat().st_mode & 0o777 == 0o755
