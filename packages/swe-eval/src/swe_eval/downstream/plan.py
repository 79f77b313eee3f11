"""Run plans for the downstream evaluation: a frozen OpenHands agent with and without injected
files, its patches graded by the SWE-bench harness, the results read by `downstream report`.

For every configuration (a baseline with no injection; a retriever's predictions injected as
they are, or through codegrep-gate's precision gate with a calibration) a plan holds the
runner's inputs: the same instances in the same order with a `candidate_files` column (the
shipped OpenHands template reads it), the gate's decision per instance, the template itself and
one LLM config (same model, temperature 0, same round cap) for all; and the exact commands: the
OpenHands/benchmarks V1 runner, its converter to SWE-bench predictions, the swebench 4.1.0
harness, and `swe-eval downstream report`. Every pin has its reason written next to it.

Not for running anything: no agent, Docker or model is touched here, and nothing is printed
(`plan_cli` prints and writes). Files are written only by `write_plan`, and only the plan's own.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Literal

from codegrep_gate import (
    Calibration,
    CalibrationFileError,
    GateConfig,
    GateError,
    candidate_files_column,
    gate,
    load_calibration,
    openhands_template_path,
    render,
    shipped_calibration,
    shipped_calibrations,
)
from codegrep_records import (
    Instance,
    Prediction,
    RecordError,
    RowProblem,
    gold_from_instances,
    load_instances,
    load_predictions,
)
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from swe_eval.errors import SweEvalError

__all__ = [
    "BENCHMARKS_COMMIT",
    "BENCHMARKS_PLACEHOLDER",
    "PLAN_KIND",
    "STOCK_TEMPLATE",
    "AgentSettings",
    "BuiltConfig",
    "Command",
    "ConfigSpec",
    "ConfigStats",
    "DatasetRow",
    "GateLine",
    "GateRef",
    "Pin",
    "Plan",
    "PlanError",
    "PlannedConfig",
    "Selection",
    "baseline_spec",
    "build_config",
    "check_output",
    "load_selection",
    "make_plan",
    "parse_config_option",
    "render_commands",
    "report_manifest",
    "run_manifest",
    "run_names",
    "target_files",
    "write_plan",
]

PLAN_KIND = "swe-eval-downstream-plan"
PLAN_SCHEMA_VERSION = 1

# The runner: OpenHands/benchmarks, the V1 evaluation on openhands-sdk (V0's evaluation/ folder
# left the OpenHands repository). Read at this commit: benchmarks/swebench/run_infer.py renders
# --prompt-path with the dataset row as `instance`; its lock pins swebench 4.1.0 and the
# vendored software-agent-sdk (openhands-sdk 1.27.0) at SDK_COMMIT.
BENCHMARKS_REPO = "https://github.com/OpenHands/benchmarks"
BENCHMARKS_COMMIT = "4e5469e0caaf54d1ad827d18b524bdfb79d58430"
SDK_COMMIT = "43376f1868ffd702746080714a59c16d3f69ec12"
SWEBENCH_VERSION = "4.1.0"
# Stands for the runner's checkout in the commands until --benchmarks names it.
BENCHMARKS_PLACEHOLDER = "$BENCHMARKS"
# benchmarks.utils.constants.MODEL_NAME_OR_PATH: the converter writes it into every prediction,
# and swebench 4.1.0 names its run report `<model_name_or_path>.<run_id>.json` in the cwd.
HARNESS_MODEL_NAME = "OpenHands"
HARNESS_IMAGES = "swebench defaults: namespace swebench, instance image tag latest"
HARNESS_TIMEOUT_S = 1800  # swebench's own default per instance, written out so it is seen
DEFAULT_HARNESS_DATASET = "princeton-nlp/SWE-bench_Verified"
TEMPLATE_NAME = "prompt.j2"  # not `default.j2`: the runner resolves a bare name in its prompts/
# The runner's own SWE-bench template, in its checkout (read when the run starts).
STOCK_TEMPLATE = "benchmarks/swebench/prompts/default.j2"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# swebench 4.1.0's make_test_spec reads these (version through its repo/version spec table).
_HARNESS_FIELDS = ("version", "environment_setup_commit", "test_patch", "FAIL_TO_PASS")

WHY = {
    "runner": (
        "OpenHands/benchmarks (V1, openhands-sdk) renders --prompt-path with the dataset row as "
        "`instance`, so the candidate_files column reaches the prompt with no patch to the "
        "runner; V0's evaluation/ harness is no longer in the OpenHands repository"
    ),
    "swebench": (
        "swebench 4.1.0 is what OpenHands/benchmarks pins (`swebench==4.1.0`), so its converter "
        "and the harness share one environment; swebench 5.x builds each test spec from per-row "
        "image, eval_script, log_parser and eval_type fields and raises KeyError on classic "
        "rows (princeton-nlp/SWE-bench_Verified, and SWE-bench-style instance files), while "
        "4.1.0 builds it from the repo/version spec table"
    ),
    "harness_dataset_hub": (
        "the instances lack fields swebench 4.1.0 builds a test spec from (version, "
        "environment_setup_commit, test_patch, FAIL_TO_PASS), so the harness reads the classic "
        "rows of the same instances from the hub (classic form: see swebench)"
    ),
    "harness_dataset_local": (
        "every instance carries the fields swebench 4.1.0 builds a test spec from (version, "
        "environment_setup_commit, test_patch, FAIL_TO_PASS), so the harness grades against "
        "the configuration's own dataset.jsonl, offline"
    ),
    "select": (
        "--select instances.txt and never --n-limit: the runner's --n-limit draws a random "
        "sample (pandas sample, random_state=42), not the first N; the plan fixes the instances "
        "and their order in dataset.jsonl itself"
    ),
    "critic": (
        "--n-critic-runs 1: by default the runner retries an instance its critic rejects "
        "(finish_with_patch, up to 3 attempts), a second chance the paper's frozen agent did "
        "not get and that would differ between configurations"
    ),
    "condenser": (
        "the runner summarises long histories with extra LLM calls by default, which would "
        "enter Table 3's rounds and tokens; off unless --condenser (the Claude 3.5 Verified "
        "reference run had none)"
    ),
    "iterations": (
        "the paper's Table 3 ran OpenHands at temperature 0 with a 100-round cap (the Claude 3.5 "
        "Verified reference run in shared/data used 50); one cap for every configuration"
    ),
    "llm": (
        "one LLM config for every configuration: the same model at temperature 0; no API key is "
        "written (LiteLLM reads the provider's key from the environment)"
    ),
    "prompt_stock": (
        "the paper's baseline is the unmodified agent: the runner's own template, byte for byte, "
        "read from the pinned checkout when the run starts; an injected run gets the same "
        "template with one block after the issue that prints the row's `injection` column "
        "(render(files, 'openhands')), so the two differ in that section only"
    ),
    "prompt": (
        "codegrep-gate's template: the SWE-bench instruction plus, when the row's candidate_files "
        "is not empty, the section render(files, 'openhands') writes; the baseline uses it too, "
        "so configurations differ only in that section"
    ),
    "sampling": (
        "every sampling knob the server reads is written out, so nothing falls to a provider "
        "default that can change: openhands-sdk's LLM sends temperature, top_p, top_k, "
        "max_output_tokens and seed; drop_params false turns a parameter the provider refuses "
        "into an error instead of a silent drop; repeats differ only in the seed"
    ),
    "serving": (
        "a self-hosted model's weights revision, server version and tool-call parser change "
        "the agent as much as a prompt does; recorded in each run's manifest.json, which "
        "`report` compares across runs"
    ),
    "skills": (
        "the runner loads public skills from another repository at run time, at the ref its "
        "EXTENSIONS_REF environment variable names (main when unset): --skills COMMIT sets it "
        "on the runner's command, so every run reads the same skills"
    ),
    "retries": (
        "--max-retries 0: the runner re-runs an instance that crashed (3 times by default), a "
        "second chance that is not the same across configurations; a crash is a failure"
    ),
    "round_cap": (
        "--max-iterations caps each run of the conversation, and the runner answers an agent "
        "that stops without finishing with up to 10 'please continue' messages "
        "(run_conversation_with_fake_user_response, max_fake_responses=10, no flag), each "
        "starting a new segment; `report` counts every LLM call of a run and names the runs "
        "above this total"
    ),
    "backend": (
        "swebench 4.x grades in Modal sandboxes with --modal true, the same test specs and "
        "report; the runner's --workspace remote runs the agent off this host"
    ),
    "images": (
        "the harness's own image defaults, written down: a moving tag, so two runs months apart "
        "may grade in different images; no digest is pinned (record `docker images --digests` "
        "beside a run to show which)"
    ),
    "run_id": (
        "<config>-<hash of its dataset and LLM settings>: the harness caches verdicts per "
        "(run_id, instance), so a changed plan gets a new run id and an unchanged one resumes"
    ),
    "columns": (
        "dataset.jsonl keeps the SWE-bench columns the runner and the harness read; other "
        "columns (e.g. nested span maps) are left out: the runner loads the file with "
        "datasets/pyarrow, which must infer one type per column"
    ),
}


class PlanError(SweEvalError):
    """Bad input for a plan, found before anything is written."""


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
    if spec.calibration is not None:
        try:
            return load_calibration(spec.calibration), str(spec.calibration)
        except CalibrationFileError as exc:
            raise PlanError(f"--config {spec.name}: {exc}") from exc
    # Without calibration=, the one codegrep-gate ships for the predictions' retriever when
    # there is one, else the lexical policy's (as `codegrep localize --gate`); a served model
    # needs its own, and the mismatch check says so.
    shipped = shipped_calibrations()
    name = retrievers[0] if retrievers and retrievers[0] in shipped else "lexical"
    try:
        return shipped_calibration(name), f"shipped:{name}"
    except (GateError, CalibrationFileError) as exc:
        raise PlanError(f"--config {spec.name}: {exc}; give calibration=FILE") from exc


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
        if retrievers:
            why = calibration.retriever.mismatch(retrievers[0])
            if why is not None:
                shipped = source.startswith("shipped:")
                hint = "; give calibration=FILE (from `codegrep calibrate`)" if shipped else ""
                raise PlanError(f"--config {spec.name}: {source}: {why}{hint}")
        else:
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


# -- the plan -----------------------------------------------------------------------------------


class AgentSettings(BaseModel):
    """What every configuration shares: the frozen agent, its round cap, the harness."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1, description="The downstream agent's model (LiteLLM name).")
    base_url: str | None = None
    temperature: float = 0.0
    max_iterations: int = Field(default=100, ge=1)
    jobs: int = Field(default=4, ge=1, description="Runner and harness workers.")
    workspace: Literal["docker", "remote", "apptainer"] = "docker"
    condenser: bool = False
    harness_dataset: str | None = Field(
        default=None,
        description="None: the plan's own rows when they carry the harness's "
        "fields, else princeton-nlp/SWE-bench_Verified.",
    )
    harness_split: str = "test"
    benchmarks: str = Field(
        default=BENCHMARKS_PLACEHOLDER, description="The OpenHands/benchmarks checkout."
    )
    # sampling: every knob the server reads, written out (openhands-sdk `LLM` field names)
    seed: int = Field(default=0, ge=0, description="LLM seed of repeat 1; repeat r: seed + r - 1.")
    top_p: float = Field(default=1.0, ge=0, le=1)
    top_k: int | None = Field(default=None, ge=1, description="None: not sent.")
    max_output_tokens: int = Field(default=8192, ge=1)
    # the serving stack, recorded (the plan cannot check it; `report` compares it across runs)
    model_revision: str | None = None
    server: str | None = None
    tool_parser: str | None = None
    skills: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$",
        description="The ref (a commit) of the public skills the runner loads: its "
        "EXTENSIONS_REF, `main` when unset.",
    )
    max_retries: int = Field(default=0, ge=0, description="Runner re-runs of a crashed instance.")
    total_rounds: int | None = Field(
        default=None,
        ge=1,
        description="LLM calls allowed over a whole run, continuations included (default: "
        "max_iterations); `report` flags a run above it.",
    )
    repeats: int = Field(default=1, ge=1, description="Runs per configuration, seeds apart.")
    prompt: Literal["stock", "gate"] = Field(
        default="stock",
        description="stock: the runner's own template (+ the section for injected runs); "
        "gate: codegrep-gate's short template for every run.",
    )
    backend: Literal["local", "modal"] = Field(
        default="local",
        description="Where the harness grades: this host's Docker, or swebench's Modal sandboxes.",
    )

    @property
    def round_cap(self) -> int:
        return self.total_rounds or self.max_iterations

    def llm_config(self, repeat: int = 1) -> str:
        """The runner's LLM config (openhands-sdk `LLM` JSON), the same for every config but
        for the seed of the repeat."""
        body: dict[str, object] = {
            "model": self.model,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_output_tokens": self.max_output_tokens,
            "seed": self.seed + repeat - 1,
            # an unsupported parameter is an error, not silently dropped (LiteLLM's default
            # would drop a seed the provider does not take, and the run would not be pinned)
            "drop_params": False,
        }
        if self.top_k is not None:
            body["top_k"] = self.top_k
        if self.base_url:
            body["base_url"] = self.base_url
        return json.dumps(body, indent=2) + "\n"

    def frozen(self) -> dict[str, object]:
        """What every run of a plan shares: the settings less the seed, the repeats and where
        things run on this host (workers, the checkout's path)."""
        return self.model_dump(mode="json", exclude={"jobs", "benchmarks", "seed", "repeats"})


