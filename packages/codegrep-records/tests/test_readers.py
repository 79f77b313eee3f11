"""The row readers: formats, bad rows counted with file and line, unreadable files refused.

Real files in a temp folder: a real gzip file cut in half, a real gzip file with garbage in its
deflate stream, invalid UTF-8, rows nested past the JSON decoder's recursion limit, parquet.
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from codegrep_records import (
    GoldLabel,
    Instance,
    Loaded,
    MissingExtraError,
    Prediction,
    RecordError,
    RecordFileError,
    RowProblem,
    gold_from_instances,
    load_instances,
    load_labels,
    load_predictions,
    read_rows,
)
from codegrep_records.io import load_records, write_records

PATCH = "diff --git a/p/m.py b/p/m.py\n--- a/p/m.py\n+++ b/p/m.py\n@@ -1 +1 @@\n-a\n+b\n"
ROW = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "patch": PATCH}
DEEP = "[" * 1100 + "]" * 1100

Reader = Callable[[Path], Loaded[Any]]
READERS: list[Reader] = [load_instances, load_predictions, load_labels]


def _jsonl(rows: list[Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _instance(n: int) -> dict[str, str]:
    # A problem statement that does not compress away, so half the file is half the rows.
    text = "".join(hashlib.sha256(f"{n}-{j}".encode()).hexdigest() for j in range(8))
    return {"instance_id": f"o__r-{n}", "repo": "o/r", "patch": PATCH, "problem_statement": text}


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


# Formats ----------------------------------------------------------------------------------------


def test_jsonl_with_bad_rows_counts_them(tmp_path: Path) -> None:
    p = tmp_path / "i.jsonl"
    p.write_text(
        json.dumps(ROW) + "\nnot json\n" + json.dumps({"repo": "x"}) + "\n" + json.dumps(ROW) + "\n"
    )
    loaded = load_instances(p)
    assert [i.instance_id for i in loaded.records] == ["o__r-1"]
    messages = [str(x) for x in loaded.problems]
    assert len(messages) == 3
    assert any(":2: not JSON" in m for m in messages)
    assert any("instance_id" in m for m in messages)
    assert any("duplicate" in m for m in messages)


def test_json_list_gzip_and_parquet_give_the_same_instances(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "a.json").write_text(json.dumps([ROW]))
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as fh:
        fh.write(json.dumps(ROW) + "\n")
    with gzip.open(tmp_path / "c.json.gz", "wt") as fh:
        fh.write(json.dumps({"rows": [ROW]}))
    pq.write_table(pa.Table.from_pylist([ROW]), tmp_path / "d.parquet")
    (tmp_path / "e.jsonl").write_text(json.dumps(ROW) + "\n")
    names = ("a.json", "b.jsonl.gz", "c.json.gz", "d.parquet", "e.jsonl")
    got = [load_instances(tmp_path / n) for n in names]
    assert all(g.problems == () for g in got)
    assert all(g.records == got[0].records for g in got)
    assert gold_from_instances(got[0].records)["o__r-1"].files == {"p/m.py"}


@pytest.mark.parametrize("key", ["rows", "data", "instances", "per_instance"])
def test_a_json_object_holding_the_rows(tmp_path: Path, key: str) -> None:
    p = tmp_path / "i.json"
    p.write_text(json.dumps({"meta": {"n": 1}, key: [ROW]}))
    assert [i.instance_id for i in load_instances(p).records] == ["o__r-1"]


def test_parquet_with_swe_bench_columns(tmp_path: Path) -> None:
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "swe_gym.parquet"
    table = pa.table(
        {
            "instance_id": ["o__r-1", "o__r-2"],
            "repo": ["o/r", "o/r"],
            "patch": [PATCH, None],
            "version": ["0.4", None],
            "created_at": pa.array([dt.datetime(2021, 3, 4, 14, 13, 45), None], pa.timestamp("s")),
            "FAIL_TO_PASS": ['["t::a"]', "[]"],
            "gold_files": [["p/m.py"], ["q.py"]],
        }
    )
    pq.write_table(table, p)
    loaded = load_instances(p)
    assert loaded.problems == ()
    first, second = loaded.records
    assert (first.version, first.created_at) == ("0.4", "2021-03-04T14:13:45")
    assert first.FAIL_TO_PASS == ("t::a",)
    assert second.patch == ""
    gold = gold_from_instances(loaded.records)
    assert (gold["o__r-1"].files, gold["o__r-1"].source) == ({"p/m.py"}, "patch")
    assert (gold["o__r-2"].files, gold["o__r-2"].source) == ({"q.py"}, "gold_files")


def test_parquet_without_pyarrow_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / "i.parquet"
    p.write_bytes(b"PAR1")
    # A None entry in sys.modules makes the import fail as if pyarrow were not installed.
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(MissingExtraError, match=r"codegrep-records\[parquet\]") as info:
        load_instances(p)
    assert isinstance(info.value, ImportError)
    assert isinstance(info.value, RecordError)


# The byte-order mark ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["i.jsonl", "i.json", "i.jsonl.gz", "i.json.gz"])
def test_a_byte_order_mark_does_not_make_the_first_row_bad(tmp_path: Path, name: str) -> None:
    p = tmp_path / name
    text = json.dumps([ROW]) if ".json." in name or name.endswith(".json") else _jsonl([ROW])
    data = codecs.BOM_UTF8 + text.encode()
    p.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    loaded = load_instances(p)
    assert loaded.problems == ()
    assert [i.instance_id for i in loaded.records] == ["o__r-1"]


def test_a_byte_order_mark_in_the_middle_is_still_a_bad_row(tmp_path: Path) -> None:
    # Two files joined with `cat`: the second mark is not at the start of the file.
    p = tmp_path / "joined.jsonl"
    second = {**ROW, "instance_id": "o__r-2"}
    p.write_bytes(
        codecs.BOM_UTF8 + _jsonl([ROW]).encode() + codecs.BOM_UTF8 + _jsonl([second]).encode()
    )
    loaded = load_instances(p)
    assert [i.instance_id for i in loaded.records] == ["o__r-1"]
    (problem,) = loaded.problems
    assert problem.line == 2


# Predictions ------------------------------------------------------------------------------------


def test_predictions_round_trip_normalized(tmp_path: Path) -> None:
    out = tmp_path / "p.jsonl"
    write_records(
        out,
        [
            Prediction(
                instance_id="x", files=("./a.py", "/testbed/a.py", "b\\c.py"), scores=(3, 2, 1)
            )
        ],
    )
    (pred,) = load_predictions(out).records
    assert pred.files == ("a.py", "b/c.py")
    assert pred.scores == (3.0, 1.0)


def test_empty_paths_leave_with_their_scores(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    p.write_text(
        _jsonl([{"instance_id": "x", "files": ["", "/repo/a.py", "."], "scores": [3, 2, 1]}])
    )
    (pred,) = load_predictions(p).records
    assert (pred.files, pred.scores) == (("a.py",), (2.0,))


def test_line_range_paths_are_normalized_too(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    row = {
        "instance_id": "x",
        "files": ["/testbed/a.py"],
        "line_ranges": {"/testbed/a.py": [[1, 5]], "./a.py": [[9, 12]], "": [[1, 1]]},
    }
    p.write_text(_jsonl([row]))
    (pred,) = load_predictions(p).records
    assert pred.line_ranges == {"a.py": ((1, 5), (9, 12))}


def test_scores_out_of_line_with_files_skip_the_row(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    rows = [
        {"instance_id": "a", "files": ["x.py", "y.py"], "scores": [1.0]},
        {"instance_id": "b", "files": ["x.py"], "scores": [1.0]},
    ]
    p.write_text(_jsonl(rows))
    loaded = load_predictions(p)
    assert [r.instance_id for r in loaded.records] == ["b"]
    (problem,) = loaded.problems
    assert problem.line == 1
    assert problem.message == (
        "row: scores has 1 value(s) for 2 file(s); give one score per file or none"
    )


def test_an_unknown_prediction_schema_version_is_skipped_and_reported(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    rows = [
        {"instance_id": "a", "files": ["x.py"], "schema_version": 2},
        {"instance_id": "b", "files": ["y.py"]},
    ]
    p.write_text(_jsonl(rows))
    loaded = load_predictions(p)
    assert [r.instance_id for r in loaded.records] == ["b"]
    (problem,) = loaded.problems
    assert problem.line == 1
    assert problem.message == (
        "schema_version: schema_version 2 is newer than this reader knows (1); "
        "upgrade codegrep-records to read it"
    )


def test_a_prediction_with_a_non_finite_score_is_a_counted_skip(tmp_path: Path) -> None:
    p = tmp_path / "pred.jsonl"
    p.write_text(
        '{"instance_id": "a", "files": ["x.py"], "scores": [NaN]}\n'
        '{"instance_id": "b", "files": ["x.py"], "scores": [-Infinity]}\n'
        '{"instance_id": "c", "files": ["x.py"], "scores": [1.0]}\n'
    )
    loaded = load_predictions(p)
    assert [r.instance_id for r in loaded.records] == ["c"]
    assert [x.line for x in loaded.problems] == [1, 2]


# Labels -----------------------------------------------------------------------------------------


def test_labels_gold_list_or_catm_weights(tmp_path: Path) -> None:
    p = tmp_path / "labels.jsonl"
    rows = [
        {"instance_id": "a", "gold": ["x.py", "./y.py"]},
        {
            "instance_id": "b",
            "patch_files": ["p.py"],
            "mined": [{"path": "m1.py", "weight": 0.4}, {"path": "m2.py", "weight": 0.1}],
        },
        {"instance_id": "c", "something": 1},
        {"instance_id": "d", "gold_files": [{"path": "/app/z.py"}]},
        {"instance_id": "e", "patch_files": ["p.py"], "mined": [{"path": "t.py", "weight": 0.15}]},
    ]
    p.write_text(_jsonl(rows))
    loaded = load_labels(p)
    by_id = {lab.instance_id: lab.files for lab in loaded.records}
    assert by_id == {
        "a": {"x.py", "y.py"},
        "b": {"p.py", "m1.py"},
        "d": {"z.py"},
        "e": {"p.py", "t.py"},  # the threshold is inclusive
    }
    assert len(loaded.problems) == 1
    assert {lab.source for lab in loaded.records} == {str(p)}
    assert load_labels(p, threshold=0.05).records[1].files == {"p.py", "m1.py", "m2.py"}


def test_a_newer_label_schema_version_is_skipped(tmp_path: Path) -> None:
    p = tmp_path / "labels.jsonl"
    p.write_text(_jsonl([{"instance_id": "a", "gold": ["x.py"], "schema_version": 3}]))
    loaded = load_labels(p)
    assert loaded.records == ()
    (problem,) = loaded.problems
    assert "schema_version 3 is newer" in problem.message


@pytest.mark.parametrize("row", [{"gold": ["x.py"]}, {"instance_id": "", "gold": []}, [1], 3])
def test_a_label_row_without_an_instance_id_is_skipped(tmp_path: Path, row: Any) -> None:
    p = tmp_path / "labels.jsonl"
    p.write_text(_jsonl([row]))
    loaded = load_labels(p)
    assert loaded.records == ()
    assert [x.message for x in loaded.problems] == ["no instance_id"]


def test_a_label_row_with_bad_patch_files_is_reported_not_emptied(tmp_path: Path) -> None:
    p = tmp_path / "labels.jsonl"
    p.write_text(json.dumps({"instance_id": "a", "patch_files": [1], "mined": []}) + "\n")
    loaded = load_labels(p)
    assert loaded.records == ()
    assert len(loaded.problems) == 1


def test_a_label_row_with_mined_not_a_list_is_a_counted_skip(tmp_path: Path) -> None:
    p = tmp_path / "labels.jsonl"
    rows = [
        {"instance_id": "a", "patch_files": ["x.py"], "mined": 5},
        {"instance_id": "b", "files": 3},
        {"instance_id": "c", "patch_files": ["x.py"], "mined": [{"path": "y.py", "weight": 0.9}]},
    ]
    p.write_text(_jsonl(rows))
    loaded = load_labels(p)
    assert [lab.instance_id for lab in loaded.records] == ["c"]
    assert [x.line for x in loaded.problems] == [1, 2]


@pytest.mark.parametrize("weight", ["high", None, True, float("nan")])
def test_a_label_with_a_non_numeric_weight_is_skipped_not_silently_dropped(
    tmp_path: Path, weight: object
) -> None:
    p = tmp_path / "labels.jsonl"
    row = {
        "instance_id": "a",
        "patch_files": ["x.py"],
        "mined": [{"path": "y.py", "weight": weight}],
    }
    p.write_text(json.dumps(row) + "\n")
    loaded = load_labels(p)
    assert loaded.records == ()
    (problem,) = loaded.problems
    # NaN never reaches the weight check: the decoder refuses it (parse_json).
    assert ("NaN is not a number" if weight != weight else "weight") in problem.message


def test_catm_label_records_read_back_as_their_gold(tmp_path: Path) -> None:
    from codegrep_records import LabelRecord

    record = LabelRecord(
        instance_id="a",
        patch_files=["p.py"],
        mined=[],
        gold=["p.py", "m.py"],
        trajectories=[],
        judge="none",
    )
    p = tmp_path / "labels.jsonl"
    write_records(p, [record])
    (label,) = load_labels(p).records
    assert label.files == {"p.py", "m.py"}
    assert load_records(p, LabelRecord).records == (record,)


# load_records and write_records ----------------------------------------------------------------


def test_load_records_is_generic(tmp_path: Path) -> None:
    p = tmp_path / "gold.jsonl"
    labels = [
        GoldLabel(instance_id="a", files=frozenset({"x.py"}), source="patch"),
        GoldLabel(instance_id="a", files=frozenset({"y.py"}), source="patch"),
    ]
    assert write_records(p, labels) == 2
    loaded = load_records(p, GoldLabel)
    assert loaded.records == (labels[0],)
    assert [x.message for x in loaded.problems] == ["duplicate instance_id 'a'; first one kept"]
    assert load_records(p, GoldLabel, key=None).records == tuple(labels)
    assert load_records(p, GoldLabel, key="source").records == (labels[0],)


@pytest.mark.parametrize("name", ["gold.jsonl", "gold.jsonl.gz"])
def test_write_records_appends_rows_one_call_at_a_time(tmp_path: Path, name: str) -> None:
    # a resumable job adds each finished row; a second call must not replace the first row
    p = tmp_path / name
    labels = [
        GoldLabel(instance_id=iid, files=frozenset({"x.py"}), source="patch") for iid in "abc"
    ]
    for label in labels:
        assert write_records(p, [label], append=True) == 1
    assert load_records(p, GoldLabel).records == tuple(labels)
    assert write_records(p, labels[:1]) == 1  # without append the file is replaced
    assert load_records(p, GoldLabel).records == (labels[0],)


def test_a_duplicate_is_reported_at_its_own_line(tmp_path: Path) -> None:
    p = tmp_path / "i.jsonl"
    p.write_text(json.dumps(ROW) + "\nnot json\n\n" + json.dumps(ROW) + "\n")
    (dup,) = [x for x in load_instances(p).problems if "duplicate" in x.message]
    assert dup.line == 4
    assert str(dup) == f"{p}:4: duplicate instance_id 'o__r-1'; first one kept"


def test_write_records_creates_the_folder_gzips_by_name_and_leaves_out_none(
    tmp_path: Path,
) -> None:
    out = tmp_path / "new" / "deeper" / "p.jsonl.gz"
    n = write_records(out, [Prediction(instance_id="a", files=("x.py",))])
    assert n == 1
    with gzip.open(out, "rt", encoding="utf-8") as fh:
        row = json.loads(fh.read())
    assert row == {"schema_version": 1, "instance_id": "a", "files": ["x.py"], "fallback": False}


def test_read_rows_hands_back_problems_as_values(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    p.write_text('{"a": 1}\n\nnope\n[2]\n')
    rows = list(read_rows(p))
    assert [line for line, _ in rows] == [1, 3, 4]
    assert rows[0][1] == {"a": 1}
    assert isinstance(rows[1][1], RowProblem)
    assert rows[2][1] == [2]


def test_a_row_that_is_not_an_object_is_a_counted_skip(tmp_path: Path) -> None:
    p = tmp_path / "i.jsonl"
    p.write_text('3\n"s"\nnull\n[1]\ntrue\n' + json.dumps(ROW) + "\n")
    loaded = load_instances(p)
    assert [i.instance_id for i in loaded.records] == ["o__r-1"]
    assert [x.line for x in loaded.problems] == [1, 2, 3, 4, 5]
    assert all(x.message.startswith("row: ") for x in loaded.problems)


# Files that cannot be read ---------------------------------------------------------------------


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RecordFileError, match="no such file"):
        load_instances(tmp_path / "nope.jsonl")


@pytest.mark.parametrize("name", ["inst.jsonl.gz", "inst.json.gz"])
def test_a_truncated_gzip_is_an_error_naming_the_file(tmp_path: Path, name: str) -> None:
    rows = [_instance(n) for n in range(200)]
    text = _jsonl(rows) if name.endswith(".jsonl.gz") else json.dumps(rows)
    path = _truncated_gz(tmp_path / name, text)
    for read in READERS:
        with pytest.raises(RecordFileError, match="truncated") as info:
            read(path)
        assert str(path) in str(info.value)


def test_a_corrupt_gzip_stream_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = _corrupt_gz(tmp_path / "inst.jsonl.gz", _jsonl([_instance(n) for n in range(50)]))
    with pytest.raises(RecordFileError, match="corrupt") as info:
        load_instances(path)
    assert str(path) in str(info.value)


def test_a_file_that_is_not_gzip_at_all(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl.gz"
    path.write_text(_jsonl([ROW]))
    with pytest.raises(RecordFileError, match="not a valid gzip file"):
        load_instances(path)


def test_a_directory_is_an_error_even_with_a_parquet_name(tmp_path: Path) -> None:
    for name in ("d.jsonl", "d.jsonl.gz", "d.parquet"):
        (tmp_path / name).mkdir()
        with pytest.raises(RecordFileError, match="directory"):
            load_instances(tmp_path / name)


def test_an_unreadable_parquet_file_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "i.parquet"
    p.write_text("not parquet")
    with pytest.raises(RecordFileError, match="parquet"):
        load_instances(p)


def test_parquet_cells_python_cannot_hold_are_an_error(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "i.parquet"
    # A timestamp far past year 9999 reads fine in Arrow but overflows datetime in to_pylist().
    when = pa.array([2**62], pa.timestamp("ms"))
    pq.write_table(pa.table({"instance_id": ["a"], "repo": ["o/r"], "created_at": when}), p)
    with pytest.raises(RecordFileError, match="parquet"):
        load_instances(p)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (DEEP, "nested too deeply"),
        ('{"rows": ' + DEEP + "}", "nested too deeply"),
        ("3", "expected a JSON list of rows"),
        ('{"not_rows": 1}', "expected a JSON list of rows"),
        ("", "not JSON"),
    ],
)
def test_a_json_file_that_holds_no_rows_is_an_error(tmp_path: Path, text: str, match: str) -> None:
    p = tmp_path / "rows.json"
    p.write_text(text)
    with pytest.raises(RecordFileError, match=match):
        load_instances(p)


def test_an_invalid_utf8_json_file_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "inst.json"
    p.write_bytes(b'[{"instance_id": "bad\xff", "repo": "o/r"}]')
    with pytest.raises(RecordFileError, match="UTF-8"):
        load_instances(p)


# Rows that cannot be read: counted, never a crash ----------------------------------------------


def test_an_invalid_utf8_line_is_a_counted_skip(tmp_path: Path) -> None:
    p = tmp_path / "inst.jsonl"
    p.write_bytes(
        _jsonl([_instance(0)]).encode()
        + b'{"instance_id": "bad\xff", "repo": "o/r"}\n'
        + _jsonl([_instance(2)]).encode()
    )
    loaded = load_instances(p)
    assert [i.instance_id for i in loaded.records] == ["o__r-0", "o__r-2"]
    (problem,) = loaded.problems
    assert problem.line == 2
    assert problem.message == "not UTF-8 (byte 0xff at character 21)"


def test_binary_garbage_is_counted_not_a_crash(tmp_path: Path) -> None:
    p = tmp_path / "pred.jsonl"
    p.write_bytes(bytes(b for b in range(256) if b not in b"\n\r") * 4 + b"\n\x80\x81\n")
    loaded = load_predictions(p)
    assert loaded.records == ()
    assert len(loaded.problems) == 2


@pytest.mark.parametrize("reader", READERS)
def test_a_row_nested_too_deeply_is_a_counted_skip(tmp_path: Path, reader: Reader) -> None:
    p = tmp_path / "rows.jsonl"
    good = {"instance_id": "a", "repo": "o/r", "gold": []}
    p.write_text(DEEP + "\n" + json.dumps(good) + "\n")
    loaded = reader(p)
    assert len(loaded.records) == 1
    (problem,) = loaded.problems
    assert problem.line == 1
    assert "nested too deeply" in problem.message


def test_an_integer_too_long_to_read_is_a_counted_skip(tmp_path: Path) -> None:
    p = tmp_path / "pred.jsonl"
    p.write_text('{"instance_id": "a", "tokens": 1' + "0" * 5000 + "}\n" + _jsonl([ROW]))
    loaded = load_predictions(p)
    assert [r.instance_id for r in loaded.records] == ["o__r-1"]
    (problem,) = loaded.problems
    assert problem.line == 1


def test_a_deep_json_list_inside_a_string_field_is_a_counted_skip(tmp_path: Path) -> None:
    p = tmp_path / "i.jsonl"
    p.write_text(_jsonl([{**ROW, "FAIL_TO_PASS": DEEP}, {**ROW, "instance_id": "o__r-2"}]))
    loaded = load_instances(p)
    assert [i.instance_id for i in loaded.records] == ["o__r-2"]
    (problem,) = loaded.problems
    assert problem.message == "FAIL_TO_PASS: the JSON list in this string is nested too deeply"


_HOSTILE: dict[str, bytes] = {
    "empty.jsonl": b"",
    "garbage.jsonl": bytes(range(256)) * 3,
    "badutf8.jsonl": b'{"instance_id": "\xff"}\n',
    "scalars.jsonl": b'3\n"s"\nnull\n[1]\ntrue\n',
    "deep.jsonl": DEEP.encode() + b"\n",
    "bigint.jsonl": b'{"instance_id": 1' + b"0" * 5000 + b"}\n",
    "bom-only.jsonl": codecs.BOM_UTF8,
}


@pytest.mark.parametrize("name", list(_HOSTILE))
@pytest.mark.parametrize("reader", READERS)
def test_hostile_jsonl_is_counted_never_raised(tmp_path: Path, name: str, reader: Reader) -> None:
    p = tmp_path / name
    p.write_bytes(_HOSTILE[name])
    loaded = reader(p)
    assert loaded.records == ()
    assert all(isinstance(x, RowProblem) and x.path == str(p) for x in loaded.problems)


def test_instances_read_as_records(tmp_path: Path) -> None:
    p = tmp_path / "i.jsonl"
    p.write_text(_jsonl([ROW]))
    (inst,) = load_records(p, Instance).records
    assert inst == Instance.model_validate(ROW)
