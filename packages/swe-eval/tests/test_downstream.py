"""Downstream evaluation on small files made here: readers of every format, the fixed
denominator, McNemar, the bootstrap, co-resolved deltas, the case view, and
`swe-eval downstream report` end to end (formats, pairs, precision, cases, plot, exit codes)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from swe_eval.cli import app
from swe_eval.downstream import (
    AgentRun,
    Failure,
    OutputFormat,
    ReportKind,
    TokenBasis,
    TokenCount,
    build_config,
    case_rows,
    classify_error,
    compare,
    mcnemar_exact,
    paired_bootstrap,
    parse_agent_record,
    parse_run_option,
    read_agent_outputs,
    read_harness_report,
    read_instance_ids,
    read_manifest,
    summarize_config,
)
from swe_eval.downstream._trajectory import _Collector, shell_reads, trace
from swe_eval.downstream.records import AgentOutputs, HarnessReport, Verdict
from swe_eval.errors import DatasetError
from typer.testing import CliRunner

runner = CliRunner()


def _jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def v0_record(
    iid: str,
    *,
    calls: int = 3,
    prompt: int = 1000,
    completion: int = 100,
    patch: str = "diff --git a/a.py b/a.py\n",
    error: str | None = None,
    candidates: list[str] | None = None,
) -> dict[str, Any]:
    """A V0 output.jsonl record in the shape of OpenHands' eval output (integration facts §4)."""
    ws = f"/workspace/{iid}__1.0"
    history: list[dict[str, Any]] = [
        {"id": 0, "source": "agent", "action": "system", "args": {"content": "sys"}},
        {"id": 1, "source": "user", "action": "message", "args": {"content": "issue"}},
        {"id": 2, "source": "agent", "action": "run", "args": {"command": f"cat {ws}/pkg/b.py"},
         "tool_call_metadata": {"function_name": "execute_bash",
                                "model_response": {"id": "r1"}}},
        {"id": 3, "source": "agent", "observation": "run", "cause": 2, "content": "x"},
        {"id": 4, "source": "agent", "action": "read", "args": {"path": f"{ws}/pkg/a.py"},
         "tool_call_metadata": {"function_name": "str_replace_editor",
                                "model_response": {"id": "r2"}}},
        {"id": 5, "source": "agent", "observation": "read", "cause": 4,
         "content": "Here's the result of running `cat -n` on a.py"},
        {"id": 6, "source": "agent", "action": "edit",
         "args": {"path": f"{ws}/pkg/a.py", "command": "str_replace"},
         "tool_call_metadata": {"function_name": "str_replace_editor",
                                "model_response": {"id": "r3"}}},
        {"id": 7, "source": "agent", "action": "read", "args": {"path": f"{ws}/pkg/c.py"},
         "tool_call_metadata": {"function_name": "str_replace_editor",
                                "model_response": {"id": "r3"}}},
    ]  # fmt: skip
    instance: dict[str, Any] = {"instance_id": iid}
    if candidates is not None:
        instance["candidate_files"] = candidates
    return {
        "instance_id": iid,
        "test_result": {"git_patch": patch},
        "history": history,
        "metrics": {
            "accumulated_cost": 0.01 * calls,
            "accumulated_token_usage": {"prompt_tokens": prompt, "completion_tokens": completion},
            "costs": [{"cost": 0.01}] * calls,
            "response_latencies": [{"latency": 1.0}] * calls,
        },
        "error": error,
        "instance": instance,
    }


def v1_record(iid: str, *, attempt: int = 1, latencies: bool = True) -> dict[str, Any]:
    """An OpenHands/benchmarks EvalOutput with openhands-sdk events (integration facts §4.1b)."""
    history = [
        {"kind": "SystemPromptEvent", "source": "agent"},
        {"kind": "MessageEvent", "source": "user", "llm_message": {"content": "issue"}},
        {"kind": "ActionEvent", "id": "a1", "source": "agent", "tool_name": "terminal",
         "llm_response_id": "r1",
         "action": {"kind": "TerminalAction", "command": "grep -n foo src/x.py"}},
        {"kind": "ObservationEvent", "action_id": "a1", "tool_name": "terminal",
         "observation": {"kind": "TerminalObservation", "content": [{"type": "text",
                                                                     "text": "1:foo"}]}},
        {"kind": "ActionEvent", "id": "a2", "source": "agent", "tool_name": "file_editor",
         "llm_response_id": "r2",
         "action": {"kind": "FileEditorAction", "command": "view", "path": "/workspace/x/src"}},
        {"kind": "ObservationEvent", "action_id": "a2", "tool_name": "file_editor",
         "observation": {"content": [{"type": "text",
                                      "text": "Here's the files and directories up to 2 levels"}]}},
        {"kind": "ActionEvent", "id": "a3", "source": "agent", "tool_name": "file_editor",
         "llm_response_id": "r2",
         "action": {"kind": "FileEditorAction", "command": "str_replace",
                    "path": "/workspace/x/src/x.py"}},
        {"kind": "ActionEvent", "id": "a4", "source": "agent", "tool_name": "finish",
         "llm_response_id": "r3", "action": {"kind": "FinishAction"}},
    ]  # fmt: skip
    metrics: dict[str, Any] = {
        "accumulated_cost": 0.5,
        "accumulated_token_usage": {"prompt_tokens": 3000, "completion_tokens": 300},
        "costs": [{"cost": 0.5}],
    }
    if latencies:
        metrics["response_latencies"] = [{"latency": 1.0}] * 4
    return {
        "instance_id": iid,
        "attempt": attempt,
        "test_result": {"git_patch": "diff"},
        "history": history,
        "metrics": metrics,
        "error": None,
    }


