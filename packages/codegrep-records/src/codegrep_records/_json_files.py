"""One hardened way to read a JSON document or a text file that came from outside.

Every file the toolkit reads may be hostile: nested a hundred thousand levels deep, holding a
number Python cannot or should not hold (`1e999`, a 5,000-digit integer, `NaN`), bytes that are
not UTF-8, a truncated or corrupt gzip stream, a gzip bomb, a symbolic link to somewhere else.
`parse_json` turns each of those into a `ValueError` with a one-line reason; `read_json_file`,
`read_json_object` and `read_text_file` into a `RecordFileError` that starts with the path.
The row readers (`read_rows`) decode each JSON Lines row with `parse_json` too.

Not for: validating what the document means (the callers' typed records do that).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import stat
import zlib
from itertools import accumulate
from pathlib import Path
from typing import Any

from codegrep_records.errors import RecordFileError

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_NUMBER_CHARS",
    "dumps_json",
    "finite_json",
    "parse_json",
    "read_json_file",
    "read_json_object",
    "read_text_file",
]

# No record of the toolkit nests past a dozen levels; 200 keeps every consumer (pydantic,
# json.dumps, repr) far from Python's recursion limit of 1,000.
MAX_JSON_DEPTH = 200
# The longest float repr is 24 characters; a count or a step needs fewer. A number longer than
# this is a hostile one (Python refuses integers past 4,300 digits anyway, with a traceback).
MAX_NUMBER_CHARS = 64
# The largest document read whole (after gunzip): state files, reports and args are kilobytes;
# a downstream report of a full run is megabytes.
MAX_FILE_BYTES = 512 * 1024 * 1024

# A JSON string, unrolled so that a long one is one linear scan; an unterminated one is left
# alone (the decoder reports it).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_CHUNK = 1 << 20
# Where a decoded string may hold a surrogate: a `\uD800`-`\uDFFF` escape, or one in the text
# itself (bytes read with `surrogateescape`). Only then is the decoded value checked (pairs, as
# Python's own json.dumps writes every character past U+FFFF, are text; a lone one is not).
_SURROGATE = re.compile("\\\\u[dD][89a-fA-F]|[\ud800-\udfff]")


def _too_deep(text: str, limit: int) -> bool:
    """Whether the brackets of `text` (outside strings) nest deeper than `limit`.

    The running depth is summed in C (`accumulate` over a `map`), not by a Python loop per
    character: a million brackets take milliseconds. Unbalanced text is the decoder's to refuse.
    """
    if text.count("[") + text.count("{") <= limit:
        return False
    skeleton = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, skeleton)), default=0) > limit


def _short(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:12]}...({len(text)} characters)"


def _parse_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"number too long: {_short(text)}")
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"number too long: {_short(text)}")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {_short(text)}")
    return value


def _parse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


_CONSTANTS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def parse_json(text: str, *, max_depth: int = MAX_JSON_DEPTH, allow_nan: bool = False) -> Any:
    """`json.loads` for hostile text: every way it can fail is a `ValueError` with one line.

    Refused: nesting deeper than `max_depth` (checked before decoding), `NaN` / `Infinity`, a
    number that overflows to infinity (`1e999`) or is longer than `MAX_NUMBER_CHARS`, a string
    (or key) that decodes to a lone surrogate (`"\\udce9"`: no text a record can carry; a pair,
    `"\\ud83d\\ude00"`, is one character and fine), and anything that is not JSON.
    `allow_nan` admits the `NaN` / `Infinity` / `-Infinity` that Python's own `json.dumps`
    writes (a training log's NaN loss is data); `1e999` stays refused, nothing writes it. The
    message is the reason alone (`Expecting value (line 1, column 1)`, `nested too deeply to
    read ...`); callers put "not JSON: " and the file in front.
    """
    if _too_deep(text, max_depth):
        raise ValueError(f"nested too deeply to read (more than {max_depth} levels)")
    try:
        value = json.loads(
            text,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_CONSTANTS.__getitem__ if allow_nan else _parse_constant,
        )
    except json.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:  # unbalanced brackets slip past _too_deep; the decoder stops here
        raise ValueError("nested too deeply to read") from None
    if _SURROGATE.search(text) is not None:
        _refuse_lone_surrogates(value)
    return value


def _refuse_lone_surrogates(value: Any) -> None:
    """`ValueError` when a string of `value` (a key too) holds a lone surrogate: JSON's
    `"\\udce9"` decodes to one, and no UTF-8 writer takes it (a record that carried one could
    not be written). The message does not echo it."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"a string holds a lone surrogate (U+{ord(exc.object[exc.start]):04X}), "
            "which is not Unicode text"
        ) from None