class Command(BaseModel):
    """One command as it runs: its argument vector, its working folder, and its shell line."""

    model_config = ConfigDict(frozen=True)

    step: Literal["template", "infer", "link", "convert", "harness", "report"]
    argv: list[str]
    cwd: str | None = None
    shell: str


class Pin(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    value: str
    why: str


class PlannedConfig(BaseModel):
    """One run: a configuration (its arm) at one repeat, with its own seed and folder."""

    model_config = ConfigDict(frozen=True)

    name: str
    arm: str
    repeat: int
    seed: int
    kind: Literal["baseline", "ungated", "gated"]
    predictions: str | None
    gate: GateRef | None
    stats: ConfigStats
    run_id: str
    files: dict[str, str] = Field(description="Role -> path relative to the plan's folder.")
    commands: list[Command]
    notes: list[str]


class InstancesRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    file: str
    sha256: str
    chosen: int
    order: str
    skipped_rows: int
    without_base_commit: list[str]


class Plan(BaseModel):
    """plan.json: everything a run needs, and why each choice was made."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["swe-eval-downstream-plan"] = "swe-eval-downstream-plan"
    schema_version: int = PLAN_SCHEMA_VERSION
    written_by: dict[str, str]
    out: str
    instances: InstancesRef
    agent: AgentSettings
    baseline: str
    pins: list[Pin]
    setup: list[str]
    configs: list[PlannedConfig]
    report: Command
    files: list[str] = Field(description="Every file the plan wrote, relative to `out`.")
    notes: list[str]


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _word(arg: str) -> str:
    """One shell word; the checkout placeholder stays a variable the shell expands."""
    if arg == BENCHMARKS_PLACEHOLDER:
        return f'"{arg}"'
    if arg.startswith(BENCHMARKS_PLACEHOLDER + "/"):
        return f'"{BENCHMARKS_PLACEHOLDER}"' + shlex.quote(arg[len(BENCHMARKS_PLACEHOLDER) :])
    return shlex.quote(arg)


def _command(
    step: Literal["template", "infer", "link", "convert", "harness", "report"],
    argv: list[str],
    cwd: Path | None = None,
) -> Command:
    line = " ".join(_word(a) for a in argv)
    if cwd is not None:
        folder = shlex.quote(str(cwd))
        line = f"(mkdir -p {folder} && cd {folder} && {line})"
    return Command(step=step, argv=argv, cwd=str(cwd) if cwd else None, shell=line)


# Links the runner's output.jsonl (its folder is named after the model and the SDK commit, not
# known before the run) to a fixed path; more than one output.jsonl is an error, not a guess.
_LINK = (
    'found=$(find "$1" -name output.jsonl -type f); '
    'n=$(printf "%s" "$found" | grep -c . || true); '
    'if [ "$n" != 1 ]; then echo "error: expected one output.jsonl under $1, found $n" >&2; '
    'exit 1; fi; ln -sfn "$found" "$2"'
)


def run_names(name: str, repeats: int) -> list[str]:
    """The runs of a configuration: its name, or NAME-r1 ... NAME-rK for K repeats."""
    return [name] if repeats == 1 else [f"{name}-r{r}" for r in range(1, repeats + 1)]


def target_files(specs: Sequence[ConfigSpec], repeats: int = 1, prompt: str = "stock") -> list[str]:
    """The files a plan for `specs` writes, relative to its folder (with the stock prompt,
    each run's prompt.j2 is written when the run starts, from the runner's checkout)."""
    files = [f for f in _TOP_LEVEL if f != "table3.md"]  # the report writes table3.md
    for s in specs:
        for run in run_names(s.name, repeats):
            files += [
                f"{run}/dataset.jsonl",
                f"{run}/gate.jsonl",
                *([f"{run}/{TEMPLATE_NAME}"] if prompt == "gate" else []),
                f"{run}/llm_config.json",
                f"{run}/manifest.json",
            ]
            if s.kind != "baseline":
                files.append(f"{run}/injected.jsonl")
    return files


def _local_harness(selection: Selection) -> bool:
    for inst in selection.chosen:
        have = inst.model_fields_set
        if any(f not in have for f in _HARNESS_FIELDS) or not inst.version:
            return False
        if not inst.environment_setup_commit or not inst.test_patch or not inst.FAIL_TO_PASS:
            return False
    return True


def _run_id(name: str, rows: Sequence[DatasetRow], settings: AgentSettings, seed: int) -> str:
    digest = hashlib.sha256()
    for row in rows:
        digest.update(row.json_line().encode())
    digest.update(json.dumps(settings.frozen(), sort_keys=True).encode())
    digest.update(str(seed).encode())
    return f"{name}-{digest.hexdigest()[:8]}"


def _infer_args(folder: Path, select: Path, settings: AgentSettings) -> list[str]:
    """benchmarks/swebench/run_infer.py's arguments (plan.json's pins say why each is there)."""
    return [
        str(folder / "llm_config.json"),
        "--dataset", str(folder / "dataset.jsonl"),
        "--split", settings.harness_split,
        "--workspace", settings.workspace,
        "--max-iterations", str(settings.max_iterations),
        "--num-workers", str(settings.jobs),
        "--select", str(select),
        "--prompt-path", str(folder / TEMPLATE_NAME),
        "--output-dir", str(folder / "infer"),
        "--note", folder.name,
        "--n-critic-runs", "1",
        "--max-retries", str(settings.max_retries),
        "--enable-condenser" if settings.condenser else "--disable-condenser",
    ]  # fmt: skip


def _harness_args(dataset: str, preds: Path, run_id: str, settings: AgentSettings) -> list[str]:
    """swebench 4.1.0 `run_evaluation`'s arguments; its report lands in the working folder."""
    return [
        "--dataset_name", dataset,
        "--split", settings.harness_split,
        "--predictions_path", str(preds),
        "--max_workers", str(settings.jobs),
        "--timeout", str(HARNESS_TIMEOUT_S),
        "--run_id", run_id,
        *(["--modal", "true"] if settings.backend == "modal" else []),
    ]  # fmt: skip


