"""Do `codegrep localize --commit`, the batch runner and the HTTP server give one answer?

For each SWE-bench Lite instance of the committed lexical predictions
(`apps/injector/calibration/lexical-lite.predictions.jsonl`, made by make-lexical.sh) whose
repository has a local mirror, the same (repository, commit, issue) goes through three
surfaces:

- cli: `codegrep localize --repo MIRROR --commit SHA --issue FILE --json --gate` (the typer app,
  in this process: no checkout, grep on git objects);
- batch: `swe-eval predict -r lexical` over the same instances (what made the predictions);
- http: `codegrep serve`'s app (`build_app`) on 127.0.0.1, `POST /localize` with `gate: true`
  (a checkout, ripgrep once it is ready).

Each surface's files and scores are compared with the committed predictions, and the gate's
decision (the shipped calibration, the default threshold, applied by `codegrep.gating.apply`
to each surface's files and scores) with the one on the committed predictions. Prints a table
per surface, writes every instance's answers to `-o` as JSON. Not a timed test.

    uv run --all-packages --extra serve python apps/injector/benchmarks/surfaces_agree.py \\
        -i ../shared/data/swebench/lite.jsonl --mirrors MIRRORS -o bench-out/surfaces.json

`MIRRORS` holds one bare clone per repository, as `OWNER+NAME/repo` (or `--mirror-template`).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from codegrep.cli import app
from codegrep.gating import apply
from codegrep.serve_http import build_app
from codegrep.service import LocalizeService, ServiceLimits
from codegrep_gate import GateConfig, shipped_calibration
from typer.testing import CliRunner

HERE = Path(__file__).resolve().parent
PREDICTIONS = HERE.parent / "calibration" / "lexical-lite.predictions.jsonl"

Found = dict[str, Any]


def _gate(files: list[str], scores: list[float] | None) -> list[str]:
    cal = shipped_calibration("lexical")
    return apply(
        files, scores, calibration=cal, config=GateConfig(), policy_name="lexical"
    ).injected


def _cli(rows: list[dict[str, Any]], mirror_of: dict[str, Path], work: Path) -> dict[str, Found]:
    out: dict[str, Found] = {}
    runner = CliRunner()
    for n, row in enumerate(rows, 1):
        issue = work / "issue.txt"
        issue.write_bytes(row["problem_statement"].encode())
        argv = ["localize", "--repo", str(mirror_of[row["repo"]]), "--commit", row["base_commit"],
                "--issue", str(issue), "--json", "--gate", "0.45"]  # fmt: skip
        res = runner.invoke(app, argv)
        if res.exit_code != 0:
            out[row["instance_id"]] = {"error": res.output[-300:]}
        else:
            data = json.loads(res.stdout)
            out[row["instance_id"]] = {
                "files": data["files"],
                "scores": data["scores"],
                "own_injected": data.get("injected"),
            }
        print(f"cli {n}/{len(rows)}", file=sys.stderr, flush=True)
    return out


def _batch(rows: list[dict[str, Any]], template: str, work: Path, jobs: int) -> dict[str, Found]:
    instances = work / "instances.jsonl"
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows))
    predictions = work / "batch.jsonl"
    subprocess.run(
        ["swe-eval", "predict", "-r", "lexical", "-i", str(instances), "--cache",
         str(work / "cache"), "--source", template, "-j", str(jobs), "-o", str(predictions)],
        check=True,
    )  # fmt: skip
    out: dict[str, Found] = {}
    for line in predictions.read_text().splitlines():
        p = json.loads(line)
        out[p["instance_id"]] = {"files": p["files"], "scores": p.get("scores")}
    return out


def _http(rows: list[dict[str, Any]], mirror_of: dict[str, Path], root: Path) -> dict[str, Found]:
    service = LocalizeService(
        allow_roots=[root],
        calibration=shipped_calibration("lexical"),
        limits=ServiceLimits(timeout_s=600.0),
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_app(service), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    out: dict[str, Found] = {}
    try:
        for n, row in enumerate(rows, 1):
            body = {"repo": str(mirror_of[row["repo"]]), "commit": row["base_commit"],
                    "issue": row["problem_statement"], "gate": True}  # fmt: skip
            r = httpx.post(f"http://127.0.0.1:{port}/localize", json=body, timeout=900)
            if r.status_code != 200:
                out[row["instance_id"]] = {"error": f"{r.status_code} {r.text[:300]}"}
            else:
                data = r.json()
                out[row["instance_id"]] = {
                    "files": data["files"], "scores": data["scores"],
                    "own_injected": data.get("injected"),
                }  # fmt: skip
            print(f"http {n}/{len(rows)}", file=sys.stderr, flush=True)
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
    return out


def compare(reference: dict[str, Found], got: dict[str, Found]) -> dict[str, Any]:
    """Per instance: files equal, scores equal (to the 4 places predictions keep), gate equal."""
    same_files = same_scores = same_gate = errors = 0
    max_delta = 0.0
    differing: list[str] = []
    for iid, ref in reference.items():
        a = got.get(iid)
        if a is None or "error" in a:
            errors += 1
            differing.append(iid)
            continue
        scores = [round(s, 4) for s in a["scores"]] if a["scores"] is not None else None
        files_ok = a["files"] == ref["files"]
        scores_ok = scores == ref["scores"]
        if scores is not None and ref["scores"] is not None:
            theirs = dict(zip(ref["files"], ref["scores"], strict=True))
            deltas = [abs(s - theirs[f]) for f, s in zip(a["files"], scores, strict=True)
                      if f in theirs]  # fmt: skip
            max_delta = max([max_delta, *deltas])
        gate_ok = _gate(a["files"], a["scores"]) == _gate(ref["files"], ref["scores"])
        same_files += files_ok
        same_scores += files_ok and scores_ok
        same_gate += gate_ok
        if not (files_ok and scores_ok and gate_ok):
            differing.append(iid)
    return {
        "instances": len(reference), "errors": errors, "same_files": same_files,
        "same_files_and_scores": same_scores, "same_gate": same_gate,
        "max_abs_score_delta": round(max_delta, 4), "differing": differing,
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-i", "--instances", type=Path, required=True)
    ap.add_argument("-p", "--predictions", type=Path, default=PREDICTIONS)
    ap.add_argument("--mirrors", type=Path, required=True)
    ap.add_argument("--mirror-template", default="{owner}+{name}/repo")
    ap.add_argument("--repo", action="append", help="Only these repositories; repeat.")
    ap.add_argument("--surface", action="append", choices=["cli", "batch", "http"])
    ap.add_argument("--limit", type=int)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("-o", "--output", type=Path, required=True)
    args = ap.parse_args()
    reference = {}
    for line in args.predictions.read_text().splitlines():
        p = json.loads(line)
        reference[p["instance_id"]] = {"files": p["files"], "scores": p["scores"]}
    rows, mirror_of = [], {}
    for line in args.instances.read_text().splitlines():
        row = json.loads(line)
        if row["instance_id"] not in reference or (args.repo and row["repo"] not in args.repo):
            continue
        owner, name = row["repo"].split("/")
        mirror = args.mirrors / args.mirror_template.format(owner=owner, name=name)
        if mirror.is_dir():
            rows.append(row)
            mirror_of[row["repo"]] = mirror.resolve()
    rows = rows[: args.limit] if args.limit else rows
    reference = {r["instance_id"]: reference[r["instance_id"]] for r in rows}
    surfaces = args.surface or ["cli", "batch", "http"]
    report: dict[str, Any] = {"instances": len(rows), "of": sum(1 for _ in reference)}
    answers: dict[str, dict[str, Found]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for surface in surfaces:
            started = time.perf_counter()
            if surface == "cli":
                answers[surface] = _cli(rows, mirror_of, work)
            elif surface == "batch":
                template = str(args.mirrors / args.mirror_template)
                answers[surface] = _batch(rows, template, work, args.jobs)
            else:
                answers[surface] = _http(rows, mirror_of, args.mirrors.resolve())
            report[surface] = compare(reference, answers[surface])
            report[surface]["wall_s"] = round(time.perf_counter() - started, 1)
    print(f"{len(rows)} instances with a mirror at hand")
    print("| surface | errors | same files | same files+scores | same gate | max Δscore | s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for surface in surfaces:
        r = report[surface]
        print(f"| {surface} | {r['errors']} | {r['same_files']} | {r['same_files_and_scores']} | "
              f"{r['same_gate']} | {r['max_abs_score_delta']} | {r['wall_s']} |")  # fmt: skip
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"report": report, "answers": answers}, indent=1) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    main()
