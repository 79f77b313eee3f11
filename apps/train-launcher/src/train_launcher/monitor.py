"""The run monitor: read an ms-swift GRPO run's logs, raise alarms, draw the plots.

What it reads, all under the run's output folder (ms-swift puts each launch in a versioned
subfolder `v<N>-<date>-<time>`, or with `--add_version false`, as the launcher runs it, appends
to the same files; either way a resumed launch's steps replace those of the launch before):

- `logging.jsonl`, ms-swift's trainer log (`swift/trainers/patcher.py`, `append_to_jsonl`): one
  JSON object per logging step with the GRPO trainer's averaged `_metrics` (`kl`, `reward`,
  `reward_std`, `completions/mean_length`, `completions/clipped_ratio`, `num_turns`,
  `rewards/<func>/mean`, our plugin's `codegrep/calls_per_turn`, ...) and the step as
  `"global_step/max_steps": "12/2000"`; then a `train_runtime` line when training ends and, last, a
  summary record (`log_history`, `global_step`) that is written even when training fails;
- `codegrep_rollouts.jsonl`, our plugin's per-rollout log (`codegrep_model.train.RolloutLogEntry`):
  calls per turn (c̄), the parsed answer or why there is none, and the rollout's stop cause
  (`stop_cause`: overflow when its token budget ended it, else the episode's status; logs
  written before `stop_cause` existed are read through `episode_status`);
- `completions.jsonl` (`--log_completions true`): one table of columns per logging step; used for
  the rollouts' turns and, when there is no per-rollout log, for answer-parse failures.

`check` turns the series into alarms (`MonitorThresholds`, defaults from the CodeGrep paper's failed
runs) and a short verdict. Sustained checks wait for a full window; the checks of what kills a run
(a NaN or infinite loss or gradient norm, KL, clipping or context overflow past a hard limit, every
group's rewards equal) apply from the first logged step; `plot` draws them (needs the `plot` extra).
Bad lines are counted and reported with file and line, never dropped in silence. This module
prints nothing; the CLI does.
"""

from __future__ import annotations

import math
import re
import reprlib
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeGuard

from codegrep_records import RecordFileError, parse_json, read_json_object
from grpo_rewards import (
    INFO_ANSWER_ERROR,
    INFO_ANSWER_FILES,
    INFO_NUM_TURNS,
    INFO_TOOL_CALLS_PER_TURN,
    parse_answer,
)
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "METRICS_FILE",
    "PANELS",
    "PLOT_FILE",
    "ROLLOUT_LOG_FILE",
    "Alarm",
    "BadLine",
    "FollowUpdate",
    "MissingPlotExtraError",
    "MonitorError",
    "MonitorInputError",
    "MonitorReport",
    "MonitorThresholds",
    "RunData",
    "RunReader",
    "Series",
    "check",
    "follow_run",
    "plot",
    "read_run",
    "require_plot_extra",
]

METRICS_FILE = "logging.jsonl"
COMPLETIONS_FILE = "completions.jsonl"
#: The plugin's default; `$CODEGREP_ROLLOUT_LOG` may put it elsewhere (pass `rollout_log=`).
ROLLOUT_LOG_FILE = "codegrep_rollouts.jsonl"
ARGS_FILE = "args.json"
PLOT_FILE = "monitor.png"

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


class MonitorError(Exception):
    """Base of the monitor's errors."""


class MonitorInputError(MonitorError):
    """The run cannot be read: no folder, no metrics file, an unreadable file (exit 2)."""


class MissingPlotExtraError(MonitorError, ImportError):
    """matplotlib is not installed: the PNGs need the `plot` extra."""

    def __init__(self) -> None:
        from importlib.metadata import packages_distributions

        dist = (packages_distributions().get(__name__.split(".")[0]) or ["train-launcher"])[0]
        super().__init__(
            f"the PNG plots need matplotlib: install the `plot` extra (pip install "
            f"'{dist}[plot]', or uv sync --extra plot)"
        )


# ---------------------------------------------------------------------------- thresholds


