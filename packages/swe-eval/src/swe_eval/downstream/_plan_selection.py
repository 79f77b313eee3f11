"""Which instances and configurations a downstream plan runs: the `--config` options, the
selection of instances (the same ones, in the same order, for every configuration) and the
dataset rows the runner reads.
Not for: gating (`_plan_gating`) or commands (`_plan_commands`).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from codegrep_gate import (
    GateConfig,
)
from codegrep_records import (
    Instance,
    RecordError,
    RowProblem,
    load_instances,
)
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from swe_eval.downstream._plan_pins import _NAME
from swe_eval.errors import PlanError

__all__ = [
    "ConfigSpec",
    "Selection",
    "baseline_spec",
    "load_selection",
    "parse_config_option",
]

# -- configurations -----------------------------------------------------------------------------


class ConfigSpec(BaseModel):
    """One configuration: a name, and the predictions to inject (none: the baseline)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=_NAME.pattern)
    predictions: Path | None = None
    gate: float | None = Field(default=None, ge=0, le=1, description="Gate threshold.")
    calibration: Path | None = None
    bound: Literal["lower", "point"] = "lower"
    max_files: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _consistent(self) -> ConfigSpec:
        gate_only = {
            "calibration": self.calibration is not None,
            "bound": self.bound != "lower",
            "max_files": self.max_files is not None,
        }
        used = [k for k, v in gate_only.items() if v]
        if self.predictions is None and (self.gate is not None or used):
            raise ValueError("a configuration without predictions injects nothing to gate")
        if self.gate is None and used:
            raise ValueError(f"{', '.join(used)} is for a gated configuration; add gate[=T]")
        return self

    @property
    def kind(self) -> Literal["baseline", "ungated", "gated"]:
        if self.predictions is None:
            return "baseline"
        return "ungated" if self.gate is None else "gated"


_CONFIG_KEYS = ("gate", "calibration", "bound", "max_files")


# Names the plan gives to files beside the configurations' folders.
_TOP_LEVEL = ("plan.json", "commands.sh", "instances.txt", "report-runs.json", "table3.md")


def _check_name(flag: str, name: str) -> None:
    if not _NAME.match(name):
        raise PlanError(
            f"{flag} {name!r}: the name must be letters, digits, '.', '_' or '-' "
            "(it names a folder and a harness run)"
        )
    if name in _TOP_LEVEL:
        raise PlanError(f"{flag} {name!r}: the plan has a file of that name; choose another")


def baseline_spec(name: str) -> ConfigSpec:
    """The configuration that injects nothing, under `name`."""
    _check_name("--baseline", name)
    return ConfigSpec(name=name)


def parse_config_option(text: str) -> ConfigSpec:
    """`NAME=PREDICTIONS[,gate[=T]][,calibration=FILE][,bound=lower|point][,max_files=N]`.

    A bare `gate` is the gate's default threshold, 0.45 (the paper's neutral point).
    """
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep or not name or not rest.strip():
        raise PlanError(f"--config {text!r}: expected NAME=PREDICTIONS[,gate=T][,calibration=F]")
    _check_name("--config", name)
    parts = [p.strip() for p in rest.split(",")]
    fields: dict[str, object] = {"name": name, "predictions": Path(parts[0])}
    if not parts[0] or parts[0].partition("=")[0] in _CONFIG_KEYS:
        raise PlanError(f"--config {name}: the first value after '=' is the predictions file")
    for part in parts[1:]:
        key, eq, value = part.partition("=")
        if key == "gate" and not eq:
            value = str(GateConfig().threshold)
        elif key not in _CONFIG_KEYS or not eq or not value:
            raise PlanError(
                f"--config {name}: {part!r} is not KEY=VALUE with a KEY of "
                f"{', '.join(_CONFIG_KEYS)}"
            )
        if key in fields:
            raise PlanError(f"--config {name}: {key} given twice")
        fields[key] = Path(value) if key == "calibration" else value
    try:
        return ConfigSpec.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        message = str(first.get("ctx", {}).get("error", first["msg"]))
        raise PlanError(f"--config {name}: {where + ': ' if where else ''}{message}") from None


# -- instances ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """The instances every configuration runs, in the order they run."""

    path: Path
    sha256: str
    chosen: tuple[Instance, ...]
    known_ids: frozenset[str]  # every valid id of the file, before the filters
    problems: tuple[RowProblem, ...]
    without_commit: tuple[str, ...]  # chosen by the filters but not runnable
    order: str


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_selection(
    path: Path,
    *,
    repos: Sequence[str] = (),
    exclude_repos: Sequence[str] = (),
    seed: int | None = None,
    limit: int | None = None,
) -> Selection:
    """Read the instances, keep `repos` (a name no instance has is an error), drop
    `exclude_repos` and rows without a base commit, shuffle with `seed` (else file order), and
    keep the first `limit`."""
    try:
        loaded = load_instances(path)
    except RecordError as exc:
        raise PlanError(str(exc)) from exc
    if not loaded.records:
        bad = f" ({len(loaded.problems)} bad, e.g. {loaded.problems[0]})" if loaded.problems else ""
        raise PlanError(f"{path}: no valid instance row{bad}")
    known = {i.repo for i in loaded.records}
    for name in repos:
        if name not in known:
            raise PlanError(f"--repo {name}: no instance of this repository in {path}")
    if limit is not None and limit < 0:
        raise PlanError(f"--limit must be >= 0, got {limit}")
    kept = [
        i for i in loaded.records if (not repos or i.repo in repos) and i.repo not in exclude_repos
    ]
    without = tuple(i.instance_id for i in kept if not i.base_commit)
    runnable = [i for i in kept if i.base_commit]
    order = "file order"
    if seed is not None:
        random.Random(seed).shuffle(runnable)
        order = f"shuffled with seed {seed}"
    chosen = runnable[:limit] if limit is not None else runnable
    if not chosen:
        raise PlanError(
            f"no instance of {path} left to run ({len(loaded.records)} read, "
            f"{len(without)} without base_commit); the filters or --limit leave none"
        )
    return Selection(
        path=path,
        sha256=_sha256(path),
        chosen=tuple(chosen),
        known_ids=frozenset(i.instance_id for i in loaded.records),
        problems=loaded.problems,
        without_commit=without,
        order=order,
    )