# -- readers ------------------------------------------------------------------------------------


def test_v0_record_rounds_tokens_and_trace() -> None:
    run = parse_agent_record(
        v0_record("o__r-1", calls=7, candidates=["/workspace/o__r-1__1.0/pkg/a.py"])
    )
    assert run.format is OutputFormat.OPENHANDS_V0
    assert run.rounds == 7  # one per response latency
    assert run.tokens == TokenCount(1000, 100, TokenBasis.SUM_OF_CALLS)
    assert run.cost == pytest.approx(0.07)
    assert run.files_opened == ("pkg/b.py", "pkg/a.py", "pkg/c.py")
    assert run.files_opened_before_edit == ("pkg/b.py", "pkg/a.py")
    assert run.files_edited == ("pkg/a.py",)
    assert run.tools() == {"execute_bash": 1, "str_replace_editor": 3}
    assert run.injected == ("pkg/a.py",)
    # without latencies: the distinct model responses of the actions
    rec = v0_record("o__r-1")
    del rec["metrics"]
    assert parse_agent_record(rec).rounds == 3


def test_v1_events_and_attempts(tmp_path: Path) -> None:
    run = parse_agent_record(v1_record("o__r-1"))
    assert run.format is OutputFormat.OPENHANDS_V1
    assert run.rounds == 4
    assert run.tokens is not None
    assert run.tokens.total == 3300
    assert run.finished is True
    assert run.files_opened == ("src/x.py",)  # the directory view is not a file
    assert run.files_edited == ("src/x.py",)
    assert run.tools() == {"terminal": 1, "file_editor": 2, "finish": 1}
    assert parse_agent_record(v1_record("o__r-1", latencies=False)).rounds == 3
    path = _jsonl(
        tmp_path / "out.jsonl",
        [v1_record("o__r-1", attempt=1), v1_record("o__r-1", attempt=2),
         v1_record("o__r-2"), v1_record("o__r-2")],
    )  # fmt: skip
    outputs = read_agent_outputs(path)
    assert outputs.runs["o__r-1"].attempt == 2
    assert (outputs.earlier_attempts, outputs.duplicates) == (1, 1)


def test_standardized_v1_output_without_history() -> None:
    run = parse_agent_record(
        {"instance_id": "o__r-1", "attempt": 1, "max_attempts": 1, "status": "success",
         "resolved": True, "test_result": {}, "artifacts_url": "x",
         "cost": {"input_tokens": 10, "output_tokens": 5, "total_cost": 0.2}}
    )  # fmt: skip
    assert run.resolved is True
    assert run.tokens == TokenCount(10, 5, TokenBasis.SUM_OF_CALLS)
    assert run.cost == 0.2


