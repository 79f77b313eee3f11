"""Readers of the lists a downstream report is given: instance ids (the fixed denominator),
`--run` options, run manifests and the plan's manifest of runs.

A bad row is skipped and reported with file and line; a file that cannot be read at all raises
`DatasetError`. Nothing is printed here.
Not for: agent outputs (`_agent_outputs`) or harness reports (`_harness_reports`).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegrep_records import RecordFileError, RowProblem
from codegrep_records.io import parse_json, read_text_file
from pydantic import ValidationError

from swe_eval.downstream._reader_values import _load_json, _rows
from swe_eval.downstream.records import (
    RunSpec,
)
from swe_eval.errors import DatasetError

__all__ = [
    "Manifest",
    "RunManifest",
    "parse_run_option",
    "read_instance_ids",
    "read_manifest",
    "read_run_manifest",
]

# -- instance lists and run lists ---------------------------------------------------------------


def read_instance_ids(path: str | Path) -> tuple[list[str], list[RowProblem]]:
    """The instance ids of a file (the fixed denominator), in file order, each once.

    A `.txt` file holds one id per line (`#` starts a comment); any other file is read as rows
    (JSON Lines, JSON, parquet, gzipped or not) with an `instance_id`. A repeated id is reported
    as a bad row and counted once.
    """
    p = Path(path)
    problems: list[RowProblem] = []
    ids: dict[str, None] = {}
    pairs: list[tuple[int, Any]]
    if p.suffix.lower() == ".txt":
        try:
            lines = read_text_file(p).splitlines()
        except RecordFileError as exc:
            raise DatasetError(str(exc)) from None
        pairs = [
            (i, {"instance_id": line.strip()})
            for i, line in enumerate(lines, start=1)
            if line.strip() and not line.lstrip().startswith("#")
        ]
    else:
        pairs = _rows(p)
    for line, row in pairs:
        if isinstance(row, RowProblem):
            problems.append(row)
            continue
        iid = row.get("instance_id") if isinstance(row, dict) else None
        if not isinstance(iid, str) or not iid.strip():
            problems.append(RowProblem(str(p), line, "no instance_id"))
        elif iid in ids:
            problems.append(RowProblem(str(p), line, f"{iid} listed again (counted once)"))
        else:
            ids[iid] = None
    return list(ids), problems


_RUN_KEYS = ("output", "report", "system", "predictions", "precision", "manifest")


def parse_run_option(text: str) -> RunSpec:
    """`NAME=PATH[,report=PATH][,system=S][,predictions=PATH][,precision=P]` as a `RunSpec`.

    The bare PATH is the agent output; `NAME=report=PATH` is a run with a report only.
    """
    name, sep, rest = text.partition("=")
    if not sep or not name.strip() or not rest.strip():
        raise ValueError(f"--run {text!r}: expected NAME=PATH[,report=PATH,...]")
    fields: dict[str, str] = {}
    for i, part in enumerate(p.strip() for p in rest.split(",")):
        key, eq, value = part.partition("=")
        if eq and key in _RUN_KEYS:
            pass
        elif i == 0:
            key, value = "output", part
        else:
            known = ", ".join(_RUN_KEYS)
            raise ValueError(f"--run {name}: {part!r} is not KEY=VALUE with a KEY of {known}")
        if key in fields:
            raise ValueError(f"--run {name}: {key} given twice")
        fields[key] = value
    try:
        return RunSpec.model_validate({"name": name.strip(), **fields})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "run"
        raise ValueError(f"--run {name}: {where}: {first['msg']}") from exc


@dataclass(frozen=True)
class RunManifest:
    """A run's manifest.json (written by `plan`): what must be equal across compared runs
    (`frozen`) and what may differ (`arm`)."""

    path: str
    frozen: Mapping[str, Any]
    arm: Mapping[str, Any]


def read_run_manifest(path: str | Path) -> RunManifest:
    """A run's manifest.json through the records' hardened reader; `DatasetError` if it is not
    one."""
    p = Path(path)
    data = _load_json(p)
    if (
        not isinstance(data, dict)
        or data.get("kind") != "swe-eval-downstream-run"
        or not isinstance(data.get("frozen"), dict)
        or not isinstance(data.get("arm"), dict)
    ):
        raise DatasetError(f"{p}: not a run manifest (kind swe-eval-downstream-run, frozen, arm)")
    return RunManifest(str(p), data["frozen"], data["arm"])


@dataclass(frozen=True)
class Manifest:
    runs: tuple[RunSpec, ...]
    baseline: str | None = None
    instances: Path | None = None
    title: str | None = None


def read_run_read(manifest: str | Path) -> Mapping[str, Any] | None:
    """The `read.json` beside a run's manifest (what the run read when it started, written by
    `downstream stamp`), or None when the run was never stamped; `DatasetError` if it is not
    one."""
    p = Path(manifest).parent / "read.json"
    if not p.exists() and not p.is_symlink():
        return None
    data = _load_json(p)
    if not isinstance(data, dict) or data.get("kind") != "swe-eval-downstream-read":
        raise DatasetError(f"{p}: not a run's read record (kind swe-eval-downstream-read)")
    return data


def read_manifest(path: str | Path) -> Manifest:
    """A run list as JSON or TOML: `instances`, `baseline`, and `runs` (a list of tables with
    `name`, `output`, `report`, `system`, `predictions`, `precision`). Relative paths are read
    from the manifest's folder."""
    p = Path(path)
    try:
        text = read_text_file(p)
    except RecordFileError as exc:
        raise DatasetError(str(exc)) from None
    try:
        data: Any = tomllib.loads(text) if p.suffix.lower() == ".toml" else parse_json(text)
    except (ValueError, RecursionError) as exc:  # tomllib recurses on nested inline tables
        reason = "nested too deeply to read" if isinstance(exc, RecursionError) else exc
        kind = "TOML" if p.suffix.lower() == ".toml" else "JSON"
        raise DatasetError(f"{p}: not {kind}: {reason}") from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise DatasetError(f"{p}: expected a `runs` list (and optionally instances, baseline)")
    unknown = set(data) - {"runs", "baseline", "instances", "title"}
    if unknown:
        raise DatasetError(f"{p}: unknown key(s) {', '.join(sorted(unknown))}")

    def resolve(value: Any) -> Any:
        return str(p.parent / value) if isinstance(value, str) and value else value

    runs = []
    for i, entry in enumerate(data["runs"], start=1):
        if not isinstance(entry, dict):
            raise DatasetError(f"{p}: runs[{i}] is not a table")
        fixed = {k: resolve(v) if k in ("output", "report", "predictions", "manifest") else v
                 for k, v in entry.items()}  # fmt: skip
        try:
            runs.append(RunSpec.model_validate(fixed))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(x) for x in first["loc"]) or "run"
            raise DatasetError(f"{p}: runs[{i}].{where}: {first['msg']}") from exc
    baseline = data.get("baseline")
    instances = data.get("instances")
    title = data.get("title")
    return Manifest(
        tuple(runs),
        str(baseline) if baseline is not None else None,
        Path(resolve(instances)) if isinstance(instances, str) else None,
        str(title) if title is not None else None,
    )
