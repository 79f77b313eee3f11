"""The small file and value readers the downstream readers share: a JSON document or the rows of a
JSON/JSONL file through codegrep-records' hardened readers (unreadable: `DatasetError`), and
tolerant reads of a number or a dict out of an untrusted record.
Not for: any format's meaning (`_agent_outputs`, `_harness_reports`, `_run_lists`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from codegrep_records import RecordFileError, read_rows
from codegrep_records.io import read_json_file

from swe_eval.errors import DatasetError

__all__ = ["_dict", "_int", "_load_json", "_rows"]


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if math.isfinite(value) else None  # int(inf) raises OverflowError


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _load_json(p: Path, *, refuse_links: bool = False) -> Any:
    """The JSON document `p` (gzipped or not) through codegrep-records' hardened reader: too
    deep, `1e999`, an over-long number, not UTF-8 or a broken gzip stream is a one-line
    `DatasetError` naming the file."""
    try:
        return read_json_file(p, refuse_links=refuse_links)
    except RecordFileError as exc:
        raise DatasetError(str(exc)) from None


def _rows(p: Path) -> list[tuple[int, Any]]:
    """Every row of a JSON/JSONL file as (line, row or RowProblem); unreadable -> DatasetError."""
    try:
        return list(read_rows(p))
    except RecordFileError as exc:
        raise DatasetError(str(exc)) from exc
