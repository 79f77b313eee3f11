"""LexicalPolicy on the SWE-bench Lite instances whose repositories are at hand, with peers.

Runs the batch runner (real repositories at their base commits through worktree-sandbox),
scores file-level F-beta(0.5) against the gold patch files, and puts BM25 top-1 (ChronoRepo's
published ranking) and LocAgent/Claude-3.5 top-1 on the same instances beside it. Prints a
markdown table and writes predictions, rollouts and figures under -o.

    uv run --all-packages python packages/codegrep-model/benchmarks/lexical_lite.py \\
        --cache bench-out/cache --source "/path/to/mirrors/{owner}+{name}/repo" -o bench-out/lexical
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import codegrep_records as records
from codegrep_model import Instance, RolloutRecord, ToolTree, run_batch
from codegrep_model.policies.lexical import LexicalPolicy
from grpo_rewards import set_scores
from worktree_sandbox import BareRepoCache, TreePool

DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
FETCHABLE = (
    "astropy/astropy",
    "pallets/flask",
    "pylint-dev/pylint",
    "pytest-dev/pytest",
    "psf/requests",
    "mwaskom/seaborn",
    "sphinx-doc/sphinx",
    "sympy/sympy",
    "pydata/xarray",
)


def table(rows: dict[str, list[dict[str, float]]]) -> str:
    head = "| repo | n | F0.5 mean | F0.5 median | P | R | F0.5 ≥ 0.8 | turns | calls |"
    out = [head, "|" + "---|" * 9]
    for name, scores in rows.items():
        n = len(scores)

        def mean(k: str, s: list[dict[str, float]] = scores) -> float:
            return statistics.fmean(x[k] for x in s)

        out.append(
            f"| {name} | {n} | {mean('f'):.3f} | {statistics.median(x['f'] for x in scores):.3f}"
            f" | {mean('p'):.3f} | {mean('r'):.3f} | {sum(x['f'] >= 0.8 for x in scores) / n:.1%}"
            f" | {mean('turns'):.2f} | {mean('calls'):.2f} |"
        )
    return "\n".join(out)


def score(files: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    s = set_scores(files, gold, beta=0.5)
    return {"f": s.fbeta, "p": s.precision, "r": s.recall}


def peers(data: Path, gold: dict[str, tuple[str, ...]]) -> dict[str, dict[str, list[str]]]:
    bm25: dict[str, list[str]] = {}
    for line in (data / "peers" / "chronorepo" / "f1_scores_lite.jsonl").open():
        row = json.loads(line)
        bm25[row["instance_id"]] = [f for f, _ in row["bm25"][:1]]
    loc: dict[str, list[str]] = {}
    for line in (data / "peers" / "chronorepo" / "locagent_claude35_outputs.jsonl").open():
        row = json.loads(line)
        loc[row["instance_id"]] = list(row["found_files"][:1])
    return {"BM25 top-1": bm25, "LocAgent/Claude-3.5 top-1": loc}


async def run(args: argparse.Namespace, instances: list[Instance]) -> None:
    cache = BareRepoCache(args.cache, source=args.source)
    async with TreePool(cache, materialize="always", max_idle_trees=4) as pool:

        @asynccontextmanager
        async def open_tree(inst: Instance) -> AsyncIterator[ToolTree]:
            async with pool.tree(inst.repo, inst.base_commit) as tree:
                yield tree

        done = 0

        def tick(_: RolloutRecord) -> None:
            nonlocal done
            done += 1
            if done % 20 == 0:
                print(f"  {done}/{len(instances)}", flush=True)

        summary = await run_batch(
            LexicalPolicy(),
            instances,
            open_tree,
            predictions=args.output / "predictions.jsonl",
            rollouts=args.output / "rollouts.jsonl",
            jobs=args.jobs,
            on_record=tick,
        )
    print(
        f"ran {summary.total} (skipped {summary.skipped} already done): answered "
        f"{summary.answered}, fallback {summary.fallback}, errors {summary.errors}"
    )
    for msg in summary.error_messages:
        print("  error:", msg)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=Path, default=DATA / "swebench" / "lite.jsonl")
    parser.add_argument("--data", type=Path, default=DATA, help="shared data (for peers/)")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--source", required=True, help="clone template, e.g. a mirror pattern")
    parser.add_argument("-o", "--output", type=Path, default=Path("bench-out/lexical-lite"))
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--repo", action="append", help="repositories (default: the fetchable 9)")
    args = parser.parse_args()
    repos = tuple(args.repo or FETCHABLE)
    all_rows = list(records.load_instances(args.instances).records)
    instances = [r for r in all_rows if r.repo in repos]
    left_out = sorted({r.repo for r in all_rows} - set(repos))
    print(f"{len(instances)} of {len(all_rows)} instances; left out: {', '.join(left_out)}")
    args.output.mkdir(parents=True, exist_ok=True)
    asyncio.run(run(args, instances))

    gold = {r.instance_id: r.gold_files_for() for r in all_rows}
    preds = {
        p.instance_id: p
        for p in records.load_predictions(args.output / "predictions.jsonl").records
    }
    by_repo: dict[str, list[dict[str, float]]] = defaultdict(list)
    overall: list[dict[str, float]] = []
    for inst in instances:
        p = preds.get(inst.instance_id)
        files = p.files if p else ()
        s = score(files, gold[inst.instance_id])
        s.update(turns=p.turns if p else 0, calls=p.tool_calls if p else 0)
        by_repo[inst.repo].append(s)
        overall.append(s)
    rows = {"all": overall} | dict(sorted(by_repo.items()))
    print("\nLexicalPolicy\n" + table(rows))

    ids = [i.instance_id for i in instances]
    peer_rows: dict[str, list[dict[str, float]]] = {}
    for name, pred in peers(args.data, gold).items():
        for subset, chosen in (
            (f"{name}, these {len(ids)}", ids),
            (f"{name}, all 300", list(gold)),
        ):
            peer_rows[subset] = [
                score(pred.get(i, []), gold[i]) | {"turns": 0.0, "calls": 0.0} for i in chosen
            ]
    print("\nPeers (same metric; turns/calls not applicable)\n" + table(peer_rows))
    figures = {
        "lexical": {k: _summary(v) for k, v in rows.items()},
        "peers": {k: _summary(v) for k, v in peer_rows.items()},
        "instances": len(instances),
        "left_out_repos": left_out,
    }
    (args.output / "figures.json").write_text(json.dumps(figures, indent=2) + "\n")


def _summary(scores: list[dict[str, float]]) -> dict[str, float]:
    return {
        "n": len(scores),
        "fbeta_mean": statistics.fmean(x["f"] for x in scores),
        "fbeta_median": statistics.median(x["f"] for x in scores),
        "precision": statistics.fmean(x["p"] for x in scores),
        "recall": statistics.fmean(x["r"] for x in scores),
        "share_ge_0.8": sum(x["f"] >= 0.8 for x in scores) / len(scores),
        "turns": statistics.fmean(x["turns"] for x in scores),
        "calls": statistics.fmean(x["calls"] for x in scores),
    }


if __name__ == "__main__":
    main()
