"""The run monitor's plots: one PNG of the run's series with the alarms marked (`plot` extra).

matplotlib's `Figure` without pyplot (no global state, no GUI backend); importing this module
does not import matplotlib. Not for reading the logs or deciding alarms.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from codegrep_model.train import ROLLOUT_LOG_FILE

from train_launcher.errors import MissingPlotExtraError
from train_launcher.monitor._checks import (
    Alarm,
    MonitorReport,
    _baseline,
    _fmt,
    _pct,
    _rolling,
    _weighted_rolling,
)
from train_launcher.monitor._read import COMPLETIONS_FILE, RunData

PLOT_FILE = "monitor.png"


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
    ("Groups whose rewards are all equal (advantage 0)", "% of groups"),
    ("Rollouts ended by a context overflow", "% of rollouts"),
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
    (`codegrep_records.io.write_atomically`; `within`: the folder must resolve inside it)."""
    import io

    from codegrep_records.io import write_atomically

    fig = _figure(run, report)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    png = io.BytesIO()
    fig.savefig(png, dpi=100, format="png")
    return write_atomically(out / PLOT_FILE, png.getvalue(), within=within)


def _figure(run: RunData, report: MonitorReport) -> Any:
    """The figure `plot` saves: the `PANELS`, in order."""
    th = report.thresholds
    fig = _figure_class()(figsize=(14, 16), layout="constrained")
    axes = fig.subplots(4, 2)
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

    def share(
        ax: Any, name: str, label: str, color: str, limit: float, alarm: str, none: str
    ) -> None:
        """A share (0..1) drawn in %, its alarm line at `limit`, or `none` when not logged."""
        if draw(ax, name, label, color, scale=100):
            hline(ax, 100 * limit, f"alarm: {alarm}{_pct(limit)}")
        else:
            empty(ax, none)
        mark(ax, [name])

    share(flat[3], "clipped_ratio", "clipped", "tab:brown", th.clipped_ratio_max, "> ",
          "no clipped ratio logged")  # fmt: skip

    ax = flat[4]
    if draw(ax, "calls_per_turn", "c̄", "tab:cyan"):
        hline(ax, th.calls_per_turn_min, f"alarm: c̄ < {_fmt(th.calls_per_turn_min)}")
    else:
        empty(ax, "no calls per turn logged")
    if run.series("num_turns"):
        turns = run.series("num_turns")
        ax.plot(turns.steps, turns.values, color="grey", ls="-", lw=1, alpha=0.7, label="turns")
    mark(ax, ["calls_per_turn"])

    share(flat[5], "parse_failure_rate", "no parsable answer", "tab:olive", th.parse_failure_max,
          "> ", f"no rollout records\n({ROLLOUT_LOG_FILE}, {COMPLETIONS_FILE})")  # fmt: skip
    share(flat[6], "frac_reward_zero_std", "zero-std groups", "tab:gray", th.zero_std_max, "> ",
          "no frac_reward_zero_std logged")  # fmt: skip
    share(flat[7], "overflow_rate", "overflowed", "tab:pink", th.overflow_rate_max,
          "one step > ", f"no stop_cause in {ROLLOUT_LOG_FILE}")  # fmt: skip

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
