"""The run monitor's reading: an ms-swift GRPO run's logs, args and rollout log into `RunData`.

What it reads is listed in `train_launcher.monitor`'s docstring: `logging.jsonl` (the trainer's
metrics per step), `args.json`, the per-rollout log (`codegrep_model.train.RolloutLogEntry`) and
`completions.jsonl`. Files are read incrementally (`RunReader.poll`) by codegrep-report's
`JsonLinesTail` (the report's reader and line rule: no link, a regular file, bounded lines), bad
lines counted with file and line. Not for alarms (`_checks`) or plots (`_plot`).
"""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeGuard

from codegrep_model.train import ROLLOUT_LOG_FILE, RolloutLogEntry
from codegrep_records import RecordFileError
from codegrep_records.io import read_json_object
from codegrep_report import COMPLETIONS_FILE as _REPORT_COMPLETIONS_FILE
from codegrep_report import BadRow, JsonLinesTail, ReportInputError, completion_rows
from grpo_rewards import parse_answer
from pydantic import ValidationError

from train_launcher.errors import MonitorInputError

METRICS_FILE = "logging.jsonl"
# ms-swift's completions table: its name is the report's (codegrep-report reads the same file)
COMPLETIONS_FILE = _REPORT_COMPLETIONS_FILE
ARGS_FILE = "args.json"
# ROLLOUT_LOG_FILE is the plugin's (codegrep_model.train); `$CODEGREP_ROLLOUT_LOG` may put the log
# elsewhere (pass `rollout_log=`).

# canonical name -> the logging.jsonl keys that carry it, first found wins. ms-swift 4.x names;
# `completion_length` is older TRL releases' spelling of the mean length.
_METRIC_KEYS: dict[str, tuple[str, ...]] = {
    "kl": ("kl",),
    "reward": ("reward",),
    "reward_std": ("reward_std",),
    "completion_length": ("completions/mean_length", "completion_length"),
    "completion_max_length": ("completions/max_length",),
    "clipped_ratio": ("completions/clipped_ratio",),
    "num_turns": ("num_turns",),
    "calls_per_turn": ("codegrep/calls_per_turn",),
    "advantage_scale": ("codegrep/advantage_scale",),
    "frac_reward_zero_std": ("frac_reward_zero_std",),
    "ppo_clip_ratio": ("clip_ratio/region_mean", "clip_ratio"),
    "loss": ("loss",),
    "grad_norm": ("grad_norm",),
    "learning_rate": ("learning_rate",),
}
#: logging.jsonl keys whose NaN or infinite value is an alarm (elsewhere a NaN is a gap).
_FINITE_KEYS = ("loss", "grad_norm")
#: The rollout log's stop cause (RolloutLogEntry.stop_cause) of a context overflow.
OVERFLOW_STATUS = "overflow"
_STEP_KEYS = ("global_step/max_steps", "iteration")  # "12/2000"; Megatron: iteration
_SUMMARY_KEYS = ("log_history", "model_parameter_info")  # sft.py's record after training
# A bad line's message shows a bounded part of the value (a log line may hold megabytes).
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 2, 60, 60
_COUNT = re.compile(r"[0-9]{1,12}")  # a step, a step count, a launch number; see `_digits`


# ---------------------------------------------------------------------------- run data


@dataclass(frozen=True)
class Series:
    """One metric over the steps it was logged at (ascending steps)."""

    steps: tuple[int, ...] = ()
    values: tuple[float, ...] = ()
    source: str = ""

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def last(self) -> float | None:
        return self.values[-1] if self.values else None


#: A line that could not be used, and why: codegrep-report's record, so that the monitor and the
#: report say a bad line of the same training logs in one shape.
BadLine = BadRow


