"""Rollout token lengths of LexicalPolicy on SWE-bench Lite, without and with the training budget.

Each instance whose repository is at hand runs twice with the training config (strict, 3 + 1
turns): without a token budget (the length a trainer would have to encode), and with
`codegrep_model.train.TRAINING_BUDGET` (max_length 32768, 2,048 completion tokens over the whole
rollout), where tool results are cut to fit or the rollout ends with an overflow. Prints p50 /
p90 / max of the whole rollout's characters and tokens, and the share of rollouts past
max_length (before) and that overflowed or had results cut (after); writes figures.json.

Tokens are counted with `--tokenizer` (a tokenizer.json, read with the `tokenizers` library)
when given, else with the character estimate (3 characters a token).

    uv run --all-packages python packages/codegrep-model/benchmarks/rollout_tokens_lite.py \\
        --cache bench-out/cache --source "/path/to/mirrors/{owner}+{name}/repo" \\
        --repo psf/requests --repo pallets/flask -o bench-out/rollout-tokens
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from pathlib import Path

import codegrep_records as records
from codegrep_model import Instance, RolloutRecord, run_rollout
from codegrep_model.budget import CharEstimate, TokenCounter, TokenizerCounter, message_text
from codegrep_model.datasets import TRAINING_CONFIG
from codegrep_model.policies.lexical import LexicalPolicy
from codegrep_model.train import TRAINING_BUDGET
from worktree_sandbox import BareRepoCache, TreePool

DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"


def tokens(record: RolloutRecord, counter: TokenCounter) -> int:
    overhead = TRAINING_BUDGET.message_overhead_tokens
    return sum(counter.count(message_text(m)) + overhead for m in record.messages)


def chars(record: RolloutRecord) -> int:
    return sum(len(message_text(m)) for m in record.messages)


def quantiles(values: list[int]) -> dict[str, float]:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return {"p50": statistics.median(ordered), "p90": p90, "max": ordered[-1]}


async def measure(
    args: argparse.Namespace, instances: list[Instance], counter: TokenCounter
) -> list[dict[str, object]]:
    budgeted = TRAINING_CONFIG.model_copy(update={"budget": TRAINING_BUDGET})
    rows: list[dict[str, object]] = []
    gate = asyncio.Semaphore(args.jobs)
    cache = BareRepoCache(args.cache, source=args.source)
    async with TreePool(cache, materialize="always", max_idle_trees=4) as pool:

        async def one(inst: Instance) -> None:
            if inst.base_commit is None:  # every Lite row has one; a tree needs it
                print(f"  skipped {inst.instance_id}: no base commit", flush=True)
                return
            async with gate, pool.tree(inst.repo, inst.base_commit) as tree:
                before = await run_rollout(LexicalPolicy(), tree, inst, config=TRAINING_CONFIG)
                after = await run_rollout(
                    LexicalPolicy(), tree, inst, config=budgeted, counter=counter
                )
            rows.append(
                {
                    "instance_id": inst.instance_id,
                    "before_chars": chars(before),
                    "before_tokens": tokens(before, counter),
                    "before_status": before.status,
                    "after_chars": chars(after),
                    "after_tokens": after.rollout_tokens,
                    "after_completion_tokens": after.completion_tokens,
                    "after_status": after.status,
                    "overflow": after.overflow,
                    "tool_results_cut": after.tool_results_cut,
                }
            )
            print(f"  {len(rows)}/{len(instances)} {inst.instance_id}", flush=True)

        await asyncio.gather(*(one(i) for i in instances))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=Path, default=DATA / "swebench" / "lite.jsonl")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--source", required=True, help="clone template, e.g. a mirror pattern")
    parser.add_argument("-o", "--output", type=Path, default=Path("bench-out/rollout-tokens"))
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--repo", action="append", required=True, help="repositories at hand")
    parser.add_argument("--tokenizer", type=Path, help="a tokenizer.json (needs `tokenizers`)")
    args = parser.parse_args()
    counter: TokenCounter = CharEstimate()
    if args.tokenizer is not None:
        from tokenizers import Tokenizer  # type: ignore[import-not-found, unused-ignore]

        counter = TokenizerCounter(Tokenizer.from_file(str(args.tokenizer)))
    all_rows = list(records.load_instances(args.instances).records)
    instances = [r for r in all_rows if r.repo in set(args.repo)][: args.limit]
    print(f"{len(instances)} instances of {', '.join(args.repo)}; tokens by {counter.name}")
    rows = asyncio.run(measure(args, instances, counter))
    max_length = TRAINING_BUDGET.max_length or 0
    n = len(rows)

    def ints(key: str) -> list[int]:
        return [int(str(r[key])) for r in rows]

    figures = {
        "instances": n,
        "repos": sorted(set(args.repo)),
        "counter": counter.name,
        "budget": TRAINING_BUDGET.model_dump(),
        "before_chars": quantiles(ints("before_chars")),
        "before_tokens": quantiles(ints("before_tokens")),
        "before_over_max_length": sum(t > max_length for t in ints("before_tokens")) / n,
        "after_chars": quantiles(ints("after_chars")),
        "after_tokens": quantiles(ints("after_tokens")),
        "after_completion_tokens": quantiles(ints("after_completion_tokens")),
        "after_over_max_length": sum(t > max_length for t in ints("after_tokens")) / n,
        "overflow_rate": sum(r["overflow"] is not None for r in rows) / n,
        "overflow_causes": sorted({str(r["overflow"]) for r in rows if r["overflow"]}),
        "rollouts_with_cut_results": sum(int(str(r["tool_results_cut"])) > 0 for r in rows) / n,
        "answered_before": sum(r["before_status"] == "answered" for r in rows) / n,
        "answered_after": sum(r["after_status"] == "answered" for r in rows) / n,
    }
    args.output.mkdir(parents=True, exist_ok=True)
    with (args.output / "rollouts.jsonl").open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    (args.output / "figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
