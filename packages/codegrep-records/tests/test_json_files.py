"""The one hardened JSON/text reader: hostile documents are one-line errors, never tracebacks.

Real files in a temp folder: nesting 100,000 deep, `1e999`, a 5,000-digit integer, a list where
an object belongs, a corrupt and a truncated `.json.gz`, invalid UTF-8, a symbolic link, and
random bytes and random JSON-ish text from hypothesis.
"""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path

import pytest
from codegrep_records import RecordFileError, read_rows
from codegrep_records._json_files import MAX_JSON_DEPTH
from codegrep_records.io import (
    dumps_json,
    parse_json,
    read_json_file,
    read_json_object,
    read_text_file,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DEEP = "[" * 100_000 + "]" * 100_000
SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _error(path: Path, **kwargs: bool) -> str:
    with pytest.raises(RecordFileError) as info:
        read_json_object(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    return message


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (DEEP, "nested too deeply"),
        ('{"a": ' + "[" * 100_000, "nested too deeply"),  # unbalanced as well
        ('{"x": 1e999}', "number out of range: 1e999"),
        ('{"x": -1e999}', "number out of range: -1e999"),
        ('{"x": 1' + "0" * 5000 + "}", "number too long"),
        ('{"x": 0.' + "1" * 5000 + "}", "number too long"),
        ('{"x": NaN}', "NaN is not a number"),
        ('{"x": Infinity}', "Infinity is not a number"),
        ("[1, 2]", "expected a JSON object, found a list"),
        ('"text"', "expected a JSON object, found a string"),
        ("", "not JSON: Expecting value (line 1, column 1)"),
        ("{,}", "not JSON"),
    ],
)
def test_hostile_json_is_a_one_line_error(tmp_path: Path, text: str, reason: str) -> None:
    p = tmp_path / "state.json"
    p.write_text(text)
    t0 = time.perf_counter()
    assert reason in _error(p)
    assert time.perf_counter() - t0 < 1.0


def test_a_deep_document_names_the_limit_and_a_shallow_one_reads(tmp_path: Path) -> None:
    ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse_json(ok) is not None
    with pytest.raises(ValueError, match=f"more than {MAX_JSON_DEPTH} levels"):
        parse_json("[" + ok + "]")
    # Brackets inside strings are text, not nesting.
    assert parse_json(json.dumps({"s": DEEP})) == {"s": DEEP}


def test_allow_nan_admits_what_python_writes_and_nothing_more() -> None:
    value = parse_json("[NaN, Infinity, -Infinity, 1.5]", allow_nan=True)
    assert value[0] != value[0]  # NaN
    assert value[1:] == [float("inf"), float("-inf"), 1.5]
    with pytest.raises(ValueError, match="number out of range"):
        parse_json("[1e999]", allow_nan=True)


def test_invalid_utf8_names_the_byte_and_offset(tmp_path: Path) -> None:
    p = tmp_path / "meta.json"
    p.write_bytes(b'{"a": "\xff"}')
    assert _error(p) == f"{p}: not UTF-8 (byte 0xff at offset 7)"


def test_a_byte_order_mark_is_allowed(tmp_path: Path) -> None:
    p = tmp_path / "meta.json"
    p.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert read_json_object(p) == {"a": 1}


def test_gzip_reads_and_broken_gzip_is_an_error(tmp_path: Path) -> None:
    good = tmp_path / "r.json.gz"
    good.write_bytes(gzip.compress(b'{"a": [1, 2.5]}'))
    assert read_json_object(good) == {"a": [1, 2.5]}
    data = gzip.compress(json.dumps({"k": list(range(2000))}).encode())
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    assert "truncated gzip file" in _error(cut)
    corrupt = tmp_path / "corrupt.json.gz"
    corrupt.write_bytes(data[:10] + b"\xff" * 50 + data[60:])
    assert "corrupt gzip data" in _error(corrupt)
    plain = tmp_path / "plain.json.gz"
    plain.write_bytes(b'{"a": 1}')
    assert "not a valid gzip file" in _error(plain)


