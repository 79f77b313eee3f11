"""Everything that can move, pinned: `plan --repeats K` (seeds apart), each run's manifest.json,
`report` refusing runs whose manifests differ in more than the arm, the total round cap, and
the Modal backend on a dry run. Nothing here runs the agent, Docker or Modal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from swe_eval.cli import app
from swe_eval.downstream._plan_pins import BENCHMARKS_COMMIT, STOCK_TEMPLATE
from swe_eval.downstream.plan import Plan
from typer.testing import CliRunner

runner = CliRunner()
_PATCH = "diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-a\n+b\n"


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def small(tmp_path: Path, runner_checkout: Any) -> dict[str, Any]:
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
    runner_checkout(tmp_path / "bench", BENCHMARKS_COMMIT)
    return {"tmp": tmp_path, "inst": inst, "pred": pred, "checkout": runner_checkout}


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
    assert differ == {"backend", "workspace", "harness_images", "agent_images"}
    # the images that really grade and run are recorded, not the Docker defaults
    assert "ubuntu:22.04" in m_modal["frozen"]["harness_images"]
    assert "swebench unpinned" in m_modal["frozen"]["harness_images"]
    assert "namespace swebench" in m_local["frozen"]["harness_images"]
    assert "remote runtime's agent-server image" in m_modal["frozen"]["agent_images"]
    assert "on a Docker host" not in modal.stderr + modal.stdout


EARLIER = "82687c83" + "0" * 32  # a commit one before the pinned runner commit (as a stand-in id)


def _stamp(run: Path, bench: Path, *extra: str) -> Any:
    return runner.invoke(app, ["downstream", "stamp", str(run), "--benchmarks", str(bench), *extra])


def _fake_runs(out: Path, plan: Plan, rounds: int = 7, bench: Path | None = None) -> None:
    """Each run's output and harness report, and its read.json as `stamp` writes it from a
    checkout at the pinned commits (or `bench`)."""
    ids = (out / "instances.txt").read_text().split()
    bench = bench or out.parent / "bench"  # the `small` fixture's checkout at the pins
    for k, c in enumerate(plan.configs):
        stamped = _stamp(out / c.name, bench, "--allow-other-checkout")
        assert stamped.exit_code == 0, stamped.output
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


def _planned_runs(small: dict[str, Any], *flags: str) -> tuple[Path, Plan]:
    """A plan written by `downstream plan FLAGS`, and its runs faked (outputs, reports, stamps)."""
    assert _plan(small, *flags).exit_code == 0
    out = small["tmp"] / "out"
    plan = Plan.model_validate_json((out / "plan.json").read_text())
    _fake_runs(out, plan)
    return out, plan


def test_report_pools_the_plans_repeats(small: dict[str, Path]) -> None:
    out, plan = _planned_runs(small, "--repeats", "2", *_PINNED)
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
    # and Table 3 says it per configuration: all 6 instances of each run are over the cap
    lines = table.splitlines()
    head = next(k for k, line in enumerate(lines) if line.startswith("| config"))
    header = [c.strip() for c in lines[head].strip("|").split("|")]
    column = header.index("over round cap")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[head + 2 :]]
    rows = [r for r in rows if len(r) == len(header)]
    assert {r[0]: r[column] for r in rows} == {"baseline": "6", "lex": "6"}


def test_a_bad_manifest_is_a_clear_error(small: dict[str, Path]) -> None:
    out, plan = _planned_runs(small)
    (out / "lex" / "manifest.json").write_text("[" * 100_000)
    res = runner.invoke(app, [*plan.report.argv[1:], "--resamples", "0"])
    assert res.exit_code == 2, res.output
    assert "manifest.json" in res.stderr


def test_a_repeat_name_that_clashes_with_a_configuration_is_refused(small: dict[str, Path]) -> None:
    res = _plan(small, "--repeats", "2", "--config", f"lex-r1={small['pred']}")
    assert res.exit_code == 2, res.output
    assert "run name(s) lex-r1 would name two runs" in res.stderr


def test_commands_stamp_each_run_before_its_agent(small: dict[str, Path]) -> None:
    assert _plan(small, *_PINNED).exit_code == 0
    commands = (small["tmp"] / "out" / "commands.sh").read_text()
    stamp = commands.index("swe-eval downstream stamp")
    assert '--benchmarks "$BENCHMARKS"' in commands[stamp : stamp + 300]
    assert stamp < commands.index("swebench-infer")


def test_a_checkout_one_commit_earlier_is_refused_by_stamp_and_report(
    small: dict[str, Path],
) -> None:
    assert _plan(small, *_PINNED).exit_code == 0
    out = small["tmp"] / "out"
    plan = Plan.model_validate_json((out / "plan.json").read_text())
    earlier = small["checkout"](small["tmp"] / "earlier", EARLIER)
    res = _stamp(out / "lex", earlier)
    assert res.exit_code == 2, res.output
    assert "the runner checkout is at 82687c830000, not the pinned 4e5469e0caaf" in res.stderr
    assert not (out / "lex" / "read.json").exists()  # nothing written
    wrong_sdk = small["checkout"](small["tmp"] / "sdk", BENCHMARKS_COMMIT, sdk_head="1" * 40)
    res = _stamp(out / "lex", wrong_sdk)
    assert res.exit_code == 2
    assert "its agent SDK is at 111111111111" in res.stderr
    # recorded anyway, the report will not pool it with the runs of the pinned checkout
    _fake_runs(out, plan)
    assert _stamp(out / "lex", earlier, "--allow-other-checkout").exit_code == 0
    read = json.loads((out / "lex" / "read.json").read_text())
    assert (read["runner_head"], read["allowed_other_checkout"]) == (EARLIER, True)
    res = runner.invoke(app, [*plan.report.argv[1:], "--resamples", "0"])
    assert res.exit_code == 2, res.output
    assert "runner_head (lex read 82687c830000, its manifest pins 4e5469e0caaf)" in res.stderr


def test_a_run_not_stamped_or_reading_another_template_is_not_compared(
    small: dict[str, Path],
) -> None:
    out, plan = _planned_runs(small, *_PINNED)
    assert runner.invoke(app, [*plan.report.argv[1:], "--resamples", "0"]).exit_code == 0
    (out / "lex" / "read.json").unlink()
    res = runner.invoke(app, [*plan.report.argv[1:], "--resamples", "0"])
    assert res.exit_code == 2
    assert "read.json (lex was not stamped" in res.stderr
    other = small["checkout"](small["tmp"] / "other", BENCHMARKS_COMMIT)
    (other / STOCK_TEMPLATE).write_text("{{ instance.problem_statement }} (edited)\n")
    assert _stamp(out / "lex", other).exit_code == 0
    res = runner.invoke(app, [*plan.report.argv[1:], "--resamples", "0"])
    assert res.exit_code == 2
    assert "template_sha256 read (" in res.stderr
    forced = runner.invoke(
        app, [*plan.report.argv[1:], "--resamples", "0", "--allow-manifest-diff"]
    )
    assert forced.exit_code == 0, forced.output


def _report_runs(out: Path) -> dict[str, Any]:
    return json.loads((out / "report-runs.json").read_text())


def test_repeats_are_checked_as_repeats(small: dict[str, Path]) -> None:
    out, _ = _planned_runs(small, "--repeats", "2", *_PINNED)
    good = _report_runs(out)
    argv = ["downstream", "report", "--manifest", str(out / "report-runs.json"), "--resamples", "0"]

    def report_with(runs: list[dict[str, Any]]) -> Any:
        (out / "report-runs.json").write_text(json.dumps({**good, "runs": runs}))
        return runner.invoke(app, argv)

    assert report_with(good["runs"]).exit_code == 0
    lex = [r for r in good["runs"] if r["name"] == "lex"]
    others = [r for r in good["runs"] if r["name"] != "lex"]
    # the same run given twice is one run, not two repeats
    res = report_with([*others, lex[0], lex[0]])
    assert res.exit_code == 2
    assert "is given twice" in res.stderr
    # a run of one arm pointing at another arm's manifest
    res = report_with([*others, lex[0], {**lex[1], "manifest": others[0]["manifest"]}])
    assert res.exit_code == 2
    assert "manifest" in res.stderr
    assert "is of arm 'baseline'" in res.stderr
    # a repeat with another gate, another predictions file and the same seed
    second = out / lex[1]["manifest"]
    m = json.loads(second.read_text())
    m["arm"].update(
        seed=json.loads((out / lex[0]["manifest"]).read_text())["arm"]["seed"],
        predictions="other.jsonl",
        gate={"threshold": 0.9},
    )
    second.write_text(json.dumps(m))
    res = report_with(good["runs"])
    assert res.exit_code == 2
    for said in ("its repeats differ in predictions", "differ in gate", "two repeats share a seed"):
        assert said in res.stderr


def test_a_run_without_a_manifest_is_not_compared_with_runs_that_have_one(
    small: dict[str, Path],
) -> None:
    out, _ = _planned_runs(small, *_PINNED)
    runs = _report_runs(out)
    runs["runs"][1].pop("manifest")
    (out / "report-runs.json").write_text(json.dumps(runs))
    argv = ["downstream", "report", "--manifest", str(out / "report-runs.json"), "--resamples", "0"]
    res = runner.invoke(app, argv)
    assert res.exit_code == 2
    assert "manifest (none for lex: its settings are unknown)" in res.stderr
    assert runner.invoke(app, [*argv, "--allow-manifest-diff"]).exit_code == 0
