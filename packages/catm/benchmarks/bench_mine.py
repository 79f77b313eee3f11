"""Benchmark: CATM stages 1+3 throughput on the shared sample, and a ~67K-record scale run.

Prints figures and writes them to a JSON file; it asserts nothing (not a test).

    uv run --all-packages python packages/catm/benchmarks/bench_mine.py
    uv run --all-packages python packages/catm/benchmarks/bench_mine.py --scale 67074 -o bench.json

Throughput is one process on one core, `--judge none`, end to end from the compressed files:
gunzip, decode, stage 1, combination, stage 3. The scale run streams the shared sample again and
again (each pass gives every trajectory a new id, and with --distinct-instances a new instance
id too) until it has fed `--scale` records, sampling the resident set size as it goes, then
writes the labels the way `catm mine` does.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from catm import NoJudge, iter_records, load_mining_instances, mine_labels, write_labels
from catm._records import Skip, Trajectory
from codegrep_records import Instance

DEFAULT_DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
TRAJECTORIES = [
    "openhands_glm46_lite/sessions.jsonl.gz",
    "openhands_claude35_verified/trajs.jsonl.gz",
    "openhands_examples/glm46_lite_output_1instance.jsonl",
    "openhands_examples/multi_swe_bench_ponyc_llama4_output.jsonl.gz",
]
INSTANCES = [
    "swebench/lite.jsonl",
    "swebench/verified_dev.jsonl",
    "openhands_examples/multi_swe_bench_ponyc_patch.jsonl",
]


def _rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def throughput(files: list[Path], instances: dict[str, Instance], repeat: int) -> dict[str, float]:
    best = float("inf")
    trajectories = 0
    for _ in range(repeat):
        start = time.process_time()
        result = mine_labels(iter_records(files), instances, NoJudge())
        best = min(best, time.process_time() - start)
        trajectories = result.stats.trajectories
    return {
        "trajectories": trajectories,
        "cpu_seconds_best": round(best, 4),
        "trajectories_per_second_per_core": round(trajectories / best, 1),
        "megabytes_compressed": round(sum(f.stat().st_size for f in files) / 1e6, 1),
    }


def scale(
    files: list[Path], instances: dict[str, Instance], records: int, distinct: bool
) -> dict[str, object]:
    samples: list[tuple[int, float]] = []
    table = dict(instances)
    fed = 0

    def replicated() -> Iterator[Trajectory | Skip]:
        nonlocal fed
        replica = 0
        while True:
            for record in iter_records(files):
                if fed >= records:
                    return
                if isinstance(record, Trajectory):
                    instance_id = record.instance_id
                    if distinct and replica:
                        base = table.get(record.instance_id)
                        instance_id = f"{record.instance_id}~{replica}"
                        if base is not None:
                            table[instance_id] = dataclasses.replace(base, instance_id=instance_id)
                    record = dataclasses.replace(
                        record,
                        trajectory_id=f"{record.trajectory_id}~{replica}",
                        instance_id=instance_id,
                    )
                fed += 1
                if fed % 5000 == 0:
                    samples.append((fed, round(_rss_mib(), 1)))
                yield record
            replica += 1

    start_rss = _rss_mib()
    wall = time.perf_counter()
    cpu = time.process_time()
    result = mine_labels(replicated(), table, NoJudge())
    rss_mined = _rss_mib()
    with tempfile.TemporaryDirectory() as tmp:
        # Written as `catm mine` writes them: streamed, one label object at a time.
        labels = Path(tmp) / "labels.jsonl"
        write_labels(labels, result.iter_labels(), result.stats)
        labels_mb = labels.stat().st_size / 1e6
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - wall
    return {
        "records": fed,
        "distinct_instances": distinct,
        "labels": result.stats.labels_written,
        "cpu_seconds": round(cpu, 1),
        "wall_seconds": round(wall, 1),
        "trajectories_per_second_per_core": round(result.stats.trajectories / cpu, 1),
        "rss_mib_start": round(start_rss, 1),
        "rss_mib_samples": samples,
        "rss_mib_after_stage3": round(rss_mined, 1),
        "rss_mib_after_writing": round(_rss_mib(), 1),
        "labels_megabytes": round(labels_mb, 1),
        "max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "beta": result.stats.beta,
        "mean_weight_raw": round(result.stats.mean_weight_raw, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("CATM_SHARED_DATA", DEFAULT_DATA))
    )
    parser.add_argument("--repeat", type=int, default=3, help="throughput runs; the best counts")
    parser.add_argument("--scale", type=int, default=0, help="records for the scale run (0: skip)")
    parser.add_argument(
        "--distinct-instances",
        action="store_true",
        help="give every replica new instance ids (labels grow with records)",
    )
    parser.add_argument("-o", "--output", type=Path, default=None, help="write figures as JSON")
    args = parser.parse_args()
    files = [args.data / f for f in TRAJECTORIES]
    instances, _ = load_mining_instances([args.data / f for f in INSTANCES], keep_issue=False)
    figures: dict[str, object] = {"throughput": throughput(files, instances, args.repeat)}
    print("stages 1+3 on the shared sample:", json.dumps(figures["throughput"]))
    if args.scale:
        figures["scale"] = scale(files, instances, args.scale, args.distinct_instances)
        print("scale run:", json.dumps(figures["scale"]))
    if args.output is not None:
        args.output.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
