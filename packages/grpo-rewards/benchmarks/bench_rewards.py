"""Time scoring one GRPO batch: parsing + every reward over N rollouts, then the advantages.

Labels come from SWE-bench Lite (gold files from the patch, gold line ranges from its hunks);
predictions are seeded perturbations of them (dropped gold files, distractor files, shifted
ranges, wrapped in prose or code fences, some malformed), with random turn and call counts.
Figures are printed and, with -o, written as JSON. Not a test: nothing here asserts a time.

    python benchmarks/bench_rewards.py                      # 4,096 rollouts, groups of 8
    python benchmarks/bench_rewards.py -n 16384 --seed 1 -o bench.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from grpo_rewards import REWARDS, Gold, RolloutStats, group_advantages
from grpo_rewards._advantages import efficiency_scale
from grpo_rewards._spec import score_batch

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_INSTANCES = (
    Path(os.environ.get("CODEGREP_SHARED_DATA", str(REPO_ROOT / ".." / "shared" / "data")))
    / "swebench"
    / "lite.jsonl"
)

_DIFF_RE = re.compile(r"^diff --git a/(\S+) b/", re.MULTILINE)
_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? ", re.MULTILINE)


def _labels_from_patch(patch: str) -> dict[str, list[list[int]]]:
    """Pre-image line ranges of each hunk, by file."""
    ranges: dict[str, list[list[int]]] = {}
    for block in re.split(r"(?=^diff --git )", patch, flags=re.MULTILINE):
        m = _DIFF_RE.search(block)
        if not m:
            continue
        for start, length in _HUNK_RE.findall(block):
            n = int(length) if length else 1
            if n > 0:
                ranges.setdefault(m.group(1), []).append([int(start), int(start) + n - 1])
    return ranges


def load_labels(path: Path) -> list[tuple[list[str], dict[str, list[list[int]]]]]:
    labels = []
    with path.open() as fh:
        for line in fh:
            row = json.loads(line)
            files = row.get("gold_files") or sorted(_labels_from_patch(row["patch"]))
            labels.append((list(files), _labels_from_patch(row.get("patch", ""))))
    return labels


def synthetic_labels(
    rng: random.Random, n: int
) -> list[tuple[list[str], dict[str, list[list[int]]]]]:
    out = []
    for i in range(n):
        files = [f"pkg{i}/mod{j}.py" for j in range(rng.randint(1, 3))]
        out.append((files, {f: [[10 * k + 1, 10 * k + 20]] for k, f in enumerate(files)}))
    return out


def make_rollout(
    rng: random.Random,
    label: tuple[list[str], dict[str, list[list[int]]]],
    distractors: list[str],
) -> tuple[str, RolloutStats]:
    files, ranges = label
    pred = [f for f in files if rng.random() < 0.8]
    pred += rng.sample(distractors, k=rng.randint(0, 3))
    rng.shuffle(pred)
    shown = [rng.choice(["", "./", "/testbed/", "/workspace/repo__repo__1.0/"]) + f for f in pred]
    pred_ranges = {
        f: [[max(1, a + rng.randint(-5, 5)), b + rng.randint(0, 10)] for a, b in ranges.get(f, [])]
        for f in pred
    }
    body = json.dumps({"files": shown, "line_ranges": pred_ranges})
    kind = rng.random()
    if kind < 0.05:
        text = "I could not find the relevant files."
    elif kind < 0.08:
        text = body[: len(body) // 2]  # truncated generation
    elif kind < 0.5:
        text = f"After reading the code, the answer is:\n```json\n{body}\n```"
    else:
        text = body
    explore = rng.randint(0, 3)
    calls = [rng.randint(0, 8) for _ in range(explore)]
    return text, RolloutStats.from_calls_per_turn(calls)


def _time(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), min(runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Time grpo-rewards on one batch of rollouts.",
        epilog="example: python benchmarks/bench_rewards.py -n 4096 --group-size 8 -o bench.json",
    )
    parser.add_argument(
        "--instances",
        type=Path,
        default=DEFAULT_INSTANCES,
        help="SWE-bench style JSONL with gold_files/patch (default: shared Lite)",
    )
    parser.add_argument("-n", "--rollouts", type=int, default=4096)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", type=Path, default=None, help="write figures as JSON")
    args = parser.parse_args(argv)
    if args.rollouts % args.group_size:
        parser.error("--rollouts must be a multiple of --group-size")

    rng = random.Random(args.seed)
    if args.instances.is_file():
        labels = load_labels(args.instances)
        source = str(args.instances.name)
    else:
        labels = synthetic_labels(rng, 300)
        source = f"synthetic (no file at {args.instances})"
    distractors = sorted({f for files, _ in labels for f in files})
    texts, golds, stats = [], [], []
    for g in range(args.rollouts // args.group_size):
        label = labels[g % len(labels)]
        gold = Gold.of(label[0], label[1])
        for _ in range(args.group_size):
            text, st = make_rollout(rng, label, distractors)
            texts.append(text)
            golds.append(gold)
            stats.append(st)

    n = args.rollouts
    figures: dict[str, object] = {
        "rollouts": n,
        "group_size": args.group_size,
        "labels": source,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "repeats": args.repeats,
        "timings_s": {},
    }
    timings: dict[str, dict[str, float]] = {}
    print(f"{n} rollouts in groups of {args.group_size}, labels: {source}, seed {args.seed}")
    print(f"{'step':<34}{'median ms':>12}{'min ms':>10}{'µs/rollout':>12}")

    def report(name: str, fn: Callable[[], object]) -> None:
        med, best = _time(fn, args.repeats)
        timings[name] = {"median": med, "min": best}
        print(f"{name:<34}{med * 1e3:>12.2f}{best * 1e3:>10.2f}{med / n * 1e6:>12.2f}")

    results = {}
    for name in REWARDS:
        report(f"score_batch[{name}]", lambda name=name: score_batch(name, texts, golds, stats))
        results[name] = score_batch(name, texts, golds, stats)
    rewards = [r.reward for r in results["codegrep_v3"]]
    cbars = [s.cbar for s in stats]
    for scale in ("group", "batch", "none"):
        report(
            f"group_advantages[{scale}, python]",
            lambda scale=scale: group_advantages(rewards, group_size=args.group_size, scale=scale),
        )
    try:
        import numpy  # noqa: F401

        for scale in ("group", "none"):
            report(
                f"group_advantages[{scale}, numpy]",
                lambda scale=scale: group_advantages(
                    rewards, group_size=args.group_size, scale=scale, backend="numpy"
                ),
            )
    except ImportError:
        print("(numpy not installed: numpy backend not timed)")
    report("efficiency_scale x N", lambda: [efficiency_scale(c) for c in cbars])

    malformed = sum(r.reason is not None and "c̄" not in r.reason for r in results["codegrep_v3"])
    masked = sum(r.reason is not None and "c̄" in r.reason for r in results["codegrep_v3"])
    figures["timings_s"] = timings
    figures["codegrep_v3"] = {
        "mean_reward": statistics.fmean(rewards),
        "malformed": malformed,
        "masked_cbar0": masked,
    }
    print(
        f"codegrep_v3 mean reward {statistics.fmean(rewards):.4f}; "
        f"{malformed} malformed, {masked} masked (c̄ = 0) of {n}"
    )
    if args.output:
        args.output.write_text(json.dumps(figures, indent=2) + "\n")
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
