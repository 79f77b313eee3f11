"""What the precision gate does to a retriever's answers on data: precision and share injected.

For each threshold of a grid, every prediction is gated with the calibration (the shipped one
for LexicalPolicy by default) and the injected files are scored against the gold patch files:
the share of instances that get anything injected, the precision of what is injected (macro over
the instances that get something, with a 95% bootstrap interval over instances), the recall over
all instances, the files injected per instance. Prints a markdown table at the chosen thresholds
beside the ungated answers, writes the whole grid as JSON and a PNG.

    uv run --all-packages --with 'matplotlib>=3.8.4' python \\
        apps/injector/benchmarks/gate_effect.py -i verified_dev.jsonl \\
        -p lexical-verified_dev.jsonl --exclude-repo django/django -o gate-effect/verified_dev

The instances left out by --repo/--exclude-repo are not counted at all (use it for the
repositories that were not run, so that they do not count as empty answers); with
--predicted-only, neither are those without a prediction (the cross-validation's
`cv.predictions.jsonl` answers part of a pool given as several instance files).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from codegrep_gate import (
    Calibration,
    GateConfig,
    GateError,
    gate,
    load_calibration,
    load_calibration_data,
    shipped_calibration,
)
from codegrep_records import RecordError
from codegrep_records.stats import ClusterBootstrap, Ratio, percentile_interval


def measure(
    decisions: dict[str, list[str]], gold: dict[str, frozenset[str]], seed: int = 0
) -> dict[str, float | int | list[float]]:
    """Injected share, precision of what is injected (macro, bootstrap interval), recall."""
    ids = sorted(gold)
    injected = [i for i in ids if decisions.get(i)]
    prec = {i: len(set(decisions[i]) & gold[i]) / len(decisions[i]) for i in injected}
    rec = {i: len(set(decisions.get(i, [])) & gold[i]) / len(gold[i]) for i in ids}
    point = sum(prec.values()) / len(prec) if prec else float("nan")
    if injected:  # the project's one bootstrap, over the injected instances
        draws = ClusterBootstrap(len(injected), resamples=1000, seed=seed)
        dist = draws.distributions([[prec[i] for i in injected]], [Ratio(0, None)])[0]
        interval = list(percentile_interval(point, dist, 0.95))
    else:
        interval = [float("nan"), float("nan")]
    return {
        "instances": len(ids),
        "injected_instances": len(injected),
        "injected_share": len(injected) / len(ids) if ids else 0.0,
        "precision_injected": point,
        "precision_injected_interval": interval,
        "recall": sum(rec.values()) / len(ids) if ids else 0.0,
        "files_per_instance": sum(len(decisions.get(i, [])) for i in ids) / len(ids),
        "files_per_injected": (sum(len(decisions[i]) for i in injected) / len(injected))
        if injected
        else 0.0,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-i", "--instances", type=Path, nargs="+", required=True, help="one or more")
    ap.add_argument("-p", "--predictions", type=Path, required=True)
    ap.add_argument("-c", "--calibration", type=Path, help="default: the shipped lexical one")
    ap.add_argument("--repo", action="append", default=[])
    ap.add_argument("--exclude-repo", action="append", default=[])
    ap.add_argument(
        "--predicted-only",
        action="store_true",
        help="count only the instances that have a prediction (else a missing one is empty)",
    )
    ap.add_argument("--thresholds", default="0.45,0.68", help="the table's thresholds")
    ap.add_argument("--bound", choices=("lower", "point"), default="lower")
    ap.add_argument("--title", default=None)
    ap.add_argument("-o", "--output", type=Path, required=True, help="prefix of .json and .png")
    a = ap.parse_args()

    cal: Calibration = load_calibration(a.calibration) if a.calibration else shipped_calibration()
    # read as `codegrep calibrate` reads its data: the first file that holds an id gives it
    try:
        data = load_calibration_data(
            a.instances,
            a.predictions,
            repos=a.repo or (),
            exclude_repos=a.exclude_repo,
            predicted_only=a.predicted_only,
        )
    except (GateError, RecordError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    preds = {p.instance_id: p for p in data.predictions}
    gold = {k: v for k, v in data.gold.items() if v}
    grid = sorted({round(x * 0.01, 2) for x in range(0, 101, 2)} | {
        float(t) for t in a.thresholds.split(",")
    })  # fmt: skip
    rows = []
    ungated = {i: list(preds[i].files) if i in preds else [] for i in gold}
    base = measure(ungated, gold)
    for t in grid:
        config = GateConfig(threshold=t, bound=a.bound)
        decisions = {}
        for i in gold:
            p = preds.get(i)
            if p is None or not p.files:
                decisions[i] = []
                continue
            d = gate(p.files, p.scores, cal, config, retriever=p.retriever)
            decisions[i] = d.injected
        rows.append({"threshold": t, **measure(decisions, gold)})
        print(f"threshold {t:.2f} done", file=sys.stderr)

    def line(label: str, m: dict[str, object]) -> str:
        lo, hi = m["precision_injected_interval"]  # type: ignore[misc]
        precision = (
            f"{m['precision_injected']:.3f} [{lo:.3f}, {hi:.3f}]"
            if m["injected_instances"]
            else "– (nothing injected)"
        )
        return (
            f"| {label} | {m['injected_instances']}/{m['instances']} "
            f"({m['injected_share']:.0%}) | {precision} "
            f"| {m['recall']:.3f} | {m['files_per_injected']:.2f} |"
        )

    title = a.title or f"{a.predictions.name} gated with {cal.data.name}"
    print(f"\n{title} ({a.bound} bound; calibration: {cal.retriever.name}, {cal.data.name})\n")
    print("| gate | instances injected | precision of injected [95%] | recall | files/injected |")
    print("|---|---|---|---|---|")
    print(line("none (every answer injected)", base))
    for t in (float(x) for x in a.thresholds.split(",")):
        print(line(f"threshold {t:.2f}", next(r for r in rows if r["threshold"] == t)))

    a.output.parent.mkdir(parents=True, exist_ok=True)
    out = {
        "title": title,
        "bound": a.bound,
        "calibration": {"retriever": cal.retriever.name, "data": cal.data.name},
        "instances_files": [str(p) for p in a.instances],
        "predictions_file": str(a.predictions),
        "ungated": base,
        "grid": rows,
    }
    a.output.with_suffix(".json").write_text(json.dumps(out, indent=2) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no matplotlib: PNG not written (--with 'matplotlib>=3.8.4')", file=sys.stderr)
        return 0
    xs = [r["threshold"] for r in rows]
    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    ax.plot(xs, [r["precision_injected"] for r in rows], label="precision of injected files")
    ax.fill_between(
        xs,
        [r["precision_injected_interval"][0] for r in rows],
        [r["precision_injected_interval"][1] for r in rows],
        alpha=0.2,
    )
    ax.plot(xs, [r["injected_share"] for r in rows], label="share of instances injected")
    ax.plot(xs, [r["recall"] for r in rows], label="recall (all instances)", linestyle=":")
    for t, name in ((0.45, "0.45 neutral"), (0.68, "0.68 paid")):
        ax.axvline(t, color="grey", linestyle="--", linewidth=1)
        ax.text(t + 0.005, 0.02, name, rotation=90, color="grey", va="bottom")
    ax.axhline(base["precision_injected"], color="C0", linestyle=":", linewidth=1)  # type: ignore[arg-type]
    ax.set_xlabel(f"gate threshold on calibrated precision ({a.bound} bound)")
    ax.set_ylim(0, 1.02)
    ax.set_xlim(0, 1)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower left", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(a.output.with_suffix(".png"))
    png, js = a.output.with_suffix(".png"), a.output.with_suffix(".json")
    print(f"wrote {js} and {png}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
