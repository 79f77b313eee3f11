"""`codegrep localize` on a 1 MB issue: seconds for the whole command, repeated.

A pasted log makes an issue far longer than any SWE-bench problem statement; this measures what
such an issue costs end to end (a fresh `codegrep localize ... --json` process per run, on this
repository by default). The issue is generated: a title naming the broken function, then a batch
log of repeated tracebacks (frames, dotted names, error lines) until it reaches `--bytes`; with
`--issues FILE.jsonl` it is SWE-bench problem statements joined instead.

    uv run --all-packages python packages/codegrep-model/benchmarks/localize_big_issue.py \\
        [--repo .] [--bytes 1000000] [--runs 3] [--issues ../shared/data/swebench/lite.jsonl]
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

ROOT = Path(__file__).resolve().parents[3]


def generated_issue(size: int) -> str:
    """A realistic long issue: a short report, then a log of tracebacks pasted below it."""
    head = (
        '`parse_answer` drops the line ranges when a model writes them as "10-20" strings\n\n'
        'When the retrieval agent answers with `{"files": ["src/app.py"], "line_ranges": '
        '{"src/app.py": ["10-20"]}}` the `Answer` model keeps the file but `line_ranges` is '
        "empty. The full log of the batch run follows.\n\n```\n"
    )
    tail = "```\n\nExpected: `Answer.line_ranges` keeps `[[10, 20]]`.\n"
    site = "/usr/lib/python3.11/site-packages"
    blocks: list[str] = []
    total = len(head) + len(tail)
    i = 0
    while total < size:
        i += 1
        block = (
            f"2024-05-01 12:{i // 60 % 60:02d}:{i % 60:02d},{i % 1000:03d} DEBUG "
            f"codegrep_model.engine: turn {i % 4} of rollout {i}\n"
            "Traceback (most recent call last):\n"
            f'  File "{site}/codegrep_model/engine.py", line {200 + i % 50}, in run_rollout\n'
            "    answer = parse_answer(reply.content)\n"
            f'  File "{site}/codegrep_model/answer.py", line {120 + i % 30}, in parse_answer\n'
            "    return Answer.model_validate(data)\n"
            f'  File "{site}/pydantic/main.py", line {500 + i % 20}, in model_validate\n'
            "    return cls.__pydantic_validator__.validate_python(obj)\n"
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for Answer\n"
            "ValueError: line ranges must be pairs of integers, got '10-20'\n"
        )
        blocks.append(block)
        total += len(block)
    return head + "".join(blocks) + tail


def joined_issues(path: Path, size: int) -> str:
    rows = [json.loads(line)["problem_statement"] for line in path.open(encoding="utf-8")]
    parts: list[str] = []
    total = 0
    while total < size:
        text = rows[len(parts) % len(rows)] + "\n\n"
        parts.append(text)
        total += len(text.encode("utf-8"))
    return "".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, default=ROOT, help="repository to search")
    parser.add_argument("--bytes", type=int, default=1_000_000, help="issue size to generate")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--issues", type=Path, default=None, help="join these statements")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="localize flags")
    parser.add_argument(
        "-o", "--output", type=Path, default=Path("bench-out/localize-big-issue.json")
    )
    args = parser.parse_args()
    text = joined_issues(args.issues, args.bytes) if args.issues else generated_issue(args.bytes)
    exe = Path(sys.executable).with_name("codegrep")
    times: list[float] = []
    inner: list[float] = []
    last: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        issue = Path(tmp) / "issue.md"
        issue.write_text(text, encoding="utf-8")
        size = issue.stat().st_size
        cmd = [str(exe), "localize", "--repo", str(args.repo), "--issue", str(issue), "--json"]
        for run in range(1, args.runs + 1):
            t0 = time.perf_counter()
            proc = subprocess.run(cmd + args.extra, capture_output=True, text=True, check=False)
            dt = time.perf_counter() - t0
            if proc.returncode != 0:
                print(f"run {run}: rc={proc.returncode} {proc.stderr[-300:]}")
                continue
            last = json.loads(proc.stdout)
            times.append(dt)
            inner.append(float(str(last["latency_s"])))
            print(f"run {run}: {dt:.2f} s (localize itself {inner[-1]:.2f} s), {last['files']}")
            for line in proc.stderr.splitlines():
                print(f"  stderr: {line}")
    summary = {
        "repo": str(args.repo),
        "issue_bytes": size,
        "source": str(args.issues) if args.issues else "generated",
        "runs": len(times),
        "median_s": statistics.median(times) if times else None,
        "max_s": max(times) if times else None,
        "localize_median_s": statistics.median(inner) if inner else None,
        "files": last.get("files"),
        "issue_cut_to": last.get("issue_cut_to"),
    }
    print(json.dumps(summary, indent=2))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
