"""Benchmark: scoring 10,000 predictions, the bootstrap with and without numpy's draws (the
same indices; timed in one run, every field compared), and BM25 index + query for one sympy
commit.

Prints figures (and writes them as JSON with -o); it is not a timed test.

    python packages/swe-eval/benchmarks/bench_scoring.py \
        --source "/path/to/mirrors/{owner}+{name}/repo" --cache bench-out/sb-cache \
        -o bench-out/bench.json

Without --source the BM25 part is skipped. The instance file defaults to the shared data
folder beside the checkout (shared/data/swebench/lite.jsonl).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from pathlib import Path

from codegrep_records import GoldLabel, Prediction, load_instances
from swe_eval import evaluate, summarize

DEFAULT_INSTANCES = (
    Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "swebench" / "lite.jsonl"
)


def bench_scoring(n: int, seed: int) -> dict[str, float]:
    gold, preds, repos = _predictions(n, seed)
    t = time.perf_counter()
    import scipy.stats  # noqa: F401  - paid once by the downstream tests and power figures

    import_s = time.perf_counter() - t
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        ev = evaluate(gold, preds, repos=repos)
        runs.append(time.perf_counter() - t)
    t = time.perf_counter()
    summarize(ev, n_resamples=0, by_repo=True)
    means = time.perf_counter() - t
    t = time.perf_counter()
    summarize(ev, n_resamples=2000, by_repo=True)
    with_ci = time.perf_counter() - t
    return {
        "n_predictions": n,
        "scipy_import_s": import_s,
        "score_s_median_of_5": statistics.median(runs),
        "summarize_no_ci_s": means,
        "summarize_2000_bootstrap_with_repos_s": with_ci,
    }


def _predictions(n: int, seed: int) -> tuple[dict, list, dict]:
    rng = random.Random(seed)
    files = [f"pkg/mod{i}.py" for i in range(400)]
    gold, preds = {}, []
    for i in range(n):
        iid = f"inst-{i}"
        gold[iid] = GoldLabel(
            instance_id=iid, files=frozenset(rng.sample(files, rng.randint(1, 3))), source="bench"
        )
        preds.append(Prediction(instance_id=iid, files=tuple(rng.sample(files, rng.randint(0, 8)))))
    return gold, preds, {iid: f"o/r{i % 12}" for i, iid in enumerate(gold)}


def bench_bootstrap(sizes: tuple[int, ...], seed: int) -> list[dict[str, object]]:
    """`summarize` (2,000 resamples, by repository) drawing with the standard library (the
    path without numpy) and with numpy (the same indices), in one run: seconds each, the
    fields that differ (none expected) and those that differ in their last bits only (a float
    sum in numpy's order rather than math.fsum's)."""
    from unittest import mock

    import codegrep_records.stats as stats

    out = []
    for n in sizes:
        gold, preds, repos = _predictions(n, seed)
        ev = evaluate(gold, preds, repos=repos)
        t = time.perf_counter()
        with mock.patch.object(stats, "_numpy", return_value=None):
            plain = summarize(ev, n_resamples=2000, by_repo=True)
        stdlib_s = time.perf_counter() - t
        t = time.perf_counter()
        fast = summarize(ev, n_resamples=2000, by_repo=True)
        numpy_s = time.perf_counter() - t
        found = _differences(plain.model_dump(), fast.model_dump())
        out.append(
            {
                "n_predictions": n,
                "stdlib_draws_s": round(stdlib_s, 3),
                "numpy_draws_s": round(numpy_s, 3),
                "fields_differing_beyond_last_bits": [f for f, last in found if not last],
                "fields_differing_in_last_bits_only": sum(last for _, last in found),
            }
        )
    return out


def _differences(a: object, b: object, path: str = "") -> list[tuple[str, bool]]:
    """Every field where two summaries differ, and whether only in its last bits (two floats
    within 1e-12 relative: a sum in another order; see ClusterBootstrap). NaN equals NaN (a
    figure over nothing, both ways)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(a) for d in _differences(a[k], b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        pairs = enumerate(zip(a, b, strict=True))
        return [d for i, (x, y) in pairs for d in _differences(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        if a == b or (math.isnan(a) and math.isnan(b)):
            return []
        if math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15):
            return [(path, True)]
    return [] if a == b else [(f"{path}: {a!r} != {b!r}", False)]


def bench_bm25(instances: Path, source: str, cache: Path, instance_id: str) -> dict[str, float]:
    from swe_eval._corpus import collect_documents
    from swe_eval.bm25 import BM25Retriever
    from worktree_sandbox import BareRepoCache, SyncSandbox

    inst = next(i for i in load_instances(instances).records if i.instance_id == instance_id)
    assert inst.base_commit
    repo_cache = BareRepoCache(cache, source=source)
    repo_cache.ensure(inst.repo, commits=[inst.base_commit])
    with SyncSandbox(repo_cache) as sb, sb.tree(inst.repo, inst.base_commit) as tree:
        t = time.perf_counter()
        docs = collect_documents(tree)
        read_s = time.perf_counter() - t
        t = time.perf_counter()
        ranked = BM25Retriever().rank(tree, inst.problem_statement)
        total_s = time.perf_counter() - t
    return {
        "instance": instance_id,  # type: ignore[dict-item]
        "files_indexed": len(docs),
        "read_files_s": read_s,
        "read_index_query_s": total_s,
        "returned": len(ranked),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", type=Path, default=DEFAULT_INSTANCES)
    ap.add_argument("--source", help="clone source template for the sympy tree")
    ap.add_argument("--cache", type=Path, default=Path("bench-out/sb-cache"))
    ap.add_argument("--instance", default="sympy__sympy-20590")
    ap.add_argument("-n", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", type=Path)
    args = ap.parse_args()
    out: dict[str, object] = {"scoring": bench_scoring(args.n, args.seed)}
    out["bootstrap_stdlib_vs_numpy"] = bench_bootstrap((500, args.n), args.seed)
    if args.source:
        out["bm25"] = bench_bm25(args.instances, args.source, args.cache, args.instance)
    text = json.dumps(out, indent=2)
    print(text)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