def _planned_run(
    b: BuiltConfig,
    name: str,
    repeat: int,
    out: Path,
    select: Path,
    settings: AgentSettings,
    uv: list[str],
    local: bool,
    hub_dataset: str,
) -> PlannedConfig:
    """One run of one configuration: its folder, run id (the seed in it) and commands."""
    folder = out / name
    seed = settings.seed + repeat - 1
    run_id = _run_id(name, b.rows, settings, seed)
    output = folder / "output.jsonl"
    preds = folder / "predictions.swebench.jsonl"
    report_file = folder / "harness" / f"{HARNESS_MODEL_NAME}.{run_id}.json"
    dataset = str(folder / "dataset.jsonl") if local else hub_dataset
    # the runner loads public skills at the ref EXTENSIONS_REF names (its default: main)
    pin = ["env", f"EXTENSIONS_REF={settings.skills}"] if settings.skills else []
    infer = [*pin, *uv, "swebench-infer", *_infer_args(folder, select, settings)]
    link = ["bash", "-c", _LINK, "link", str(folder / "infer"), str(output)]
    convert = [*uv, "swebench-eval", str(output), "--skip-evaluation",
               "--run-id", run_id, "--output-file", str(preds)]  # fmt: skip
    harness = [*uv, "python", "-m", "swebench.harness.run_evaluation",
               *_harness_args(dataset, preds, run_id, settings)]  # fmt: skip
    commands = []
    if settings.prompt == "stock":
        stock = f"{settings.benchmarks}/{STOCK_TEMPLATE}"
        inject = "--inject" if b.spec.kind != "baseline" else "--unchanged"
        template = ["swe-eval", "downstream", "template", stock, inject,
                    "-o", str(folder / TEMPLATE_NAME)]  # fmt: skip
        commands.append(_command("template", template))
    commands += [
        _command("infer", infer),
        _command("link", link),
        _command("convert", convert),
        _command("harness", harness, cwd=folder / "harness"),
    ]
    files = {
        "dataset": f"{name}/dataset.jsonl",
        "gate": f"{name}/gate.jsonl",
        "prompt": f"{name}/{TEMPLATE_NAME}",
        "llm_config": f"{name}/llm_config.json",
        "manifest": f"{name}/manifest.json",
        "agent_output": f"{name}/output.jsonl",
        "predictions": f"{name}/predictions.swebench.jsonl",
        "harness_report": f"{name}/harness/{report_file.name}",
    }
    if b.spec.kind != "baseline":
        files["injected"] = f"{name}/injected.jsonl"
    return PlannedConfig(
        name=name,
        arm=b.spec.name,
        repeat=repeat,
        seed=seed,
        kind=b.spec.kind,
        predictions=str(b.spec.predictions) if b.spec.predictions else None,
        gate=b.gate,
        stats=b.stats,
        run_id=run_id,
        files=files,
        commands=commands,
        notes=list(b.notes),
    )