def test_a_gzip_bomb_stops_at_the_size_bound(tmp_path: Path) -> None:
    p = tmp_path / "bomb.json.gz"
    p.write_bytes(gzip.compress(b" " * (8 << 20)))
    with pytest.raises(RecordFileError, match="larger than 1048576 bytes"):
        read_json_file(p, max_bytes=1 << 20)


def test_a_symbolic_link_is_refused_when_asked_and_followed_otherwise(tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_text('{"a": 1}')
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert read_json_object(link) == {"a": 1}
    assert _error(link, refuse_links=True) == f"{link}: is a symbolic link, which is not followed"
    rows = tmp_path / "rows.jsonl"
    rows.symlink_to(tmp_path / "real.json")
    with pytest.raises(RecordFileError, match="symbolic link"):
        list(read_rows(rows, refuse_links=True))


def test_missing_directory_and_fifo(tmp_path: Path) -> None:
    assert _error(tmp_path / "nope.json") == f"{tmp_path / 'nope.json'}: no such file"
    assert "is a directory" in _error(tmp_path)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    # The untrusted mode opens without blocking on a FIFO that has no writer, then refuses it.
    assert _error(fifo, refuse_links=True) == f"{fifo}: is not a regular file"


def test_jsonl_rows_with_hostile_numbers_are_counted(tmp_path: Path) -> None:
    p = tmp_path / "rows.jsonl"
    p.write_text('{"a": 1e999}\n{"a": 1' + "0" * 5000 + '}\n{"a": 1}\n' + DEEP + "\n")
    rows = list(read_rows(p))
    assert rows[2] == (3, {"a": 1})
    messages = [str(r[1]) for r in rows if r[0] != 3]
    assert "number out of range" in messages[0]
    assert "number too long" in messages[1]
    assert "nested too deeply" in messages[2]


def test_read_text_file_decodes_inside_its_checks(tmp_path: Path) -> None:
    p = tmp_path / "summary.txt"
    p.write_bytes(b"ok\n\x80")
    with pytest.raises(RecordFileError, match="not UTF-8"):
        read_text_file(p)


# Properties -------------------------------------------------------------------------------------

_JSONISH = st.text(alphabet='[]{}",:0123456789.eE+-truefalsnul \\\n\x00\udcff²٣', max_size=300)


@SETTINGS
@given(text=_JSONISH)
def test_parse_json_raises_only_value_error(text: str) -> None:
    message = ""
    try:
        parse_json(text)
    except ValueError as exc:
        message = str(exc)
    assert "\n" not in message


@SETTINGS
@given(data=st.binary(max_size=300), gz=st.booleans())
def test_any_bytes_read_or_give_a_record_file_error(tmp_path: Path, data: bytes, gz: bool) -> None:
    p = tmp_path / ("x.json.gz" if gz else "x.json")
    p.write_bytes(data)
    message = str(p)
    try:
        read_json_file(p)
    except RecordFileError as exc:
        message = str(exc)
    assert "\n" not in message
    assert message.startswith(str(p))


_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=30,
)


@SETTINGS
@given(value=_VALUES)
def test_every_ordinary_document_reads_back_as_json_does(value: object) -> None:
    text = json.dumps(value)
    assert parse_json(text) == json.loads(text)


def test_dumps_json_writes_what_parse_json_reads_back() -> None:
    big = 1.7e308
    value = {"kl": [big, big * 10, float("nan")], "pair": (1, -big * 10), "ok": 0.5}
    text = dumps_json(value, indent=2)
    assert parse_json(text) == {"kl": [big, None, None], "pair": [1, None], "ok": 0.5}
    assert dumps_json({"a": 1}) == '{"a": 1}'  # the common case, unchanged
    with pytest.raises(TypeError):
        dumps_json({"a": object()})  # what json cannot write still raises
