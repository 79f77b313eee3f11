"""`codegrep localize` latency on a django-size tree: the whole command, repeated, p50 and p90.

Each run is a fresh `codegrep localize` process (interpreter start, imports, tree scan, the
lexical rollout), as a user or an agent hook would run it, on a working tree (the default) or at
a commit (`--commit`). The django-size tree comes from worktree-sandbox's
`benchmarks/make_django_tree.py`.

    uv run --all-packages python packages/codegrep-model/benchmarks/localize_latency.py \\
        --repo DJANGO_TREE/django --issues ../shared/data/swebench/lite.jsonl --limit 20
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="a django-size git checkout")
    parser.add_argument("--issues", type=Path, default=DATA / "swebench" / "lite.jsonl")
    parser.add_argument("--issue-repo", default="django/django", help="take issues of this repo")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--commit", default=None, help="search at this commit, not the work tree")
    parser.add_argument(
        "--base-commits", action="store_true", help="search each issue at its own base commit"
    )
    parser.add_argument("--codegrep", type=Path, help="the codegrep to run (default: this one's)")
    parser.add_argument("-o", "--output", type=Path, default=Path("bench-out/localize.json"))
    args = parser.parse_args()
    issues = [
        json.loads(line)
        for line in args.issues.open()
        if json.loads(line)["repo"] == args.issue_repo
    ][: args.limit]
    exe = args.codegrep or Path(sys.executable).with_name("codegrep")
    times: list[float] = []
    found: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        for row in issues:
            issue = Path(tmp) / "issue.md"
            issue.write_text(row["problem_statement"])
            cmd = [str(exe), "localize", "--repo", str(args.repo), "--issue", str(issue), "--json"]
            if args.base_commits:
                cmd += ["--commit", row["base_commit"]]
            elif args.commit:
                cmd += ["--commit", args.commit]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            dt = time.perf_counter() - t0
            if proc.returncode != 0:
                print(f"{row['instance_id']}: rc={proc.returncode} {proc.stderr[-300:]}")
                continue
            data = json.loads(proc.stdout)
            times.append(dt)
            found.append(len(data["files"]))
            print(f"{row['instance_id']}: {dt:.2f} s, {data['tool_calls']} calls, {data['files']}")
    q = statistics.quantiles(times, n=10) if len(times) > 1 else times * 9
    summary = {
        "repo": str(args.repo),
        "commit": "each issue's base commit" if args.base_commits else args.commit,
        "codegrep": "--codegrep" if args.codegrep else "this checkout's",
        "runs": len(times),
        "p50_s": statistics.median(times),
        "p90_s": q[8],
        "max_s": max(times),
        "files_mean": statistics.fmean(found),
    }
    print(json.dumps(summary, indent=2))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