class MonitorThresholds(BaseModel):
    """When an alarm fires. The `monitor:` section of the launcher's config; every field has a
    default taken from the CodeGrep paper's runs (8×B200, 2000 planned steps, early-stopped at
    897): v1 drifted to KL ≈ 0.31 by step 900 where v2 held ≈ 0.09; v2's mean completion length
    peaked near 2,000 tokens around steps 400-500 with a clipping ratio near 20%.

    Sustained checks use the mean over the last `window_steps` steps, and wait until that window
    is full; trend checks fit a line over the last `trend_window_steps`; relative checks compare
    with the mean of the first `baseline_steps` (the early-run baseline).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    window_steps: int = Field(
        20, ge=1, description="Steps a value must hold (the rolling mean) before it alarms."
    )
    trend_window_steps: int = Field(100, ge=2, description="Steps a trend line is fitted over.")
    baseline_steps: int = Field(50, ge=1, description="The early-run baseline: the first steps.")

    kl_max: float = Field(
        0.2,
        gt=0,
        description="KL drift: rolling KL above this. Twice v2's healthy 0.09, two thirds of "
        "v1's 0.31: fires well before v1's level, never on v2's.",
    )
    kl_rise_floor: float = Field(
        0.12,
        ge=0,
        description="The rising-KL alarm only fires above this rolling KL (a third above v2's "
        "final 0.09), so that a healthy early climb from 0 does not fire it.",
    )
    kl_rise_per_100_steps: float = Field(
        0.02,
        gt=0,
        description="Rising KL: the fitted slope per 100 steps above this. v1 climbed about "
        "0.034 per 100 steps (0 -> 0.31 in 900), v2 about 0.01.",
    )

    length_growth_max: float = Field(
        2.0,
        gt=1,
        description="Length growth: rolling mean completion length above this multiple of the "
        "early-run baseline (v2 ended near 2,000 tokens, several times its start).",
    )
    length_limit_fraction: float = Field(
        0.8,
        gt=0,
        le=1,
        description="Length near the limit: rolling mean above this share of the completion "
        "limit (see max_completion_length).",
    )
    max_completion_length: int | None = Field(
        None,
        ge=1,
        description="The limit a whole completion is held to. None: ms-swift's args.json "
        "max_completion_length when completion_length_limit_scope is 'total'; with 'per_round' "
        "the logged length also counts the tool results, so no limit is assumed.",
    )
    clipped_ratio_max: float = Field(
        0.1,
        ge=0,
        le=1,
        description="Clipping: rolling share of completions cut at the length limit above this "
        "(v2 approached 0.2; a healthy run stays within a few percent).",
    )

    reward_plateau_steps: int = Field(
        300,
        ge=1,
        description="Reward plateau: the best rolling reward gained less than "
        "reward_plateau_min_gain over this many steps (15% of the paper's 2000-step budget).",
    )
    reward_plateau_min_gain: float = Field(0.01, ge=0, description="See reward_plateau_steps.")
    reward_collapse_drop: float = Field(
        0.15,
        gt=0,
        description="Reward collapse: rolling reward this far below its best. Rewards are "
        "F-beta in [0, 1]; v2 settled at 0.45-0.48 and v3 at 0.60-0.65, so 0.15 is the gap "
        "between a good run and a failed one.",
    )

    calls_per_turn_min: float = Field(
        1.0,
        ge=0,
        description="Calls per turn low: rolling c̄ below this (c̄ = 4 is the paper's saturation; "
        "below one call a turn the agent mostly answers without searching).",
    )
    calls_per_turn_drop_fraction: float = Field(
        0.3,
        gt=0,
        lt=1,
        description="Calls per turn falling: rolling c̄ at least this share below its baseline ...",
    )
    calls_per_turn_zero_horizon_steps: int = Field(
        500,
        ge=1,
        description="... and its fitted trend reaches 0 within this many steps: a quarter of the "
        "paper's 2000-step budget. (Issue 13 names this v2's failure; the paper's text gives "
        "v2's length and clipping, not its calls per turn.)",
    )

    parse_failure_max: float = Field(
        0.2,
        ge=0,
        le=1,
        description="Answer-parse failures: rolling share of rollouts with no parsable answer "
        "above this. Such rollouts are masked (advantage 0), so a fifth of each batch would "
        "teach nothing; not a figure from the paper.",
    )
    parse_failure_min_rollouts: int = Field(
        64,
        ge=1,
        description="The parse-failure share is taken over at least this many rollouts (the "
        "window reaches further back when needed): one step of 8 prompts x 8 generations.",
    )

    kl_hard_max: float = Field(
        1.0,
        gt=0,
        description="Hard KL limit, from the first step: one logged step above this. Five "
        "times kl_max; a policy this far from its reference in one step has broken.",
    )
    clipped_ratio_hard_max: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Hard clipping limit, from the first step: half of one step's completions "
        "cut at the length limit.",
    )
    overflow_rate_max: float = Field(
        0.2,
        ge=0,
        le=1,
        description="Hard overflow limit, from the first step: the share of one step's "
        "rollouts that stopped on a context overflow (stop_cause 'overflow' in the "
        "rollout log) above this. Their tokens past the limit never reach the loss.",
    )
    zero_std_max: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Zero-variance groups: rolling share of groups whose rewards are all equal "
        "(frac_reward_zero_std) above this. Such groups have advantage 0 and teach nothing.",
    )
    zero_std_hard_steps: int = Field(
        3,
        ge=1,
        description="From the first step: this many logged steps in a row with every group's "
        "rewards equal (frac_reward_zero_std = 1): no step of them moved the policy.",
    )

    @model_validator(mode="after")
    def _windows(self) -> MonitorThresholds:
        if self.trend_window_steps < self.window_steps:
            raise ValueError(
                f"trend_window_steps ({self.trend_window_steps}) must be at least "
                f"window_steps ({self.window_steps})"
            )
        return self

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> MonitorThresholds:
        """The thresholds in a launcher config's `monitor:` section (defaults when absent)."""
        section = (config or {}).get("monitor") or {}
        return cls.model_validate(section)


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


