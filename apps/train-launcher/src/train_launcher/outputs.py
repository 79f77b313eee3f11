"""Where a run's files go (`Layout`), and whether a stage's outputs are there and valid.

`launch` skips a stage whose outputs pass `check_stage`, and re-runs one whose outputs are
missing, cut short or inconsistent. The rules, stage by stage:

- labels: `labels.jsonl` reads with no bad row and at least one label, and its
  `.stats.json` (written after it by `catm mine`) is JSON.
- prepare: every `worktree-sandbox prepare` report is JSON with no failure, no skipped row, and
  every repository's commits all present.
- datasets: `report.json` (written last by `codegrep-model dataset grpo`) is JSON; `train.jsonl`
  and `val.jsonl` have as many rows as it says (train at least one); the two instance subsets
  have as many rows as their splits.
- sft-data: `sft.jsonl` has as many rows as its report's `kept`, at least one.
- sft, grpo: ms-swift appended its final message (`last_model_checkpoint`) to the output
  folder's `logging.jsonl`, and that checkpoint is complete.
- eval:checkpoint-N: the predictions are not empty and the scores (`retrieval.json`, written
  last) are JSON. eval-summary: the table names every evaluated checkpoint.

A checkpoint is complete when its folder `checkpoint-N` holds `trainer_state.json` (written
after the weights and optimizer by the HF trainer) and a weights file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegrep_model.train import ROLLOUT_LOG_FILE
from codegrep_records import RecordError, load_labels, read_rows
from codegrep_records.io import read_json_object, read_text_file

__all__ = [
    "Layout",
    "Validity",
    "check_eval",
    "check_fetch",
    "check_grpo_data",
    "check_labels",
    "check_prepare",
    "check_sft_data",
    "check_summary",
    "check_training",
    "complete_checkpoints",
    "count_rows",
    "finished_checkpoint",
    "latest_checkpoint",
]

WEIGHT_FILES = (
    "adapter_model.safetensors",
    "adapter_model.bin",
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
)
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


@dataclass(frozen=True)
class Layout:
    """Every path a run writes, under its `output_dir`."""

    root: Path

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def state(self) -> Path:
        return self.root / "launch-state.json"

    @property
    def plan_file(self) -> Path:
        return self.root / "plan.json"

    @property
    def stamps(self) -> Path:
        return self.root / "stamps"

    @property
    def lock(self) -> Path:
        return self.root / ".launch.lock"

    @property
    def labels(self) -> Path:
        return self.root / "labels" / "labels.jsonl"

    @property
    def labels_stats(self) -> Path:
        return self.labels.with_name(self.labels.name + ".stats.json")

    @property
    def prepare_train(self) -> Path:
        return self.root / "prepare" / "train.json"

    @property
    def prepare_eval(self) -> Path:
        return self.root / "prepare" / "eval.json"

    @property
    def grpo_data(self) -> Path:
        return self.root / "data" / "grpo"

    @property
    def val_eval(self) -> Path:
        """The validation rows GRPO evaluates (a capped sample of val.jsonl)."""
        return self.root / "data" / "grpo" / "val_eval.jsonl"

    @property
    def train_instances(self) -> Path:
        return self.root / "data" / "train-instances.jsonl"

    @property
    def val_instances(self) -> Path:
        return self.root / "data" / "val-instances.jsonl"

    @property
    def teacher_predictions(self) -> Path:
        return self.root / "sft" / "teacher.pred.jsonl"

    @property
    def teacher_rollouts(self) -> Path:
        return self.root / "sft" / "teacher.rollouts.jsonl"

    @property
    def sft_data(self) -> Path:
        return self.root / "data" / "sft.jsonl"

    @property
    def sft_report(self) -> Path:
        return self.root / "data" / "sft.report.json"

    @property
    def sft_dir(self) -> Path:
        return self.root / "sft" / "model"

    @property
    def grpo_dir(self) -> Path:
        return self.root / "grpo"

    @property
    def rollout_log(self) -> Path:
        return self.grpo_dir / ROLLOUT_LOG_FILE

    @property
    def eval_dir(self) -> Path:
        return self.root / "eval"

    def eval_predictions(self, checkpoint: str) -> Path:
        return self.eval_dir / checkpoint / "predictions.jsonl"

    def eval_scores(self, checkpoint: str) -> Path:
        return self.eval_dir / checkpoint / "retrieval.json"

    @property
    def eval_summary(self) -> Path:
        return self.eval_dir / "summary.md"


@dataclass(frozen=True)
class Validity:
    ok: bool
    reason: str


def _read_json(path: Path) -> dict[str, Any]:
    """A stage's JSON output as an object; `RecordFileError` (one line naming the file) for a
    missing, cut short or hostile one: too deep, `1e999`, not UTF-8, a list, a broken gzip."""
    return read_json_object(path)


def count_rows(path: Path) -> int:
    """Non-blank lines of a JSON Lines file (0 when it does not exist)."""
    if not path.is_file():
        return 0
    with path.open("rb") as fh:
        return sum(1 for line in fh if line.strip())


def complete_checkpoints(folder: Path) -> list[tuple[int, Path]]:
    """The complete `checkpoint-N` folders under `folder`, by step."""
    found = []
    if not folder.is_dir():
        return []
    for child in folder.iterdir():
        m = _CHECKPOINT.match(child.name)
        if not m or not child.is_dir():
            continue
        if (child / "trainer_state.json").is_file() and any(
            (child / w).is_file() for w in WEIGHT_FILES
        ):
            found.append((int(m.group(1)), child))
    return sorted(found)


def latest_checkpoint(folder: Path) -> Path | None:
    """The complete checkpoint with the highest step (a run resumes from it), or None."""
    found = complete_checkpoints(folder)
    return found[-1][1] if found else None


def finished_checkpoint(folder: Path) -> Path | None:
    """The `last_model_checkpoint` of ms-swift's final message in `folder/logging.jsonl`."""
    log = folder / "logging.jsonl"
    if not log.is_file():
        return None
    last: Path | None = None
    try:
        rows = list(read_rows(log))
    except RecordError:
        return None
    for _, row in rows:  # a RowProblem (a line cut short, hostile) is not the final message
        if isinstance(row, dict) and "last_model_checkpoint" in row:
            value = row.get("last_model_checkpoint")
            last = None if not value else Path(str(value))
            if last is not None and not last.is_absolute():
                last = folder / last
    return last


