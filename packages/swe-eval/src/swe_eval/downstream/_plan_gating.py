"""One configuration's rows: its predictions through codegrep-gate's precision gate (or as
they are), the gate's decision per instance, and the counts a reader of the plan checks.
Not for: selecting instances (`_plan_selection`) or building commands (`_plan_commands`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from codegrep_gate import (
    Calibration,
    GateConfig,
    GateError,
    candidate_files_column,
    choose_calibration,
    gate,
    render,
)
from codegrep_gate.errors import CalibrationFileError, CalibrationMismatchError
from codegrep_records import (
    Instance,
    Prediction,
    RecordError,
    gold_from_instances,
    load_predictions,
)
from pydantic import BaseModel, ConfigDict, Field

from swe_eval.downstream._plan_selection import ConfigSpec, Selection
from swe_eval.errors import PlanError

__all__ = [
    "BuiltConfig",
    "ConfigStats",
    "DatasetRow",
    "GateLine",
    "GateRef",
    "build_config",
]

# -- one configuration's rows -------------------------------------------------------------------


class DatasetRow(BaseModel):
    """One row of a configuration's dataset.jsonl: the SWE-bench columns the runner and the
    harness read (those the instance file had), and the injection columns."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    hints_text: str | None = None
    created_at: str | None = None
    version: str | None = None
    environment_setup_commit: str | None = None
    patch: str = ""
    test_patch: str = ""
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    gold_files: list[str] = Field(default_factory=list)
    candidate_files: list[str] = Field(description="Read by the shipped OpenHands template.")
    injection: str = Field(description='render(candidate_files, "openhands")')
    agent_context_suffix: str = Field(description='render(candidate_files, "agent_context")')

    def json_line(self) -> str:
        return self.model_dump_json(exclude_unset=True) + "\n"


_COPIED = (
    "hints_text",
    "created_at",
    "version",
    "environment_setup_commit",
    "patch",
    "test_patch",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "gold_files",
)


def _row(instance: Instance, files: Sequence[str]) -> DatasetRow:
    source = instance.model_dump(mode="json", include=set(_COPIED))
    copied = {k: source[k] for k in _COPIED if k in instance.model_fields_set}
    column = candidate_files_column(files)
    return DatasetRow(
        instance_id=instance.instance_id,
        repo=instance.repo,
        base_commit=instance.base_commit or "",
        problem_statement=instance.problem_statement,
        **copied,
        candidate_files=column,
        injection=render(column, "openhands"),
        agent_context_suffix=render(column, "agent_context"),
    )


class GateLine(BaseModel):
    """One line of gate.jsonl: what was retrieved, what went in, and why in one sentence."""

    model_config = ConfigDict(frozen=True)

    instance_id: str
    prediction: bool = Field(description="The predictions file has a row for this instance.")
    retrieved: list[str]
    injected: list[str]
    summary: str


class GateRef(BaseModel):
    """The gate a configuration ran through, and the calibration it read."""

    model_config = ConfigDict(frozen=True)

    threshold: float
    bound: Literal["lower", "point"]
    max_files: int | None
    calibration: str = Field(description="A file, or 'shipped:<name>' (codegrep-gate's own).")
    retriever: str
    data: str
    precision: str


class ConfigStats(BaseModel):
    """How much of a configuration was injected, and what was left out or ignored."""

    model_config = ConfigDict(frozen=True)

    instances: int
    predicted: int = 0
    missing: int = Field(default=0, description="No prediction row: nothing injected.")
    empty: int = Field(default=0, description="A prediction with no files.")
    injected_instances: int = 0
    injected_files: int = 0
    unknown_ids: list[str] = Field(default_factory=list, description="Within --max-unknown.")
    skipped_rows: int = 0
    retrievers: list[str] = Field(default_factory=list)
    injected_precision: float | None = Field(
        default=None,
        description="Macro precision of the injected files over the instances that got some "
        "and have gold (the instance patches, the records' gold rule); None without either.",
    )
    injected_scored: int = Field(default=0, description="The instances that precision covers.")


@dataclass(frozen=True)
class BuiltConfig:
    spec: ConfigSpec
    rows: tuple[DatasetRow, ...]
    gate_lines: tuple[GateLine, ...]
    injected: tuple[Prediction, ...]  # what went into the prompts, for the report's case view
    stats: ConfigStats
    gate: GateRef | None
    notes: tuple[str, ...]


def _calibration_for(spec: ConfigSpec, retrievers: Sequence[str]) -> tuple[Calibration, str]:
    """codegrep-gate's one rule (`choose_calibration`): calibration=FILE, else the one shipped
    for the predictions' retriever, else (predictions naming none) the lexical policy's."""
    retriever = retrievers[0] if retrievers else None
    try:
        choice = choose_calibration(retriever, spec.calibration)
    except CalibrationFileError as exc:
        raise PlanError(f"--config {spec.name}: {exc}") from exc
    except CalibrationMismatchError as exc:
        where = str(spec.calibration) if spec.calibration is not None else "the shipped one"
        hint = "" if spec.calibration is not None else "; give calibration=FILE"
        raise PlanError(f"--config {spec.name}: {where}: {exc}{hint}") from exc
    except GateError as exc:
        raise PlanError(f"--config {spec.name}: {exc}; give calibration=FILE") from exc
    assert choice is not None  # required: a choice or an error
    return choice.calibration, choice.source


