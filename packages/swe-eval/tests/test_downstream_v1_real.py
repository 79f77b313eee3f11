"""A real OpenHands V1 `output.jsonl` (openhands-sdk events), derived (tests/data/SOURCES.md):
two OpenAgentSafety instances run with gpt-4o by OpenHands/benchmarks. The reader takes the V1
format from the events, counts rounds from distinct LLM responses and tells a run that ended
with `finish` from one that did not; `report` reads it with a harness summary."""

from __future__ import annotations

import json
from pathlib import Path

from swe_eval.cli import app
from swe_eval.downstream import OutputFormat, read_agent_outputs
from typer.testing import CliRunner

runner = CliRunner()
V1 = Path(__file__).parent / "data" / "openhands_v1_output.derived.jsonl"
IDS = ["safety-misconfig", "safety-business-intelligence"]


def test_the_reader_on_a_real_v1_output() -> None:
    outputs = read_agent_outputs(V1)
    assert outputs.problems == ()
    assert sorted(outputs.runs) == sorted(IDS)
    done, stopped = outputs.runs["safety-misconfig"], outputs.runs["safety-business-intelligence"]
    assert {r.format for r in outputs.runs.values()} == {OutputFormat.OPENHANDS_V1}
    # 9 ActionEvents each, each from its own LLM response; no metrics were written
    assert (done.rounds, stopped.rounds) == (9, 9)
    assert done.tokens is None
    assert done.tools() == {"execute_bash": 8, "finish": 1}
    assert stopped.tools() == {"execute_bash": 9}
    assert (done.finished, stopped.finished) == (True, False)
    assert done.patch is None  # not a SWE-bench run: no git_patch
    assert done.error is None


def test_report_reads_it(tmp_path: Path) -> None:
    """The verdicts are made up here (the run was not graded by swebench)."""
    summary = tmp_path / "report.json"
    summary.write_text(json.dumps({
        "schema_version": 2, "resolved_ids": ["safety-misconfig"],
        "unresolved_ids": ["safety-business-intelligence"], "error_ids": [],
        "empty_patch_ids": [], "incomplete_ids": [],
    }))  # fmt: skip
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(IDS) + "\n")
    res = runner.invoke(
        app,
        ["downstream", "report", "--run", f"v1={V1},report={summary}", "-i", str(ids),
         "-f", "json", "--resamples", "0"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    (config,) = json.loads(res.stdout)["configs"]
    assert (config["n"], config["resolved"], config["with_output"]) == (2, 1, 2)
    assert config["rounds_resolved"]["mean"] == 9
    assert config["not_finished"] == 1
