"""Benchmark: what the gate promises and what it delivers, by held-out repository group.

    uv run --all-packages python apps/injector/benchmarks/gate_by_repository.py \\
        -i POOL_FILE... -p OUT_OF_FOLD_PREDICTIONS --predicted-only \\
        [--heldout NAME INSTANCES PREDICTIONS [REPO,REPO...|all]]... -o OUT

Two calibrations are compared, each fitted only on answers of other repositories than the ones
it is judged on:

- **today's**: the score curve (eight quantile bins merged by pool-adjacent-violators, the
  interval over instances), what `codegrep calibrate` wrote until the context model;
- **context**: `codegrep calibrate --context`, the logistic model on score, rank and answer
  size with its interval over resampled repositories (a `Calibration`'s `context`).

Leave one repository out over the pool: for each repository of the out-of-fold predictions
(each instance answered by a ranker that never saw its repository), both calibrations are
fitted on the other repositories' answers and gate this one's. Each `--heldout` set (the
Verified dev slice, a fresh check) is gated by both calibrations fitted on the whole pool.

Per group and gate (threshold 0.45 and 0.68, 95% lower bound): the instances injected; the
promise (the calibrated precision, point, averaged over the injected files); what it delivers
(the share of injected files that are gold, with a 95% bootstrap interval over instances);
whether the promise holds (the interval reaches the promise); the share of the dropped files
that are gold (with its interval); and the F0.5 kept (the sum over instances of the gated
answer's F0.5, nothing injected scoring 0, over the plain answer's). Writes OUT.json and
OUT.md. Not for tuning: the held-out sets are read once.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegrep_gate import (
    Calibration,
    GateConfig,
    GateError,
    Retriever,
    calibrate,
    data_ref,
    gate,
    load_calibration_data,
)
from codegrep_records import Prediction, RecordError
from codegrep_records.stats import ClusterBootstrap, Ratio, percentile_interval
from grpo_rewards import score_ranked

THRESHOLDS = (0.45, 0.68)
KINDS = ("today", "context")
RESAMPLES = 1000


@dataclass(frozen=True)
class Outcome:
    """One instance under one gate: its files' fates and F0.5s."""

    injected_hits: int
    injected_files: int
    promised: float  # sum of the injected files' calibrated precision (point)
    dropped_hits: int
    dropped_files: int
    f_plain: float
    f_gated: float


def _fit(preds: Sequence[Prediction], gold: Mapping[str, frozenset[str]], kind: str,
         groups: Mapping[str, str] | None) -> Calibration:  # fmt: skip
    return calibrate(
        preds,
        gold,
        retriever=Retriever(name="lexical"),
        data=data_ref("pool answers"),
        resamples=RESAMPLES,
        context=kind == "context",
        groups=groups,
    )


def _outcome(p: Prediction, truth: frozenset[str], cal: Calibration, kind: str,
             threshold: float) -> Outcome:  # fmt: skip
    basis = "context" if kind == "context" else "score"
    d = gate(list(p.files), p.scores, cal, GateConfig(threshold=threshold, basis=basis))
    decided = [f for f in d.files if not any(f.path == g.path and g.rank < f.rank for g in d.files)]
    kept = [f for f in decided if f.kept]
    dropped = [f for f in decided if not f.kept]
    plain = score_ranked(list(p.files), truth, beta=0.5).fbeta if p.files else 0.0
    gated = score_ranked(d.injected, truth, beta=0.5).fbeta if d.injected else 0.0
    return Outcome(
        injected_hits=sum(f.path in truth for f in kept),
        injected_files=len(kept),
        promised=sum(f.precision.point for f in kept),
        dropped_hits=sum(f.path in truth for f in dropped),
        dropped_files=len(dropped),
        f_plain=plain,
        f_gated=gated,
    )


def _ratio(num: Sequence[float], den: Sequence[float], seed: int) -> dict[str, Any] | None:
    if not sum(den):
        return None
    point = sum(num) / sum(den)
    draws = ClusterBootstrap(len(num), resamples=RESAMPLES, seed=seed)
    dist = draws.distributions([list(num), list(den)], [Ratio(0, 1)])[0]
    low, high = percentile_interval(point, dist, 0.95)
    return {"point": round(point, 4), "low": round(low, 4), "high": round(high, 4)}


def summarize(outcomes: Sequence[Outcome], seed: int = 0) -> dict[str, Any]:
    inj = [o for o in outcomes if o.injected_files]
    files = sum(o.injected_files for o in outcomes)
    promise = sum(o.promised for o in outcomes) / files if files else None
    delivered = _ratio([o.injected_hits for o in inj], [o.injected_files for o in inj], seed)
    dropped = _ratio([o.dropped_hits for o in outcomes], [o.dropped_files for o in outcomes], seed)
    plain = sum(o.f_plain for o in outcomes)
    return {
        "instances": len(outcomes),
        "injected_instances": len(inj),
        "injected_files": files,
        "promise": None if promise is None else round(promise, 4),
        "delivered": delivered,
        "holds": None
        if delivered is None or promise is None
        else bool(delivered["high"] + 1e-9 >= promise),
        "dropped_files": sum(o.dropped_files for o in outcomes),
        "dropped_gold": dropped,
        "f05_plain": round(plain / max(1, len(outcomes)), 4),
        "f05_gated": round(sum(o.f_gated for o in outcomes) / max(1, len(outcomes)), 4),
        "f05_kept": None if not plain else round(sum(o.f_gated for o in outcomes) / plain, 4),
    }


