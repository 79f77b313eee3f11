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

The work is split along its seams: reading in `_read` (`read_run`, `RunReader`), checks
in `_checks` (`MonitorThresholds`, `check`), plots in `_plot` (`plot`); this
package's face (every name users import is here) and follows a growing run
(`follow_run`: reading and checking, poll after poll). The errors are in `errors.py`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path

from codegrep_model.train import ROLLOUT_LOG_FILE

from train_launcher.errors import MissingPlotExtraError, MonitorError, MonitorInputError
from train_launcher.monitor._checks import (
    Alarm,
    MonitorReport,
    MonitorThresholds,
    check,
)
from train_launcher.monitor._plot import (
    PANELS,
    PLOT_FILE,
    plot,
    require_plot_extra,
)
from train_launcher.monitor._plot import _figure as _figure
from train_launcher.monitor._read import (
    ARGS_FILE,
    COMPLETIONS_FILE,
    METRICS_FILE,
    OVERFLOW_STATUS,
    BadLine,
    RunData,
    RunReader,
    Series,
    read_run,
)

__all__ = [
    "ARGS_FILE",
    "COMPLETIONS_FILE",
    "METRICS_FILE",
    "OVERFLOW_STATUS",
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