@dataclass(frozen=True)
class RunData:
    """What a run's logs hold, merged over its versioned subfolders (later launches win)."""

    run_dir: Path
    metric_files: tuple[Path, ...]
    record_files: tuple[Path, ...]
    metrics: dict[str, Series]
    reward_funcs: dict[str, Series]
    bad_lines: tuple[BadLine, ...]
    last_step: int | None
    max_steps: int | None
    #: The last launch wrote its end-of-training records (`train_runtime` or the summary).
    ended: bool
    rollouts: int
    completion_rows: int
    max_completion_length: int | None
    completion_limit_scope: str | None
    beta: float | None
    #: The first logged step of each launch after the first (a resume from a checkpoint).
    resumed_at: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    #: Steps whose loss or grad_norm was NaN or infinite: step -> {key: value}.
    nonfinite: dict[int, dict[str, float]] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        """Training is over: the final step is logged, or the last launch ended."""
        if self.ended:
            return True
        return self.max_steps is not None and self.last_step == self.max_steps

    def series(self, name: str) -> Series:
        return self.metrics.get(name, Series())


@dataclass
class _StepAgg:
    """Per-step sums of the rollout records."""

    rollouts: int = 0
    cbar_sum: float = 0.0
    cbar_n: int = 0
    turns_sum: float = 0.0
    turns_n: int = 0
    answers_known: int = 0
    answers_failed: int = 0
    status_known: int = 0
    overflows: int = 0

    def add(self, other: _StepAgg) -> None:
        self.rollouts += other.rollouts
        self.cbar_sum += other.cbar_sum
        self.cbar_n += other.cbar_n
        self.turns_sum += other.turns_sum
        self.turns_n += other.turns_n
        self.answers_known += other.answers_known
        self.answers_failed += other.answers_failed
        self.status_known += other.status_known
        self.overflows += other.overflows


Kind = Literal["metrics", "rollouts", "completions"]