def test_bad_rows_are_counted_with_file_and_line(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "out.jsonl",
        [v0_record("o__r-1"), "not json", [1, 2], {"history": []}, {"instance_id": "x", "a": 1}],
    )
    outputs = read_agent_outputs(path)
    assert list(outputs.runs) == ["o__r-1"]
    assert [p.line for p in outputs.problems] == [2, 3, 4, 5]
    assert str(outputs.problems[1]) == f"{path}:3: expected a JSON object, got list"
    assert str(outputs.problems[2]) == f"{path}:4: no instance_id"
    assert "not an agent output" in outputs.problems[3].message


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [("[" * 100_000, "nested too deeply"), ('{"path": 1e999}', "out of range"),
     ('{"path": ' + "9" * 5000 + "}", "too long")],
    ids=["deep", "1e999", "5000 digits"],
)  # fmt: skip
def test_hostile_tool_call_arguments_make_a_skipped_row(
    tmp_path: Path, arguments: str, reason: str
) -> None:
    def row(iid: str, args: str) -> dict[str, Any]:
        call = {"id": "1", "function": {"name": "view_file", "arguments": args}}
        return {"instance_id": iid, "messages": [{"role": "assistant", "tool_calls": [call]}]}

    rows = [row("o__r-1", '{"path": "a.py"}'), row("o__r-2", arguments), row("o__r-3", "{not")]
    path = _jsonl(tmp_path / "out.jsonl", rows)
    outputs = read_agent_outputs(path)
    assert sorted(outputs.runs) == ["o__r-1", "o__r-3"]  # merely malformed: no arguments
    (problem,) = outputs.problems
    assert problem.line == 2
    assert "hostile" in problem.message
    assert reason in problem.message
    with pytest.raises(DatasetError, match="no such file"):
        read_agent_outputs(tmp_path / "nope.jsonl")


def test_v0_eval_report_in_the_output() -> None:
    rec = v0_record("o__r-1")
    rec["test_result"]["report"] = {"resolved": False, "failed_apply_patch": True}
    run = parse_agent_record(rec)
    assert (run.resolved, run.failure) == (False, Failure.PATCH_NOT_APPLIED)


def test_error_classes() -> None:
    assert (
        classify_error("RuntimeError: Agent reached maximum iteration in headless mode.")
        is Failure.MAX_ITERATIONS
    )
    assert classify_error("sandbox timed out after 1800s") is Failure.TIMEOUT
    assert classify_error("RuntimeError: runtime died") is Failure.AGENT_ERROR


def _opened_by_shell(*commands: str) -> tuple[str, ...]:
    collector = _Collector()
    for command in commands:
        collector.shell("execute_bash", command)
    return collector.trace().files_opened


def test_shell_reads_follow_catms_rule() -> None:
    # catm's parse_shell: `cd` is followed (within a line and across calls), joined paths are
    # then normalized under the sandbox mounts
    assert shell_reads("cd /w && cat a/b.py | head -n 5") == (("/w/a/b.py",), "/w")
    assert _opened_by_shell("cd /workspace/o__r__1.0 && cat a/b.py | head -n 5") == ("a/b.py",)
    assert _opened_by_shell("cd /workspace/o__r__1.0/tests", "grep -n x m.py") == ("tests/m.py",)
    assert _opened_by_shell("sed -n '10,20p' x/y.py") == ("x/y.py",)
    # a quoted `\|` is part of the pattern, not a pipe
    assert _opened_by_shell('grep -n "a\\|b" x/y.py | head') == ("x/y.py",)
    # a grep over several files or a tree is a search, not a read
    assert _opened_by_shell("grep -n foo x/y.py z.py") == ()
    assert _opened_by_shell("grep -rn foo src/", "grep -r foo /workspace/o__r__1.0") == ()
    # `cat a > b` reads a (the redirect target is written)
    assert _opened_by_shell("cat a.py > b.py") == ("a.py",)
    assert _opened_by_shell("cat > new.py << 'EOF'\nprint(1)\nEOF") == ()
    assert _opened_by_shell("head -n 20 setup.cfg; tail -5 README.rst") == (
        "setup.cfg",
        "README.rst",
    )
    assert _opened_by_shell("python reproduce.py") == ()
    assert _opened_by_shell("cat 'unbalanced") == ()


def test_tool_table_is_catms() -> None:
    # `view_file` is an editor and `run` a shell in every format (they were "other" tools here)
    steps = trace(
        {
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "1",
                            "function": {"name": "view_file", "arguments": '{"path": "a.py"}'},
                        },
                        {
                            "id": "2",
                            "function": {"name": "run", "arguments": '{"command": "cat b.py"}'},
                        },
                    ],
                },
                {"role": "tool", "tool_call_id": "1", "content": "1\tx = 1"},
                {"role": "tool", "tool_call_id": "2", "content": "y = 2"},
            ]
        }
    )
    assert steps.files_opened == ("a.py", "b.py")


