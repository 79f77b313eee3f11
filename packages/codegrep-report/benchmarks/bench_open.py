"""How long a big training report takes to write and to open in headless Chromium.

A synthetic GRPO run of STEPS steps × ROLLOUTS rollouts a step (8 groups of 8 by default), each
rollout with its per-rollout log line and a logged completion of three turns (two tool calls a
turn, results of ~300 characters). Prints the figures and writes them as JSON (`-o`). Not a
test: nothing here passes or fails.

    uv run --all-packages python packages/codegrep-report/benchmarks/bench_open.py
    uv run --all-packages python packages/codegrep-report/benchmarks/bench_open.py --steps 200
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from codegrep_report import write_training_report


@dataclass(frozen=True)
class _Series:
    steps: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True)
class _Alarm:
    name: str
    metric: str
    step: int
    message: str


def _make_run(folder: Path, steps: int, rollouts: int, group: int, seed: int) -> list[Path]:
    rng = random.Random(seed)
    (folder / "args.json").write_text(json.dumps({"num_generations": group}))
    log = folder / "codegrep_rollouts.jsonl"
    comp = folder / "completions.jsonl"
    with log.open("w") as lf, comp.open("w") as cf:
        for step in range(1, steps + 1):
            columns: dict[str, list[object]] = {"step": [], "completion": [], "advantages": []}
            for i in range(rollouts):
                turns = rng.randint(1, 3)
                per_turn = [rng.randint(0, 4) for _ in range(turns)]
                reward = round(rng.random(), 4)
                lf.write(
                    json.dumps(
                        {
                            "step": step,
                            "index": i,
                            "reward": reward,
                            "num_turns": turns,
                            "tool_calls_per_turn": per_turn,
                            "num_tool_calls": sum(per_turn),
                            "cbar": sum(per_turn) / turns,
                            "efficiency": 1.0,
                            "factor": 1.0,
                            "advantage_group": rng.gauss(0, 1),
                            "advantage": rng.gauss(0, 1),
                            "answer_files": [f"src/pkg/mod_{rng.randint(0, 99)}.py"],
                            "answer_error": None,
                        }
                    )
                    + "\n"
                )
                messages: list[dict[str, object]] = []
                for t in range(3):
                    calls = [
                        {"function": {"name": "grep", "arguments": f'{{"pattern": "f{t}_{k}"}}'}}
                        for k in range(2)
                    ]
                    messages.append({"role": "assistant", "content": "", "tool_calls": calls})
                    for _ in calls:
                        messages.append({"role": "tool", "content": "src/a.py:1: x = 1\n" * 16})
                messages.append({"role": "assistant", "content": '{"files": ["src/a.py"]}'})
                columns["step"].append(str(step))
                columns["completion"].append(messages)
                columns["advantages"].append(0.0)
            cf.write(json.dumps(columns) + "\n")
    return [log, comp]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--rollouts", type=int, default=64)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3, help="page opens to time")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-completions", action="store_true", help="the rollout log only (no turns)")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("-o", "--output", type=Path, help="write the figures here as JSON")
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        files = _make_run(folder, args.steps, args.rollouts, args.group, args.seed)
        if args.no_completions:
            files = files[:1]
        make_s = time.perf_counter() - t0
        inputs = sum(f.stat().st_size for f in files)
        steps = tuple(range(1, args.steps + 1))
        curves = {
            name: _Series(steps, tuple(random.random() for _ in steps))
            for name in ("reward", "kl", "completion_length", "calls_per_turn")
        }
        alarms = [_Alarm("kl_drift", "kl", args.steps // 2, "KL drift")]
        t0 = time.perf_counter()
        summary = write_training_report(
            folder / "run.html", curves=curves, alarms=alarms, record_files=files
        )
        write_s = time.perf_counter() - t0
        sandbox = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
        opens: list[float] = []
        rendered: list[float] = []
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium, args=sandbox)
            for _ in range(args.repeat):
                page = browser.new_page()
                t0 = time.perf_counter()
                page.goto(summary.path.as_uri())
                page.wait_for_selector("body[data-ready='1']", timeout=120_000)
                opens.append(time.perf_counter() - t0)
                rendered.append(float(page.get_attribute("body", "data-rendered-ms") or "nan"))
                t0 = time.perf_counter()
                page.select_option("#sort", "low")
                page.locator("#groups tbody tr").first.click()
                page.locator("#group tbody tr").first.click()
                page.wait_for_selector("#rollout h2")
                click_s = time.perf_counter() - t0
                page.close()
            browser.close()
    figures = {
        "steps": args.steps,
        "completions": not args.no_completions,
        "rollouts_per_step": args.rollouts,
        "rollouts": summary.rollouts,
        "groups": summary.groups,
        "input_mb": round(inputs / 1e6, 1),
        "html_mb": round(summary.bytes / 1e6, 1),
        "make_inputs_s": round(make_s, 2),
        "write_report_s": round(write_s, 2),
        "open_s_median": round(statistics.median(opens), 2),
        "open_s_all": [round(x, 2) for x in opens],
        "script_render_ms_median": statistics.median(rendered),
        "sort_lowest_then_open_rollout_s": round(click_s, 2),
    }
    for key, value in figures.items():
        print(f"{key:36} {value}")
    if args.output is not None:
        args.output.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