@dataclass
class _FileState:
    """One JSON-lines file read incrementally (codegrep-report's `JsonLinesTail`: complete lines
    only, from where it stopped, no link followed, every line under the report's rule), and what
    its lines said so far."""

    path: Path
    kind: Kind
    tail: JsonLinesTail = field(init=False)
    line_no: int = 0  # the line being read
    bad: list[BadLine] = field(default_factory=list)  # lines that parsed but said nothing usable
    # metrics
    steps: dict[int, dict[str, float]] = field(default_factory=dict)
    nonfinite: dict[int, dict[str, float]] = field(default_factory=dict)
    max_steps: int | None = None
    ended: bool = False
    # rollouts / completions
    aggs: dict[int, _StepAgg] = field(default_factory=dict)
    rows: int = 0
    last_step: int = -1
    launch: int = 0  # bumped when the steps go back: a resumed launch appending to the file
    agg_launch: dict[int, int] = field(default_factory=dict)
    last_table: dict[str, Any] | None = None  # completions: the line before, to drop a repeat
    launch_starts: list[int] = field(default_factory=list)  # metrics: each launch's first step

    def __post_init__(self) -> None:
        self.tail = JsonLinesTail(self.path)

    def _forget(self) -> None:
        """The file was truncated or replaced (the tail reads it again): forget its lines."""
        tail = self.tail
        fresh = _FileState(self.path, self.kind)
        self.__dict__.update(fresh.__dict__)
        self.tail = tail

    @property
    def pending_tail(self) -> bool:
        return self.tail.pending_tail

    @property
    def bad_lines(self) -> list[BadLine]:
        """Every bad line, in line order: those the reader refused (not UTF-8, not JSON, a
        number no log writes: NaN is a value, ms-swift logs a NaN loss), then what said nothing
        usable."""
        return sorted([*self.tail.bad, *self.bad], key=lambda b: b.line)

    def poll(self) -> None:
        try:
            lines = self.tail.poll()
        except ReportInputError as exc:
            raise MonitorInputError(str(exc)) from exc
        if self.tail.restarted:
            self._forget()
        for number, obj in lines:
            self.line_no = number
            self._line(obj)

    def _bad(self, reason: str) -> None:
        self.bad.append(BadLine(file=str(self.path), line=self.line_no, reason=reason))

    def _line(self, obj: dict[str, Any]) -> None:
        if self.kind == "metrics":
            self._metrics_line(obj)
        elif self.kind == "rollouts":
            self._rollout_line(obj)
        else:
            self._completions_line(obj)

    def _metrics_line(self, obj: dict[str, Any]) -> None:
        if any(k in obj for k in _SUMMARY_KEYS):  # the record written after training, even failed
            self.ended = True
            return
        step: int | None = None
        for key in _STEP_KEYS:
            if key in obj:
                parsed = _fraction(obj[key])
                if parsed is None:
                    self._bad(f"{key} is {_REPR.repr(obj[key])}, not 'step/max_steps'")
                    return
                step, self.max_steps = parsed
                break
        else:
            raw_step = obj.get("step")
            if isinstance(raw_step, int) and not isinstance(raw_step, bool):
                step = raw_step
        if step is None:
            self._bad("no step: neither global_step/max_steps, iteration nor step")
            return
        # HF Trainer's end-of-training line; a step line after an end is a resumed launch
        # appending to the same file (--add_version false)
        self.ended = "train_runtime" in obj
        if not self.launch_starts or step < self.last_step:
            self.launch_starts.append(step)
        self.last_step = step
        values = self.steps.setdefault(step, {})
        self.nonfinite.pop(step, None)  # a resumed launch's step replaces the old one
        wrong: list[str] = []
        for key, value in obj.items():
            if key in _STEP_KEYS or key == "step":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                if _is_metric_key(key):
                    wrong.append(f"{key}={value!r}")
                continue
            if math.isfinite(value):  # NaN (e.g. no rollout scored) is a gap, not a bad line
                values[key] = float(value)
            elif key in _FINITE_KEYS:  # ... but a NaN loss or gradient norm kills the run
                self.nonfinite.setdefault(step, {})[key] = float(value)
        if wrong:
            self._bad("not numbers: " + ", ".join(wrong)[:200])

    def _rollout_line(self, obj: dict[str, Any]) -> None:
        step = obj.get("step")
        if not isinstance(step, int) or isinstance(step, bool):
            self._bad(f"step is {_REPR.repr(step)}, not an integer")
            return
        facts = _rollout_facts(obj)
        agg = _StepAgg(rollouts=1)
        if facts.cbar is not None:
            agg.cbar_sum, agg.cbar_n = facts.cbar, 1
        if facts.turns is not None:
            agg.turns_sum, agg.turns_n = facts.turns, 1
        if facts.answer_failed is not None:
            agg.answers_known, agg.answers_failed = 1, int(facts.answer_failed)
        if facts.stop_cause is not None:
            agg.status_known, agg.overflows = 1, int(facts.stop_cause == OVERFLOW_STATUS)
        self._add(step, agg)

    def _add(self, step: int, agg: _StepAgg) -> None:
        """Sum a rollout into its step; a resumed launch's records of a step replace those of
        the launch before (the steps going back in one file is a new launch appending)."""
        if step < self.last_step:
            self.launch += 1
        self.last_step = step
        if self.agg_launch.get(step, self.launch) != self.launch:
            del self.aggs[step]
        self.agg_launch[step] = self.launch
        self.aggs.setdefault(step, _StepAgg()).add(agg)
        self.rows += 1

    def _completions_line(self, obj: dict[str, Any]) -> None:
        if obj == self.last_table:  # ms-swift logs the last step's table again as training ends
            return
        self.last_table = obj
        rows = completion_rows(obj)  # the report's reading of a table line
        if rows is None:
            self._bad("the columns of the table differ in length")
            return
        for row in rows:
            step = _int(row.get("step"))
            if step is None:
                self._bad(f"step is {_REPR.repr(row.get('step'))}, not an integer")
                return
            agg = _StepAgg(rollouts=1)
            turns = row.get("num_turns")
            if _is_number(turns):
                agg.turns_sum, agg.turns_n = float(turns), 1
            completion = row.get("completion")
            if completion is not None:
                agg.answers_known = 1
                agg.answers_failed = int(parse_answer(_text(completion)).answer is None)
            self._add(step, agg)


def _digits(text: str) -> int | None:
    """An ASCII count of at most 12 digits, or None. `str.isdigit` accepts '²' (which int()
    refuses) and Arabic-Indic digits (which int() reads), and int() takes 4,300 digits."""
    text = text.strip()
    return int(text) if _COUNT.fullmatch(text) else None