def make_plan(
    out: Path,
    selection: Selection,
    built: Sequence[BuiltConfig],
    settings: AgentSettings,
    *,
    baseline: str,
) -> Plan:
    """The plan for `built` configurations under `out` (made absolute: the runner's commands run
    from the benchmarks checkout). Pure: writes nothing."""
    out = out.expanduser().absolute()
    bench = settings.benchmarks
    uv = ["uv", "run", "--project", bench]
    local = settings.harness_dataset is None and _local_harness(selection)
    hub_dataset = settings.harness_dataset or DEFAULT_HARNESS_DATASET
    select = out / "instances.txt"
    configs: list[PlannedConfig] = []
    for b in built:
        for repeat, name in enumerate(run_names(b.spec.name, settings.repeats), start=1):
            configs.append(
                _planned_run(b, name, repeat, out, select, settings, uv, local, hub_dataset)
            )
    report = ["swe-eval", "downstream", "report", "--manifest", str(out / "report-runs.json"),
              "-f", "markdown", "-o", str(out / "table3.md")]  # fmt: skip
    pins = [
        Pin(
            name="runner",
            value=f"{BENCHMARKS_REPO}@{BENCHMARKS_COMMIT} "
            f"(benchmarks/swebench/run_infer.py, software-agent-sdk@{SDK_COMMIT[:7]})",
            why=WHY["runner"],
        ),
        Pin(name="swebench", value=SWEBENCH_VERSION, why=WHY["swebench"]),
        Pin(
            name="harness_dataset",
            value="<config>/dataset.jsonl, per configuration"
            if local
            else f"{hub_dataset} (split {settings.harness_split})",
            why=WHY["harness_dataset_local" if local else "harness_dataset_hub"]
            if settings.harness_dataset is None
            else "given with --harness-dataset",
        ),
        Pin(name="max_iterations", value=str(settings.max_iterations), why=WHY["iterations"]),
        Pin(
            name="llm",
            value=f"{settings.model} at temperature {settings.temperature:g}",
            why=WHY["llm"],
        ),
        Pin(
            name="prompt",
            value=f"the runner's {STOCK_TEMPLATE}: unchanged for the baseline, with the "
            "injected section after the issue otherwise (swe-eval downstream template)"
            if settings.prompt == "stock"
            else f"codegrep_gate.openhands_template_path() -> {TEMPLATE_NAME}",
            why=WHY["prompt_stock" if settings.prompt == "stock" else "prompt"],
        ),
        Pin(name="instances", value="--select instances.txt", why=WHY["select"]),
        Pin(name="attempts", value="--n-critic-runs 1", why=WHY["critic"]),
        Pin(name="condenser", value="on" if settings.condenser else "off", why=WHY["condenser"]),
        Pin(
            name="sampling",
            value=f"temperature {settings.temperature:g}, top_p {settings.top_p:g}, top_k "
            f"{settings.top_k if settings.top_k is not None else 'not sent'}, "
            f"max_output_tokens {settings.max_output_tokens}, seed {settings.seed}"
            + (f" + repeat - 1 ({settings.repeats} repeats)" if settings.repeats > 1 else "")
            + ", drop_params false",
            why=WHY["sampling"],
        ),
        Pin(
            name="serving",
            value=f"model revision {settings.model_revision or 'NOT GIVEN'}; server "
            f"{settings.server or 'NOT GIVEN'}; tool parser {settings.tool_parser or 'NOT GIVEN'}",
            why=WHY["serving"],
        ),
        Pin(
            name="skills",
            value=f"EXTENSIONS_REF={settings.skills}"
            if settings.skills
            else "NOT GIVEN (the runner reads main)",
            why=WHY["skills"],
        ),
        Pin(name="retries", value=f"--max-retries {settings.max_retries}", why=WHY["retries"]),
        Pin(
            name="round_cap",
            value=f"{settings.round_cap} LLM calls per run, continuations included",
            why=WHY["round_cap"],
        ),
        Pin(
            name="backend",
            value="swebench --modal true (Modal sandboxes)"
            if settings.backend == "modal"
            else "this host's Docker",
            why=WHY["backend"],
        ),
        Pin(name="harness_images", value=HARNESS_IMAGES, why=WHY["images"]),
        Pin(name="run_id", value="<config>-<8 hex>", why=WHY["run_id"]),
        Pin(name="columns", value=", ".join(DatasetRow.model_fields), why=WHY["columns"]),
    ]
    setup = [
        f'git clone {BENCHMARKS_REPO} "{BENCHMARKS_PLACEHOLDER}"',
        f'git -C "{BENCHMARKS_PLACEHOLDER}" checkout {BENCHMARKS_COMMIT}',
        f'git -C "{BENCHMARKS_PLACEHOLDER}" submodule update --init --recursive',
        f'cd "{BENCHMARKS_PLACEHOLDER}" && uv sync   # Python >= 3.12; swebench {SWEBENCH_VERSION}',
    ]
    notes = [n for b in built for n in b.notes]
    unpinned = [
        what
        for what, value in (
            ("--model-revision", settings.model_revision),
            ("--server", settings.server),
            ("--tool-parser", settings.tool_parser),
            ("--skills", settings.skills),
        )
        if not value
    ]
    if unpinned:
        notes.append(
            f"not pinned, recorded as NOT GIVEN in every manifest: {', '.join(unpinned)}; "
            "runs planned apart cannot be shown to share them"
        )
    if selection.without_commit:
        notes.append(
            f"{len(selection.without_commit)} instance(s) without base_commit left out: "
            f"{_listed(selection.without_commit)}"
        )
    if selection.problems:
        notes.append(
            f"{len(selection.problems)} instance row(s) skipped, e.g. {selection.problems[0]}"
        )
    return Plan(
        written_by={"swe-eval": _version("swe-eval"), "codegrep-gate": _version("codegrep-gate")},
        out=str(out),
        instances=InstancesRef(
            file=str(selection.path),
            sha256=selection.sha256,
            chosen=len(selection.chosen),
            order=selection.order,
            skipped_rows=len(selection.problems),
            without_base_commit=list(selection.without_commit),
        ),
        agent=settings,
        baseline=baseline,
        pins=pins,
        setup=setup,
        configs=configs,
        report=_command("report", report),
        files=target_files([b.spec for b in built], settings.repeats, settings.prompt),
        notes=notes,
    )


