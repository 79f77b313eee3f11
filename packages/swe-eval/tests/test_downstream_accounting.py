"""Downstream accounting as SWE-bench's own: an instance with no output that the harness lists
as incomplete is missing; a V1 run stopped by its iteration cap is a max-iterations failure; a
report that shares no id with the denominator is an error; an id both resolved and errored is
named; every failure id is in the default output."""

from __future__ import annotations

import json
from pathlib import Path

from swe_eval.cli import app
from swe_eval.downstream import (
    Failure,
    build_config,
    parse_agent_record,
    read_agent_outputs,
    read_harness_report,
    summarize_config,
)
from typer.testing import CliRunner

runner = CliRunner()


def _v1(iid: str, *, history: list[dict[str, object]], patch: str = "diff --git a/x b/x\n") -> dict:
    return {
        "instance_id": iid,
        "attempt": 1,
        "error": None,
        "test_result": {"git_patch": patch},
        "metrics": {"accumulated_token_usage": {"prompt_tokens": 10, "completion_tokens": 2}},
        "history": history,
    }


_CAP = {
    "kind": "ConversationErrorEvent",
    "source": "environment",
    "code": "MaxIterationsReached",
    "detail": "Agent reached maximum iterations limit (100).",
}
_STEP = {"kind": "ActionEvent", "source": "agent", "llm_response_id": "r1", "tool_name": "terminal"}


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _summary(path: Path, **lists: list[str]) -> Path:
    body = {"schema_version": 2, "resolved_ids": [], **lists}
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def test_v1_iteration_cap_with_a_null_error_is_max_iterations() -> None:
    run = parse_agent_record(_v1("o__r-1", history=[_STEP, _CAP]))
    assert run.failure is Failure.MAX_ITERATIONS
    assert run.error == "MaxIterationsReached: Agent reached maximum iterations limit (100)."
    other = parse_agent_record(
        _v1("o__r-2", history=[_STEP, {**_CAP, "code": "MaxBudgetReached", "detail": "$5"}])
    )
    assert other.failure is None
    assert other.error == "MaxBudgetReached: $5"


def test_cap_reaches_the_report_as_its_cause(tmp_path: Path) -> None:
    out = _write(tmp_path / "output.jsonl", [_v1("o__r-1", history=[_STEP, _CAP])])
    rep = _summary(tmp_path / "r.json", unresolved_ids=["o__r-1"], completed_ids=["o__r-1"])
    cfg = build_config("a", ["o__r-1"], read_agent_outputs(out), read_harness_report(rep))
    assert summarize_config(cfg).failures == {"max_iterations": 1}


def test_incomplete_without_output_is_missing(tmp_path: Path) -> None:
    """swebench lists an instance with no prediction as incomplete: no agent output."""
    out = _write(tmp_path / "output.jsonl", [_v1("o__r-1", history=[_STEP])])
    rep = _summary(
        tmp_path / "r.json", resolved_ids=["o__r-1"], incomplete_ids=["o__r-2", "o__r-3"]
    )
    outputs, report = read_agent_outputs(out), read_harness_report(rep)
    summary = summarize_config(build_config("a", ["o__r-1", "o__r-2", "o__r-3"], outputs, report))
    assert summary.missing == 2
    assert summary.failures == {}
    # without outputs, the report alone says the same
    alone = summarize_config(build_config("a", ["o__r-1", "o__r-2", "o__r-3"], None, report))
    assert alone.missing == 2


def test_incomplete_with_an_output_is_not_evaluated(tmp_path: Path) -> None:
    out = _write(tmp_path / "output.jsonl", [_v1("o__r-2", history=[_STEP])])
    rep = _summary(tmp_path / "r.json", incomplete_ids=["o__r-2"])
    cfg = build_config("a", ["o__r-2"], read_agent_outputs(out), read_harness_report(rep))
    summary = summarize_config(cfg)
    assert summary.failures == {"not_evaluated": 1}
    assert summary.missing == 0


def test_no_shared_id_with_the_denominator_exits_2(tmp_path: Path) -> None:
    rep = _summary(tmp_path / "r.json", resolved_ids=["x__y-1"], unresolved_ids=["x__y-2"])
    ids = tmp_path / "ids.txt"
    ids.write_text("o__r-1\no__r-2\n", encoding="utf-8")
    res = runner.invoke(app, ["downstream", "report", "--run", f"a=report={rep}", "-i", str(ids)])
    assert res.exit_code == 2, res.output
    assert "share no instance id with the denominator" in res.stderr


def test_resolved_and_errored_is_named_and_every_failure_id_listed(tmp_path: Path) -> None:
    rep = _summary(
        tmp_path / "r.json",
        resolved_ids=["o__r-1"],
        error_ids=["o__r-1", "o__r-4"],
        empty_patch_ids=["o__r-5"],
        incomplete_ids=["o__r-6"],
        unresolved_ids=["o__r-2", "o__r-3"],
    )
    assert read_harness_report(rep).conflicts == ("o__r-1",)
    ids = tmp_path / "ids.txt"
    ids.write_text("".join(f"o__r-{i}\n" for i in range(1, 7)), encoding="utf-8")
    res = runner.invoke(
        app, ["downstream", "report", "--run", f"a=report={rep}", "-i", str(ids), "-f", "markdown"]
    )
    assert res.exit_code == 0, res.output
    assert "listed both resolved and in a failure list" in res.stdout
    assert "o__r-1" in res.stdout.split("listed both resolved")[1]
    assert "| a | harness_error | 1 | o__r-4 |" in res.stdout
    assert "| a | empty_patch | 1 | o__r-5 |" in res.stdout
    assert "| a | missing | 1 | o__r-6 |" in res.stdout
    # the default (terminal) output lists them too
    table = runner.invoke(app, ["downstream", "report", "--run", f"a=report={rep}", "-i", str(ids)])
    assert "failures by cause" in table.stdout
    assert "o__r-4" in table.stdout