Outcomes = dict[tuple[str, float], list[Outcome]]


def _gate_all(preds: Sequence[Prediction], gold: Mapping[str, frozenset[str]],
              cals: Mapping[str, Calibration]) -> Outcomes:  # fmt: skip
    out: dict[tuple[str, float], list[Outcome]] = {}
    for kind in KINDS:
        for t in THRESHOLDS:
            out[(kind, t)] = [
                _outcome(p, gold[p.instance_id], cals[kind], kind, t)
                for p in preds
                if gold.get(p.instance_id)
            ]
    return out


def _fmt(r: dict[str, Any] | None) -> str:
    return "—" if r is None else f"{r['point']:.3f} [{r['low']:.3f}, {r['high']:.3f}]"


def table(groups: Mapping[str, Mapping[str, Any]]) -> str:
    head = (
        "| group | n | gate | injected | promises | delivers [95%] | holds | dropped files "
        "gold [95%] | F0.5 kept |\n|---|---:|---|---:|---:|---|---|---|---:|"
    )
    lines = [head]
    for name, figs in groups.items():
        for key, s in figs.items():
            kind, t = key.split("@")
            holds = "—" if s["holds"] is None else ("yes" if s["holds"] else "**no**")
            promise = "—" if s["promise"] is None else f"{s['promise']:.3f}"
            kept = "—" if s["f05_kept"] is None else f"{s['f05_kept']:.2f}"
            lines.append(
                f"| {name} | {s['instances']} | {kind} {t} | {s['injected_instances']} | "
                f"{promise} | {_fmt(s['delivered'])} | {holds} | {_fmt(s['dropped_gold'])} | "
                f"{kept} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-i", "--instances", type=Path, action="append", required=True)
    ap.add_argument("-p", "--predictions", type=Path, required=True)
    ap.add_argument("--predicted-only", action="store_true")
    ap.add_argument(
        "--heldout",
        nargs=4,
        action="append",
        default=[],
        metavar=("NAME", "INSTANCES", "PREDICTIONS", "REPOS"),
        help="a held-out set; REPOS: comma-separated repositories to keep, or 'all'",
    )
    ap.add_argument(
        "--context-unit",
        choices=("repository", "instance"),
        default="instance",
        help="what the context model's interval resamples (the shipped: instance)",
    )
    ap.add_argument(
        "--no-leave-one-out",
        action="store_true",
        help="only the held-out sets (each gated by calibrations fitted on the whole pool)",
    )
    ap.add_argument("-o", "--output", type=Path, required=True)
    a = ap.parse_args(argv)
    try:
        pool = load_calibration_data(a.instances, a.predictions, predicted_only=a.predicted_only)
        held = []
        for name, inst, pred, repos in a.heldout:
            chosen = () if repos == "all" else tuple(repos.split(","))
            held.append((name, load_calibration_data(Path(inst), Path(pred), repos=chosen)))
    except (GateError, RecordError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    repo_of = dict(pool.repositories)
    groups = repo_of if a.context_unit == "repository" else None
    preds = [p for p in pool.predictions if p.instance_id in repo_of]
    repos = sorted(set(repo_of.values()))
    results: dict[str, dict[str, Any]] = {}
    pooled: dict[tuple[str, float], list[Outcome]] = {}
    for n, repo in enumerate([] if a.no_leave_one_out else repos, 1):
        print(f"fold {n}/{len(repos)}: {repo} left out", file=sys.stderr)
        train = [p for p in preds if repo_of[p.instance_id] != repo]
        test = [p for p in preds if repo_of[p.instance_id] == repo]
        cals = {k: _fit(train, pool.gold, k, groups) for k in KINDS}
        outs = _gate_all(test, pool.gold, cals)
        results[repo] = {f"{k}@{t}": summarize(v) for (k, t), v in outs.items()}
        for key, v in outs.items():
            pooled.setdefault(key, []).extend(v)
    if pooled:
        results["pool, each repository left out"] = {
            f"{k}@{t}": summarize(v) for (k, t), v in pooled.items()
        }
    full = {k: _fit(preds, pool.gold, k, groups) for k in KINDS}
    for name, data in held:
        outs = _gate_all(data.predictions, data.gold, full)
        results[name] = {f"{k}@{t}": summarize(v) for (k, t), v in outs.items()}
        by_repo = sorted(set(data.repositories.values()))
        if len(by_repo) > 1:
            for repo in by_repo:
                sub = [p for p in data.predictions if data.repositories.get(p.instance_id) == repo]
                outs = _gate_all(sub, data.gold, full)
                results[f"{name}: {repo}"] = {
                    f"{k}@{t}": summarize(v) for (k, t), v in outs.items()
                }
    a.output.parent.mkdir(parents=True, exist_ok=True)
    a.output.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    text = table(results)
    a.output.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
