"""Write the LocBench instances whose repository and base commit are in a folder of local clones.

LocBench (`../shared/data/locbench/locbench_gt.jsonl`, 560 issues of 165 Python repositories) is
a second held-out set of the built-in localizer: nothing here was trained, tuned or designed on
it. Most of its repositories are not at hand; this keeps the instances that can be run and says
how many of each repository were kept and why the others were not.

    python benchmarks/locbench_at_hand.py MIRRORS OUT.jsonl [--locbench FILE] [--unless-in F]

MIRRORS holds one clone per repository as `OWNER+NAME/repo` or `OWNER+NAME`. The rows are
written as they are (swe-eval derives the gold from `patch` by the toolkit's rule; LocBench's own
`gold_override` agrees with it on most rows and is not read).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "locbench"


def clone_of(mirrors: Path, repo: str) -> Path | None:
    name = repo.replace("/", "+")
    for cand in (mirrors / name / "repo", mirrors / name):
        if cand.is_dir():
            return cand
    return None


def has_commit(clone: Path, sha: str) -> bool:
    # --git-dir and a plain object lookup: nothing of the clone's config names a program here
    done = subprocess.run(
        ["git", f"--git-dir={clone}", "cat-file", "-e", f"{sha}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mirrors", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--locbench", type=Path, default=DEFAULT / "locbench_gt.jsonl")
    ap.add_argument(
        "--unless-in",
        type=Path,
        action="append",
        default=[],
        help="leave out LocBench rows whose id this instance file has (SWE-Gym gives some of "
        "them another patch); repeat",
    )
    args = ap.parse_args(argv)
    if not args.locbench.is_file():
        print(f"error: no LocBench file at {args.locbench}", file=sys.stderr)
        return 2
    earlier: set[str] = set()
    if args.unless_in:
        from codegrep_model.policies.lexical.ranker import RankerError
        from codegrep_model.policies.lexical.ranker_train import load_training_instances

        try:
            earlier = {r.instance_id for r in load_training_instances(args.unless_in).rows}
        except RankerError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    kept: list[str] = []
    why: Counter[str] = Counter()
    by_repo: Counter[str] = Counter()
    with args.locbench.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            try:
                row = json.loads(line)
                repo, sha = str(row["repo"]), str(row["base_commit"])
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                print(f"error: {args.locbench}:{n}: not a LocBench row ({exc!r})", file=sys.stderr)
                return 2
            clone = clone_of(args.mirrors, repo)
            if str(row.get("instance_id")) in earlier:
                why["in an --unless-in file"] += 1
            elif clone is None:
                why["repository not at hand"] += 1
            elif not has_commit(clone, sha):
                why["base commit not in the clone"] += 1
            else:
                kept.append(line if line.endswith("\n") else line + "\n")
                by_repo[repo] += 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(kept), encoding="utf-8")
    print(f"kept {len(kept)} instances of {len(by_repo)} repositories; left out {dict(why)}")
    for repo, k in by_repo.most_common():
        print(f"  {repo}: {k}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