def finite_json(value: Any) -> Any:
    """`value` with every float that is not finite (NaN, an overflow to infinity) as `None`,
    tuples as lists: what JSON can hold. Mapping keys are kept as they are."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(v) for v in value]
    return value


def dumps_json(value: Any, *, indent: int | None = None) -> str:
    """The one way the toolkit writes a JSON document: strict JSON every reader accepts.

    `json.dumps` writes `NaN` and `Infinity` by default, which no JSON parser (and not
    `parse_json`) reads back; here they are `null` (a figure with nothing behind it, or one
    that overflowed: a sum of KLs of 1.7e308). Anything else `json.dumps` refuses still raises.
    """
    try:
        return json.dumps(value, indent=indent, allow_nan=False)
    except ValueError:  # a non-finite float somewhere: walk it only then
        return json.dumps(finite_json(value), indent=indent, allow_nan=False)


def open_regular(p: Path, refuse_links: bool = False) -> int:
    """A read-only descriptor on `p`; a directory is refused.

    `refuse_links` is the mode for files in a place someone else controls: a symbolic link as
    the last component is refused by open() itself (no check-then-open race), and so is
    anything but a regular file (a FIFO would block, a device never end). Without it a pipe
    (`<(zcat x.gz)`, /dev/stdin) reads as a file does.
    """
    flags = os.O_RDONLY
    if refuse_links:  # the last component only: a link there is refused by open() itself
        # O_NONBLOCK: a FIFO without a writer opens at once (and is refused below) instead of
        # blocking; it changes nothing for a regular file.
        flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(p, flags)
    except FileNotFoundError:
        raise RecordFileError(f"{p}: no such file") from None
    except OSError as exc:
        if refuse_links and os.path.islink(p):
            raise RecordFileError(f"{p}: is a symbolic link, which is not followed") from None
        raise RecordFileError(f"{p}: cannot read: {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        os.close(fd)
        raise RecordFileError(f"{p}: is a directory, not a file")
    if refuse_links and not stat.S_ISREG(mode):
        os.close(fd)
        raise RecordFileError(f"{p}: is not a regular file")
    return fd


def _read_bytes(p: Path, *, refuse_links: bool, max_bytes: int) -> bytes:
    """The bytes of `p`, gunzipped when its name ends in `.gz`, at most `max_bytes` of them."""
    fd = open_regular(p, refuse_links)
    chunks: list[bytes] = []
    total = 0
    try:
        with os.fdopen(fd, "rb") as raw:
            stream: Any = gzip.GzipFile(fileobj=raw, mode="rb") if p.suffix == ".gz" else raw
            while True:
                chunk = stream.read(_CHUNK)
                if not chunk:
                    break
                total += len(chunk)
                if total > max_bytes:
                    raise RecordFileError(f"{p}: larger than {max_bytes} bytes, not read")
                chunks.append(chunk)
    except EOFError:  # gzip: the stream ends before its end-of-stream marker
        raise RecordFileError(f"{p}: truncated gzip file: the data ends early") from None
    except zlib.error as exc:
        raise RecordFileError(f"{p}: corrupt gzip data: {exc}") from None
    except gzip.BadGzipFile as exc:
        raise RecordFileError(f"{p}: not a valid gzip file: {exc}") from None
    except OSError as exc:
        raise RecordFileError(f"{p}: cannot read: {exc.strerror or exc}") from None
    return b"".join(chunks)


def read_text_file(
    path: str | Path, *, refuse_links: bool = False, max_bytes: int = MAX_FILE_BYTES
) -> str:
    """The text of a UTF-8 file (gunzipped for `.gz`; a leading byte-order mark dropped).

    Raises `RecordFileError` naming the path and the reason: missing, a directory or other
    non-regular file, a symbolic link when `refuse_links`, larger than `max_bytes`, a broken
    gzip stream, or bytes that are not UTF-8.
    """
    p = Path(path)
    data = _read_bytes(p, refuse_links=refuse_links, max_bytes=max_bytes)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RecordFileError(
            f"{p}: not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def read_json_file(
    path: str | Path,
    *,
    refuse_links: bool = False,
    max_bytes: int = MAX_FILE_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
) -> Any:
    """The JSON document in `path`, read as `read_text_file` reads and decoded by `parse_json`.

    Raises `RecordFileError` with the path and a one-line reason for every way it can fail.
    """
    p = Path(path)
    text = read_text_file(p, refuse_links=refuse_links, max_bytes=max_bytes)
    try:
        return parse_json(text, max_depth=max_depth)
    except ValueError as exc:
        raise RecordFileError(f"{p}: not JSON: {exc}") from None


def read_json_object(
    path: str | Path,
    *,
    refuse_links: bool = False,
    max_bytes: int = MAX_FILE_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
) -> dict[str, Any]:
    """`read_json_file` for a document that must be a JSON object (a list is refused)."""
    data = read_json_file(path, refuse_links=refuse_links, max_bytes=max_bytes, max_depth=max_depth)
    if not isinstance(data, dict):
        raise RecordFileError(f"{path}: expected a JSON object, found {_kind(data)}")
    return data


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    return "a number"