def _fraction(value: object) -> tuple[int, int] | None:
    if not isinstance(value, str) or value.count("/") != 1:
        return None
    a, b = (_digits(x) for x in value.split("/"))
    return None if a is None or b is None else (a, b)


def _is_metric_key(key: str) -> bool:
    known = {k for keys in _METRIC_KEYS.values() for k in keys}
    return key in known or (key.startswith(("rewards/", "reward/")) and key.endswith("/mean"))


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _digits(value)
    return None


def _text(completion: object) -> object:
    """The text of a logged completion (a string, or a chat message)."""
    if isinstance(completion, dict):
        return completion.get("content")
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return completion[-1].get("content")
    return completion


@dataclass(frozen=True)
class _RolloutFacts:
    """What the checks need from one rollout-log line; None: the line does not say."""

    cbar: float | None
    turns: float | None
    answer_failed: bool | None
    stop_cause: str | None


def _rollout_facts(obj: Mapping[str, Any]) -> _RolloutFacts:
    """A line as the plugin writes it is read through `RolloutLogEntry` (a line from before a
    field was added reads with that field's default; `stop_cause` falls back to the episode's
    status); a line that is not a whole entry (hand-written, cut short) is read key by key."""
    try:
        entry = RolloutLogEntry.model_validate(obj)
    except ValidationError:
        return _partial_facts(obj)
    cbar: float | None = entry.cbar
    if not _is_number(cbar):
        calls = sum(entry.tool_calls_per_turn) if entry.tool_calls_per_turn else None
        calls = entry.num_tool_calls if calls is None else calls
        cbar = calls / entry.num_turns if entry.num_turns > 0 else None
    failed: bool | None = None
    if entry.answer_error or (entry.degenerate or "").startswith("no answer"):
        failed = True
    elif entry.answer_files is not None:
        failed = False
    return _RolloutFacts(
        cbar=cbar,
        turns=float(entry.num_turns),
        answer_failed=failed,
        stop_cause=entry.stop_cause if entry.stop_cause is not None else entry.episode_status,
    )


def _partial_facts(obj: Mapping[str, Any]) -> _RolloutFacts:
    cbar: float | None = None
    turns = obj.get("num_turns")
    if _is_number(obj.get("cbar")):
        cbar = float(obj["cbar"])
    else:
        calls = _calls(obj)
        if calls is not None and _is_number(turns) and turns > 0:
            cbar = calls / float(turns)
    status = obj.get("stop_cause")
    if not isinstance(status, str):  # a log from before stop_cause was written
        status = obj.get("episode_status")
    return _RolloutFacts(
        cbar=cbar,
        turns=float(turns) if _is_number(turns) else None,
        answer_failed=_answer_failed(obj),
        stop_cause=status if isinstance(status, str) else None,
    )


def _calls(obj: Mapping[str, Any]) -> float | None:
    per_turn = obj.get("tool_calls_per_turn")
    if isinstance(per_turn, list) and all(_is_number(c) for c in per_turn):
        return float(sum(per_turn))
    total = obj.get("num_tool_calls")
    return float(total) if _is_number(total) else None


def _answer_failed(obj: Mapping[str, Any]) -> bool | None:
    """Whether the rollout gave no parsable answer; None when the record does not say."""
    error = obj.get("answer_error")
    degenerate = obj.get("degenerate")
    if isinstance(error, str) and error:
        return True
    if isinstance(degenerate, str) and degenerate.startswith("no answer"):
        return True
    if isinstance(obj.get("answer_files"), list):
        return False
    return None


def _version_key(path: Path) -> tuple[int, str]:
    """ms-swift's `v<N>-<date>-<time>` folders in launch order."""
    head = path.name.split("-", 1)[0]
    number = _digits(head[1:]) if head[:1] == "v" else None
    number = -1 if number is None else number
    return number, path.name


