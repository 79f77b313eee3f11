"""`python -m train_launcher.subset --rows ROWS -i INSTANCES -o OUT`: the instances of a split.

The GRPO dataset splits by repository into train.jsonl and val.jsonl, whose rows are prompts,
not instances. The teacher (`codegrep-model batch`) and the evaluation (`swe-eval predict`) need
instance files, so this writes the rows of INSTANCES whose `instance_id` appears in ROWS, as
they are, in INSTANCES' order. The file is written whole or not at all (a temporary file, then
a rename). Exit 0 done (an empty split writes an empty file), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main", "write_subset"]


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
    from codegrep_records import RowProblem, read_rows, write_atomically

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


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train_launcher.subset", description=__doc__)
    ap.add_argument("--rows", type=Path, required=True, help="rows with instance_id (JSONL)")
    ap.add_argument("-i", "--instances", type=Path, required=True, help="the instances file")
    ap.add_argument("-o", "--output", type=Path, required=True, help="the subset (JSONL)")
    args = ap.parse_args(argv)
    from codegrep_records import RecordError

    try:
        n = write_subset(args.rows, args.instances, args.output)
    except (RecordError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{n} instances -> {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
