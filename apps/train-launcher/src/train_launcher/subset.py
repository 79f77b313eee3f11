"""`python -m train_launcher.subset --rows ROWS -i INSTANCES -o OUT`: the instances of a split.

The GRPO dataset splits by repository into train.jsonl and val.jsonl, whose rows are prompts,
not instances. The teacher (`codegrep-model batch`) and the evaluation (`swe-eval predict`) need
instance files, so this writes the rows of INSTANCES whose `instance_id` appears in ROWS, as
they are, in INSTANCES' order. The file is written whole or not at all (a temporary file, then
a rename). Exit 0 done (an empty split writes an empty file), 2 bad input.

`--sample N --seed S --rows ROWS -o OUT` writes instead N rows of ROWS drawn with that seed (all
of them when there are fewer), in ROWS' order: the capped validation set GRPO evaluates.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main", "write_sample", "write_subset"]


def _ids(rows: Path) -> set[str]:
    from codegrep_records import RowProblem, read_rows

    ids: set[str] = set()
    for _line, row in read_rows(rows):
        if isinstance(row, RowProblem):
            raise ValueError(f"{rows}: {row}")
        if isinstance(row, dict) and isinstance(row.get("instance_id"), str):
            ids.add(row["instance_id"])
    return ids


def write_subset(rows: Path, instances: Path, output: Path) -> int:
    """Write the instances named in `rows` to `output`; how many were written."""
    from codegrep_records import RowProblem, read_rows
    from codegrep_records.io import write_atomically

    wanted = _ids(rows)
    kept = []
    for _line, row in read_rows(instances):
        if isinstance(row, RowProblem) or not isinstance(row, dict):
            continue
        if row.get("instance_id") in wanted:
            kept.append(json.dumps(row, ensure_ascii=False))
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(output, "".join(line + "\n" for line in kept))
    return len(kept)


def write_sample(rows: Path, n: int, seed: int, output: Path) -> int:
    """Write `n` rows of `rows` drawn with `seed` (in file order) to `output`; how many."""
    from codegrep_records import RowProblem, read_rows
    from codegrep_records.io import write_atomically

    kept: list[str] = []
    for line, row in read_rows(rows):
        if isinstance(row, RowProblem) or not isinstance(row, dict):
            raise ValueError(f"{rows}:{line}: not a JSON object row")
        kept.append(json.dumps(row, ensure_ascii=False))
    if len(kept) > n:
        chosen = sorted(random.Random(seed).sample(range(len(kept)), n))
        kept = [kept[i] for i in chosen]
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(output, "".join(line + "\n" for line in kept))
    return len(kept)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train_launcher.subset", description=__doc__)
    ap.add_argument("--rows", type=Path, required=True, help="rows with instance_id (JSONL)")
    ap.add_argument("-i", "--instances", type=Path, help="the instances file")
    ap.add_argument("-o", "--output", type=Path, required=True, help="the subset (JSONL)")
    ap.add_argument("--sample", type=int, default=None, help="N rows of ROWS instead")
    ap.add_argument("--seed", type=int, default=42, help="the draw of --sample")
    args = ap.parse_args(argv)
    from codegrep_records import RecordError

    if (args.sample is None) == (args.instances is None):
        print("error: give -i INSTANCES or --sample N", file=sys.stderr)
        return 2
    if args.sample is not None and args.sample < 1:
        print(f"error: --sample must be at least 1, got {args.sample}", file=sys.stderr)
        return 2
    try:
        if args.sample is not None:
            n = write_sample(args.rows, args.sample, args.seed, args.output)
        else:
            n = write_subset(args.rows, args.instances, args.output)
    except (RecordError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{n} rows -> {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
