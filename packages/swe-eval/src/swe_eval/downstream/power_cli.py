"""`swe-eval downstream power`: how large a resolve-rate difference a run plan can detect.

Thin: measure the flip rate from runs of one arm (or take it as given), then call `power` for
the minimum detectable effect at N instances and K runs per arm, the power at a target effect
and the K that effect needs. The model is in `swe_eval.downstream.power` and the README.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from codegrep_cli import fail, instances_option
from codegrep_records import RecordError, RowProblem

from swe_eval._cli_io import clear_errors, emit
from swe_eval._markdown import md_cell
from swe_eval.downstream.analysis import build_config
from swe_eval.downstream.power import (
    FlipRate,
    flip_rate,
    minimum_detectable_effect,
    pairwise_flip_rates,
    power_at,
    repeats_needed,
)
from swe_eval.downstream.readers import parse_run_option, read_instance_ids, read_manifest
from swe_eval.downstream.records import RunSpec
from swe_eval.errors import SweEvalError

__all__ = ["power"]


def _measured(
    specs: list[RunSpec], instances: Path | None, skipped: list[RowProblem]
) -> tuple[list[FlipRate], int]:
    from swe_eval.downstream.report_cli import _read_run

    read = {s.name: _read_run(s, skipped) for s in specs}
    if instances is None:
        raise fail("-i/--instances is required with --run: the flip rate needs a denominator")
    ids, problems = read_instance_ids(instances)
    skipped.extend(problems)
    if not ids:
        raise fail(f"{instances}: no instance id")
    configs = [build_config(s.name, ids, *read[s.name]) for s in specs]
    for c in configs:
        if not c.matched:
            raise fail(f"run {c.name} shares no instance id with {instances}")
    rates = pairwise_flip_rates([(c.name, [o.resolved for o in c.outcomes]) for c in configs])
    return rates, len(ids)


def power(
    run: Annotated[
        list[str] | None,
        typer.Option(
            "--run",
            help="NAME=OUTPUT[,report=PATH] or NAME=report=PATH: a run of one arm (repeat: "
            "at least two). The flip rate is measured between every pair of them.",
            show_default=False,
        ),
    ] = None,
    manifest: Annotated[
        Path | None,
        typer.Option(
            "--manifest",
            help="A run list (JSON or TOML, as `report --manifest`) of runs of one arm.",
        ),
    ] = None,
    instances: Annotated[
        Path | None,
        instances_option("The denominator of the measured runs."),
    ] = None,
    flip: Annotated[
        list[float] | None,
        typer.Option(
            "--flip-rate",
            min=0.0,
            max=1.0,
            help="A flip rate to use instead of (or beside) measured runs; repeatable.",
            show_default=False,
        ),
    ] = None,
    n: Annotated[
        int | None,
        typer.Option(
            "-n", "--n-instances", min=1, help="Instances per run (default: the -i count)."
        ),
    ] = None,
    repeats: Annotated[
        list[int] | None,
        typer.Option("--repeats", "-k", min=1, help="Runs per arm; repeatable (default 1)."),
    ] = None,
    effect: Annotated[
        float | None,
        typer.Option("--effect", help="A target difference of resolve rates (0.012 = +1.2 pp)."),
    ] = None,
    target: Annotated[
        float, typer.Option("--power", min=0.01, max=0.99, help="The power wanted.")
    ] = 0.8,
    alpha: Annotated[float, typer.Option("--alpha", min=0.0001, max=0.5)] = 0.05,
    as_json: Annotated[bool, typer.Option("--json", help="JSON out.")] = False,
) -> None:
    """The minimum detectable effect (MDE) of a paired resolve-rate comparison with N instances
    and K runs per arm, the power at a target effect, and the K that effect needs.

    Example: swe-eval downstream power --run r1=report=acr-run-1_report.json
    --run r2=report=acr-run-2_report.json --run r3=report=acr-run-3_report.json
    -i lite.jsonl -n 500 --effect 0.012
    """

    skipped: list[RowProblem] = []
    measured: list[FlipRate] = []
    denominator: int | None = None
    try:
        with clear_errors():
            loaded = read_manifest(manifest) if manifest is not None else None
            specs = [*(loaded.runs if loaded else ()), *(parse_run_option(r) for r in run or [])]
        instances = instances or (loaded.instances if loaded else None)
        names = [s.name for s in specs]
        twice = sorted({x for x in names if names.count(x) > 1})
        if twice:
            raise fail(f"run name(s) given twice: {', '.join(twice)}")
        if len(specs) == 1:
            raise fail("--run: give at least two runs of the same arm to measure a flip rate")
        if specs:
            measured, denominator = _measured(specs, instances, skipped)
        rates: list[tuple[str, float]] = []
        if measured:
            values = [r.value for r in measured]
            if len(measured) > 1:
                rates.append(("measured, lowest pair", min(values)))
            rates.append((f"measured, pooled over {len(measured)} pair(s)", flip_rate(measured)))
            if len(measured) > 1:
                rates.append(("measured, highest pair", max(values)))
        rates += [("given", f) for f in flip or []]
        if not rates:
            raise fail("give --run (two or more runs of one arm) or --flip-rate F")
        if any(f <= 0 for _, f in rates):
            raise fail("a flip rate of 0: identical runs never disagree; no power figure")
        size = n or denominator
        if size is None:
            raise fail("give -n N (the instances per run)")
        ks = sorted(set(repeats or [1]))
        rows = []
        for what, f in rates:
            for k in ks:
                mde = minimum_detectable_effect(size, f, k_a=k, k_b=k, power=target, alpha=alpha)
                row: dict[str, object] = {
                    "flip_rate": f,
                    "source": what,
                    "n": size,
                    "repeats": k,
                    "mde": mde,
                }
                if effect is not None:
                    try:
                        row["power_at_effect"] = power_at(
                            size, f, effect, k_a=k, k_b=k, alpha=alpha
                        )
                    except ValueError:
                        row["power_at_effect"] = None
                    row["repeats_needed"] = repeats_needed(
                        size, f, effect, power=target, alpha=alpha
                    )
                rows.append(row)
    except (SweEvalError, RecordError, ValueError) as exc:
        raise fail(str(exc)) from exc
    if as_json:
        body = {
            "pairs": [
                {"a": r.a, "b": r.b, "n": r.n, "discordant": r.discordant, "flip_rate": r.value}
                for r in measured
            ],
            "power": target,
            "alpha": alpha,
            "effect": effect,
            "rows": rows,
        }
        emit(json.dumps(body, indent=2) + "\n", None)
        return
    # run names come from the command line or a manifest: escaped as cells are, so that a name
    # holding a line break or a `|` cannot print a line of its own (a forged table row)
    lines = [
        f"flip rate {md_cell(r.a)} vs {md_cell(r.b)}: {r.discordant}/{r.n} = {100 * r.value:.1f}%"
        for r in measured
    ]
    head = f"| flip rate | N | K per arm | MDE ({100 * target:.0f}% power, α {alpha:g}) |"
    if effect is not None:
        head += f" power at {100 * effect:+.1f} pp | K for {100 * effect:+.1f} pp |"
    lines += ["", head, "|" + "---|" * (head.count("|") - 1)]
    for row in rows:
        rate, floor = row["flip_rate"], row["mde"]
        cells = [
            f"{100 * float(rate):.1f}% ({row['source']})" if isinstance(rate, float) else "–",
            str(row["n"]),
            str(row["repeats"]),
            f"±{100 * floor:.1f} pp" if isinstance(floor, float) else "not reachable",
        ]
        if effect is not None:
            reached, needed = row["power_at_effect"], row["repeats_needed"]
            cells += [
                f"{100 * reached:.1f}%" if isinstance(reached, float) else "–",
                str(needed) if needed is not None else "> 1000",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "model: one run per arm: McNemar's exact test, discordance Binomial(N, f) and B's share "
        "(f + Δ) / 2f, summed exactly; K >= 2: the permutation test on per-instance shares as "
        "normal, se = sqrt(f / (N K)) (see the README, Power)",
    ]
    emit("\n".join(lines) + "\n", None)
