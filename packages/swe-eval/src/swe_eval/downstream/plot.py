"""The downstream report as a figure: resolve rates, rounds, paired deltas, precision vs benefit.

Panels, left to right: each configuration's resolve rate with its bootstrap interval; with agent
outputs, rounds per resolved and per unresolved instance (mean bars, median dots); with
comparisons, each pair's resolve-rate delta with its interval and McNemar p, and the co-resolved
relative deltas of rounds and tokens; with precisions, precision against the resolve-rate delta,
beside the paper's neutral (0.45) and payoff (0.68) marks.

Needs the `plot` extra (matplotlib); imported only when a figure is drawn.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from swe_eval.downstream.render import DownstreamReport
from swe_eval.errors import MissingExtraError
from swe_eval.plots import NEUTRAL_PRECISION, PAYOFF_PRECISION

__all__ = ["plot_report"]


def _err(value: float, low: float, high: float) -> tuple[list[float], list[float]]:
    if math.isnan(low) or math.isnan(high):
        return [0.0], [0.0]
    return [max(value - low, 0.0)], [max(high - value, 0.0)]


def _resolve_panel(ax: Any, report: DownstreamReport) -> None:
    names = [c.name for c in report.configs]
    ys = list(range(len(names)))[::-1]
    for y, c in zip(ys, report.configs, strict=True):
        r = c.resolve_rate
        lo, hi = _err(r.value, r.low, r.high)
        color = "tab:blue" if c.name == report.baseline else "black"
        ax.errorbar([100 * r.value], [y], xerr=[[100 * lo[0]], [100 * hi[0]]], fmt="o",
                    color=color, capsize=3)  # fmt: skip
        ax.annotate(f"{c.resolved}/{c.n}", (100 * r.value, y), textcoords="offset points",
                    xytext=(0, 6), ha="center", fontsize=8)  # fmt: skip
    base = next((c for c in report.configs if c.name == report.baseline), None)
    if base is not None:
        ax.axvline(100 * base.resolve_rate.value, color="tab:blue", ls=":", lw=1)
    ax.set_yticks(ys, names)
    ax.set_ylim(-0.7, len(names) - 0.3)
    ax.set_xlabel("resolve rate, % (95% bootstrap CI)")
    ax.set_title("resolve rate (fixed denominator)")


def _rounds_panel(ax: Any, report: DownstreamReport) -> None:
    names = [c.name for c in report.configs]
    xs = list(range(len(names)))
    width = 0.38
    drawn = False
    for offset, attr, label, color in (
        (-width / 2, "rounds_resolved", "resolved", "tab:green"),
        (width / 2, "rounds_unresolved", "unresolved", "tab:red"),
    ):
        spreads = [getattr(c, attr) for c in report.configs]
        means = [s.mean if s else 0.0 for s in spreads]
        ax.bar([x + offset for x in xs], means, width, color=color, alpha=0.55, label=label)
        for x, s in zip(xs, spreads, strict=True):
            if s is not None:
                drawn = True
                ax.plot([x + offset], [s.median], "k.", ms=6)
    ax.set_xticks(xs, names, rotation=20, ha="right")
    ax.set_ylabel("rounds (LLM calls) per instance")
    ax.set_title("rounds: bars = mean, dots = median")
    if drawn:
        ax.legend(fontsize=8)


def _delta_panel(ax: Any, report: DownstreamReport) -> None:
    labels = [f"{p.b} vs {p.a}" for p in report.paired]
    ys = list(range(len(labels)))[::-1]
    for y, p in zip(ys, report.paired, strict=True):
        d = p.delta
        lo, hi = _err(d.value, d.low, d.high)
        ax.errorbar([100 * d.value], [y], xerr=[[100 * lo[0]], [100 * hi[0]]], fmt="o",
                    color="black", capsize=3)  # fmt: skip
        ax.annotate(f"p={p.mcnemar_p:.2f}  ({p.a_only}↔{p.b_only})", (100 * d.value, y),
                    textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)  # fmt: skip
    ax.axvline(0, color="grey", lw=1)
    ax.set_yticks(ys, labels)
    ax.set_ylim(-0.7, len(labels) - 0.3)
    ax.set_xlabel("Δ resolve rate, pp (95% paired bootstrap CI)")
    ax.set_title("B − A resolve rate; McNemar p (A-only↔B-only)")


def _efficiency_panel(ax: Any, report: DownstreamReport) -> None:
    labels = [f"{p.b} vs {p.a}" for p in report.paired]
    ys = list(range(len(labels)))[::-1]
    for y, p in zip(ys, report.paired, strict=True):
        for shift, rel, color, name in (
            (0.12, p.rounds, "tab:purple", "rounds"),
            (-0.12, p.tokens, "tab:orange", "tokens"),
        ):
            if rel is None:
                continue
            e = rel.relative
            lo, hi = _err(e.value, e.low, e.high)
            ax.errorbar([100 * e.value], [y + shift], xerr=[[100 * lo[0]], [100 * hi[0]]],
                        fmt="o", color=color, capsize=3,
                        label=name if y == ys[0] else None)  # fmt: skip
    ax.axvline(0, color="grey", lw=1)
    ax.set_yticks(ys, labels)
    ax.set_ylim(-0.7, len(labels) - 0.3)
    ax.set_xlabel("mean(B) / mean(A) − 1, % (co-resolved instances)")
    ax.set_title("co-resolved rounds and tokens")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def _benefit_panel(ax: Any, report: DownstreamReport) -> None:
    rows = [r for r in report.precision_benefit if r.precision is not None]
    ax.axvspan(0, NEUTRAL_PRECISION, color="tab:red", alpha=0.06)
    ax.axvspan(PAYOFF_PRECISION, 1.0, color="tab:green", alpha=0.06)
    ax.axvline(NEUTRAL_PRECISION, color="tab:red", ls="--", lw=1, label="neutral 0.45")
    ax.axvline(PAYOFF_PRECISION, color="tab:green", ls="--", lw=1, label="payoff 0.68")
    ax.axhline(0, color="grey", lw=1)
    for r in rows:
        assert r.precision is not None
        d = r.resolve_delta
        lo, hi = _err(d.value, d.low, d.high)
        ax.errorbar([r.precision], [100 * d.value], yerr=[[100 * lo[0]], [100 * hi[0]]],
                    fmt="o", color="black", capsize=3)  # fmt: skip
        ax.annotate(r.config, (r.precision, 100 * d.value), textcoords="offset points",
                    xytext=(4, 4), fontsize=8)  # fmt: skip
    ax.set_xlim(0, 1.02)
    ax.set_xlabel("retrieval precision of the injected files")
    ax.set_ylabel(f"Δ resolve rate vs {report.baseline}, pp")
    ax.set_title("precision vs downstream benefit")
    ax.legend(fontsize=8)


def plot_report(report: DownstreamReport, path: str | Path) -> Path:
    """Draw the report's figure into `path` (any format matplotlib writes)."""
    try:
        import matplotlib  # type: ignore[import-not-found, unused-ignore]

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise MissingExtraError("plot", "matplotlib") from exc

    panels = [_resolve_panel]
    if any(c.rounds_resolved or c.rounds_unresolved for c in report.configs):
        panels.append(_rounds_panel)
    if report.paired:
        panels.append(_delta_panel)
        if any(p.rounds or p.tokens for p in report.paired):
            panels.append(_efficiency_panel)
    if any(r.precision is not None for r in report.precision_benefit):
        panels.append(_benefit_panel)
    rows = max(len(report.configs), len(report.paired), 1)
    ncols = min(3, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(5.6 * ncols, (3.0 + 0.35 * rows) * nrows),
        layout="constrained",
        squeeze=False,
    )
    cells = list(axes.flat)
    for draw, ax in zip(panels, cells, strict=False):
        draw(ax, report)
    for ax in cells[len(panels) :]:
        ax.set_visible(False)
    if report.title:
        fig.suptitle(report.title)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