class RunReader:
    """Reads a run's logs incrementally: each `poll` reads only what was appended since the last
    one (and discovers the folders of later launches), so following a long run stays cheap."""

    def __init__(self, run_dir: str | Path, *, rollout_log: str | Path | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.rollout_log = None if rollout_log is None else Path(rollout_log)
        self._files: dict[Path, _FileState] = {}

    def _dirs(self) -> list[Path]:
        if not self.run_dir.is_dir():
            what = "does not exist" if not self.run_dir.exists() else "is not a folder"
            raise MonitorInputError(f"the run folder {self.run_dir} {what}")
        try:
            subs = [p for p in self.run_dir.iterdir() if p.is_dir() and (p / METRICS_FILE).exists()]
        except OSError as exc:
            raise MonitorInputError(f"cannot list {self.run_dir}: {exc.strerror or exc}") from exc
        subs.sort(key=_version_key)
        return ([self.run_dir] if (self.run_dir / METRICS_FILE).exists() else []) + subs

    def _state(self, path: Path, kind: Kind) -> _FileState:
        state = self._files.get(path)
        if state is None:
            state = self._files[path] = _FileState(path, kind)
        return state

    def poll(self, *, final: bool = True) -> RunData:
        """Read what is new and return the whole run. `final`: an unfinished last line is a bad
        line (a run that is still being written leaves one; `follow_run` reads it later)."""
        dirs = self._dirs()
        metric_states = [self._state(d / METRICS_FILE, "metrics") for d in dirs]
        record_states: list[_FileState] = []
        if self.rollout_log is not None:
            if not self.rollout_log.is_file():
                if final:
                    raise MonitorInputError(f"the rollout log {self.rollout_log} does not exist")
            else:
                record_states.append(self._state(self.rollout_log, "rollouts"))
        else:
            for d in dirs:
                if (d / ROLLOUT_LOG_FILE).is_file():
                    record_states.append(self._state(d / ROLLOUT_LOG_FILE, "rollouts"))
        completion_states = [
            self._state(d / COMPLETIONS_FILE, "completions")
            for d in dirs
            if (d / COMPLETIONS_FILE).is_file()
        ]
        for state in (*metric_states, *record_states, *completion_states):
            state.poll()
        return _assemble(self.run_dir, dirs, metric_states, record_states, completion_states, final)


def read_run(run_dir: str | Path, *, rollout_log: str | Path | None = None) -> RunData:
    """Read a run's logs once. Raises `MonitorInputError` for bad input: no run folder, no
    `logging.jsonl` in it or in its `v*` subfolders, an unreadable file."""
    data = RunReader(run_dir, rollout_log=rollout_log).poll(final=True)
    if not data.metric_files:
        raise MonitorInputError(
            f"no {METRICS_FILE} in {data.run_dir} or its v*-* subfolders (is it ms-swift's "
            "--output_dir?)"
        )
    return data


def _run_args(dirs: Sequence[Path]) -> dict[str, Any]:
    """The last launch's args.json (ms-swift writes one per versioned folder), or {}.

    Missing or unreadable (hostile: too deep, `1e999`, not UTF-8, a list) is the same as absent:
    the args only fill in limits the logs do not state.
    """
    for d in reversed(dirs):
        try:
            return read_json_object(d / ARGS_FILE)
        except RecordFileError:
            continue
    return {}


def _assemble(
    run_dir: Path,
    dirs: Sequence[Path],
    metric_states: Sequence[_FileState],
    record_states: Sequence[_FileState],
    completion_states: Sequence[_FileState],
    final: bool,
) -> RunData:
    by_step: dict[int, dict[str, float]] = {}
    nonfinite: dict[int, dict[str, float]] = {}
    max_steps: int | None = None
    for state in metric_states:  # launch order: a resumed launch's steps replace the old ones
        for step, values in state.steps.items():
            by_step.setdefault(step, {}).update(values)
            nonfinite.pop(step, None)
        for step, bad_values in state.nonfinite.items():
            nonfinite[step] = dict(bad_values)
        max_steps = state.max_steps if state.max_steps is not None else max_steps
    ended = bool(metric_states) and metric_states[-1].ended
    steps = sorted(by_step)
    metrics: dict[str, Series] = {}
    for name, keys in _METRIC_KEYS.items():
        for key in keys:
            pts = [(s, by_step[s][key]) for s in steps if key in by_step[s]]
            if pts:
                metrics[name] = _series(pts, f"{METRICS_FILE} {key}")
                break
    funcs: dict[str, Series] = {}
    for key in sorted({k for v in by_step.values() for k in v}):
        parts = key.split("/")
        if len(parts) == 3 and parts[0] in ("rewards", "reward") and parts[2] == "mean":
            pts = [(s, by_step[s][key]) for s in steps if key in by_step[s]]
            funcs.setdefault(parts[1], _series(pts, f"{METRICS_FILE} {key}"))

    rollouts = _merge_aggs(record_states)
    completions = _merge_aggs(completion_states)
    if "calls_per_turn" not in metrics:
        pts = [(s, a.cbar_sum / a.cbar_n) for s, a in rollouts.items() if a.cbar_n]
        if pts:
            metrics["calls_per_turn"] = _series(pts, f"{ROLLOUT_LOG_FILE} cbar")
    if "num_turns" not in metrics:
        for aggs, where in ((rollouts, ROLLOUT_LOG_FILE), (completions, COMPLETIONS_FILE)):
            pts = [(s, a.turns_sum / a.turns_n) for s, a in aggs.items() if a.turns_n]
            if pts:
                metrics["num_turns"] = _series(pts, f"{where} num_turns")
                break
    for aggs, where in ((rollouts, ROLLOUT_LOG_FILE), (completions, COMPLETIONS_FILE)):
        pts = [(s, a.answers_failed / a.answers_known) for s, a in aggs.items() if a.answers_known]
        weights = [a.answers_known for a in aggs.values() if a.answers_known]
        if pts:
            metrics["parse_failure_rate"] = _series(pts, f"{where} answers")
            metrics["parse_failure_rate_n"] = _series(
                [(s, float(w)) for (s, _), w in zip(pts, weights, strict=True)], where
            )
            break
    pts = [(s, a.overflows / a.status_known) for s, a in rollouts.items() if a.status_known]
    if pts:
        metrics["overflow_rate"] = _series(pts, f"{ROLLOUT_LOG_FILE} stop_cause")

    bad: list[BadLine] = []
    for state in (*metric_states, *record_states, *completion_states):
        bad.extend(state.bad_lines)
        if final and state.pending_tail:
            bad.append(
                BadLine(
                    file=str(state.path),
                    line=state.tail.line_no + 1,
                    reason="unfinished last line (no newline): still being written, or cut off",
                )
            )
    starts = [step for state in metric_states for step in state.launch_starts]
    args = _run_args(dirs)
    limit = args.get("max_completion_length")
    beta = args.get("beta")
    notes: list[str] = []
    if not steps and metric_states:
        notes.append(f"no metric line in {METRICS_FILE} yet")
    return RunData(
        run_dir=run_dir,
        metric_files=tuple(s.path for s in metric_states),
        record_files=tuple(s.path for s in (*record_states, *completion_states)),
        metrics=metrics,
        reward_funcs=funcs,
        bad_lines=tuple(bad),
        last_step=steps[-1] if steps else None,
        max_steps=max_steps,
        ended=ended,
        rollouts=sum(s.rows for s in record_states),
        completion_rows=sum(s.rows for s in completion_states),
        max_completion_length=limit if isinstance(limit, int) and limit > 0 else None,
        completion_limit_scope=args.get("completion_length_limit_scope"),
        beta=float(beta) if _is_number(beta) else None,
        resumed_at=tuple(starts[1:]),
        notes=tuple(notes),
        nonfinite=dict(sorted(nonfinite.items())),
    )


def _merge_aggs(states: Sequence[_FileState]) -> dict[int, _StepAgg]:
    merged: dict[int, _StepAgg] = {}
    for state in states:  # a later launch's records of a step replace the earlier ones
        merged.update(state.aggs)
    return dict(sorted(merged.items()))


def _series(points: Sequence[tuple[int, float]], source: str) -> Series:
    pts = sorted(points)
    return Series(tuple(s for s, _ in pts), tuple(v for _, v in pts), source)
