"""Reading and writing record files, offline, with honest accounting of bad rows.

Formats: a JSON list (or an object holding one under `rows`, `data`, `instances` or
`per_instance`), JSON Lines, either gzipped (`.gz`), or parquet (the `parquet` extra). A UTF-8
byte-order mark at the start of a text file is allowed. A row that does not validate is skipped
and reported in `Loaded.problems` with its file and line; a file that cannot be read at all
raises `RecordFileError`.

A JSON Lines row that is not UTF-8, not JSON, or nested too deeply for the decoder is such a
skipped row. A truncated or corrupt gzip stream, a directory, or a parquet file whose cells do
not convert is a `RecordFileError`: the rows after the break are unknown, and scoring without
them would quietly change the denominator.
"""

from __future__ import annotations

import gzip
import io
import math
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Generic, TypeVar, cast, overload

from pydantic import BaseModel, ValidationError

from codegrep_records._gold import GoldRule
from codegrep_records._json_files import open_regular, parse_json
from codegrep_records._paths import normalize_path
from codegrep_records._records import (
    CATM_WEIGHT_THRESHOLD,
    GoldLabel,
    Instance,
    LabelRecord,
    Prediction,
)
from codegrep_records.errors import MissingExtraError, RecordFileError

__all__ = [
    "Loaded",
    "RowProblem",
    "describe_validation_error",
    "gold_from_instances",
    "load_instances",
    "load_labels",
    "load_predictions",
    "load_records",
    "read_rows",
    "write_records",
]

T = TypeVar("T", bound=BaseModel)

# Bytes that are not UTF-8 arrive as lone surrogates (errors="surrogateescape"), which a UTF-8
# decoder never produces otherwise; json.loads would accept them inside strings.
_NOT_UTF8 = re.compile("[\udc80-\udcff]")
_ROW_LISTS = ("rows", "data", "instances", "per_instance")


