"""What a calibration is measured on: gold sets, data references with file hashes, and loading.

Gold is built exactly as `swe-eval retrieval` builds it, from the records' gold rule
(`codegrep_records.GoldRule`: the old name of a renamed file, no added files, no test files) or,
with a label file (e.g. CATM labels), from the labels: an instance without a label then has an
empty gold set and is counted as `no_gold`.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegrep_records import (
    CATM_WEIGHT_THRESHOLD,
    GoldLabel,
    GoldRule,
    Instance,
    Prediction,
    RowProblem,
    gold_from_instances,
    load_instances,
    load_labels,
    load_predictions,
)

from codegrep_gate._records import DataRef, FileRef
from codegrep_gate.errors import GateError

__all__ = [
    "CalibrationData",
    "data_ref",
    "gold_sets",
    "load_calibration_data",
]


def gold_sets(
    instances: Iterable[Instance],
    *,
    labels: Iterable[GoldLabel] | None = None,
    rule: GoldRule | None = None,
) -> dict[str, frozenset[str]]:
    """Gold files per instance id, as swe-eval scores against them.

    Without `labels`: each instance's patch under `rule` (default `GoldRule()`), or its
    `gold_files` when it has no patch. With `labels`: the label's files for every instance
    that has one, and an empty set (counted as `no_gold`) for those that do not.
    """
    gold = gold_from_instances(instances, rule)
    if labels is None:
        return {iid: label.files for iid, label in gold.items()}
    by_id = {label.instance_id: label for label in labels}
    return {iid: by_id[iid].files if iid in by_id else frozenset() for iid in gold}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise GateError(f"{path}: cannot read to hash it: {exc.strerror or exc}") from exc
    return digest.hexdigest()


def _rule(
    rule: GoldRule | Mapping[str, Any] | None, labels: bool, label_threshold: float | None
) -> dict[str, Any]:
    if isinstance(rule, GoldRule) or rule is None:
        out: dict[str, Any] = dataclasses.asdict(rule or GoldRule())
        # a question added after the published calibrations: recorded only when asked, so a
        # calibration measured with the defaults is written as it was
        if out.get("exclude_changelogs") is False:
            del out["exclude_changelogs"]
    else:
        out = dict(rule)
    if labels:
        out["source"] = "labels"
        out["label_threshold"] = (
            CATM_WEIGHT_THRESHOLD if label_threshold is None else label_threshold
        )
    else:
        out.setdefault("source", "patch")
    return out


def data_ref(
    name: str,
    instances_file: str | Path | None = None,
    predictions_file: str | Path | None = None,
    *,
    labels_file: str | Path | None = None,
    gold_rule: GoldRule | Mapping[str, Any] | None = None,
    label_threshold: float | None = None,
    repos: Mapping[str, int] | None = None,
    selection: str = "",
    skipped_rows: int = 0,
    more_instances_files: Sequence[str | Path] = (),
) -> DataRef:
    """A `DataRef` naming the data, with the SHA-256 of each file given.

    A file left as None is data that never was a file (built in memory): its path and hash are
    empty. `gold_rule` is recorded as given (default: `GoldRule()`); with `labels_file` it is
    marked as label gold with `label_threshold` (default CATM's 0.15). The counts (instances,
    scored, missing, ...) are left at 0: `calibrate` and `check` fill them with what they
    measured. `more_instances_files` are further instances files, read after `instances_file`.
    """

    def path_and_hash(path: str | Path | None) -> tuple[str, str]:
        if path is None:
            return "", ""
        return str(path), _sha256(Path(path))

    inst, inst_sha = path_and_hash(instances_file)
    pred, pred_sha = path_and_hash(predictions_file)
    labels, labels_sha = path_and_hash(labels_file)
    return DataRef(
        name=name,
        instances_file=inst,
        more_instances_files=tuple(
            FileRef(path=str(f), sha256=_sha256(Path(f))) for f in more_instances_files
        ),
        predictions_file=pred,
        labels_file=labels or None,
        instances_sha256=inst_sha,
        predictions_sha256=pred_sha,
        labels_sha256=labels_sha or None,
        skipped_rows=skipped_rows,
        repos=dict(repos or {}),
        selection=selection,
        gold_rule=_rule(gold_rule, labels_file is not None, label_threshold),
    )


@dataclass(frozen=True)
class CalibrationData:
    """Predictions, gold and the data reference read from files, and every row skipped."""

    predictions: tuple[Prediction, ...]
    gold: dict[str, frozenset[str]]
    data: DataRef
    problems: tuple[RowProblem, ...]
    repositories: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Each measured instance's repository (the context model's bootstrap resamples them)."""


