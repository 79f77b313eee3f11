"""Stage 1 against the shared `index.jsonl` files: how often the mined set holds the gold file.

Prints, per OpenHands run, the trajectories whose index says the agent viewed a gold file, how
many of those have a gold file in catm's mined set, and how many files catm mined beyond the
index's editor views (shell reads). Figures only; nothing is asserted.

    uv run --all-packages python packages/catm/benchmarks/index_agreement.py [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
from pathlib import Path

from catm._mining import mine_trajectory
from catm._paths import classify
from catm._readers import read_trajectories
from catm._records import Trajectory

DEFAULT_DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
RUNS = {
    "openhands_glm46_lite": "sessions.jsonl.gz",
    "openhands_claude35_verified": "trajs.jsonl.gz",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = Path(os.environ.get("CATM_SHARED_DATA", DEFAULT_DATA))
    parser.add_argument("--data", type=Path, default=default)
    args = parser.parse_args()
    for run, name in RUNS.items():
        rows = [json.loads(x) for x in (args.data / run / "index.jsonl").read_text().splitlines()]
        records = [
            r for r in read_trajectories(args.data / run / name) if isinstance(r, Trajectory)
        ]
        gold_viewed = gold_mined = gold_mined_any = viewed_files = mined_files = 0
        for record, row in zip(records, rows, strict=True):
            mined = set(mine_trajectory(record).files)
            gold = set(row["gold_files"])
            viewed = {
                posixpath.normpath(p)
                for p in row["files_viewed"]
                if not p.startswith("/") and classify(posixpath.normpath(p)) is None
            }
            viewed_files += len(viewed)
            mined_files += len(mined)
            gold_mined_any += bool(gold & mined)
            if row["gold_viewed"]:
                gold_viewed += 1
                gold_mined += bool(gold & mined)
        print(
            f"{run}: {len(records)} trajectories; index says a gold file was viewed in "
            f"{gold_viewed}; catm's mined set holds a gold file in {gold_mined} of those "
            f"({gold_mined / gold_viewed:.1%}) and in {gold_mined_any} trajectories overall; "
            f"(trajectory, file) pairs: index views {viewed_files}, catm mined {mined_files}"
        )


if __name__ == "__main__":
    main()
