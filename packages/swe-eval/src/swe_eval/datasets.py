"""Reading instance, prediction and label files, offline, with honest accounting of bad rows.

Formats: a JSON list (or `{"rows"|"data"|"instances": [...]}`), JSON Lines, either gzipped
(`.gz`), or parquet. A row that does not validate is skipped and reported in `Loaded.problems`
with its file and line; a file that cannot be read at all raises `DatasetError`.

A JSON Lines row that is not UTF-8, not JSON, or nested too deeply for the decoder is such a
skipped row. A truncated or corrupt gzip stream, a directory, or a parquet file whose cells do
not convert is a `DatasetError`: the rows after the break are unknown, and scoring without them
would quietly change the denominator.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from grpo_rewards import normalize_path
from pydantic import BaseModel, ValidationError

from swe_eval.errors import DatasetError, MissingExtraError
from swe_eval.gold import GoldRule, files_from_patch
from swe_eval.models import PREDICTION_SCHEMA_VERSION, GoldLabel, Instance, Prediction

__all__ = [
    "CATM_WEIGHT_THRESHOLD",
    "Loaded",
    "RowProblem",
    "gold_from_instances",
    "load_instances",
    "load_labels",
    "load_predictions",
    "read_rows",
    "write_predictions",
]

# DESIGN.md: a CATM label's gold is the patch files plus mined files with weight >= 0.15.
CATM_WEIGHT_THRESHOLD = 0.15

T = TypeVar("T", bound=BaseModel)

# Bytes that are not UTF-8 arrive as lone surrogates (errors="surrogateescape"), which a UTF-8
# decoder never produces otherwise; json.loads would accept them inside strings.
_NOT_UTF8 = re.compile("[\udc80-\udcff]")


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
    records: tuple[T, ...]
    problems: tuple[RowProblem, ...] = field(default=())


def _open_text(path: Path) -> Iterator[str]:
    """The lines of a text file, gunzipped when the name ends in .gz; see `_NOT_UTF8`."""
    opener = gzip.open if path.suffix == ".gz" else open
    n = 0
    try:
        with opener(path, "rt", encoding="utf-8", errors="surrogateescape") as fh:
            for line in fh:
                yield line
                n += 1
    except EOFError as exc:  # gzip: the stream ends before its end-of-stream marker
        raise DatasetError(
            f"{path}: truncated gzip file: the data ends early, after {n} complete line(s)"
        ) from exc
    except zlib.error as exc:
        raise DatasetError(f"{path}: corrupt gzip data after {n} complete line(s): {exc}") from exc
    except gzip.BadGzipFile as exc:
        raise DatasetError(f"{path}: not a valid gzip file: {exc}") from exc
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read: {exc}") from exc


def _not_utf8(text: str) -> str | None:
    """Where `text` held bytes that are not UTF-8, or None."""
    bad = _NOT_UTF8.search(text)
    if bad is None:
        return None
    return f"not UTF-8 (byte 0x{ord(bad.group()) - 0xDC00:02x} at character {bad.start() + 1})"


def _json(text: str) -> Any:
    """json.loads; every way hostile text can fail comes out as a ValueError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None


def _base_suffix(path: Path) -> str:
    suffixes = [s for s in path.suffixes if s != ".gz"]
    return suffixes[-1] if suffixes else ""


