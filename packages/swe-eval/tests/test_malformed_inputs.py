"""Hostile input files: each is a counted skip or a clean exit 2 naming the file, never a crash.

The readers themselves (codegrep-records) have their own tests of every such file; these hold the
swe-eval side: the CLI's exit codes and messages, the peer converters, the baselines.
Real files in a temp folder: a real gzip file cut in half, a real gzip file with garbage in its
deflate stream, invalid UTF-8, rows nested past the JSON decoder's recursion limit, and so on.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from contextlib import nullcontext
from pathlib import Path

import pytest
from codegrep_records import Instance, RecordFileError
from swe_eval import convert_peer
from swe_eval._corpus import FileSource, MappingTree
from swe_eval.cli import app
from swe_eval.predict import predict
from typer.testing import CliRunner

runner = CliRunner()

DEEP = "[" * 1100 + "]" * 1100


def _patch(path: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"


def _instance(n: int) -> dict[str, str]:
    # A problem statement that does not compress away, so half the file is half the rows.
    text = "".join(hashlib.sha256(f"{n}-{j}".encode()).hexdigest() for j in range(8))
    return {
        "instance_id": f"o__r-{n}",
        "repo": "o/r",
        "patch": _patch(f"r/m{n}.py"),
        "problem_statement": text,
    }


def _prediction(n: int) -> dict[str, object]:
    return {"instance_id": f"o__r-{n}", "files": [f"r/m{n}.py"], "scores": [1.0]}


def _jsonl(rows: list[dict[str, object]] | list[dict[str, str]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture
def good(tmp_path: Path) -> dict[str, Path]:
    inst = tmp_path / "inst.jsonl"
    inst.write_text(_jsonl([_instance(n) for n in range(40)]))
    pred = tmp_path / "pred.jsonl"
    pred.write_text(_jsonl([_prediction(n) for n in range(40)]))
    return {"inst": inst, "pred": pred}


def _truncated_gz(path: Path, text: str) -> Path:
    data = gzip.compress(text.encode())
    path.write_bytes(data[: len(data) // 2])
    return path


def _corrupt_gz(path: Path, text: str) -> Path:
    data = bytearray(gzip.compress(text.encode()))
    # Keep the 10-byte gzip header; 0xff starts a deflate block of the reserved type 3.
    data[10:60] = b"\xff" * 50
    path.write_bytes(bytes(data))
    return path


def _says(output: str, text: str) -> bool:
    """`text` is in `output`, wherever rich wrapped the lines (long paths wrap mid-word)."""
    return "".join(text.split()) in "".join(output.split())


def _retrieval(inst: Path, pred: Path, *extra: str) -> object:
    return runner.invoke(
        app, ["retrieval", "-i", str(inst), "-p", str(pred), "--resamples", "0", *extra]
    )


# 1. A truncated .gz ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["inst.jsonl.gz", "inst.json.gz"])
def test_a_truncated_gzip_is_a_record_file_error_naming_the_file(tmp_path: Path, name: str) -> None:
    # The readers' own tests (codegrep-records) cover load_*; a peer file is read the same way.
    rows = [_instance(n) for n in range(200)]
    text = _jsonl(rows) if name.endswith(".jsonl.gz") else json.dumps(rows)
    path = _truncated_gz(tmp_path / name, text)
    with pytest.raises(RecordFileError, match="truncated") as info:
        convert_peer("locagent", path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("which", ["inst", "pred"])
def test_cli_on_a_truncated_gzip_exits_2_saying_so(
    good: dict[str, Path], tmp_path: Path, which: str
) -> None:
    rows = (
        [_instance(n) for n in range(200)]
        if which == "inst"
        else [_prediction(n) for n in range(200)]
    )
    bad = _truncated_gz(tmp_path / f"{which}.jsonl.gz", _jsonl(rows))
    paths = {**good, which: bad}
    res = _retrieval(paths["inst"], paths["pred"])
    assert res.exit_code == 2, res.output
    assert not _says(res.output, "Aborted")
    assert _says(res.output, "truncated")
    assert _says(res.output, bad.name)
    assert res.exception is None or isinstance(res.exception, SystemExit)


# 2. A corrupted .gz ----------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["retrieval", "cut", "convert"])
def test_cli_on_a_corrupt_gzip_exits_2_saying_so(
    good: dict[str, Path], tmp_path: Path, command: str
) -> None:
    bad = _corrupt_gz(tmp_path / "pred.jsonl.gz", _jsonl([_prediction(n) for n in range(50)]))
    if command == "convert":
        args = ["convert", "locagent", str(bad), "-o", str(tmp_path / "o.jsonl")]
    else:
        args = [command, "-i", str(good["inst"]), "-p", str(bad)]
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert _says(res.output, "corrupt")
    assert _says(res.output, bad.name)
    assert res.exception is None or isinstance(res.exception, SystemExit)


# 3. -f json carries the skipped rows -----------------------------------------------------------


def test_json_report_carries_the_skipped_rows(good: dict[str, Path], tmp_path: Path) -> None:
    with good["inst"].open("a") as fh:
        fh.write("not json\n")
    with good["pred"].open("a") as fh:
        fh.write(json.dumps({"files": ["x.py"]}) + "\n")
        fh.write(json.dumps(_prediction(0)) + "\n")
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        json.dumps({"instance_id": "o__r-0", "gold": ["r/m0.py"]}) + "\n" + json.dumps([1]) + "\n"
    )
    res = _retrieval(good["inst"], good["pred"], "-l", str(labels), "-f", "json")
    assert res.exit_code == 0, res.output
    skipped = json.loads(res.stdout)["skipped_rows"]
    assert skipped["total"] == 4
    assert skipped["by_file"] == {str(good["inst"]): 1, str(labels): 1, str(good["pred"]): 2}
    rows = {(r["path"], r["line"]): r["message"] for r in skipped["rows"]}
    assert rows[(str(good["inst"]), 41)].startswith("not JSON")
    assert "duplicate" in rows[(str(good["pred"]), 42)]
    # Consistent with what the text says on stderr.
    assert _says(res.stderr, "2 prediction (pred.jsonl) row(s) skipped")


def test_json_report_says_zero_skipped_rows_when_none_were(good: dict[str, Path]) -> None:
    res = _retrieval(good["inst"], good["pred"], "-f", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["skipped_rows"] == {"total": 0, "by_file": {}, "rows": []}


# Rows skipped, never a crash (the readers' own cases are tested in codegrep-records) ------------


def test_a_non_finite_ranking_score_skips_the_row(tmp_path: Path) -> None:
    chrono = tmp_path / "c.jsonl"
    # Python's json reads NaN and Infinity; written back they would become null.
    chrono.write_text(
        '{"instance_id": "a", "hybrid": [["x.py", NaN]]}\n'
        '{"instance_id": "b", "hybrid": [["x.py", Infinity]]}\n'
        '{"instance_id": "c", "hybrid": [["x.py", 0.5]]}\n'
    )
    conv = convert_peer("chronorepo", chrono)
    assert [p.instance_id for p in conv.predictions] == ["c"]
    assert [x.line for x in conv.problems] == [1, 2]
    # The row reader refuses the constants themselves (codegrep-records' parse_json).
    assert [x.message for x in conv.problems] == [
        "not JSON: NaN is not a number JSON allows",
        "not JSON: Infinity is not a number JSON allows",
    ]


def test_scores_out_of_line_with_files_are_a_reported_row_not_a_silent_drop(
    good: dict[str, Path], tmp_path: Path
) -> None:
    """swe-eval 0.1 kept such a row and dropped its scores; now the row is skipped and said."""
    pred = tmp_path / "pred.jsonl"
    rows = [_prediction(n) for n in range(40)]
    rows[3] = {**rows[3], "files": ["r/m3.py", "r/x.py"], "scores": [1.0]}
    pred.write_text(_jsonl(rows))
    res = _retrieval(good["inst"], pred, "-f", "json")
    assert res.exit_code == 0, res.output
    (row,) = json.loads(res.stdout)["skipped_rows"]["rows"]
    assert (row["path"], row["line"]) == (str(pred), 4)
    assert "scores has 1 value(s) for 2 file(s)" in row["message"]
    assert _says(res.stderr, "1 prediction (pred.jsonl) row(s) skipped")


def test_a_newer_prediction_schema_is_a_reported_row(good: dict[str, Path], tmp_path: Path) -> None:
    pred = tmp_path / "pred.jsonl"
    rows = [_prediction(n) for n in range(40)]
    rows[0] = {**rows[0], "schema_version": 2}
    pred.write_text(_jsonl(rows))
    res = _retrieval(good["inst"], pred, "-f", "json")
    assert res.exit_code == 0, res.output
    (row,) = json.loads(res.stdout)["skipped_rows"]["rows"]
    assert row["line"] == 1
    assert "schema_version 2 is newer than this reader knows (1)" in row["message"]


class _NanRetriever:
    name = "nan"

    def rank(self, source: FileSource, query: str) -> list[tuple[str, float]]:
        return [(path, float("nan")) for path in source.files()]


def test_a_ranking_with_a_nan_score_is_a_failed_instance_not_a_crash() -> None:
    tree = MappingTree({"a.py": b"x"})
    inst = Instance(instance_id="a", repo="o/r", problem_statement="x")
    (outcome,) = predict([inst], _NanRetriever(), lambda _: nullcontext(tree))
    assert outcome.prediction is None
    assert outcome.error is not None
    assert "finite" in outcome.error


# Every hostile file, in every role, through the CLI ---------------------------------------------

_HOSTILE: dict[str, bytes] = {
    "empty.jsonl": b"",
    "empty.json": b"",
    "empty.jsonl.gz": b"",
    "empty.parquet": b"",
    "garbage.jsonl": bytes(range(256)) * 3,
    "garbage.json": bytes(range(256)) * 3,
    "garbage.jsonl.gz": bytes(range(256)) * 3,
    "badutf8.jsonl": b'{"instance_id": "\xff"}\n',
    "badutf8.json": b'[{"instance_id": "\xff"}]',
    "scalars.jsonl": b'3\n"s"\nnull\n[1]\ntrue\n',
    "scalar.json": b"3",
    "object.json": b'{"not_rows": 1}',
    "deep.jsonl": DEEP.encode() + b"\n",
    "deep.json": DEEP.encode(),
    "bigint.jsonl": b'{"instance_id": 1' + b"0" * 5000 + b"}\n",
}


def _hostile(tmp_path: Path, name: str) -> Path:
    p = tmp_path / "hostile" / name
    p.parent.mkdir(exist_ok=True)
    if name == "dir.jsonl":
        p.mkdir()
    elif name == "truncated.jsonl.gz":
        _truncated_gz(p, _jsonl([_instance(n) for n in range(100)]))
    elif name == "corrupt.jsonl.gz":
        _corrupt_gz(p, _jsonl([_instance(n) for n in range(100)]))
    else:
        p.write_bytes(_HOSTILE[name])
    return p


@pytest.mark.parametrize("name", [*_HOSTILE, "dir.jsonl", "truncated.jsonl.gz", "corrupt.jsonl.gz"])
@pytest.mark.parametrize("role", ["instances", "predictions", "labels", "convert", "cut"])
def test_every_hostile_file_is_a_skip_or_a_clean_exit_2(
    good: dict[str, Path], tmp_path: Path, name: str, role: str
) -> None:
    bad = _hostile(tmp_path, name)
    if role == "instances":
        args = ["retrieval", "-i", str(bad), "-p", str(good["pred"]), "--resamples", "0"]
    elif role == "predictions":
        args = ["retrieval", "-i", str(good["inst"]), "-p", str(bad), "--resamples", "0"]
    elif role == "labels":
        args = ["retrieval", "-i", str(good["inst"]), "-p", str(good["pred"]), "-l", str(bad)]
        args += ["--resamples", "0"]
    elif role == "convert":
        args = ["convert", "chronorepo", str(bad), "-o", str(tmp_path / "o.jsonl")]
    else:
        args = ["cut", "-i", str(good["inst"]), "-p", str(bad)]
    res = runner.invoke(app, args)
    assert res.exit_code in (0, 2), res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert not _says(res.output, "Aborted")
    if res.exit_code == 2:
        assert _says(res.output, bad.name), res.output