def check_training(folder: Path) -> Validity:
    """Whether an ms-swift training run in `folder` finished and left a complete checkpoint."""
    last = finished_checkpoint(folder)
    if last is None:
        latest = latest_checkpoint(folder)
        if latest is not None:
            return Validity(False, f"not finished (last complete checkpoint: {latest.name})")
        return Validity(False, f"no finished run in {folder}")
    if not any(c == last.resolve() for _, c in _resolved(complete_checkpoints(last.parent))):
        return Validity(False, f"{last} is not a complete checkpoint")
    return Validity(True, f"finished: {last}")


def _resolved(items: list[tuple[int, Path]]) -> list[tuple[int, Path]]:
    return [(n, p.resolve()) for n, p in items]


def check_labels(labels: Path, stats: Path) -> Validity:
    if not labels.is_file() or not stats.is_file():
        return Validity(False, f"{labels} or its stats file is missing")
    try:
        loaded = load_labels(labels)
        _read_json(stats)
    except RecordError as exc:
        return Validity(False, f"unreadable: {exc}")
    if loaded.problems:
        return Validity(False, f"{len(loaded.problems)} bad row(s), first: {loaded.problems[0]}")
    if not loaded.records:
        return Validity(False, f"{labels} holds no label")
    return Validity(True, f"{len(loaded.records)} labels")


def check_fetch(wanted: list[tuple[Path, str, str, str]]) -> Validity:
    """Each (output, repo_id, revision, split) is there, with a sidecar that names that very
    repository, revision and split, and as many rows as the sidecar says (>= 1)."""
    from train_launcher.fetch import sidecar

    for output, repo_id, revision, split in wanted:
        try:
            data = _read_json(sidecar(output))
        except RecordError as exc:
            return Validity(False, str(exc))
        got = (data.get("repo_id"), data.get("revision"), data.get("split"))
        if got != (repo_id, revision, split):
            return Validity(
                False,
                f"{output} holds {got[0]}@{got[1]} {got[2]}, not {repo_id}@{revision} {split}",
            )
        rows = data.get("rows")
        if not isinstance(rows, int) or rows < 1 or count_rows(output) != rows:
            return Validity(False, f"{output} does not have the {rows!r} rows its sidecar says")
    return Validity(True, f"{len(wanted)} input(s) fetched at their revisions")


def check_prepare(reports: list[Path]) -> Validity:
    for report in reports:
        try:
            data = _read_json(report)
        except RecordError as exc:
            return Validity(False, str(exc))
        if data.get("failures") or data.get("skipped_rows"):
            return Validity(False, f"{report} lists failures or skipped rows")
        repos = data.get("repos") or []
        if not isinstance(repos, list) or not all(isinstance(r, dict) for r in repos):
            return Validity(False, f"{report}: repos is not a list of objects")
        for repo in repos:
            if repo.get("commits_ok") != repo.get("commits"):
                return Validity(False, f"{report}: {repo.get('repo')} lacks commits")
    return Validity(True, f"{len(reports)} report(s), every commit present")


def check_grpo_data(folder: Path, subsets: dict[str, Path]) -> Validity:
    try:
        report = _read_json(folder / "report.json")
    except RecordError as exc:
        return Validity(False, str(exc))
    train, val = count_rows(folder / "train.jsonl"), count_rows(folder / "val.jsonl")
    if train != report.get("train") or val != report.get("val"):
        return Validity(
            False,
            f"rows {train}/{val} (train/val) but the report says "
            f"{report.get('train')}/{report.get('val')}",
        )
    if train < 1:
        return Validity(False, "no training row")
    expected = {"train": train, "val": val}
    for split, path in subsets.items():
        if not path.is_file() or count_rows(path) != expected[split]:
            return Validity(False, f"{path} is missing or does not match the {split} split")
    return Validity(True, f"{train} train / {val} val rows")


def check_sft_data(rows: Path, report: Path) -> Validity:
    try:
        kept = _read_json(report).get("kept")
    except RecordError as exc:
        return Validity(False, str(exc))
    n = count_rows(rows)
    if n != kept or n < 1:
        return Validity(False, f"{n} rows, the report says {kept} kept")
    return Validity(True, f"{n} SFT rows")


def check_eval(predictions: Path, scores: Path) -> Validity:
    if count_rows(predictions) < 1:
        return Validity(False, f"no predictions in {predictions}")
    try:
        _read_json(scores)
    except RecordError as exc:
        return Validity(False, str(exc))
    return Validity(True, f"{count_rows(predictions)} predictions scored")


def check_summary(summary: Path, names: list[str]) -> Validity:
    try:
        text = read_text_file(summary)
    except RecordError as exc:
        return Validity(False, str(exc))
    missing = [n for n in names if n not in text]
    if missing:
        return Validity(False, f"{summary} does not name {', '.join(missing)}")
    return Validity(True, f"{len(names)} checkpoint(s) side by side")