def test_a_failed_view_opens_nothing() -> None:
    collector = _Collector()
    collector.editor("str_replace_editor", "view", "/testbed/gone.py", "ERROR:\nInvalid `path`")
    collector.editor(
        "str_replace_editor", "view", "/testbed/src", "Here's the files and directories"
    )
    collector.editor("str_replace_editor", "view", "/testbed/ok.py", "1\tx = 1")
    assert collector.trace().files_opened == ("ok.py",)


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_swebench_4_and_5_run_reports(tmp_path: Path) -> None:
    v4 = _write(tmp_path / "m.run4.json", {
        "total_instances": 6, "submitted_instances": 5, "completed_instances": 3,
        "resolved_instances": 1, "unresolved_instances": 2, "empty_patch_instances": 1,
        "error_instances": 1, "completed_ids": ["a", "b", "c"], "incomplete_ids": ["f"],
        "empty_patch_ids": ["d"], "submitted_ids": ["a", "b", "c", "d", "e"],
        "resolved_ids": ["a"], "unresolved_ids": ["b", "c"], "error_ids": ["e"],
        "schema_version": 2,
    })  # fmt: skip
    r = read_harness_report(v4)
    assert r.kind is ReportKind.SWEBENCH_SUMMARY
    assert r.covers_all
    assert r.verdicts == {
        "a": Verdict(True),
        "e": Verdict(False, Failure.HARNESS_ERROR),
        "d": Verdict(False, Failure.EMPTY_PATCH),
        "f": Verdict(False, Failure.MISSING),  # swebench: a dataset instance with no prediction
        "b": Verdict(False),
        "c": Verdict(False),
    }
    assert r.claimed["resolved_instances"] == 1
    v5 = _write(tmp_path / "m.run5.json", {
        "resolved_ids": ["a"], "unresolved_ids": ["b"], "infra_failure_ids": ["c"],
        "ambiguous_failure_ids": ["d"], "error_ids": [], "empty_patch_ids": [],
        "failure_reasons": {"c": "docker"}, "schema_version": 2,
    })  # fmt: skip
    r5 = read_harness_report(v5)
    assert r5.verdicts["c"] == Verdict(False, Failure.HARNESS_ERROR)
    assert r5.verdicts["d"] == Verdict(False, Failure.HARNESS_ERROR)


def test_per_instance_reports_file_and_folder(tmp_path: Path) -> None:
    logs = tmp_path / "logs" / "run_evaluation" / "r1" / "model"
    entries = {
        "a": {"resolved": True, "patch_is_None": False, "patch_exists": True,
              "patch_successfully_applied": True},
        "b": {"resolved": False, "patch_is_None": True, "patch_exists": False,
              "patch_successfully_applied": False},
        "c": {"resolved": False, "patch_exists": True, "patch_successfully_applied": False},
        "d": {"resolved": False, "infra_failure": True, "patch_exists": True},
    }  # fmt: skip
    for iid, entry in entries.items():
        (logs / iid).mkdir(parents=True)
        _write(logs / iid / "report.json", {iid: entry})
    r = read_harness_report(tmp_path / "logs")
    assert r.kind is ReportKind.SWEBENCH_INSTANCE
    assert [r.verdicts[i] for i in "abcd"] == [
        Verdict(True),
        Verdict(False, Failure.EMPTY_PATCH),
        Verdict(False, Failure.PATCH_NOT_APPLIED),
        Verdict(False, Failure.HARNESS_ERROR),
    ]
    one = read_harness_report(logs / "a" / "report.json")
    assert one.verdicts == {"a": Verdict(True)}
    with pytest.raises(DatasetError, match="not a harness report"):
        read_harness_report(_write(tmp_path / "x.json", {"foo": 1}))
    with pytest.raises(DatasetError, match="system=x is for resolved-by lists"):
        read_harness_report(logs / "a" / "report.json", system="x")


def test_instance_ids_from_txt_and_rows(tmp_path: Path) -> None:
    txt = tmp_path / "ids.txt"
    txt.write_text("# plan\na\nb\n\na\n")
    ids, problems = read_instance_ids(txt)
    assert ids == ["a", "b"]
    assert [p.line for p in problems] == [5]
    rows = _jsonl(tmp_path / "i.jsonl", [{"instance_id": "x"}, {"id": 1}, {"instance_id": "y"}])
    ids, problems = read_instance_ids(rows)
    assert ids == ["x", "y"]
    assert str(problems[0]) == f"{rows}:2: no instance_id"


