"""The precision-threshold view: where each retriever's precision sits against the paper's marks.

CodeGrep's Tables 2 and 3 read together: below precision ~0.45 injecting the retrieved files
hurts the downstream agent, near 0.45 it is neutral, at ~0.68 it pays. The left panel puts each
system's precision (with its bootstrap interval) against those marks; the right panel is
precision against the number of files returned (top-k cuts of each ranking), the curve an
injector's gate reads to choose how many files to inject.

Needs the `plot` extra (matplotlib); imported only when a figure is drawn.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from codegrep_records import GoldLabel, Prediction

from swe_eval.cuts import Cut, apply_cut
from swe_eval.errors import MissingExtraError
from swe_eval.metrics import SystemSummary, evaluate

__all__ = [
    "NEUTRAL_PRECISION",
    "PAYOFF_PRECISION",
    "CurvePoint",
    "plot_precision",
    "precision_curve",
    "require_plot_extra",
]

# CodeGrep paper: Jina-1.5B at precision 0.445 was roughly neutral; CodeGrep v3 at 0.677 paid off.
NEUTRAL_PRECISION = 0.45
PAYOFF_PRECISION = 0.68


@dataclass(frozen=True)
class CurvePoint:
    top_k: int
    mean_files: float
    precision: float


def precision_curve(
    gold: Mapping[str, GoldLabel], predictions: Iterable[Prediction], *, max_k: int = 10
) -> list[CurvePoint]:
    """Macro precision and mean answer size of the top-k cut for k = 1..max_k.

    Stops early once no answer grows any more (a system that returns 3 files has no k=4 point).
    """
    preds = list(predictions)
    points: list[CurvePoint] = []
    for k in range(1, max_k + 1):
        ev = evaluate(gold, (apply_cut(p, Cut(top_k=k)) for p in preds), ks=(1,))
        n = max(len(ev.scores), 1)
        point = CurvePoint(
            k, float(ev.column("n_files").sum() / n), float(ev.column("precision").sum() / n)
        )
        if points and point.mean_files <= points[-1].mean_files + 1e-9:
            break
        points.append(point)
    return points


def require_plot_extra() -> None:
    """Raise `MissingExtraError` (naming the `plot` extra) unless matplotlib can be imported.

    For a caller that wants to know before it spends minutes on the bootstrap intervals.
    """
    try:
        import matplotlib  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError("plot", "matplotlib") from exc


def plot_precision(
    summaries: Sequence[SystemSummary],
    curves: Mapping[str, Sequence[CurvePoint]],
    path: str | Path,
    *,
    title: str | None = None,
) -> Path:
    try:
        import matplotlib  # type: ignore[import-not-found, unused-ignore]

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise MissingExtraError("plot", "matplotlib") from exc

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8), layout="constrained")
    names = [s.name for s in summaries]
    values = [s.metrics["precision"].value for s in summaries]
    lows = [s.metrics["precision"].value - s.metrics["precision"].low for s in summaries]
    highs = [s.metrics["precision"].high - s.metrics["precision"].value for s in summaries]
    ys = list(range(len(names)))
    right.axhspan(0, NEUTRAL_PRECISION, color="tab:red", alpha=0.06)
    left.axvspan(0, NEUTRAL_PRECISION, color="tab:red", alpha=0.08, label="injection hurts")
    left.axvspan(PAYOFF_PRECISION, 1.0, color="tab:green", alpha=0.08, label="injection pays")
    left.axvline(NEUTRAL_PRECISION, color="tab:red", ls="--", lw=1)
    left.axvline(PAYOFF_PRECISION, color="tab:green", ls="--", lw=1)
    left.errorbar(values, ys, xerr=[lows, highs], fmt="o", color="black", capsize=3)
    left.set_yticks(ys, names)
    left.set_xlim(0, 1)
    left.set_xlabel("precision (macro, 95% bootstrap CI)")
    left.legend(loc="lower right", fontsize=8)
    left.set_title("precision vs. the paper's neutral (0.45) and payoff (0.68) marks")
    for name, pts in curves.items():
        if pts:
            right.plot(
                [p.mean_files for p in pts], [p.precision for p in pts], marker=".", label=name
            )
    right.axhline(NEUTRAL_PRECISION, color="tab:red", ls="--", lw=1, label="neutral 0.45")
    right.axhline(PAYOFF_PRECISION, color="tab:green", ls="--", lw=1, label="payoff 0.68")
    right.set_xlabel("files returned (mean over instances, top-k cuts)")
    right.set_ylabel("precision")
    right.set_ylim(0, 1)
    right.legend(fontsize=8)
    right.set_title("precision vs. number of files returned")
    if title:
        fig.suptitle(title)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