class BadLine(BaseModel):
    """A line that could not be used, and why."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


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
    """One JSON-lines file read incrementally: complete lines only, from where it stopped."""

    path: Path
    kind: Kind
    offset: int = 0
    line_no: int = 0
    pending_tail: bool = False
    bad: list[BadLine] = field(default_factory=list)
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
    launch_starts: list[int] = field(default_factory=list)  # metrics: each launch's first step

    def reset(self) -> None:
        fresh = _FileState(self.path, self.kind)
        self.__dict__.update(fresh.__dict__)

    def poll(self) -> None:
        try:
            size = self.path.stat().st_size
            if size < self.offset:  # truncated or replaced: read it again from the start
                self.reset()
            if size == self.offset:
                return
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read()
        except OSError as exc:
            raise MonitorInputError(f"cannot read {self.path}: {exc.strerror or exc}") from exc
        end = chunk.rfind(b"\n") + 1
        self.pending_tail = end < len(chunk)
        self.offset += end
        for raw in chunk[:end].split(b"\n")[:-1]:
            self.line_no += 1
            self._line(raw)

    def _bad(self, reason: str) -> None:
        self.bad.append(BadLine(file=str(self.path), line=self.line_no, reason=reason))

    def _line(self, raw: bytes) -> None:
        if not raw.strip():
            return
        try:
            obj = parse_json(raw.decode("utf-8"), allow_nan=True)  # ms-swift logs a NaN loss
        except UnicodeDecodeError:
            self._bad("not UTF-8")
            return
        except ValueError as exc:  # not JSON, nested too deeply, 1e999, a 5,000-digit number
            self._bad(f"not JSON ({exc})")
            return
        if not isinstance(obj, dict):
            self._bad(f"a JSON {type(obj).__name__}, not an object")
            return
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
        agg = _StepAgg(rollouts=1)
        cbar = obj.get("cbar")
        if _is_number(cbar):
            agg.cbar_sum, agg.cbar_n = float(cbar), 1
        else:
            calls = _calls(obj)
            turns = obj.get(INFO_NUM_TURNS)
            if calls is not None and _is_number(turns) and turns > 0:
                agg.cbar_sum, agg.cbar_n = calls / float(turns), 1
        turns = obj.get(INFO_NUM_TURNS)
        if _is_number(turns):
            agg.turns_sum, agg.turns_n = float(turns), 1
        failed = _answer_failed(obj)
        if failed is not None:
            agg.answers_known, agg.answers_failed = 1, int(failed)
        status = obj.get("stop_cause")
        if not isinstance(status, str):  # a log from before stop_cause was written
            status = obj.get("episode_status")
        if isinstance(status, str):
            agg.status_known, agg.overflows = 1, int(status == OVERFLOW_STATUS)
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
        steps = obj.get("step")
        if isinstance(steps, list):  # ms-swift: one table of columns per logging step
            n = len(steps)
            columns = {k: v for k, v in obj.items() if isinstance(v, list)}
            if any(len(v) != n for v in columns.values()):
                self._bad("the columns of the table differ in length")
                return
            rows = [{k: v[i] for k, v in columns.items()} for i in range(n)]
        else:  # one row per line
            rows = [obj]
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


def _calls(obj: Mapping[str, Any]) -> float | None:
    per_turn = obj.get(INFO_TOOL_CALLS_PER_TURN)
    if isinstance(per_turn, list) and all(_is_number(c) for c in per_turn):
        return float(sum(per_turn))
    total = obj.get("num_tool_calls")
    return float(total) if _is_number(total) else None


def _answer_failed(obj: Mapping[str, Any]) -> bool | None:
    """Whether the rollout gave no parsable answer; None when the record does not say."""
    error = obj.get(INFO_ANSWER_ERROR)
    degenerate = obj.get("degenerate")
    if isinstance(error, str) and error:
        return True
    if isinstance(degenerate, str) and degenerate.startswith("no answer"):
        return True
    if isinstance(obj.get(INFO_ANSWER_FILES), list):
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
        bad.extend(state.bad)
        if final and state.pending_tail:
            bad.append(
                BadLine(
                    file=str(state.path),
                    line=state.line_no + 1,
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


# ---------------------------------------------------------------------------- checks


class Alarm(BaseModel):
    """One alarm: what fired, at which step first, on which values, against which threshold."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="A stable id, e.g. kl_drift, length_growth.")
    metric: str = Field(description="The series it watches (RunData.metrics key).")
    step: int = Field(description="The first step at which it fired.")
    value: float = Field(description="The value that fired it (rolling mean, slope or share).")
    threshold: float = Field(description="What the value was held against.")
    values: dict[str, float] = Field(
        default_factory=dict, description="The other figures of the test at that step."
    )
    last_step: int = Field(description="The last logged step.")
    last_value: float = Field(description="The value at the last logged step.")
    message: str


class MonitorReport(BaseModel):
    """The alarms of a run, its figures and a short verdict."""

    run_dir: str
    last_step: int | None
    max_steps: int | None
    finished: bool
    alarms: list[Alarm]
    latest: dict[str, float] = Field(description="Each series' rolling mean at the last step.")
    notes: list[str]
    bad_lines: list[BadLine]
    thresholds: MonitorThresholds
    verdict: str

    @property
    def ok(self) -> bool:
        return not self.alarms

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1