def test_run_option_and_manifest(tmp_path: Path) -> None:
    spec = parse_run_option("cg=out/o.jsonl,report=r.json,predictions=p.jsonl,precision=0.6")
    assert (str(spec.output), str(spec.report), spec.precision) == ("out/o.jsonl", "r.json", 0.6)
    only = parse_run_option("acr=report=acr.json")
    assert only.output is None
    assert str(only.report) == "acr.json"
    moat = parse_run_option("al=report=m.jsonl,system=20240630_agentless_gpt4o")
    assert moat.system == "20240630_agentless_gpt4o"
    for bad, msg in (
        ("noequals", "expected NAME=PATH"),
        ("a=o.jsonl,colour=red", "is not KEY=VALUE"),
        ("a=o.jsonl,report=x,report=y", "report given twice"),
        ("a=system=x", "names neither an output nor a report"),
        ("a=o.jsonl,precision=2", "precision"),
    ):
        with pytest.raises(ValueError, match=msg):
            parse_run_option(bad)
    toml = tmp_path / "sub" / "runs.toml"
    toml.parent.mkdir()
    toml.write_text(
        'baseline = "base"\ninstances = "ids.txt"\n'
        '[[runs]]\nname = "base"\noutput = "b.jsonl"\n'
        '[[runs]]\nname = "cg"\nreport = "r.json"\nprecision = 0.7\n'
    )
    m = read_manifest(toml)
    assert m.baseline == "base"
    assert m.instances == tmp_path / "sub" / "ids.txt"
    assert [str(r.output) for r in m.runs] == [str(tmp_path / "sub" / "b.jsonl"), "None"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"runs": [{"name": "x"}]}))
    with pytest.raises(DatasetError, match=r"runs\[1\]"):
        read_manifest(bad)


# -- analysis -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (0, 5, 0.0625),  # 2 × (1/2)^5
        (5, 0, 0.0625),
        (0, 0, 1.0),
        (1, 9, 0.021484375),  # 2 × (1 + 10) / 1024
        (3, 3, 1.0),
        (0, 1, 1.0),
    ],
)
def test_mcnemar_exact_on_known_tables(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(p)


def test_bootstrap_is_deterministic_and_paired() -> None:
    a = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0] * 5
    b = [1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0] * 5
    e1 = paired_bootstrap([a, b], lambda x, y: y - x, n_resamples=3000, seed=7)
    e2 = paired_bootstrap([a, b], lambda x, y: y - x, n_resamples=3000, seed=7)
    assert e1 == e2
    # the seed matters: on 0/1 columns the percentiles land on the same grid point for most
    # seeds, so the check uses values off any grid
    spread = [0.1 * i + 0.013 * (i * i % 7) for i in range(50)]
    c1 = paired_bootstrap([spread, b], lambda x, y: y - x, n_resamples=3000, seed=7)
    c2 = paired_bootstrap([spread, b], lambda x, y: y - x, n_resamples=3000, seed=8)
    assert (c1.low, c1.high) != (c2.low, c2.high)
    assert e1.value == pytest.approx(0.2)
    assert e1.low <= e1.value <= e1.high
    # paired: B resolves a superset of A, so no resample has B below A
    assert e1.low >= 0
    same = paired_bootstrap([a, a], lambda x, y: y - x, n_resamples=500)
    assert (same.low, same.value, same.high) == (0.0, 0.0, 0.0)
    one = paired_bootstrap([[1.0]], lambda x: x, n_resamples=500)
    assert (one.value, one.low, one.high, one.n) == (1.0, 1.0, 1.0, 1)


def _run(
    iid: str,
    rounds: int,
    tokens: int,
    *,
    patch: str | None = "diff",
    error: str | None = None,
    basis: TokenBasis = TokenBasis.SUM_OF_CALLS,
    injected: tuple[str, ...] | None = None,
    opened: tuple[str, ...] = (),
) -> AgentRun:
    return AgentRun(
        instance_id=iid,
        format=OutputFormat.OPENHANDS_V0,
        source="test",
        rounds=rounds,
        tokens=TokenCount(tokens, 0, basis),
        cost=None,
        patch=patch,
        error=error,
        resolved=None,
        failure=None,
        files_opened=opened,
        files_opened_before_edit=opened[:1],
        injected=injected,
    )


