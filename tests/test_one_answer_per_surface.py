"""One input, one answer: `codegrep localize --commit`, the batch runner the calibration used
(`swe-eval predict -r lexical`) and the HTTP server give the same files, scores and gate
decision for the same (repository, commit, issue).

The repository is made here, with a table of 20,000 short lines: LexicalPolicy's definition
search crosses lines in git grep's PCRE2 there and exhausts its JIT stack (as sympy's test
tables do), so the surface that greps git objects (`localize --commit`) must get ripgrep's
answer like the others, not a tool error.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn", reason="needs codegrep's 'serve' extra")

import httpx
from codegrep.cli import app as codegrep_app
from codegrep.gating import apply
from codegrep.serve_http import build_app, serve_in_thread
from codegrep.service import LocalizeService
from codegrep_gate import GateConfig, shipped_calibration
from swe_eval.cli import app as swe_eval_app
from typer.testing import CliRunner

FILES = {
    "calc/__init__.py": "",
    "calc/printing/ccode.py": (
        "from calc.functions import sinc\n\n\n"
        "class CCodePrinter:\n"
        "    def _print_Piecewise(self, expr):\n"
        "        return 'piecewise'\n\n"
        "    def _print_sinc(self, expr):\n"
        "        raise NotImplementedError('sinc is not supported')\n\n\n"
        "def ccode(expr):\n    return CCodePrinter()._print_sinc(expr)\n"
    ),
    "calc/functions.py": (
        "class sinc:\n    def __init__(self, x):\n        self.x = x\n\n\n"
        "class Piecewise:\n    def __init__(self, *args):\n        self.args = args\n"
    ),
    "calc/tests/test_table.py": "table = [\n"
    + "".join(f"    a{i} b c d, e.f [g]\n" for i in range(20_000))
    + "]\n",
    "docs/printing.rst": "Use ccode(expr) to print C code.\n",
}
ISSUES = {
    "acme__calc-1": "ccode(sinc(x)) doesn't work\n\n```\n>>> ccode(sinc(x))\n"
    "'// Not supported in C:\\n// sinc\\nsinc(x)'\n```\nPiecewise should be used.",
    "acme__calc-2": "Piecewise printing breaks\r\n\r\nCCodePrinter._print_Piecewise "
    "returns a constant.\r\n",
    "acme__calc-3": (
        "Traceback (most recent call last):\n"
        '  File "calc/printing/ccode.py", line 9, in _print_sinc\n'
        "NotImplementedError: sinc is not supported"
    ),
}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def calc(tmp_path: Path) -> tuple[Path, Path, str]:
    """(mirrors folder, the repository in it, its commit)."""
    mirrors = tmp_path / "mirrors"
    repo = mirrors / "acme+calc" / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@e.com", "commit", "-q", "-m", "init")
    return mirrors, repo, _git(repo, "rev-parse", "HEAD").strip()


def _gate(files: list[str], scores: list[float] | None) -> list[str]:
    cal = shipped_calibration("lexical")
    return apply(
        files, scores, calibration=cal, config=GateConfig(), policy_name="lexical"
    ).injected


def _by_cli(repo: Path, commit: str, tmp_path: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for iid, issue in ISSUES.items():
        path = tmp_path / f"{iid}.md"
        path.write_bytes(issue.encode())
        rollout = tmp_path / f"{iid}.rollout.json"
        res = CliRunner().invoke(
            codegrep_app,
            ["localize", "--repo", str(repo), "--commit", commit, "--issue", str(path),
             "--json", "--gate", "0.45", "--rollout", str(rollout)],
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        data = json.loads(res.stdout)
        record = json.loads(rollout.read_text())
        calls = [c for turn in record["turns"] for c in turn["calls"]]
        assert [c["error"] for c in calls if c["status"] != "ok"] == [], iid
        data["patterns"] = [json.loads(c["call"]["arguments"]).get("pattern") for c in calls]
        out[iid] = data
    return out


def _by_batch(mirrors: Path, commit: str, tmp_path: Path) -> dict[str, dict[str, Any]]:
    instances = tmp_path / "instances.jsonl"
    rows = [
        {"instance_id": iid, "repo": "acme/calc", "base_commit": commit,
         "problem_statement": issue, "patch": ""}
        for iid, issue in ISSUES.items()
    ]  # fmt: skip
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows))
    predictions = tmp_path / "batch.jsonl"
    res = CliRunner().invoke(
        swe_eval_app,
        ["predict", "-r", "lexical", "-i", str(instances), "--cache", str(tmp_path / "cache"),
         "--source", f"{mirrors}/{{owner}}+{{name}}/repo", "-o", str(predictions)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    return {p["instance_id"]: p for p in map(json.loads, predictions.read_text().splitlines())}


@contextmanager
def _serving(service: LocalizeService) -> Iterator[str]:
    with serve_in_thread(build_app(service)) as url:
        yield url


def _by_http(mirrors: Path, repo: Path, commit: str) -> dict[str, dict[str, Any]]:
    service = LocalizeService(allow_roots=[mirrors], calibration=shipped_calibration("lexical"))
    out = {}
    with _serving(service) as url:
        for iid, issue in ISSUES.items():
            body = {"repo": str(repo), "commit": commit, "issue": issue, "gate": True}
            r = httpx.post(f"{url}/localize", json=body, timeout=60)
            assert r.status_code == 200, r.text
            out[iid] = r.json()
    return out


def test_cli_batch_and_http_give_one_answer(calc: tuple[Path, Path, str], tmp_path: Path) -> None:
    mirrors, repo, commit = calc
    cli = _by_cli(repo, commit, tmp_path)
    batch = _by_batch(mirrors, commit, tmp_path)
    http = _by_http(mirrors, repo, commit)

    # The repository does what it is for: git grep's PCRE2 cannot run a search the rollout made.
    failed = [
        p for p in {p for a in cli.values() for p in a["patterns"] if p}
        if subprocess.run(
            ["git", "-C", str(repo), "grep", "-q", "-P", "-e", p, commit],
            capture_output=True, check=False,
        ).returncode > 1
    ]  # fmt: skip
    if not failed:
        pytest.fail("no search of the rollouts exceeds this git's PCRE2 limits any more")

    for iid in ISSUES:
        scores = [round(s, 4) for s in cli[iid]["scores"]]
        assert cli[iid]["files"], iid
        assert cli[iid]["files"] == batch[iid]["files"] == http[iid]["files"], iid
        assert scores == batch[iid]["scores"] == [round(s, 4) for s in http[iid]["scores"]], iid
        decision = _gate(batch[iid]["files"], batch[iid]["scores"])
        assert cli[iid]["injected"] == http[iid]["injected"] == decision, iid
        assert cli[iid]["gate"]["files"] == http[iid]["gate"]["files"], iid
        assert cli[iid]["issue_bytes"] == http[iid]["issue_bytes"] == len(ISSUES[iid].encode())