def report_manifest(plan: Plan) -> str:
    """report-runs.json: the run list `swe-eval downstream report --manifest` reads; paths are
    relative to the plan's folder, so it reads the same wherever the folder is mounted."""
    runs: list[dict[str, object]] = []
    for c in plan.configs:
        run: dict[str, object] = {
            "name": c.arm,  # repeats of an arm share its name: the report pools them
            "output": c.files["agent_output"],
            "report": c.files["harness_report"],
            "manifest": c.files["manifest"],
        }
        if c.kind != "baseline" and c.stats.injected_instances:
            run["predictions"] = c.files["injected"]
        if c.stats.injected_precision is not None:
            # The report would score an instance without injection as precision 0; what governs
            # whether injection pays is the precision of the files the agent was shown.
            run["precision"] = round(c.stats.injected_precision, 6)
        runs.append(run)
    body = {
        "instances": plan.configs[0].files["dataset"] if plan.configs else "instances.txt",
        "baseline": plan.baseline,
        "title": f"{plan.agent.model}, {plan.instances.chosen} instances, "
        f"max {plan.agent.max_iterations} iterations",
        "runs": runs,
    }
    return json.dumps(body, indent=2) + "\n"


MANIFEST_KIND = "swe-eval-downstream-run"


def run_manifest(plan: Plan, run: PlannedConfig) -> dict[str, object]:
    """<run>/manifest.json: everything that can move between runs, in two parts. `frozen` must
    be equal across every run a report compares (`report` checks it); `arm` is what may differ
    (the configuration, its injection and gate, the repeat and its seed)."""
    frozen: dict[str, object] = {
        **plan.agent.frozen(),
        "round_cap": plan.agent.round_cap,
        "runner": f"{BENCHMARKS_REPO}@{BENCHMARKS_COMMIT}",
        "sdk": SDK_COMMIT,
        "swebench": SWEBENCH_VERSION,
        "harness_timeout_s": HARNESS_TIMEOUT_S,
        "harness_images": HARNESS_IMAGES,
        "harness_model_name": HARNESS_MODEL_NAME,
        "template": f"{BENCHMARKS_COMMIT}:{STOCK_TEMPLATE} (+ section when injected)"
        if plan.agent.prompt == "stock"
        else "codegrep-gate sha256 "
        + hashlib.sha256(openhands_template_path().read_bytes()).hexdigest(),
        "instances_sha256": plan.instances.sha256,
        "instances": plan.instances.chosen,
        "order": plan.instances.order,
        "written_by": plan.written_by,
    }
    arm: dict[str, object] = {
        "name": run.arm,
        "run": run.name,
        "kind": run.kind,
        "repeat": run.repeat,
        "seed": run.seed,
        "predictions": run.predictions,
        "gate": run.gate.model_dump(mode="json") if run.gate else None,
        "injected_instances": run.stats.injected_instances,
    }
    return {"kind": MANIFEST_KIND, "schema_version": 1, "frozen": frozen, "arm": arm}