@dataclass(frozen=True)
class RowProblem:
    """A row that was skipped, and why."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class Loaded(Generic[T]):
    """The records a file held, and every row that was skipped."""

    records: tuple[T, ...]
    problems: tuple[RowProblem, ...] = field(default=())


def _open_text(path: Path, refuse_links: bool = False) -> Iterator[str]:
    """The lines of a text file, gunzipped when the name ends in .gz; see `_NOT_UTF8`.

    `utf-8-sig` drops a byte-order mark at the very start (editors on Windows write one), which
    would otherwise make the first row "not JSON"; elsewhere it decodes exactly as `utf-8`.
    """
    fd = open_regular(path, refuse_links)
    n = 0
    try:
        with os.fdopen(fd, "rb") as raw:
            gz = path.suffix == ".gz"
            binary: IO[bytes] = cast(IO[bytes], gzip.GzipFile(fileobj=raw)) if gz else raw
            fh = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="surrogateescape")
            for line in fh:
                yield line
                n += 1
    except EOFError as exc:  # gzip: the stream ends before its end-of-stream marker
        raise RecordFileError(
            f"{path}: truncated gzip file: the data ends early, after {n} complete line(s)"
        ) from exc
    except zlib.error as exc:
        raise RecordFileError(
            f"{path}: corrupt gzip data after {n} complete line(s): {exc}"
        ) from exc
    except gzip.BadGzipFile as exc:
        raise RecordFileError(f"{path}: not a valid gzip file: {exc}") from exc
    except OSError as exc:
        raise RecordFileError(f"{path}: cannot read: {exc}") from exc


def _not_utf8(text: str) -> str | None:
    """Where `text` held bytes that are not UTF-8, or None."""
    bad = _NOT_UTF8.search(text)
    if bad is None:
        return None
    return f"not UTF-8 (byte 0x{ord(bad.group()) - 0xDC00:02x} at character {bad.start() + 1})"


def _json(text: str) -> Any:
    """json.loads; every way hostile text can fail comes out as a ValueError (`parse_json`)."""
    return parse_json(text)


def _base_suffix(path: Path) -> str:
    suffixes = [s for s in path.suffixes if s != ".gz"]
    return suffixes[-1] if suffixes else ""


def _parquet_rows(path: Path) -> list[Any]:
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped, unused-ignore]
    except ImportError as exc:
        raise MissingExtraError("parquet", "pyarrow") from exc
    try:
        rows: list[Any] = pq.read_table(path).to_pylist()
    # pyarrow's ArrowInvalid is a ValueError; to_pylist() raises OverflowError for a date past
    # year 9999 and UnicodeDecodeError (a ValueError) for a string that is not UTF-8.
    except (OSError, ValueError, OverflowError) as exc:
        raise RecordFileError(f"{path}: cannot read as parquet: {exc}") from exc
    return rows


def read_rows(path: str | Path, *, refuse_links: bool = False) -> Iterator[tuple[int, Any]]:
    """(line or row number, decoded JSON value) for every row of a JSON/JSONL/parquet file.

    A JSON Lines line that cannot be decoded (not UTF-8, not JSON, nested too deeply, a number
    out of range: see `parse_json`) comes back as a `RowProblem` value, so that callers can
    count it and go on; blank lines are skipped. Raises `RecordFileError` for a file that
    cannot be read at all (`refuse_links`: a symbolic link is one) and `MissingExtraError` for
    parquet without pyarrow.
    """
    p = Path(path)
    if refuse_links and p.is_symlink():
        raise RecordFileError(f"{p}: is a symbolic link, which is not followed")
    if not p.exists():
        raise RecordFileError(f"{p}: no such file")
    if p.is_dir():  # pyarrow would read a folder as a dataset, an empty one as no rows
        raise RecordFileError(f"{p}: is a directory, not a file")
    kind = _base_suffix(p)
    if kind == ".parquet":
        yield from enumerate(_parquet_rows(p), start=1)
        return
    if kind == ".json":
        text = "".join(_open_text(p, refuse_links))
        where = _not_utf8(text)
        if where is not None:
            raise RecordFileError(f"{p}: {where}")
        try:
            data = _json(text)
        except ValueError as exc:
            raise RecordFileError(f"{p}: not JSON: {exc}") from exc
        if isinstance(data, Mapping):
            for key in _ROW_LISTS:
                if isinstance(data.get(key), list):
                    data = data[key]
                    break
        if not isinstance(data, list):
            raise RecordFileError(f"{p}: expected a JSON list of rows")
        yield from enumerate(data, start=1)
        return
    for i, line in enumerate(_open_text(p, refuse_links), start=1):
        if not line.strip():
            continue
        where = _not_utf8(line)
        if where is not None:
            yield i, RowProblem(str(p), i, where)
            continue
        try:
            row = _json(line)
        except ValueError as exc:  # not JSON, too deep, a number out of range
            yield i, RowProblem(str(p), i, f"not JSON: {exc}")
            continue
        yield i, row


def describe_validation_error(exc: ValidationError) -> str:
    """The first validation error as `field: message` (`row: ...` for the row as a whole)."""
    first = exc.errors()[0]
    where = ".".join(str(x) for x in first["loc"]) or "row"
    message = first["msg"]
    if first["type"] == "value_error" and "error" in first.get("ctx", {}):
        message = str(first["ctx"]["error"])  # our own message, without "Value error, "
    return f"{where}: {message}"


def _validated(path: str | Path, model: type[T]) -> tuple[list[tuple[int, T]], list[RowProblem]]:
    """Validated records with the line each came from, and the rows that did not validate."""
    records: list[tuple[int, T]] = []
    problems: list[RowProblem] = []
    for line, row in read_rows(path):
        if isinstance(row, RowProblem):
            problems.append(row)
            continue
        try:
            records.append((line, model.model_validate(row)))
        except ValidationError as exc:
            problems.append(RowProblem(str(path), line, describe_validation_error(exc)))
    return records, problems


def _dedupe(
    records: list[tuple[int, T]], problems: list[RowProblem], path: str | Path, key: str | None
) -> Loaded[T]:
    if key is None:
        return Loaded(tuple(rec for _, rec in records), tuple(problems))
    seen: set[Any] = set()
    kept: list[T] = []
    problems = list(problems)
    for line, rec in records:
        value = getattr(rec, key)
        if value in seen:
            problems.append(
                RowProblem(str(path), line, f"duplicate {key} {value!r}; first one kept")
            )
            continue
        seen.add(value)
        kept.append(rec)
    return Loaded(tuple(kept), tuple(problems))


def load_records(path: str | Path, model: type[T], *, key: str | None = "instance_id") -> Loaded[T]:
    """Every row of `path` that validates as `model`; the others are counted in `problems`.

    Rows whose `key` field repeats an earlier row's are reported as duplicates and the first is
    kept (`key=None`: no check). Problems come in file order of kind: undecodable and invalid
    rows first, then duplicates.
    """
    return _dedupe(*_validated(path, model), path, key)


def load_instances(path: str | Path) -> Loaded[Instance]:
    return load_records(path, Instance)


def _clean(pred: Prediction) -> Prediction:
    """Paths normalized; a file named twice in one ranking kept once, at its first rank."""
    files: list[str] = []
    scores: list[float] = []
    seen: set[str] = set()
    for j, f in enumerate(pred.files):
        norm = normalize_path(f)
        if norm and norm not in seen:
            seen.add(norm)
            files.append(norm)
            if pred.scores is not None:
                scores.append(pred.scores[j])
    ranges: dict[str, tuple[tuple[int, int], ...]] | None = None
    if pred.line_ranges is not None:
        ranges = {}
        for path, spans in pred.line_ranges.items():
            norm = normalize_path(path)
            if norm:
                ranges[norm] = ranges.get(norm, ()) + spans
    return pred.model_copy(
        update={
            "files": tuple(files),
            "scores": None if pred.scores is None else tuple(scores),
            "line_ranges": ranges,
        }
    )


def load_predictions(path: str | Path) -> Loaded[Prediction]:
    """Predictions with paths normalized and duplicates inside one ranking removed (first kept).

    Scores stay aligned with the files they belong to. A row whose scores do not line up with
    its files, or whose `schema_version` is newer than this release, is skipped and reported.
    """
    loaded = load_records(path, Prediction)
    return Loaded(tuple(_clean(p) for p in loaded.records), loaded.problems)


def _json_line(record: BaseModel) -> str:
    return record.model_dump_json(exclude_none=True)


_Row = TypeVar("_Row")


@overload
def write_records(
    path: str | Path, records: Iterable[T], *, dump: None = None, append: bool = False
) -> int: ...


@overload
def write_records(
    path: str | Path, records: Iterable[_Row], *, dump: Callable[[_Row], str], append: bool = False
) -> int: ...


def write_records(
    path: str | Path,
    records: Iterable[Any],
    *,
    dump: Callable[[Any], str] | None = None,
    append: bool = False,
) -> int:
    """Write JSON Lines (gzipped when the name ends in .gz); returns the number of rows.

    Each row is `dump(record)` (default: the record's JSON with the fields that are None left
    out). The parent folder is created when missing. `append=True` adds the rows to the end of
    the file instead of replacing it: the one way a resumable job writes its rows as they finish
    (a gzipped file then holds one gzip member per call, which gzip readers join).
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    line: Callable[[Any], str] = dump or _json_line
    n = 0
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "at" if append else "wt", encoding="utf-8") as fh:
        for rec in records:
            fh.write(line(rec) + "\n")
            n += 1
    return n


