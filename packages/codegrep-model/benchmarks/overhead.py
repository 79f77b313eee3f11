"""Environment overhead per rollout: everything but model time, with replies that take 1 s.

The policy is LexicalPolicy (so the calls are real and realistic) behind a fixed 1 s delay per
reply, standing in for a served model. Per rollout we time the whole span, tree lease included
(`TreePool.tree` on a fresh commit, the production default `materialize="auto"`), and report
overhead = span - replies x delay, which also charges the lexical policy's own compute to the
environment (conservative).

    uv run --all-packages python packages/codegrep-model/benchmarks/overhead.py \\
        --cache bench-out/cache --source "/path/to/mirrors/{owner}+{name}/repo" --repo sympy/sympy
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

import codegrep_records as records
from codegrep_model import Instance, PolicyReply, PolicyRequest, run_rollout
from codegrep_model.policies.lexical import LexicalPolicy
from worktree_sandbox import BareRepoCache, TreePool

DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"


class PacedPolicy:
    """LexicalPolicy's decisions, each delivered `delay_s` after it was asked for."""

    def __init__(self, delay_s: float) -> None:
        self.inner = LexicalPolicy()
        self.delay_s = delay_s
        self.replies = 0
        self.compute_s = 0.0

    @property
    def name(self) -> str:
        return f"lexical+{self.delay_s:g}s"

    async def reply(self, request: PolicyRequest) -> PolicyReply:
        # The reply takes `delay_s` in all, its own compute included, as a served model's
        # latency would: the policy's thinking is model time, not environment time.
        self.replies += 1
        started = time.perf_counter()
        reply = await self.inner.reply(request)
        self.compute_s += time.perf_counter() - started
        await asyncio.sleep(max(0.0, self.delay_s - (time.perf_counter() - started)))
        return reply


async def run(args: argparse.Namespace, instances: list[Instance]) -> list[dict[str, float]]:
    cache = BareRepoCache(args.cache, source=args.source)
    for repo in sorted({i.repo for i in instances}):
        cache.ensure(repo, [i.base_commit for i in instances if i.repo == repo])
    out = []
    async with TreePool(cache) as pool:
        for inst in instances:
            policy = PacedPolicy(args.delay)
            t0 = time.perf_counter()
            async with pool.tree(inst.repo, inst.base_commit) as tree:
                lease = time.perf_counter() - t0
                rec = await run_rollout(policy, tree, inst)
            span = time.perf_counter() - t0
            overhead = span - policy.replies * args.delay
            out.append(
                {
                    "span_s": span,
                    "lease_s": lease,
                    "overhead_s": overhead,
                    "share": overhead / span,
                    "turns": rec.stats.turns,
                    "calls": rec.stats.tool_calls,
                    "tools_s": sum(t.tools_s for t in rec.turns),
                    "policy_compute_s": policy.compute_s,
                }
            )
            print(
                f"{inst.instance_id}: {span:.3f} s, overhead {overhead * 1000:.0f} ms "
                f"({overhead / span:.1%}), lease {lease * 1000:.0f} ms, {rec.stats.tool_calls} "
                "calls",
                flush=True,
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=Path, default=DATA / "swebench" / "lite.jsonl")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--repo", default="sympy/sympy")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--delay", type=float, default=1.0, help="seconds per model reply")
    parser.add_argument("-o", "--output", type=Path, default=Path("bench-out/overhead.json"))
    args = parser.parse_args()
    rows = [r for r in records.load_instances(args.instances).records if r.repo == args.repo][
        : args.limit
    ]
    res = asyncio.run(run(args, rows))
    shares = [r["share"] for r in res]
    summary = {
        "repo": args.repo,
        "rollouts": len(res),
        "delay_s": args.delay,
        "span_s_mean": statistics.fmean(r["span_s"] for r in res),
        "overhead_ms_mean": 1000 * statistics.fmean(r["overhead_s"] for r in res),
        "overhead_ms_p50": 1000 * statistics.median(r["overhead_s"] for r in res),
        "overhead_ms_max": 1000 * max(r["overhead_s"] for r in res),
        "overhead_share_mean": statistics.fmean(shares),
        "overhead_share_max": max(shares),
        "lease_ms_mean": 1000 * statistics.fmean(r["lease_s"] for r in res),
        "calls_mean": statistics.fmean(r["calls"] for r in res),
    }
    print(json.dumps(summary, indent=2))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"summary": summary, "rollouts": res}, indent=2) + "\n")


if __name__ == "__main__":
    main()