def _where(agent: AgentSettings) -> str:
    """What the host running commands.sh needs, from where the agent and the harness run."""
    agent_needs = (
        "the agent in the runner's remote workspace (RUNTIME_API_KEY, RUNTIME_API_URL)"
        if agent.workspace == "remote"
        else f"the agent in {agent.workspace}"
    )
    harness_needs = (
        "the harness in Modal sandboxes (a Modal token)"
        if agent.backend == "modal"
        else "the harness in this host's Docker"
    )
    return f"Runs {agent_needs}, {harness_needs}."


def render_commands(plan: Plan) -> str:
    """commands.sh: the setup (as comments), then per configuration the runner, the link to its
    output, the converter and the harness, then the report; a progress line before each."""
    bench = plan.agent.benchmarks
    lines = [
        "#!/usr/bin/env bash",
        f"# Written by `swe-eval downstream plan` (swe-eval {plan.written_by['swe-eval']}); "
        "plan.json says why each flag is there.",
        f"# {len(plan.configs)} configuration(s) x {plan.instances.chosen} instance(s), "
        f"model {plan.agent.model}, max {plan.agent.max_iterations} iterations. "
        + _where(plan.agent),
        "#",
        "# One-time setup (not run here): a checkout of the runner at its pinned commit.",
        *(f"#   {s}" for s in plan.setup),
        "# The model's API key comes from the environment (LiteLLM), never from these files.",
        "set -euo pipefail",
    ]
    if bench == BENCHMARKS_PLACEHOLDER:
        lines.append(
            ': "${BENCHMARKS:?set BENCHMARKS to the OpenHands/benchmarks checkout '
            f'at {BENCHMARKS_COMMIT[:7]} (see the setup above)}}"'
        )
    total = len(plan.configs)
    for k, c in enumerate(plan.configs, start=1):
        lines += [
            "",
            f"# == {c.name} ({c.kind}): {c.stats.injected_instances} of "
            f"{c.stats.instances} instance(s) with injected files",
        ]
        for cmd in c.commands:
            lines.append(f"echo {shlex.quote(f'[{k}/{total} {c.name}] {cmd.step}')} >&2")
            lines.append(cmd.shell)
    lines += [
        "",
        "# == report (the paper's Table 3, with significance)",
        f"echo {shlex.quote('[report] ' + str(Path(plan.out) / 'table3.md'))} >&2",
        plan.report.shell,
        "",
    ]
    return "\n".join(lines)


