"""The run monitor's checks: `MonitorThresholds`, the alarms they raise over `RunData`, the verdict.

Sustained checks wait for a full window; the checks of what kills a run apply from the first
logged step. Not for reading the logs (`_read`) or drawing them (`_plot`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from codegrep_model.train import ROLLOUT_LOG_FILE
from pydantic import BaseModel, ConfigDict, Field, model_validator

from train_launcher.monitor._read import (
    COMPLETIONS_FILE,
    BadLine,
    RunData,
    Series,
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


#: The layout of `MonitorReport` (monitor.json).
MONITOR_REPORT_SCHEMA_VERSION = 1


class MonitorReport(BaseModel):
    """The alarms of a run, its figures and a short verdict."""

    schema_version: int = Field(
        default=MONITOR_REPORT_SCHEMA_VERSION,
        ge=1,
        description="The report's layout; a report without it (written before it) is 1.",
    )
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
        # A finished run shorter than the window will never fill it: the whole run is its
        # window, so a 12-step run at 100% parse failures is not "OK" for want of 8 steps.
        span = _span(run)
        if run.finished and span is not None and span < self.w:
            self.w = max(1, int(span))
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
                f"no stop_cause in the rollout log ({ROLLOUT_LOG_FILE}): overflow check skipped"
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
                f"no answers in the rollout records ({ROLLOUT_LOG_FILE}, {COMPLETIONS_FILE}):"
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


def _span(run: RunData) -> float | None:
    """How many steps the run's logs cover (None before any step is logged)."""
    first = min((s.steps[0] for s in run.metrics.values() if s.steps), default=None)
    if first is None or run.last_step is None:
        return None
    return run.last_step - first + _interval(run.series("reward") or run.series("kl"))


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
    span = _span(run)
    if span is not None and span < th.window_steps:
        if checks.w < th.window_steps:
            notes.append(
                f"the run ended after {span:g} steps, fewer than window_steps "
                f"({th.window_steps}): the sustained checks were judged over all its steps"
            )
        else:
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
