"""Everything that can move, pinned: `plan --repeats K` (seeds apart), each run's manifest.json,
`report` refusing runs whose manifests differ in more than the arm, the total round cap, and
the Modal backend on a dry run. Nothing here runs the agent, Docker or Modal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from swe_eval.cli import app
from swe_eval.downstream.plan import Plan
from typer.testing import CliRunner

runner = CliRunner()
_PATCH = "diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-a\n+b\n"


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def small(tmp_path: Path) -> dict[str, Path]:
    inst = _write_jsonl(
        tmp_path / "inst.jsonl",
        [
            {"instance_id": f"o__r-{n}", "repo": "o/r", "base_commit": "abc",
             "problem_statement": f"issue {n}", "patch": _PATCH.format(f=f"m{n}.py")}
            for n in range(6)
        ],
    )  # fmt: skip
    pred = _write_jsonl(
        tmp_path / "pred.jsonl",
        [{"instance_id": f"o__r-{n}", "files": [f"m{n}.py"], "retriever": "lexical"}
         for n in range(6)],
    )  # fmt: skip
    return {"tmp": tmp_path, "inst": inst, "pred": pred}


def _plan(small: dict[str, Path], *extra: str, out: str = "out") -> Any:
    return runner.invoke(
        app,
        ["downstream", "plan", "-i", str(small["inst"]), "--model", "m",
         "-o", str(small["tmp"] / out), "--config", f"lex={small['pred']}", *extra],
    )  # fmt: skip


_PINNED = (
    "--model-revision", "abc123", "--server", "vllm 0.10.1", "--tool-parser", "hermes",
    "--skills", "0123abc", "--top-k", "20", "--total-rounds", "120",
)  # fmt: skip


def test_repeats_are_runs_of_the_same_arm_with_distinct_seeds(small: dict[str, Path]) -> None:
    res = _plan(small, "--repeats", "3", "--llm-seed", "7", *_PINNED)
    assert res.exit_code == 0, res.output
    out = small["tmp"] / "out"
    plan = Plan.model_validate_json((out / "plan.json").read_text())
    names = [c.name for c in plan.configs]
    assert names == [f"{a}-r{r}" for a in ("baseline", "lex") for r in (1, 2, 3)]
    seeds = {c.name: json.loads((out / c.name / "llm_config.json").read_text())["seed"]
             for c in plan.configs}  # fmt: skip
    assert seeds["lex-r1"] == seeds["baseline-r1"] == 7
    assert [seeds[f"lex-r{r}"] for r in (1, 2, 3)] == [7, 8, 9]
    assert len({c.run_id for c in plan.configs}) == 6  # the harness caches per run id
    llm = json.loads((out / "lex-r2" / "llm_config.json").read_text())
    assert llm["top_k"] == 20
    assert llm["drop_params"] is False
    # the run list names the repeats by their arm: the report pools them
    runs = json.loads((out / "report-runs.json").read_text())["runs"]
    assert [r["name"] for r in runs] == ["baseline"] * 3 + ["lex"] * 3
    # every run's manifest: the same frozen part, an arm part that says which run it is
    manifests = [json.loads((out / c.name / "manifest.json").read_text()) for c in plan.configs]
    assert len({json.dumps(m["frozen"], sort_keys=True) for m in manifests}) == 1
    frozen = manifests[0]["frozen"]
    for key, value in (("model_revision", "abc123"), ("server", "vllm 0.10.1"),
                       ("tool_parser", "hermes"), ("skills", "0123abc"),
                       ("max_retries", 0), ("round_cap", 120), ("top_p", 1.0), ("top_k", 20),
                       ("max_output_tokens", 8192), ("swebench", "4.1.0")):  # fmt: skip
        assert frozen[key] == value, key
    assert [m["arm"]["seed"] for m in manifests] == [7, 8, 9, 7, 8, 9]
    infer = next(c for c in plan.configs[0].commands if c.step == "infer")
    assert infer.argv[infer.argv.index("--max-retries") + 1] == "0"
    assert infer.argv[:2] == ["env", "EXTENSIONS_REF=0123abc"]  # the skills at a commit


def test_what_is_not_given_is_said(small: dict[str, Path]) -> None:
    res = _plan(small)
    assert res.exit_code == 0, res.output
    assert "not pinned, recorded as NOT GIVEN in every manifest: --model-revision" in res.output
    plan = Plan.model_validate_json((small["tmp"] / "out" / "plan.json").read_text())
    pins = {p.name: p.value for p in plan.pins}
    assert "NOT GIVEN" in pins["serving"]
    assert pins["retries"] == "--max-retries 0"


def test_modal_backend_on_a_dry_run(small: dict[str, Path]) -> None:
    local = _plan(small, *_PINNED, out="local")
    modal = _plan(small, *_PINNED, "--backend", "modal", "--workspace", "remote", "--dry-run",
                  out="modal")  # fmt: skip
    assert local.exit_code == 0, local.output
    assert modal.exit_code == 0, modal.output
    plan = Plan.model_validate_json((small["tmp"] / "modal" / "plan.json").read_text())
    harness = next(c for c in plan.configs[0].commands if c.step == "harness")
    assert harness.argv[-2:] == ["--modal", "true"]
    infer = next(c for c in plan.configs[0].commands if c.step == "infer")
    assert infer.argv[infer.argv.index("--workspace") + 1] == "remote"
    assert "--modal true" in modal.stdout
    assert "remote workspace (RUNTIME_API_KEY, RUNTIME_API_URL)" in modal.stdout
    assert "the harness in Modal sandboxes" in modal.stdout
    assert "the harness in this host's Docker" in local.stdout
    # the same manifest but for where the run goes
    m_local = json.loads((small["tmp"] / "local" / "lex" / "manifest.json").read_text())
    m_modal = json.loads((small["tmp"] / "modal" / "lex" / "manifest.json").read_text())
    differ = {k for k in m_local["frozen"] if m_local["frozen"][k] != m_modal["frozen"][k]}
    assert differ == {"backend", "workspace"}


def _fake_runs(out: Path, plan: Plan, rounds: int = 7) -> None:
    ids = (out / "instances.txt").read_text().split()
    for k, c in enumerate(plan.configs):
        metrics = {"accumulated_token_usage": {"prompt_tokens": 900, "completion_tokens": 100},
                   "response_latencies": [{"latency": 1.0}] * rounds}  # fmt: skip
        _write_jsonl(
            out / c.files["agent_output"],
            [{"instance_id": i, "history": [], "test_result": {"git_patch": "diff"},
              "metrics": metrics, "error": None} for i in ids],
        )  # fmt: skip
        summary = out / c.files["harness_report"]
        summary.parent.mkdir(parents=True)
        resolved = ids[: 1 + k % 3]
        summary.write_text(json.dumps({
            "resolved_ids": resolved, "unresolved_ids": ids[len(resolved):], "error_ids": [],
            "empty_patch_ids": [], "incomplete_ids": [], "schema_version": 2,
        }))  # fmt: skip


def test_report_pools_the_plans_repeats(small: dict[str, Path]) -> None:
    assert _plan(small, "--repeats", "2", *_PINNED).exit_code == 0
    out = small["tmp"] / "out"
    plan = Plan.model_validate_json((out / "plan.json").read_text())
    _fake_runs(out, plan)
    res = runner.invoke(app, [*plan.report.argv[1:], "--resamples", "50", "-f", "json", "-o",
                              str(out / "t.json")])  # fmt: skip
    assert res.exit_code == 0, res.output
    body = json.loads((out / "t.json").read_text())
    (pooled,) = body["pooled"]
    assert (pooled["a"], pooled["b"], pooled["repeats_a"], pooled["repeats_b"]) == (
        "baseline", "lex", 2, 2
    )  # fmt: skip
    assert pooled["mde"] is not None


def test_report_refuses_runs_that_differ_in_more_than_the_arm(small: dict[str, Path]) -> None:
    assert _plan(small, *_PINNED).exit_code == 0
    out = small["tmp"] / "out"
    plan = Plan.model_validate_json((out / "plan.json").read_text())
    _fake_runs(out, plan, rounds=130)
    lex = out / "lex" / "manifest.json"
    m = json.loads(lex.read_text())
    m["frozen"]["server"] = "vllm 0.11.0"
    lex.write_text(json.dumps(m))
    res = runner.invoke(app, [*plan.report.argv[1:], "--resamples", "0"])
    assert res.exit_code == 2, res.output
    assert "manifests differ in more than the arm: server" in res.stderr
    assert "vllm 0.11.0" in res.stderr
    forced = runner.invoke(
        app, [*plan.report.argv[1:], "--resamples", "0", "--allow-manifest-diff"]
    )
    assert forced.exit_code == 0, forced.output
    table = (out / "table3.md").read_text()
    assert "--allow-manifest-diff: these runs differ in more than the arm" in table
    # 130 LLM calls against a total cap of 120: every run is named
    assert "above the total round cap 120" in table


def test_a_bad_manifest_is_a_clear_error(small: dict[str, Path]) -> None:
    assert _plan(small).exit_code == 0
    out = small["tmp"] / "out"
    plan = Plan.model_validate_json((out / "plan.json").read_text())
    _fake_runs(out, plan)
    (out / "lex" / "manifest.json").write_text("[" * 100_000)
    res = runner.invoke(app, [*plan.report.argv[1:], "--resamples", "0"])
    assert res.exit_code == 2, res.output
    assert "manifest.json" in res.stderr


def test_a_repeat_name_that_clashes_with_a_configuration_is_refused(small: dict[str, Path]) -> None:
    res = _plan(small, "--repeats", "2", "--config", f"lex-r1={small['pred']}")
    assert res.exit_code == 2, res.output
    assert "run name(s) lex-r1 would name two runs" in res.stderr
