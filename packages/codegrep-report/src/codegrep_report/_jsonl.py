"""A bounded JSON-lines reader: hostile files become counted bad lines or one clear error.

Not for general JSON reading: it serves the training logs' readers only (this report's, and the
run monitor's through `JsonLinesTail`: logs a training run or a tool wrote), which may hold
model output, tool output and repository text.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

from codegrep_report.errors import ReportInputError

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_LINE_BYTES",
    "BadRow",
    "JsonLinesTail",
    "iter_json_objects",
    "loads_strict",
    "parse_line",
]

MAX_FILE_BYTES = 4 << 30  # a 2,000-step run with completions logged stays far below
MAX_LINE_BYTES = 64 << 20  # one completions.jsonl table line holds a whole logging step
_MAX_INT_DIGITS = 40


@dataclass(frozen=True)
class BadRow:
    """A line that was skipped, with why: the bad-line record of the training logs' readers
    (this report's and the run monitor's, `train_launcher.monitor.BadLine`)."""

    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


def _constant(name: str) -> float:
    """NaN, Infinity, -Infinity: ms-swift and TRL log them (a NaN loss, a reward column a reward
    function left empty), so they are values, which the readers' users map to gaps."""
    return float(name)


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


# A tool-call body is read as the engine reads it (codegrep-records' `parse_json`, and its copy
# in grpo-rewards, `grpo_rewards.loads_strict`): no NaN or Infinity, no number that overflows or
# runs past 64 characters, no nesting past 200 levels, no string or key that decodes to a lone
# surrogate (`"\\udce9"`). A workspace test holds the three equal.
_BODY_DEPTH = 200
_BODY_NUMBER_CHARS = 64
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
# a `\uD800`-`\uDFFF` escape or a surrogate in the text: only then is the value checked
_SURROGATE = re.compile("\\\\u[dD][89a-fA-F]|[\ud800-\udfff]")


def _body_number(text: str, convert: Callable[[str], float]) -> float:
    if len(text) > _BODY_NUMBER_CHARS:
        raise ValueError(f"number too long ({len(text)} characters)")
    value = convert(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text[:24]}")
    return value


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a number JSON allows")


def loads_strict(text: str) -> object:
    """A model's JSON (a tool-call body) as the engine reads it, or `ValueError`."""
    if text.count("[") + text.count("{") > _BODY_DEPTH:
        skeleton = _NOT_BRACKET.sub("", _STRING.sub("", text))
        if max(accumulate(map(_STEP.__getitem__, skeleton)), default=0) > _BODY_DEPTH:
            raise ValueError(f"nested too deeply to read (more than {_BODY_DEPTH} levels)")
    try:
        value = json.loads(
            text,
            parse_int=lambda t: int(_body_number(t, int)),
            parse_float=lambda t: _body_number(t, float),
            parse_constant=_no_constant,
        )
    except RecursionError:
        raise ValueError("nested too deeply to read") from None
    if _SURROGATE.search(text) is not None:
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"a string holds a lone surrogate (U+{ord(exc.object[exc.start]):04X}), "
                "which is not Unicode text"
            ) from None
    return value


def parse_line(raw: bytes) -> dict[str, object] | str:
    """One JSON-lines line as an object, or why it is not one: not UTF-8, not JSON, nested too
    deeply, a number no log writes (`1e999`, over 40 digits), not an object. NaN and Infinity,
    which training logs write, are floats. The one rule of the training logs' readers: this
    report's and the run monitor's (`JsonLinesTail`)."""
    try:
        obj = json.loads(
            raw.decode("utf-8"),
            parse_constant=_constant,
            parse_int=_bounded_int,
            parse_float=_finite_float,
        )
    except UnicodeDecodeError:
        return "not UTF-8"
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return f"not JSON ({reason[:120]})"
    if not isinstance(obj, dict):
        return f"a JSON {type(obj).__name__}, not an object"
    return obj


def _open_log(path: Path) -> tuple[int, os.stat_result]:
    """A descriptor of `path` opened without following a link, and its status; ReportInputError
    when it is missing, a link, not a regular file or larger than MAX_FILE_BYTES."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise ReportInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        raise ReportInputError(f"cannot read {path}: a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise ReportInputError(f"cannot read {path}: not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        raise ReportInputError(f"cannot read {path}: {info.st_size} bytes, over {MAX_FILE_BYTES}")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise ReportInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    return fd, info


class JsonLinesTail:
    """A JSON-lines file read as it grows: each `poll` returns the objects of the complete lines
    written since the last one (an unfinished last line waits for its newline), and counts the
    bad ones in `bad`. A file that became shorter was truncated or replaced: `poll` reads it
    again from its start and says so (`restarted`), so the caller can forget what it had.

    Every read goes through the same checks as `iter_json_objects` (no link, a regular file,
    at most MAX_FILE_BYTES, lines of at most MAX_LINE_BYTES, `parse_line`'s rule) and raises
    `ReportInputError` when the file itself cannot be read.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.line_no = 0
        self.pending_tail = False  # bytes after the last newline: a line still being written
        self.restarted = False
        self.bad: list[BadRow] = []
        self._skipping = False  # inside a line over MAX_LINE_BYTES, already counted

    def _reset(self) -> None:
        self.offset, self.line_no, self.pending_tail, self.bad = 0, 0, False, []
        self._skipping = False

    def poll(self) -> list[tuple[int, dict[str, object]]]:
        fd, info = _open_log(self.path)
        self.restarted = info.st_size < self.offset
        if self.restarted:
            self._reset()
        out: list[tuple[int, dict[str, object]]] = []
        with os.fdopen(fd, "rb") as fh:
            fh.seek(self.offset)
            self.pending_tail = False
            while True:
                raw = fh.readline(MAX_LINE_BYTES + 1)
                if not raw:
                    break
                if not raw.endswith(b"\n"):
                    if len(raw) <= MAX_LINE_BYTES:  # the end of the file, mid-line: wait
                        self.pending_tail = True
                        break
                    if not self._skipping:
                        self.line_no += 1
                        self.bad.append(
                            BadRow(
                                str(self.path), self.line_no, f"a line over {MAX_LINE_BYTES} bytes"
                            )
                        )
                    self._skipping = True
                    self.offset += len(raw)
                    continue
                self.offset += len(raw)
                if self._skipping:  # the newline that ends the long line
                    self._skipping = False
                    continue
                self.line_no += 1
                if not raw.strip():
                    continue
                parsed = parse_line(raw)
                if isinstance(parsed, str):
                    self.bad.append(BadRow(str(self.path), self.line_no, parsed))
                else:
                    out.append((self.line_no, parsed))
        return out


def iter_json_objects(path: Path, bad: list[BadRow]) -> Iterator[tuple[int, dict[str, object]]]:
    """(line number, object) for each JSON object line of `path`; other lines go to `bad` (an
    unfinished last line is read as a line: the file is done).

    Raises `ReportInputError` when the file itself cannot be read: missing, a link, not a
    regular file, larger than `MAX_FILE_BYTES`.
    """
    fd, _ = _open_log(path)
    with os.fdopen(fd, "rb") as fh:
        number = 0
        while True:
            raw = fh.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                bad.append(BadRow(str(path), number, f"a line over {MAX_LINE_BYTES} bytes"))
                while raw and not raw.endswith(b"\n"):  # skip the rest of the line
                    raw = fh.readline(MAX_LINE_BYTES)
                continue
            if not raw.strip():
                continue
            parsed = parse_line(raw)
            if isinstance(parsed, str):
                bad.append(BadRow(str(path), number, parsed))
            else:
                yield number, parsed