def _listed(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:5])
    return shown + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def build_config(spec: ConfigSpec, selection: Selection, *, max_unknown: int = 0) -> BuiltConfig:
    """Read a configuration's predictions (and calibration), gate them, and make its rows.

    Raises `PlanError` for predictions that cannot be read or hold no valid row, more than
    `max_unknown` ids the instance file does not have, several retrievers in one gated file, a
    calibration that cannot be read or measured another retriever, and paths no prompt can take.
    """
    ids = [i.instance_id for i in selection.chosen]
    if spec.predictions is None:
        nothing = tuple(
            GateLine(
                instance_id=iid,
                prediction=False,
                retrieved=[],
                injected=[],
                summary="baseline: nothing injected",
            )
            for iid in ids
        )
        base_rows = tuple(_row(i, ()) for i in selection.chosen)
        return BuiltConfig(spec, base_rows, nothing, (), ConfigStats(instances=len(ids)), None, ())
    try:
        loaded = load_predictions(spec.predictions)
    except RecordError as exc:
        raise PlanError(f"--config {spec.name}: {exc}") from exc
    if not loaded.records:
        bad = f" ({len(loaded.problems)} bad, e.g. {loaded.problems[0]})" if loaded.problems else ""
        raise PlanError(f"--config {spec.name}: {spec.predictions}: no valid prediction row{bad}")
    if not any(p.files for p in loaded.records):
        # e.g. an instance file: its rows validate as predictions that name no file
        raise PlanError(
            f"--config {spec.name}: no row of {spec.predictions} names a file; is it a "
            "predictions file (instance_id, files)?"
        )
    notes: list[str] = []
    if loaded.problems:
        notes.append(
            f"{spec.name}: {len(loaded.problems)} prediction row(s) skipped, "
            f"e.g. {loaded.problems[0]}"
        )
    unknown = sorted({p.instance_id for p in loaded.records} - selection.known_ids)
    if len(unknown) > max_unknown:
        raise PlanError(
            f"--config {spec.name}: {spec.predictions} names {len(unknown)} instance id(s) that "
            f"{selection.path} does not have (more than --max-unknown {max_unknown}): "
            f"{_listed(unknown)}"
        )
    if unknown:
        notes.append(
            f"{spec.name}: {len(unknown)} unknown instance id(s) ignored: {_listed(unknown)}"
        )
    retrievers = sorted({p.retriever for p in loaded.records if p.retriever})
    calibration: Calibration | None = None
    gate_ref: GateRef | None = None
    config = None
    if spec.gate is not None:
        config = GateConfig(threshold=spec.gate, bound=spec.bound, max_files=spec.max_files)
    if config is not None:
        if len(retrievers) > 1:
            raise PlanError(
                f"--config {spec.name}: {spec.predictions} names several retrievers "
                f"({', '.join(retrievers)}); one calibration cannot gate them"
            )
        calibration, source = _calibration_for(spec, retrievers)
        if not retrievers:
            notes.append(
                f"{spec.name}: the predictions name no retriever; the calibration's "
                f"({calibration.retriever.describe()}) is assumed to fit them"
            )
        gate_ref = GateRef(
            threshold=config.threshold,
            bound=config.bound,
            max_files=config.max_files,
            calibration=source,
            retriever=calibration.retriever.describe(),
            data=calibration.data.name,
            precision=calibration.precision.fmt(),
        )
    by_id = {p.instance_id: p for p in loaded.records}
    rows: list[DatasetRow] = []
    lines: list[GateLine] = []
    injected: list[Prediction] = []
    missing = empty = 0
    try:
        for inst in selection.chosen:
            pred = by_id.get(inst.instance_id)
            files = list(pred.files) if pred is not None else []
            chosen: list[str]
            if pred is None:
                missing += 1
                chosen, summary = [], "nothing injected: no prediction for this instance"
            elif not files:
                empty += 1
                chosen, summary = [], "nothing injected: the retriever returned no files"
            elif config is not None and calibration is not None:
                decision = gate(
                    files,
                    list(pred.scores) if pred.scores is not None else None,
                    calibration,
                    config,
                    retriever=pred.retriever,
                )
                chosen, summary = list(decision.injected), decision.summary
            else:
                chosen, summary = files, f"not gated: {len(files)} file(s) injected as retrieved"
            row = _row(inst, chosen)
            rows.append(row)
            lines.append(
                GateLine(
                    instance_id=inst.instance_id,
                    prediction=pred is not None,
                    retrieved=files,
                    injected=row.candidate_files,
                    summary=summary,
                )
            )
            if row.candidate_files:
                injected.append(
                    Prediction(
                        instance_id=inst.instance_id,
                        files=tuple(row.candidate_files),
                        retriever=pred.retriever if pred is not None else None,
                    )
                )
    except (GateError, ValueError) as exc:  # a path no prompt can hold; scores out of line
        raise PlanError(f"--config {spec.name}: {exc}") from exc
    if missing:
        notes.append(
            f"{spec.name}: {missing} of {len(ids)} instance(s) have no prediction in "
            f"{spec.predictions}; they run without injection"
        )
    gold = gold_from_instances(selection.chosen)
    hits = [
        len(set(p.files) & gold[p.instance_id].files) / len(p.files)
        for p in injected
        if gold[p.instance_id].files
    ]
    stats = ConfigStats(
        instances=len(ids),
        predicted=len(ids) - missing,
        missing=missing,
        empty=empty,
        injected_instances=len(injected),
        injected_files=sum(len(p.files) for p in injected),
        unknown_ids=unknown,
        skipped_rows=len(loaded.problems),
        retrievers=retrievers,
        injected_precision=sum(hits) / len(hits) if hits else None,
        injected_scored=len(hits),
    )
    return BuiltConfig(
        spec, tuple(rows), tuple(lines), tuple(injected), stats, gate_ref, tuple(notes)
    )