def read_rows(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line or row number, decoded JSON value) for every row of a JSON/JSONL/parquet file.

    A line that is not JSON comes back as a `RowProblem` value so callers can count it.
    """
    p = Path(path)
    if not p.exists():
        raise DatasetError(f"{p}: no such file")
    if p.is_dir():  # pyarrow would read a folder as a dataset, an empty one as no rows
        raise DatasetError(f"{p}: is a directory, not a file")
    kind = _base_suffix(p)
    if kind == ".parquet":
        try:
            import pyarrow.parquet as pq  # type: ignore[import-untyped, unused-ignore]
        except ImportError as exc:  # pragma: no cover - pyarrow is a declared dependency
            raise MissingExtraError("parquet", "pyarrow") from exc
        try:
            rows = pq.read_table(p).to_pylist()
        # pyarrow's ArrowInvalid is a ValueError; to_pylist() raises OverflowError for a date
        # past year 9999 and UnicodeDecodeError (a ValueError) for a string that is not UTF-8.
        except (OSError, ValueError, OverflowError) as exc:
            raise DatasetError(f"{p}: cannot read as parquet: {exc}") from exc
        yield from enumerate(rows, start=1)
        return
    if kind == ".json":
        text = "".join(_open_text(p))
        where = _not_utf8(text)
        if where is not None:
            raise DatasetError(f"{p}: {where}")
        try:
            data = _json(text)
        except ValueError as exc:
            raise DatasetError(f"{p}: not JSON: {exc}") from exc
        if isinstance(data, Mapping):
            for key in ("rows", "data", "instances", "per_instance"):
                if isinstance(data.get(key), list):
                    data = data[key]
                    break
        if not isinstance(data, list):
            raise DatasetError(f"{p}: expected a JSON list of rows")
        yield from enumerate(data, start=1)
        return
    for i, line in enumerate(_open_text(p), start=1):
        if not line.strip():
            continue
        where = _not_utf8(line)
        if where is not None:
            yield i, RowProblem(str(p), i, where)
            continue
        try:
            row = _json(line)
        except json.JSONDecodeError as exc:
            yield i, RowProblem(str(p), i, f"not JSON: {exc.msg}")
            continue
        except ValueError as exc:  # too deep, or an integer past Python's digit limit
            yield i, RowProblem(str(p), i, f"not JSON: {exc}")
            continue
        yield i, row


def _load(path: str | Path, model: type[T]) -> tuple[list[tuple[int, T]], list[RowProblem]]:
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
            first = exc.errors()[0]
            where = ".".join(str(x) for x in first["loc"]) or "row"
            problems.append(RowProblem(str(path), line, f"{where}: {first['msg']}"))
    return records, problems


def _dedupe(
    records: list[tuple[int, T]], problems: list[RowProblem], path: str | Path, key: str
) -> Loaded[T]:
    seen: set[str] = set()
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


def load_instances(path: str | Path) -> Loaded[Instance]:
    return _dedupe(*_load(path, Instance), path, "instance_id")


def load_predictions(path: str | Path) -> Loaded[Prediction]:
    """Predictions with paths normalized and duplicates inside one ranking removed (first kept).

    A row whose `schema_version` is not `PREDICTION_SCHEMA_VERSION` is skipped and reported:
    its fields may not mean what this reader thinks they mean.
    """
    records, problems = _load(path, Prediction)
    current = []
    for line, pred in records:
        if pred.schema_version != PREDICTION_SCHEMA_VERSION:
            problems.append(
                RowProblem(
                    str(path),
                    line,
                    f"schema_version {pred.schema_version} is not supported "
                    f"(this reader knows {PREDICTION_SCHEMA_VERSION})",
                )
            )
            continue
        current.append((line, pred))
    loaded = _dedupe(current, problems, path, "instance_id")
    cleaned = []
    for pred in loaded.records:
        files: list[str] = []
        scores: list[float] = []
        seen: set[str] = set()
        for j, f in enumerate(pred.files):
            norm = normalize_path(f)
            if norm and norm not in seen:
                seen.add(norm)
                files.append(norm)
                if pred.scores is not None and j < len(pred.scores):
                    scores.append(pred.scores[j])
        aligned = pred.scores is not None and len(pred.scores) == len(pred.files)
        cleaned.append(
            pred.model_copy(
                update={"files": tuple(files), "scores": tuple(scores) if aligned else None}
            )
        )
    return Loaded(tuple(cleaned), loaded.problems)


def write_predictions(path: str | Path, predictions: Iterable[Prediction]) -> int:
    """Write JSON Lines (gzipped when the name ends in .gz); returns the number of rows."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "wt", encoding="utf-8") as fh:
        for pred in predictions:
            fh.write(pred.model_dump_json(exclude_none=True) + "\n")
            n += 1
    return n


def gold_from_instances(
    instances: Iterable[Instance], rule: GoldRule | None = None
) -> dict[str, GoldLabel]:
    """Gold per instance from its patch under `rule` (see `swe_eval.gold`)."""
    return {
        inst.instance_id: GoldLabel(
            instance_id=inst.instance_id,
            files=frozenset(files_from_patch(inst.patch, rule)),
            source="patch",
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


def load_labels(path: str | Path, *, threshold: float = CATM_WEIGHT_THRESHOLD) -> Loaded[GoldLabel]:
    """An alternative gold set, e.g. CATM labels.

    A row needs `instance_id` and either `gold` / `gold_files` (a list of paths), or CATM's
    `patch_files` plus `mined` (or `files`): a list of `{path, weight}`; gold is then the patch
    files plus every mined file with weight >= `threshold`.
    """
    records: list[tuple[int, GoldLabel]] = []
    problems: list[RowProblem] = []
    for line, row in read_rows(path):
        if isinstance(row, RowProblem):
            problems.append(row)
            continue
        if not isinstance(row, Mapping) or not isinstance(row.get("instance_id"), str):
            problems.append(RowProblem(str(path), line, "no instance_id"))
            continue
        files = _label_files(row, threshold)
        if isinstance(files, str):
            problems.append(RowProblem(str(path), line, files))
            continue
        norm = frozenset(n for n in (normalize_path(f) for f in files) if n)
        records.append(
            (line, GoldLabel(instance_id=row["instance_id"], files=norm, source=str(path)))
        )
    return _dedupe(records, problems, path, "instance_id")