def test_fixed_denominator_with_missing_outputs_and_failures() -> None:
    ids = ["i1", "i2", "i3", "i4", "i5", "i6"]
    runs = {
        "i1": _run("i1", 10, 100),
        "i2": _run("i2", 20, 200),
        "i3": _run("i3", 30, 300, patch=""),  # empty patch
        "i4": _run("i4", 40, 400, error="Agent reached maximum iteration"),
        "i5": _run("i5", 50, 500),  # harness error
        # i6: no output at all
        "zz": _run("zz", 1, 1),  # outside the denominator
    }
    report = HarnessReport(
        "r.json",
        ReportKind.SWEBENCH_SUMMARY,
        {"i1": Verdict(True), "i2": Verdict(True), "i3": Verdict(False),
         "i5": Verdict(False, Failure.HARNESS_ERROR), "zz": Verdict(True)},
        covers_all=True,
    )  # fmt: skip
    cfg = build_config("x", ids, AgentOutputs("o.jsonl", runs), report)
    s = summarize_config(cfg, n_resamples=0)
    assert (s.n, s.resolved, s.missing, s.with_output) == (6, 2, 1, 5)
    assert s.resolve_rate.value == pytest.approx(2 / 6)  # the denominator never shrinks
    assert s.failures == {"empty_patch": 1, "harness_error": 1, "not_evaluated": 1}
    # i4 has an output but no verdict in a complete report: not evaluated, not max_iterations
    assert [o.failure for o in cfg.outcomes] == [
        None, None, Failure.EMPTY_PATCH, Failure.NOT_EVALUATED, Failure.HARNESS_ERROR,
        Failure.MISSING,
    ]  # fmt: skip
    assert s.rounds_resolved is not None
    assert s.rounds_resolved.mean == 15
    assert s.rounds_unresolved is not None
    assert s.rounds_unresolved.mean == 40
    assert s.outside == 1
    # without a report, the outputs' own verdicts; an agent error is classified from its text
    own = {k: dataclasses.replace(v, resolved=k == "i1") for k, v in runs.items()}
    cfg2 = build_config("y", ids, AgentOutputs("o.jsonl", own), None)
    s2 = summarize_config(cfg2, n_resamples=0)
    assert s2.failures == {"empty_patch": 1, "max_iterations": 1}
    assert s2.missing == 1


def test_compare_co_resolved_relative_deltas() -> None:
    ids = [f"i{n}" for n in range(6)]
    a_runs = {i: _run(i, 10 + n, 1000 * (n + 1)) for n, i in enumerate(ids)}
    b_runs = {i: _run(i, 8 + n, 800 * (n + 1)) for n, i in enumerate(ids)}
    a_res = {"i0", "i1", "i2", "i3"}
    b_res = {"i1", "i2", "i3", "i4", "i5"}

    def report(res: set[str]) -> HarnessReport:
        return HarnessReport("r", ReportKind.SWEBENCH_SUMMARY,
                             {i: Verdict(i in res) for i in ids}, covers_all=True)  # fmt: skip

    a = build_config("a", ids, AgentOutputs("a", a_runs), report(a_res))
    b = build_config("b", ids, AgentOutputs("b", b_runs), report(b_res))
    p = compare(a, b, n_resamples=2000, seed=1)
    assert (p.both, p.a_only, p.b_only, p.neither) == (3, 1, 2, 0)
    assert p.mcnemar_p == pytest.approx(1.0)
    assert p.delta.value == pytest.approx(1 / 6)
    # co-resolved i1..i3: rounds A 11,12,13 (mean 12), B 9,10,11 (mean 10)
    assert p.rounds is not None
    assert p.rounds.relative.value == pytest.approx(10 / 12 - 1)
    assert p.tokens is not None
    assert p.tokens.relative.value == pytest.approx(-0.2)
    assert p.rounds.relative.low <= p.rounds.relative.value <= p.rounds.relative.high
    # different token bases are never compared
    c_runs = {i: _run(i, 8, 800, basis=TokenBasis.FINAL_CONTEXT) for i in ids}
    c = build_config("c", ids, AgentOutputs("c", c_runs), report(b_res))
    pc = compare(a, c, n_resamples=100)
    assert pc.tokens is None
    assert pc.note is not None
    assert "not compared" in pc.note
    with pytest.raises(ValueError, match="not on the same instances"):
        compare(a, build_config("d", ids[:3], AgentOutputs("d", a_runs), report(a_res)))


def test_case_view_injected_files() -> None:
    ids = ["i1", "i2"]
    runs = {
        "i1": _run("i1", 5, 50, injected=("a.py",), opened=("a.py", "b.py")),
        "i2": _run("i2", 5, 50, injected=("c.py",), opened=("d.py",)),
    }
    rep = HarnessReport("r", ReportKind.SWEBENCH_SUMMARY,
                        {"i1": Verdict(True), "i2": Verdict(False)}, covers_all=True)  # fmt: skip
    cfg = build_config("x", ids, AgentOutputs("o", runs), rep)
    rows = case_rows([cfg])
    assert [(r.instance_id, r.injected_opened, r.injected_opened_before_edit) for r in rows] == [
        ("i1", True, True),
        ("i2", False, False),
    ]
    # predictions given per configuration override what the records carry
    cfg2 = build_config("x", ids, AgentOutputs("o", runs), rep, injected={"i2": ("d.py",)})
    assert case_rows([cfg2])[1].injected_opened is True


# -- the command ------------------------------------------------------------------------------