# -- the output folder --------------------------------------------------------------------------


def _previous_files(out: Path) -> set[str]:
    """The files an earlier plan in `out` says it wrote (none when there is no such plan).

    An unreadable plan.json (hostile, cut short, a link) claims nothing: then nothing in `out`
    counts as ours to overwrite, the safe side.
    """
    from codegrep_records import RecordError, read_json_object

    try:
        data = read_json_object(out / "plan.json", refuse_links=True)
    except RecordError:
        return set()
    if not isinstance(data, Mapping) or data.get("kind") != PLAN_KIND:
        return set()
    files = data.get("files")
    return {f for f in files if isinstance(f, str)} if isinstance(files, list) else set()


def check_output(out: Path, targets: Sequence[str], *, force: bool) -> list[str]:
    """Refuse an output folder the plan cannot write, or one it would have to clobber.

    Not empty: refused without `force`; with it, only files an earlier plan wrote there (its
    plan.json lists them) are overwritten, and nothing is ever deleted. Returns notes (a
    runner's output left from an earlier run is resumed, not restarted).
    """
    from codegrep_records import why_unwritable

    problem = why_unwritable(out, folder=True)
    if problem is not None:
        raise PlanError(f"cannot write -o {out}: {problem}")
    if not out.exists() or not any(out.iterdir()):
        return []
    if not force:
        raise PlanError(
            f"-o {out} is not empty; give an empty or new folder, or --force to overwrite the "
            "files an earlier plan wrote there (nothing else is touched)"
        )
    ours = _previous_files(out)
    for rel in targets:
        path = out / rel
        if path.is_dir() and not path.is_symlink():
            raise PlanError(f"--force: {path} is a folder; the plan writes a file there")
        if path.parent.exists() and not path.parent.is_dir():
            raise PlanError(f"--force: {path.parent} is a file; the plan writes a folder there")
        if (path.exists() or path.is_symlink()) and rel not in ours:
            raise PlanError(
                f"--force: {path} exists and no earlier plan in {out} wrote it; not overwriting"
            )
    notes = []
    for rel in targets:
        if rel.endswith("/dataset.jsonl") and (out / rel).parent.joinpath("infer").exists():
            notes.append(
                f"{(out / rel).parent / 'infer'} exists: the runner resumes from it, skipping "
                "the instances done there; move it away for a fresh run"
            )
    return notes