def _instances(files: Sequence[str | Path]) -> tuple[list[Instance], list[RowProblem], int]:
    # the first file that holds an id gives its instance; a later file's row for it is a repeat
    chosen: dict[str, Instance] = {}
    problems: list[RowProblem] = []
    repeats = 0
    for path in files:
        loaded = load_instances(path)
        problems += loaded.problems
        for inst in loaded.records:
            if inst.instance_id in chosen:
                repeats += 1
            else:
                chosen[inst.instance_id] = inst
    return list(chosen.values()), problems, repeats


def load_calibration_data(
    instances_file: str | Path | Sequence[str | Path],
    predictions_file: str | Path,
    *,
    labels_file: str | Path | None = None,
    rule: GoldRule | None = None,
    label_threshold: float = CATM_WEIGHT_THRESHOLD,
    name: str | None = None,
    repos: Sequence[str] = (),
    exclude_repos: Sequence[str] = (),
    predicted_only: bool = False,
) -> CalibrationData:
    """Read what `calibrate` needs with the records' readers, as `swe-eval retrieval` does.

    Rows the readers skip are returned in `problems` (and counted in `data.skipped_rows`); a
    file that cannot be read at all raises `codegrep_records.RecordFileError`. `name` defaults
    to the instances file's name. `repos` keeps only the instances of those repositories and
    `exclude_repos` leaves those out (e.g. repositories that were not run); the predictions of
    the instances left out are left out too (not counted as unknown), and `data.selection` says
    what was chosen. A repository named in either that no instance has is a `GateError`.

    `instances_file` may be several files, read in order: the first that holds an id gives its
    instance (a later row with that id is a repeat, counted in `data.selection`). With
    `predicted_only`, only the instances that have a prediction row are measured: data whose
    predictions cover a chosen part of the files (a cross-validation's pool), where an
    instance without one was never asked, not missed.
    """
    files = [instances_file] if isinstance(instances_file, str | Path) else list(instances_file)
    if not files:
        raise GateError("no instances file given")
    chosen_instances, problems, repeats = _instances(files)
    predictions = load_predictions(predictions_file)
    problems += predictions.problems
    shown = ", ".join(map(str, files))
    selection = ""
    notes: list[str] = []
    if repeats:
        notes.append(f"{repeats} repeated ids read from the first file holding them")
    if predicted_only:
        asked = {p.instance_id for p in predictions.records}
        before = len(chosen_instances)
        chosen_instances = [i for i in chosen_instances if i.instance_id in asked]
        notes.append(f"only the {len(chosen_instances)} instances with a prediction (of {before})")
    if repos or exclude_repos:
        known = {inst.repo for inst in chosen_instances}
        unknown = sorted({*repos, *exclude_repos} - known)
        if unknown:
            raise GateError(
                f"{shown}: no instance of {', '.join(unknown)} "
                f"(its repositories: {', '.join(sorted(known))})"
            )
        left_out = {
            inst.instance_id
            for inst in chosen_instances
            if (repos and inst.repo not in repos) or inst.repo in exclude_repos
        }
        chosen_instances = [i for i in chosen_instances if i.instance_id not in left_out]
        kept_predictions = [p for p in predictions.records if p.instance_id not in left_out]
        parts = []
        if repos:
            parts.append("only " + ", ".join(sorted(repos)))
        if exclude_repos:
            parts.append("without " + ", ".join(sorted(exclude_repos)))
        selection = "; ".join(parts)
    else:
        kept_predictions = list(predictions.records)
    selection = "; ".join([*([selection] if selection else []), *notes])
    labels = None
    if labels_file is not None:
        loaded = load_labels(labels_file, threshold=label_threshold)
        problems += loaded.problems
        labels = loaded.records
    gold = gold_sets(chosen_instances, labels=labels, rule=rule)
    per_repo = Counter(inst.repo for inst in chosen_instances)
    data = data_ref(
        name or Path(files[0]).name,
        files[0],
        predictions_file,
        more_instances_files=files[1:],
        labels_file=labels_file,
        gold_rule=rule,
        label_threshold=label_threshold,
        repos=dict(sorted(per_repo.items())),
        selection=selection,
        skipped_rows=len(problems),
    )
    return CalibrationData(
        tuple(kept_predictions),
        gold,
        data,
        tuple(problems),
        {inst.instance_id: inst.repo for inst in chosen_instances},
    )