def _interval(series: Series) -> float:
    """The usual gap between logged steps (logging_steps)."""
    gaps = sorted(b - a for a, b in zip(series.steps, series.steps[1:], strict=False) if b > a)
    return float(gaps[len(gaps) // 2]) if gaps else 1.0


def _rolling(series: Series, window: int) -> list[tuple[int, float, bool]]:
    """(step, mean of the values logged in the last `window` steps, whether the window is full)."""
    out: list[tuple[int, float, bool]] = []
    need = max(1, int(window // _interval(series)))
    lo = 0
    total = 0.0
    first = series.steps[0] if series.steps else 0
    for hi, (step, value) in enumerate(zip(series.steps, series.values, strict=True)):
        total += value
        while series.steps[lo] <= step - window:
            total -= series.values[lo]
            lo += 1
        n = hi - lo + 1
        full = n >= need and step - first + _interval(series) >= window
        out.append((step, total / n, full))
    return out


def _weighted_rolling(
    series: Series, weights: Series, window: int, min_weight: float = 0.0
) -> list[tuple[int, float, bool]]:
    """Like `_rolling` for a share, each step weighted by its number of rollouts; the window
    reaches further back until it holds `min_weight` rollouts (a share of a few is noise)."""
    w = dict(zip(weights.steps, weights.values, strict=True))
    out: list[tuple[int, float, bool]] = []
    need = max(1, int(window // _interval(series)))
    first = series.steps[0] if series.steps else 0
    for i, step in enumerate(series.steps):
        num = den = 0.0
        n = 0
        for j in range(i, -1, -1):
            if series.steps[j] <= step - window and den >= min_weight:
                break
            weight = w.get(series.steps[j], 1.0)
            num += series.values[j] * weight
            den += weight
            n += 1
        full = n >= need and den >= min_weight and step - first + _interval(series) >= window
        out.append((step, num / den if den else 0.0, full))
    return out


def _slope(series: Series, upto: int, window: int) -> tuple[float, int]:
    """Least-squares slope per step of the points in the `window` steps up to index `upto`."""
    step = series.steps[upto]
    xs: list[float] = []
    ys: list[float] = []
    for j in range(upto, -1, -1):
        if series.steps[j] <= step - window:
            break
        xs.append(float(series.steps[j]))
        ys.append(series.values[j])
    n = len(xs)
    if n < 3:
        return 0.0, n
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return 0.0, n
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx, n


def _baseline(series: Series, steps: int) -> float | None:
    """The mean of the first `steps` steps, once that many have been logged."""
    if not series.steps or series.steps[-1] - series.steps[0] + _interval(series) < steps:
        return None
    first = series.steps[0]
    vals = [v for s, v in zip(series.steps, series.values, strict=True) if s < first + steps]
    return sum(vals) / len(vals) if vals else None


def _fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


Row = tuple[int, float, bool]  # (step, rolling mean, whether the window is full)


class _Checks:
    """The alarms of one run, one method per topic; each alarm fires once, at its first step."""

    def __init__(self, run: RunData, thresholds: MonitorThresholds) -> None:
        self.run = run
        self.th = thresholds
        self.w = thresholds.window_steps
        self.alarms: list[Alarm] = []
        self.notes = list(run.notes)
        self.latest: dict[str, float] = {}

    def rolling(self, metric: str) -> list[Row]:
        series = self.run.series(metric)
        if not series:
            return []
        if metric == "parse_failure_rate":
            weights = self.run.series("parse_failure_rate_n")
            rows = _weighted_rolling(series, weights, self.w, self.th.parse_failure_min_rollouts)
        else:
            rows = _rolling(series, self.w)
        self.latest[metric] = rows[-1][1]
        return rows

    def fire(
        self, name: str, metric: str, row: Row, value: float, threshold: float, message: str,
        **values: float,
    ) -> None:  # fmt: skip
        self.alarms.append(
            Alarm(
                name=name,
                metric=metric,
                step=row[0],
                value=value,
                threshold=threshold,
                values=values,
                last_step=self.run.series(metric).steps[-1],
                last_value=self.latest[metric],
                message=message,
            )
        )

    def crosses(
        self, name: str, metric: str, limit: float, message: str, *, below: bool = False,
        **values: float,
    ) -> list[Row]:  # fmt: skip
        """Fire when the full rolling mean first goes above `limit` (`below`: under it);
        `message` is formatted with `mean` (the value) and `w` (the window)."""
        rows = self.rolling(metric)
        for row in rows:
            if row[2] and (row[1] < limit if below else row[1] > limit):
                text = message.format(mean=row[1], w=self.w)
                self.fire(name, metric, row, row[1], limit, text, **values)
                break
        return rows

    def hard_limit(self, name: str, metric: str, limit: float, message: str) -> None:
        """Fire at the first logged step whose own value (not a rolling mean) is above
        `limit`, from the first step on; `message` is formatted with `value`."""
        series = self.run.series(metric)
        if not series:
            return
        self.rolling(metric)
        for step, value in zip(series.steps, series.values, strict=True):
            if value > limit:
                self.fire(
                    name, metric, (step, value, True), value, limit, message.format(value=value)
                )
                return

    def nonfinite(self) -> None:
        """A NaN or infinite loss or gradient norm at any step: the weights it touched are
        lost, and every later step builds on them."""
        first: dict[str, tuple[int, float]] = {}
        count: dict[str, int] = {}
        for step, bad in self.run.nonfinite.items():
            for key, value in bad.items():
                first.setdefault(key, (step, value))
                count[key] = count.get(key, 0) + 1
        for key, (step, value) in first.items():
            n = count[key]
            self.alarms.append(
                Alarm(
                    name=f"nonfinite_{key}",
                    metric=key,
                    step=step,
                    value=float(n),
                    threshold=0.0,
                    values={"first_value": value},
                    last_step=self.run.last_step if self.run.last_step is not None else step,
                    last_value=float(n),
                    message=f"{key} is {value} at step {step} ({n} step(s) with a NaN or "
                    "infinite value): the update of that step is garbage; stop and resume from "
                    "the checkpoint before it",
                )
            )

    def zero_std(self) -> None:
        th, share = self.th, self.run.series("frac_reward_zero_std")
        if not share:
            self.notes.append("no frac_reward_zero_std logged: zero-variance checks skipped")
            return
        self.crosses(
            "zero_std_groups",
            "frac_reward_zero_std",
            th.zero_std_max,
            "zero-variance groups: {mean:.1%} of the groups of the last {w} steps had all "
            + f"rewards equal (advantage 0, nothing learned) > {_pct(th.zero_std_max)}",
        )  # fmt: skip
        streak = 0
        for step, value in zip(share.steps, share.values, strict=True):
            streak = streak + 1 if value >= 1.0 - 1e-9 else 0
            if streak >= th.zero_std_hard_steps:
                self.fire(
                    "zero_std_all",
                    "frac_reward_zero_std",
                    (step, value, True),
                    float(streak),
                    float(th.zero_std_hard_steps),
                    f"every group's rewards were equal for {streak} steps in a row (to step "
                    f"{step}): the advantages are all 0 and the policy does not move",
                )
                return

    def hard_limits(self) -> None:
        th = self.th
        self.hard_limit(
            "kl_hard",
            "kl",
            th.kl_hard_max,
            "KL {value:.3g} at one step > the hard limit " + _fmt(th.kl_hard_max),
        )  # fmt: skip
        self.hard_limit(
            "clipped_ratio_hard",
            "clipped_ratio",
            th.clipped_ratio_hard_max,
            "{value:.1%} of one step's completions cut at the length limit > the hard limit "
            + _pct(th.clipped_ratio_hard_max),
        )  # fmt: skip
        if not self.run.series("overflow_rate"):
            self.notes.append(
                "no stop_cause in the rollout log (codegrep_rollouts.jsonl): overflow check skipped"
            )
            return
        self.hard_limit(
            "overflow_high",
            "overflow_rate",
            th.overflow_rate_max,
            "{value:.1%} of one step's rollouts stopped on a context overflow > "
            + _pct(th.overflow_rate_max),
        )  # fmt: skip

    def kl(self) -> None:
        th, kl = self.th, self.run.series("kl")
        if not kl:
            why = " (beta is 0: no reference model)" if self.run.beta == 0 else ""
            self.notes.append(f"no KL logged{why}: KL checks skipped")
            return
        self.crosses(
            "kl_drift",
            "kl",
            th.kl_max,
            "KL drift: KL {mean:.3g} over the last {w} steps > " + _fmt(th.kl_max)
            + " (the paper's failed v1 reached 0.31, its healthy v2 0.09)",
        )  # fmt: skip
        for i, row in enumerate(self.rolling("kl")):
            if not row[2] or row[1] < th.kl_rise_floor:
                continue
            slope, n = _slope(kl, i, th.trend_window_steps)
            per100 = slope * 100
            if n >= 3 and per100 > th.kl_rise_per_100_steps:
                self.fire(
                    "kl_rising",
                    "kl",
                    row,
                    per100,
                    th.kl_rise_per_100_steps,
                    f"KL rising: +{_fmt(per100)} per 100 steps (fitted over "
                    f"{th.trend_window_steps} steps) > {_fmt(th.kl_rise_per_100_steps)}, at KL "
                    f"{_fmt(row[1])} >= {_fmt(th.kl_rise_floor)}",
                    kl=row[1],
                )
                return

    def length(self) -> None:
        th, run, length = self.th, self.run, self.run.series("completion_length")
        if not length:
            self.notes.append("no completion length logged: length checks skipped")
            return
        base = _baseline(length, th.baseline_steps)
        for row in self.rolling("completion_length"):
            step, mean, full = row
            late = step >= length.steps[0] + th.baseline_steps
            if base and full and late and mean > th.length_growth_max * base:
                self.fire(
                    "length_growth",
                    "completion_length",
                    row,
                    mean,
                    th.length_growth_max * base,
                    f"completion length growth: {mean:.0f} tokens over the last {self.w} steps > "
                    f"{_fmt(th.length_growth_max)} x the early baseline {base:.0f} (v2's length "
                    "exploitation peaked near 2,000)",
                    baseline=base,
                    ratio=mean / base,
                )
                break
        limit = _length_limit(run, th)
        if limit is None and run.max_completion_length is not None:
            self.notes.append(
                f"max_completion_length {run.max_completion_length} is per round "
                "(completion_length_limit_scope per_round) and the logged length also counts the "
                "tool results: set monitor.max_completion_length for the absolute length check"
            )
        if limit is not None:
            self.crosses(
                "length_near_limit",
                "completion_length",
                th.length_limit_fraction * limit,
                "completion length near the limit: {mean:.0f} tokens over the last {w} steps > "
                + f"{_pct(th.length_limit_fraction)} of max_completion_length {limit}",
                max_completion_length=float(limit),
            )  # fmt: skip
        self.crosses(
            "clipped_ratio_high",
            "clipped_ratio",
            th.clipped_ratio_max,
            "clipped completions: {mean:.1%} cut at the length limit over the last {w} steps > "
            + f"{_pct(th.clipped_ratio_max)} (v2 approached 20%)",
        )  # fmt: skip

    def reward(self) -> None:
        th, reward = self.th, self.run.series("reward")
        if not reward:
            self.notes.append("no reward logged: reward checks skipped")
            return
        self.rolling("reward_std")
        best, best_step = -math.inf, 0
        history: list[tuple[int, float]] = []  # (step, best so far)
        plateau = collapse = False
        for row in self.rolling("reward"):
            step, mean, full = row
            if not full:
                continue
            if mean > best:
                best, best_step = mean, step
            history.append((step, best))
            if not collapse and best - mean >= th.reward_collapse_drop:
                collapse = True
                self.fire(
                    "reward_collapse",
                    "reward",
                    row,
                    mean,
                    best - th.reward_collapse_drop,
                    f"reward collapse: {_fmt(mean)} over the last {self.w} steps, "
                    f"{_fmt(best - mean)} below its best {_fmt(best)} (step {best_step}), "
                    f">= {_fmt(th.reward_collapse_drop)}",
                    best=best,
                    best_step=float(best_step),
                )
            if not plateau and step - reward.steps[0] >= th.reward_plateau_steps + self.w:
                before = [b for s, b in history if s <= step - th.reward_plateau_steps]
                if before and best - before[-1] < th.reward_plateau_min_gain:
                    plateau = True
                    self.fire(
                        "reward_plateau",
                        "reward",
                        row,
                        best - before[-1],
                        th.reward_plateau_min_gain,
                        f"reward plateau: the best rolling reward ({_fmt(best)}) gained "
                        f"{_fmt(best - before[-1])} in the last {th.reward_plateau_steps} steps "
                        f"< {_fmt(th.reward_plateau_min_gain)}",
                        best=best,
                    )

    def calls(self) -> None:
        th, calls = self.th, self.run.series("calls_per_turn")
        if not calls:
            self.notes.append(
                "no calls per turn (codegrep/calls_per_turn or a per-rollout log): "
                "calls-per-turn checks skipped"
            )
            return
        rows = self.crosses(
            "calls_per_turn_low",
            "calls_per_turn",
            th.calls_per_turn_min,
            "calls per turn low: c̄ {mean:.3g} over the last {w} steps < "
            + _fmt(th.calls_per_turn_min),
            below=True,
        )  # fmt: skip
        base = _baseline(calls, th.baseline_steps)
        if not base:
            return
        floor = (1 - th.calls_per_turn_drop_fraction) * base
        for i, row in enumerate(rows):
            step, mean, full = row
            if not full or step < calls.steps[0] + th.baseline_steps or mean > floor:
                continue
            slope, n = _slope(calls, i, th.trend_window_steps)
            if n < 3 or slope >= 0:
                continue
            to_zero = mean / -slope
            if to_zero <= th.calls_per_turn_zero_horizon_steps:
                self.fire(
                    "calls_per_turn_falling",
                    "calls_per_turn",
                    row,
                    mean,
                    floor,
                    f"calls per turn falling toward 0: c̄ {_fmt(mean)}, "
                    f"{_pct(1 - mean / base)} below its early {_fmt(base)}, "
                    f"{_fmt(slope * 100)} per 100 steps: 0 in about {to_zero:.0f} steps",
                    baseline=base,
                    slope_per_100_steps=slope * 100,
                    steps_to_zero=to_zero,
                )
                return

    def parse_failures(self) -> None:
        th = self.th
        if not self.run.series("parse_failure_rate"):
            self.notes.append(
                "no answers in the rollout records (codegrep_rollouts.jsonl, completions.jsonl):"
                " parse-failure check skipped"
            )
            return
        self.crosses(
            "parse_failures_high",
            "parse_failure_rate",
            th.parse_failure_max,
            "answer-parse failures: {mean:.1%} of the rollouts of the last {w} steps (at least "
            + f"{th.parse_failure_min_rollouts}) gave no "
            + f"parsable answer > {_pct(th.parse_failure_max)}",
            min_rollouts=float(th.parse_failure_min_rollouts),
        )  # fmt: skip


def _length_limit(run: RunData, th: MonitorThresholds) -> int | None:
    """The limit a whole completion is held to: the config's, else args.json's when its scope
    is the total (with per_round the logged length also counts the tool results)."""
    if th.max_completion_length is not None:
        return th.max_completion_length
    if run.completion_limit_scope in (None, "total"):
        return run.max_completion_length
    return None


def check(run: RunData, thresholds: MonitorThresholds | None = None) -> MonitorReport:
    """Every alarm the run raises (each at the first step it fired) and a short verdict."""
    th = thresholds or MonitorThresholds()
    checks = _Checks(run, th)
    checks.kl()
    checks.length()
    checks.reward()
    checks.calls()
    checks.parse_failures()
    checks.nonfinite()
    checks.zero_std()
    checks.hard_limits()
    for name in ("num_turns", "ppo_clip_ratio"):
        checks.rolling(name)
    notes = checks.notes
    first = min((s.steps[0] for s in run.metrics.values() if s.steps), default=None)
    if first is not None and run.last_step is not None:
        span = run.last_step - first + _interval(run.series("reward") or run.series("kl"))
        if span < th.window_steps:
            notes.append(
                f"only {span:g} steps logged, fewer than window_steps ({th.window_steps}): "
                "no sustained check could fire yet (the hard limits and the NaN checks apply)"
            )
    stopped = run.last_step is not None and run.max_steps is not None
    if run.ended and stopped and (run.last_step or 0) < (run.max_steps or 0):
        notes.append(
            f"the last launch ended at step {run.last_step} of {run.max_steps} "
            "(an early stop, or a failure)"
        )
    if run.bad_lines:
        notes.append(f"{len(run.bad_lines)} bad line(s) skipped (listed in bad_lines)")
    alarms = sorted(checks.alarms, key=lambda a: (a.step, a.name))
    return MonitorReport(
        run_dir=str(run.run_dir),
        last_step=run.last_step,
        max_steps=run.max_steps,
        finished=run.finished,
        alarms=alarms,
        latest=checks.latest,
        notes=notes,
        bad_lines=list(run.bad_lines),
        thresholds=th,
        verdict=_verdict(run, alarms, checks.latest, checks.w),
    )


def _verdict(
    run: RunData, alarms: Sequence[Alarm], latest: Mapping[str, float], window: int
) -> str:
    where = "no step logged yet"
    if run.last_step is not None:
        of = f" of {run.max_steps}" if run.max_steps is not None else ""
        state = "finished" if run.finished else "running or stopped"
        where = f"step {run.last_step}{of}, {state}"
    figures = []
    for name, label, fmt in (
        ("reward", "reward", _fmt),
        ("kl", "KL", _fmt),
        ("completion_length", "length", lambda x: f"{x:.0f}"),
        ("clipped_ratio", "clipped", _pct),
        ("calls_per_turn", "calls/turn", _fmt),
        ("parse_failure_rate", "parse failures", _pct),
        ("frac_reward_zero_std", "zero-std groups", _pct),
        ("overflow_rate", "overflows", _pct),
    ):
        if name in latest:
            figures.append(f"{label} {fmt(latest[name])}")
    figure_line = (
        f"mean of the last {window} logged steps: " + ", ".join(figures)
        if figures
        else "no metric logged"
    )
    if not alarms:
        return f"OK: no alarm ({where}); {figure_line}"
    names = ", ".join(dict.fromkeys(a.name for a in alarms))
    lines = [f"ALARM: {len(alarms)} alarm(s): {names} ({where}); {figure_line}"]
    lines += [f"  step {a.step}: {a.message}" for a in alarms]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- follow


@dataclass(frozen=True)
class FollowUpdate:
    """One poll of a followed run: the report, and what is new since the last poll."""

    report: MonitorReport
    run: RunData
    new_alarms: tuple[Alarm, ...]
    new_bad_lines: tuple[BadLine, ...]
    polls: int
    done: bool


def follow_run(
    run_dir: str | Path,
    thresholds: MonitorThresholds | None = None,
    *,
    interval_s: float = 5.0,
    max_polls: int | None = None,
    rollout_log: str | Path | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Generator[FollowUpdate, None, None]:
    """Re-read the run as it grows, every `interval_s` seconds, and yield an update per poll.
    Stops after the poll that sees training end (its final step, or the end records), or after
    `max_polls`; the caller stops it on Ctrl-C. A run folder without `logging.jsonl` yet is
    waited for; a missing run folder is bad input (`MonitorInputError`)."""
    reader = RunReader(run_dir, rollout_log=rollout_log)
    seen_alarms: set[str] = set()
    seen_bad: set[tuple[str, int, str]] = set()
    polls = 0
    while True:
        if polls:
            sleep(interval_s)
        polls += 1
        run = reader.poll(final=False)
        report = check(run, thresholds)
        new_alarms = tuple(a for a in report.alarms if a.name not in seen_alarms)
        seen_alarms.update(a.name for a in new_alarms)
        new_bad = tuple(b for b in run.bad_lines if (b.file, b.line, b.reason) not in seen_bad)
        seen_bad.update((b.file, b.line, b.reason) for b in new_bad)
        done = run.finished or (max_polls is not None and polls >= max_polls)
        if done and run.finished:  # the end: an unfinished last line is now a bad line
            run = reader.poll(final=True)
            report = check(run, thresholds)
        yield FollowUpdate(report, run, new_alarms, new_bad, polls, done)
        if done:
            return


# ---------------------------------------------------------------------------- plots


def _figure_class() -> Any:
    """matplotlib's Figure (no pyplot: no global state, no GUI backend), or the extra's error."""
    try:
        from matplotlib.figure import Figure  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise MissingPlotExtraError() from exc
    return Figure


def _integer_locator() -> Any:
    from matplotlib.ticker import MaxNLocator  # type: ignore[import-not-found, unused-ignore]

    return lambda: MaxNLocator(integer=True)


def require_plot_extra() -> None:
    """Raise `MissingPlotExtraError` unless matplotlib can be imported (check before work)."""
    _figure_class()


#: The panels of the figure, in order: (title, y label).
PANELS: tuple[tuple[str, str], ...] = (
    ("KL to the reference model", "kl"),
    ("Reward (mean ± std)", "reward"),
    ("Completion length", "tokens"),
    ("Completions clipped at the length limit", "% of completions"),
    ("Tool calls per turn (c̄) and turns", "calls / turn"),
    ("Answer-parse failures", "% of rollouts"),
)


def _title(run: RunData, report: MonitorReport) -> str:
    name = run.run_dir.resolve().name
    where = "no step logged" if run.last_step is None else f"step {run.last_step}"
    if run.max_steps is not None and run.last_step is not None:
        where += f" of {run.max_steps}"
    where += ", finished" if run.finished else ""
    if report.ok:
        short = next((n.split(":")[0] for n in report.notes if n.startswith("only ")), None)
        return f"{name}: OK, no alarm ({where})" + (
            f"\n{short}: nothing judged yet" if short else ""
        )
    names = list(dict.fromkeys(a.name for a in report.alarms))
    lines = [f"{name}: ALARM, {len(names)} fired ({where})"]
    row: list[str] = []
    for n in names:  # a few names a line
        if len(", ".join([*row, n])) > 90:
            lines.append(", ".join(row))
            row = []
        row.append(n)
    lines.append(", ".join(row))
    return "\n".join(lines)


def plot(
    run: RunData, report: MonitorReport, out_dir: str | Path, *, within: str | Path | None = None
) -> Path:
    """Draw the run's panels (KL, reward mean ± std, completion length, clipped share, calls per
    turn, parse failures) with the thresholds as dashed lines and the alarm steps marked, into
    `out_dir/monitor.png` (1400 x 1200 pixels); returns its path. Needs the `plot` extra.

    The file is replaced in one step and never written through a link planted at its name
    (`codegrep_records.write_atomically`; `within`: the folder must resolve inside it)."""
    import io

    from codegrep_records import write_atomically

    fig = _figure(run, report)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    png = io.BytesIO()
    fig.savefig(png, dpi=100, format="png")
    return write_atomically(out / PLOT_FILE, png.getvalue(), within=within)


def _figure(run: RunData, report: MonitorReport) -> Any:
    """The figure `plot` saves: the `PANELS`, in order."""
    th = report.thresholds
    fig = _figure_class()(figsize=(14, 12), layout="constrained")
    axes = fig.subplots(3, 2)
    flat = [ax for row in axes for ax in row]
    alarms_by_metric: dict[str, list[Alarm]] = {}
    for a in report.alarms:
        alarms_by_metric.setdefault(a.metric, []).append(a)
    w = th.window_steps

    def draw(ax: Any, name: str, label: str, color: str, scale: float = 1.0) -> bool:
        series = run.series(name)
        if not series:
            return False
        if name == "parse_failure_rate":  # a step's share of a few rollouts is noise: no raw line
            weights = run.series("parse_failure_rate_n")
            rows = _weighted_rolling(series, weights, w, th.parse_failure_min_rollouts)
            label = f"{label} (≥ {th.parse_failure_min_rollouts} rollouts, ≥ {w} steps)"
        else:
            rows = _rolling(series, w)
            label = f"{label} (mean of {w} steps)"
            ys = [v * scale for v in series.values]
            few = len(series) <= 40  # a short run: show its points
            ax.plot(
                series.steps,
                ys,
                color=color,
                alpha=0.6 if few else 0.25,
                lw=0.8,
                marker="o" if few else None,
                ms=3,
            )
        # the part before the window is full is drawn thin: the checks do not read it yet
        cut = next((i for i, r in enumerate(rows) if r[2]), len(rows))
        if cut:
            early = rows[: cut + 1]
            ys = [r[1] * scale for r in early]
            ax.plot([r[0] for r in early], ys, color=color, lw=1, ls="--", alpha=0.7)
        full = rows[cut:]
        ax.plot([r[0] for r in full], [r[1] * scale for r in full], color=color, lw=2, label=label)
        return True

    def hline(ax: Any, y: float, text: str, color: str = "tab:red") -> None:
        ax.axhline(y, color=color, ls="--", lw=1.2, label=text)

    def mark(ax: Any, metrics: Sequence[str]) -> None:
        for metric in metrics:
            for a in alarms_by_metric.get(metric, []):
                ax.axvline(a.step, color="tab:red", ls=":", lw=1.5)
                ax.annotate(
                    f"{a.name} @ {a.step}",
                    xy=(a.step, 1.0),
                    xycoords=("data", "axes fraction"),
                    xytext=(3, -3),
                    textcoords="offset points",
                    va="top",
                    ha="left",
                    rotation=90,
                    fontsize=8,
                    color="tab:red",
                    bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
                )

    def empty(ax: Any, text: str) -> None:
        ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="grey")

    ax = flat[0]
    if draw(ax, "kl", "KL", "tab:blue"):
        hline(ax, th.kl_max, f"alarm: KL > {_fmt(th.kl_max)}")
        hline(ax, th.kl_rise_floor, f"rising-KL floor {_fmt(th.kl_rise_floor)}", "tab:orange")
    else:
        empty(ax, "no KL logged" + (" (beta 0)" if run.beta == 0 else ""))
    mark(ax, ["kl"])

    ax = flat[1]
    reward = run.series("reward")
    if draw(ax, "reward", "reward", "tab:green"):
        std = run.series("reward_std")
        if std:
            mean_roll = {s: m for s, m, _ in _rolling(reward, w)}
            std_roll = [(s, m) for s, m, _ in _rolling(std, w) if s in mean_roll]
            ax.fill_between(
                [s for s, _ in std_roll],
                [mean_roll[s] - m for s, m in std_roll],
                [mean_roll[s] + m for s, m in std_roll],
                color="tab:green",
                alpha=0.15,
                label="± reward_std",
            )
        best = next(
            (a.values.get("best") for a in report.alarms if a.name == "reward_collapse"), None
        )
        if best is not None:
            hline(ax, best - th.reward_collapse_drop, "collapse level")
    else:
        empty(ax, "no reward logged")
    mark(ax, ["reward"])

    ax = flat[2]
    length = run.series("completion_length")
    if draw(ax, "completion_length", "mean length", "tab:purple"):
        base = _baseline(length, th.baseline_steps)
        if base:
            hline(
                ax,
                th.length_growth_max * base,
                f"alarm: {_fmt(th.length_growth_max)} x baseline {base:.0f}",
            )
        lim = (
            next(
                (
                    a.values.get("max_completion_length")
                    for a in report.alarms
                    if a.name == "length_near_limit"
                ),
                None,
            )
            or th.max_completion_length
            or (
                run.max_completion_length if run.completion_limit_scope in (None, "total") else None
            )
        )
        if lim:
            hline(
                ax,
                th.length_limit_fraction * lim,
                f"alarm: {_pct(th.length_limit_fraction)} of limit {lim:.0f}",
                "tab:orange",
            )
    else:
        empty(ax, "no completion length logged")
    mark(ax, ["completion_length"])

    ax = flat[3]
    if draw(ax, "clipped_ratio", "clipped", "tab:brown", scale=100):
        hline(ax, 100 * th.clipped_ratio_max, f"alarm: > {_pct(th.clipped_ratio_max)}")
    else:
        empty(ax, "no clipped ratio logged")
    mark(ax, ["clipped_ratio"])

    ax = flat[4]
    if draw(ax, "calls_per_turn", "c̄", "tab:cyan"):
        hline(ax, th.calls_per_turn_min, f"alarm: c̄ < {_fmt(th.calls_per_turn_min)}")
    else:
        empty(ax, "no calls per turn logged")
    if run.series("num_turns"):
        turns = run.series("num_turns")
        ax.plot(turns.steps, turns.values, color="grey", ls="-", lw=1, alpha=0.7, label="turns")
    mark(ax, ["calls_per_turn"])

    ax = flat[5]
    if draw(ax, "parse_failure_rate", "no parsable answer", "tab:olive", scale=100):
        hline(ax, 100 * th.parse_failure_max, f"alarm: > {_pct(th.parse_failure_max)}")
    else:
        empty(ax, "no rollout records\n(codegrep_rollouts.jsonl, completions.jsonl)")
    mark(ax, ["parse_failure_rate"])

    for ax in flat:
        for step in run.resumed_at:
            ax.axvline(step, color="grey", ls="--", lw=1, alpha=0.6)
            ax.annotate(
                f"resumed @ {step}",
                xy=(step, 0.0),
                xycoords=("data", "axes fraction"),
                xytext=(3, 3),
                textcoords="offset points",
                rotation=90,
                fontsize=7,
                color="grey",
            )
    locator = _integer_locator()
    for ax, (title, ylabel) in zip(flat, PANELS, strict=True):
        ax.set_title(title, fontsize=11)
        ax.set_ylabel(ylabel)
        ax.set_xlabel("step")
        ax.grid(True, alpha=0.3)
        ax.xaxis.set_major_locator(locator())
        if run.last_step is not None:
            ax.set_xlim(left=0, right=max(run.last_step, 1) * 1.02)
        if ax.get_lines() and title != PANELS[1][0]:  # all but the reward start at 0
            top = ax.get_ylim()[1]
            ax.set_ylim(0, top * 1.08 if top > 0 else 1.0)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="best")
    fig.suptitle(_title(run, report), fontsize=12)
    return fig