def _write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` in one step (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.plan-tmp")
    tmp.write_bytes(data)
    if mode is not None:
        tmp.chmod(mode)
    os.replace(tmp, path)


def write_plan(plan: Plan, built: Sequence[BuiltConfig]) -> list[Path]:
    """Write the plan's files under `plan.out` (check the folder with `check_output` first);
    returns the paths written. plan.json comes first: it lists the files as the plan's own, so
    a write that fails halfway can be redone with --force; commands.sh comes last."""
    out = Path(plan.out)
    template = openhands_template_path().read_bytes()
    written: list[Path] = []

    def put(rel: str, text: str | bytes, mode: int | None = None) -> None:
        data = text.encode("utf-8") if isinstance(text, str) else text
        _write(out / rel, data, mode)
        written.append(out / rel)

    put("plan.json", plan.model_dump_json(indent=2) + "\n")
    ids = [i.instance_id for i in built[0].rows] if built else []
    put("instances.txt", "".join(f"{i}\n" for i in ids))
    by_arm = {b.spec.name: b for b in built}
    for c in plan.configs:
        b = by_arm[c.arm]
        put(f"{c.name}/dataset.jsonl", "".join(r.json_line() for r in b.rows))
        put(f"{c.name}/gate.jsonl", "".join(g.model_dump_json() + "\n" for g in b.gate_lines))
        if plan.agent.prompt == "gate":
            put(f"{c.name}/{TEMPLATE_NAME}", template)
        put(f"{c.name}/llm_config.json", plan.agent.llm_config(c.repeat))
        put(f"{c.name}/manifest.json", json.dumps(run_manifest(plan, c), indent=2) + "\n")
        if b.spec.kind != "baseline":
            put(
                f"{c.name}/injected.jsonl",
                "".join(p.model_dump_json(exclude_none=True) + "\n" for p in b.injected),
            )
    put("report-runs.json", report_manifest(plan))
    put("commands.sh", render_commands(plan), 0o755)
    return written