def _patch(path: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"


def _error_line(output: str) -> str:
    (line,) = [x for x in output.splitlines() if x.startswith("error:")]
    return line


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    ids = [f"o__r-{n}" for n in range(8)]
    inst = _jsonl(
        tmp_path / "inst.jsonl",
        [{"instance_id": i, "repo": "o/r", "patch": _patch("pkg/a.py")} for i in ids],
    )
    # baseline: outputs for 7 of 8 (o__r-7 missing); treatment: all 8, fewer rounds
    base = _jsonl(tmp_path / "base.jsonl", [v0_record(i, calls=20) for i in ids[:7]])
    treat = _jsonl(
        tmp_path / "treat.jsonl",
        [v0_record(i, calls=15, prompt=800, candidates=["pkg/a.py"]) for i in ids],
    )
    report_base = tmp_path / "base_report.json"
    report_base.write_text(json.dumps({
        "resolved_ids": ids[:3], "unresolved_ids": ids[3:6], "error_ids": [ids[6]],
        "completed_ids": ids[:6], "empty_patch_ids": [], "schema_version": 2,
    }))  # fmt: skip
    report_treat = tmp_path / "treat_report.json"
    report_treat.write_text(json.dumps({
        "resolved_ids": ids[1:6], "unresolved_ids": [ids[0], ids[6], ids[7]],
        "completed_ids": ids, "empty_patch_ids": [], "error_ids": [], "schema_version": 2,
    }))  # fmt: skip
    preds = _jsonl(
        tmp_path / "preds.jsonl",
        [{"instance_id": i, "files": ["pkg/a.py", "pkg/zz.py"]} for i in ids],
    )
    (tmp_path / "a-file").write_text("")
    return {
        "tmp": tmp_path,
        "inst": inst,
        "base": base,
        "treat": treat,
        "rb": report_base,
        "rt": report_treat,
        "preds": preds,
    }


def _args(f: dict[str, Path], *extra: str) -> list[str]:
    return [
        "downstream",
        "report",
        "-i",
        str(f["inst"]),
        "--run",
        f"base={f['base']},report={f['rb']}",
        "--run",
        f"cg={f['treat']},report={f['rt']},predictions={f['preds']}",
        "--resamples",
        "500",
        *extra,
    ]


def test_json_report_with_pairs_precision_and_cases(files: dict[str, Path]) -> None:
    res = runner.invoke(app, _args(files, "-f", "json", "--cases"))
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    base, cg = data["configs"]
    assert (base["n"], base["resolved"], base["missing"]) == (8, 3, 1)
    assert base["failures"] == {"harness_error": 1}
    assert (cg["n"], cg["resolved"], cg["missing"]) == (8, 5, 0)
    assert base["rounds_resolved"]["mean"] == 20
    assert cg["rounds_resolved"]["mean"] == 15
    (pair,) = data["paired"]
    assert (pair["a"], pair["b"], pair["a_only"], pair["b_only"]) == ("base", "cg", 1, 3)
    assert pair["mcnemar_p"] == pytest.approx(0.625)
    assert pair["rounds"]["relative"]["value"] == pytest.approx(15 / 20 - 1)
    assert pair["tokens"]["relative"]["value"] == pytest.approx(900 / 1100 - 1)
    (benefit,) = data["precision_benefit"]
    assert benefit["config"] == "cg"
    assert benefit["precision"] == pytest.approx(0.5)  # one of two files is the gold one
    assert benefit["precision_source"] == "predictions"
    assert len(data["cases"]) == 16
    first_cg = next(c for c in data["cases"] if c["config"] == "cg")
    assert first_cg["injected"] == ["pkg/a.py", "pkg/zz.py"]
    assert first_cg["injected_opened"] is True
    assert data["denominator"] == 8
    assert data["skipped_rows"]["total"] == 0


def test_markdown_and_table(files: dict[str, Path]) -> None:
    res = runner.invoke(app, _args(files, "-f", "markdown", "--title", "T3"))
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert out.startswith("**T3**")
    assert "| base | 8 | 3 | 37.5% [" in out
    assert "| cg vs base | 8 | 2 | 1 | 3 | 2 | 0.625 |" in out
    assert "-25.0% [" in out  # rounds 20 -> 15 on co-resolved
    assert "prompt + completion tokens summed over every LLM call" in out
    res = runner.invoke(app, _args(files))
    assert res.exit_code == 0, res.output
    assert "paired (B vs A, same instances)" in res.stdout


def test_manifest_and_all_pairs(files: dict[str, Path]) -> None:
    manifest = files["tmp"] / "runs.json"
    manifest.write_text(json.dumps({
        "instances": "inst.jsonl", "baseline": "cg",
        "runs": [{"name": "base", "output": "base.jsonl", "report": "base_report.json"},
                 {"name": "cg", "output": "treat.jsonl", "report": "treat_report.json",
                  "precision": 0.7},
                 {"name": "cg2", "report": "treat_report.json"}],
    }))  # fmt: skip
    res = runner.invoke(
        app, ["downstream", "report", "--manifest", str(manifest), "--all-pairs", "-f", "json",
              "--resamples", "200"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["baseline"] == "cg"
    assert [(p["a"], p["b"]) for p in data["paired"]] == [
        ("base", "cg"), ("base", "cg2"), ("cg", "cg2"),
    ]  # fmt: skip
    # only the baseline (cg) has a precision: no configuration to set one beside
    assert data["precision_benefit"] == []


def test_without_instances_the_denominator_is_the_ids_seen(files: dict[str, Path]) -> None:
    res = runner.invoke(
        app, ["downstream", "report", "--run", f"base={files['base']},report={files['rb']}",
              "-f", "json", "--resamples", "0"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["denominator"] == 7
    assert "no -i: the denominator is the 7 instance ids seen" in res.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["downstream", "report"], "error: give at least one --run NAME=PATH (or a --manifest)"),
        (["downstream", "report", "--run", "x"], "error: --run 'x': expected NAME=PATH"),
        (["downstream", "report", "--run", "a={base},report={rb}", "--baseline", "zz"],
         "error: --baseline zz: no run of that name (a)"),
        (["downstream", "report", "--run", "a={base}"],
         "output but no verdict (e.g. o__r-0); give the harness report with report=PATH"),
        (["downstream", "report", "--run", "a={tmp}/nope.jsonl"], "nope.jsonl: no such file"),
        # a name given again is a repeat of the arm: each repeat needs its verdicts too
        (["downstream", "report", "--run", "a={base},report={rb}", "--run", "a={treat}"],
         "run a#2: 8 instance(s) have an output but no verdict"),
        # the same output twice is one run, not two repeats
        (["downstream", "report", "--run", "a={base},report={rb}", "--run", "a={base}"],
         "is given twice"),
        (["downstream", "report", "--run", "a={base},report={rb}", "--run",
          "a={base},report={rb}", "--run", "a#2={base},report={rb}"],
         "run name a#2 is both an arm and a repeat of a"),
        (["downstream", "report", "--run", "a=report={inst}"], "not a harness report"),
        (["downstream", "report", "--run", "a={inst},report={rb}"],
         "no valid agent output row (8 bad)"),
        (["downstream", "report", "--run", "a={base},report={rb}", "-o", "{a-file}/x/r.md"],
         "is not a directory"),
        (["downstream", "report", "--run", "a={base},report={rb}", "--plot", "{tmp}/x.txt"],
         "--plot"),
    ],
)  # fmt: skip
def test_bad_input_exits_2(files: dict[str, Path], argv: list[str], message: str) -> None:
    names = {k: str(v) for k, v in files.items()} | {"a-file": str(files["tmp"] / "a-file")}
    res = runner.invoke(app, [a.format(**names) for a in argv])
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert message in _error_line(res.stderr)


def test_bad_rows_are_reported_not_fatal(files: dict[str, Path]) -> None:
    text = files["base"].read_text() + "not json\n"
    files["base"].write_text(text)
    res = runner.invoke(app, _args(files, "-f", "json"))
    assert res.exit_code == 0, res.output
    assert "1 output row(s) of" in res.stderr
    data = json.loads(res.stdout)
    assert data["skipped_rows"]["total"] == 1
    assert data["skipped_rows"]["rows"][0]["line"] == 8


def test_help_lists_the_sub_app() -> None:
    res = runner.invoke(app, ["downstream", "--help"])
    assert res.exit_code == 0
    assert "report" in res.stdout
    res = runner.invoke(app, ["downstream", "report", "--help"])
    assert res.exit_code == 0
    assert "Example: swe-eval downstream report" in res.stdout


def test_plot_needs_the_extra(files: dict[str, Path], hide_modules: Callable[..., None]) -> None:
    hide_modules("matplotlib")
    res = runner.invoke(app, _args(files, "--plot", str(files["tmp"] / "p.png")))
    assert res.exit_code == 2
    assert _error_line(res.stderr) == (
        "error: matplotlib is not installed; install the 'plot' extra: pip install 'swe-eval[plot]'"
    )


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs the 'plot' extra")
def test_plot_writes_a_png(files: dict[str, Path]) -> None:
    out = files["tmp"] / "fig" / "t3.png"
    res = runner.invoke(app, _args(files, "--plot", str(out), "-o", str(files["tmp"] / "t.md")))
    assert res.exit_code == 0, res.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
