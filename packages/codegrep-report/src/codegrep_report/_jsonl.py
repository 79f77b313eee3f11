"""A bounded JSON-lines reader: hostile files become counted bad lines or one clear error.

Not for general JSON reading: it serves the report's inputs only (logs a training run or a tool
wrote), which may hold model output, tool output and repository text.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from codegrep_report.errors import ReportInputError

__all__ = ["MAX_FILE_BYTES", "MAX_LINE_BYTES", "BadRow", "iter_json_objects"]

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


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits")
    return int(text)


def iter_json_objects(path: Path, bad: list[BadRow]) -> Iterator[tuple[int, dict[str, object]]]:
    """(line number, object) for each JSON object line of `path`; other lines go to `bad`.

    Raises `ReportInputError` when the file itself cannot be read: missing, a link, not a
    regular file, larger than `MAX_FILE_BYTES`.
    """
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
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ReportInputError(f"cannot read {path}: {exc.strerror or exc}") from None
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
            try:
                obj = json.loads(
                    raw.decode("utf-8"), parse_constant=_no_constant, parse_int=_bounded_int
                )
            except UnicodeDecodeError:
                bad.append(BadRow(str(path), number, "not UTF-8"))
                continue
            except (ValueError, RecursionError) as exc:
                reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
                bad.append(BadRow(str(path), number, f"not JSON ({reason[:120]})"))
                continue
            if not isinstance(obj, dict):
                bad.append(BadRow(str(path), number, f"a JSON {type(obj).__name__}, not an object"))
                continue
            yield number, obj