def gold_from_instances(
    instances: Iterable[Instance], rule: GoldRule | None = None
) -> dict[str, GoldLabel]:
    """Gold per instance: its patch under `rule`, or its `gold_files` when it has no patch."""
    return {
        inst.instance_id: GoldLabel(
            instance_id=inst.instance_id,
            files=frozenset(inst.gold_files_for(rule)),
            source="patch" if inst.patch else "gold_files",
        )
        for inst in instances
    }


def _paths(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Sequence):
        out = []
        for item in value:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, Mapping) and isinstance(item.get("path"), str):
                out.append(item["path"])
            else:
                return None
        return out
    return None


_NO_LABEL = "no gold/gold_files or patch_files+mined list"


def _label_files(row: Mapping[str, Any], threshold: float) -> list[str] | str:
    """The gold files of a label row, or why the row cannot be used."""
    for key in ("gold", "gold_files"):
        if key in row:
            paths = _paths(row[key])
            return _NO_LABEL if paths is None else paths
    patch_files = _paths(row.get("patch_files", []))
    mined = row.get("mined", row.get("files"))
    if patch_files is None or (mined is None and "patch_files" not in row):
        return _NO_LABEL
    if mined is not None and not isinstance(mined, list):
        return "mined/files is not a list of {path, weight}"
    files = list(patch_files)
    for item in mined or []:
        if not isinstance(item, Mapping) or not isinstance(item.get("path"), str):
            return _NO_LABEL
        weight = item.get("weight", 0.0)
        # A weight that is not a number would silently leave the file out of gold.
        if isinstance(weight, bool) or not isinstance(weight, int | float) or math.isnan(weight):
            return f"weight of {item['path']!r} is not a number: {weight!r}"
        if weight >= threshold:
            files.append(item["path"])
    return files


def _newer_schema(row: Mapping[str, Any], known: int) -> str | None:
    version = row.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > known:
        return (
            f"schema_version {version} is newer than this reader knows ({known}); "
            "upgrade codegrep-records to read it"
        )
    return None


def load_labels(path: str | Path, *, threshold: float = CATM_WEIGHT_THRESHOLD) -> Loaded[GoldLabel]:
    """An alternative gold set, e.g. CATM labels (`LabelRecord` rows).

    A row needs `instance_id` and either `gold` / `gold_files` (a list of paths, or of
    `{path}` objects), or CATM's `patch_files` plus `mined` (or `files`): a list of
    `{path, weight}`; gold is then the patch files plus every mined file with weight >=
    `threshold`. A row with `gold` uses it as written, whatever threshold made it.
    """
    records: list[tuple[int, GoldLabel]] = []
    problems: list[RowProblem] = []
    for line, row in read_rows(path):
        if isinstance(row, RowProblem):
            problems.append(row)
            continue
        instance_id = row.get("instance_id") if isinstance(row, Mapping) else None
        if not isinstance(instance_id, str) or not instance_id:
            problems.append(RowProblem(str(path), line, "no instance_id"))
            continue
        newer = _newer_schema(row, LabelRecord.SCHEMA_VERSION)
        if newer is not None:
            problems.append(RowProblem(str(path), line, newer))
            continue
        files = _label_files(row, threshold)
        if isinstance(files, str):
            problems.append(RowProblem(str(path), line, files))
            continue
        norm = frozenset(n for n in (normalize_path(f) for f in files) if n)
        records.append((line, GoldLabel(instance_id=instance_id, files=norm, source=str(path))))
    return _dedupe(records, problems, path, "instance_id")
