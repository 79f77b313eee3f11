"""`swe-eval downstream plan`: run plans for a frozen OpenHands agent and the SWE-bench harness.

On real data (the Verified dev slice in shared/data and the committed lexical predictions,
gated with the calibration codegrep-gate ships, and ungated), then the refusals on small
made-up files: unknown ids, a calibration for another retriever, names given twice, an output
folder that is not empty. Nothing here runs the agent, Docker or a model.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from codegrep_gate import openhands_template_path, render, shipped_calibration, write_calibration
from codegrep_records import gold_from_instances, load_instances
from swe_eval.cli import app
from swe_eval.downstream.plan import BENCHMARKS_COMMIT, Plan, parse_config_option
from swe_eval.downstream.readers import read_manifest
from typer.testing import CliRunner

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[3]
LEXICAL = ROOT / "apps" / "injector" / "calibration" / "lexical-verified_dev.predictions.jsonl"
CONFIGS = ("baseline", "lexical", "lexical-gated")


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _error_line(output: str) -> str:
    """The one `error:` line, neither wrapped nor cut."""
    (line,) = [x for x in output.splitlines() if x.startswith("error:")]
    return line


def _render_like_the_runner(prompt: Path, row: dict[str, Any]) -> str:
    """What OpenHands/benchmarks' get_instruction does with --prompt-path and a dataset row."""
    jinja2 = pytest.importorskip("jinja2", reason="jinja2 (a workspace dev dependency) renders")
    instance = {**row, "repo_path": f"/workspace/{row['repo'].split('/')[-1]}/"}
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(prompt.parent)))
    text: str = env.get_template(prompt.name).render(
        instance=instance,
        workspace_dir_name=row["repo"].split("/")[-1],
        actual_workspace_path="/workspace",
        metadata={},
        test_instructions="",
    )
    return text


# -- real data ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    shared = ROOT / ".." / "shared" / "data"
    import os

    shared = Path(os.environ.get("CODEGREP_SHARED_DATA", shared)).resolve()
    verified = shared / "swebench" / "verified_dev.jsonl"
    if not verified.is_file():
        pytest.skip(f"shared data not found at {shared} (set CODEGREP_SHARED_DATA)")
    if not LEXICAL.is_file():
        pytest.skip(f"the committed lexical predictions are missing: {LEXICAL}")
    out = tmp_path_factory.mktemp("plan") / "out"
    res = runner.invoke(
        app,
        [
            "downstream",
            "plan",
            "-i",
            str(verified),
            "--model",
            "openai/qwen3-30b-a3b",
            "--config",
            f"lexical={LEXICAL}",
            "--config",
            f"lexical-gated={LEXICAL},gate",
            "--max-iterations",
            "50",
            "--limit",
            "5",
            "--prompt",
            "gate",  # the stock template is in test_downstream_stock.py
            "-o",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    first5 = [json.loads(line)["instance_id"] for line in verified.read_text().splitlines()[:5]]
    return {"out": out, "stdout": res.stdout, "output": res.output, "first5": first5}


def _rows(planned: dict[str, Any], config: str) -> list[dict[str, Any]]:
    return _jsonl(planned["out"] / config / "dataset.jsonl")


def test_same_instances_in_the_same_order_everywhere(planned: dict[str, Any]) -> None:
    ids = (planned["out"] / "instances.txt").read_text().split()
    assert ids == planned["first5"]
    for config in CONFIGS:
        assert [r["instance_id"] for r in _rows(planned, config)] == ids, config
        gate_lines = _jsonl(planned["out"] / config / "gate.jsonl")
        assert [g["instance_id"] for g in gate_lines] == ids, config


def test_baseline_injects_nothing_and_the_gate_only_removes(planned: dict[str, Any]) -> None:
    base = _rows(planned, "baseline")
    assert all(r["candidate_files"] == [] for r in base)
    assert all(r["injection"] == "" for r in base)
    ungated = {r["instance_id"]: r["candidate_files"] for r in _rows(planned, "lexical")}
    gated = {r["instance_id"]: r["candidate_files"] for r in _rows(planned, "lexical-gated")}
    predictions = {p["instance_id"]: p["files"] for p in _jsonl(LEXICAL)}
    for iid, files in ungated.items():
        assert files == predictions.get(iid, [])  # ungated: the ranking as retrieved
        assert set(gated[iid]) <= set(files)
        assert gated[iid] == [f for f in files if f in gated[iid]]  # rank order kept
    # the shipped calibration holds some of these answers below 0.45 (95% lower bound)
    assert sum(map(len, gated.values())) < sum(map(len, ungated.values()))
    assert any(gated.values())
    # the gate's per-instance line says what went in, and why
    for g in _jsonl(planned["out"] / "lexical-gated" / "gate.jsonl"):
        assert g["injected"] == gated[g["instance_id"]]
        assert g["summary"].startswith(("nothing injected", f"{len(g['injected'])} of"))


def test_the_injection_columns_are_the_gates_renderings(planned: dict[str, Any]) -> None:
    for config in CONFIGS:
        for row in _rows(planned, config):
            assert row["injection"] == render(row["candidate_files"], "openhands")
            assert row["agent_context_suffix"] == render(row["candidate_files"], "agent_context")


def test_the_copied_template_renders_the_candidates_like_the_runner(
    planned: dict[str, Any],
) -> None:
    shipped = openhands_template_path().read_bytes()
    for config in CONFIGS:
        assert (planned["out"] / config / "prompt.j2").read_bytes() == shipped
    prompt = planned["out"] / "lexical" / "prompt.j2"
    row = next(r for r in _rows(planned, "lexical") if r["candidate_files"])
    text = _render_like_the_runner(prompt, row)
    assert row["injection"] in text
    for path in row["candidate_files"]:
        assert f"- {path}\n" in text
    assert row["problem_statement"] in text
    base_row = next(r for r in _rows(planned, "baseline") if r["instance_id"] == row["instance_id"])
    base_text = _render_like_the_runner(planned["out"] / "baseline" / "prompt.j2", base_row)
    assert "<candidate_files>" not in base_text
    assert base_row["problem_statement"] in base_text
    assert base_text == text.replace(row["injection"] + "\n", "")  # only the section differs


def test_one_llm_config_for_every_configuration(planned: dict[str, Any]) -> None:
    configs = {(planned["out"] / c / "llm_config.json").read_text() for c in CONFIGS}
    assert len(configs) == 1
    llm = json.loads(configs.pop())
    assert llm == {  # every sampling knob written out; no key is written
        "model": "openai/qwen3-30b-a3b",
        "temperature": 0.0,
        "top_p": 1.0,
        "max_output_tokens": 8192,
        "seed": 0,
        "drop_params": False,
    }


def test_the_commands_and_plan_json(planned: dict[str, Any]) -> None:
    out: Path = planned["out"]
    plan = Plan.model_validate_json((out / "plan.json").read_text())
    assert [c.name for c in plan.configs] == list(CONFIGS)
    assert plan.agent.max_iterations == 50
    assert plan.agent.temperature == 0.0
    script = (out / "commands.sh").read_text()
    assert planned["stdout"] == script  # printed as written
    for c in plan.configs:
        (infer,) = [cmd for cmd in c.commands if cmd.step == "infer"]
        assert str(out / c.name / "dataset.jsonl") in infer.shell
        assert f"--prompt-path {out / c.name / 'prompt.j2'}" in infer.shell
        assert "--max-iterations 50" in infer.shell
        assert f"--select {out / 'instances.txt'}" in infer.shell
        assert "--n-limit" not in infer.shell  # the runner's --n-limit samples at random
        (harness,) = [cmd for cmd in c.commands if cmd.step == "harness"]
        assert "swebench.harness.run_evaluation" in harness.argv
        assert harness.argv[harness.argv.index("--run_id") + 1] == c.run_id
        assert harness.argv[harness.argv.index("--predictions_path") + 1].endswith(
            "predictions.swebench.jsonl"
        )
        for cmd in c.commands:
            assert cmd.shell in script
    # verified_dev rows lack `version`: the harness grades against the classic hub rows
    assert "--dataset_name princeton-nlp/SWE-bench_Verified" in script
    pins = {p.name: p for p in plan.pins}
    assert pins["swebench"].value == "4.1.0"
    assert "KeyError" in pins["swebench"].why
    assert BENCHMARKS_COMMIT in pins["runner"].value
    assert plan.report.shell in script
    assert "downstream report" in plan.report.shell
    assert sorted(plan.files) == sorted(
        str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()
    )
    if shutil.which("bash"):
        subprocess.run(["bash", "-n", str(out / "commands.sh")], check=True)


def test_the_report_reads_the_plans_run_list(planned: dict[str, Any]) -> None:
    out: Path = planned["out"]
    manifest = read_manifest(out / "report-runs.json")
    assert manifest.baseline == "baseline"
    assert manifest.instances == out / "baseline" / "dataset.jsonl"
    by_name = {r.name: r for r in manifest.runs}
    assert list(by_name) == list(CONFIGS)
    plan = Plan.model_validate_json((out / "plan.json").read_text())
    for c in plan.configs:
        run = by_name[c.name]
        assert run.output == out / c.name / "output.jsonl"
        assert run.report == out / c.name / "harness" / f"OpenHands.{c.run_id}.json"
    assert by_name["baseline"].predictions is None
    assert by_name["baseline"].precision is None
    # the precision handed to the report is that of the files shown, over the instances shown any
    gold = gold_from_instances(load_instances(out / "baseline" / "dataset.jsonl").records)
    for config in ("lexical", "lexical-gated"):
        shown = [r for r in _rows(planned, config) if r["candidate_files"]]
        hits = [
            len(set(r["candidate_files"]) & gold[r["instance_id"]].files)
            / len(r["candidate_files"])
            for r in shown
        ]
        assert by_name[config].precision == pytest.approx(sum(hits) / len(hits), abs=1e-6)
    injected = _jsonl(out / "lexical-gated" / "injected.jsonl")
    gated = {r["instance_id"]: r["candidate_files"] for r in _rows(planned, "lexical-gated")}
    assert {p["instance_id"]: p["files"] for p in injected} == {k: v for k, v in gated.items() if v}


# -- refusals on small made-up files ------------------------------------------------------------


def _patch(path: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"


@pytest.fixture
def small(tmp_path: Path) -> dict[str, Path]:
    inst = _write_jsonl(
        tmp_path / "inst.jsonl",
        [
            {
                "instance_id": f"o__r-{n}",
                "repo": "o/r",
                "base_commit": "abc",
                "problem_statement": f"issue {n}",
                "patch": _patch(f"m{n}.py"),
            }
            for n in range(6)
        ],
    )
    pred = _write_jsonl(
        tmp_path / "pred.jsonl",
        [
            {
                "instance_id": f"o__r-{n}",
                "files": [f"m{n}.py", "x.py"],
                "scores": [0.9, 0.2],
                "retriever": "lexical",
            }
            for n in range(6)
        ],
    )
    return {"inst": inst, "pred": pred, "tmp": tmp_path}


def _plan(small: dict[str, Path], *extra: str, out: str = "out") -> Any:
    return runner.invoke(
        app,
        [
            "downstream",
            "plan",
            "-i",
            str(small["inst"]),
            "--model",
            "m",
            "-o",
            str(small["tmp"] / out),
            *extra,
        ],
    )


def test_unknown_ids_beyond_the_tolerance_are_named(small: dict[str, Path]) -> None:
    rows = _jsonl(small["pred"]) + [
        {"instance_id": f"other__repo-{n}", "files": ["a.py"], "retriever": "lexical"}
        for n in range(2)
    ]
    pred = _write_jsonl(small["tmp"] / "with-unknown.jsonl", rows)
    res = _plan(small, "--config", f"lex={pred}")
    assert res.exit_code == 2
    line = _error_line(res.output)
    assert "2 instance id(s)" in line
    assert "other__repo-0, other__repo-1" in line
    assert not (small["tmp"] / "out").exists()  # nothing written
    ok = _plan(small, "--config", f"lex={pred}", "--max-unknown", "2")
    assert ok.exit_code == 0, ok.output
    assert "2 unknown instance id(s) ignored: other__repo-0" in ok.output
    plan = Plan.model_validate_json((small["tmp"] / "out" / "plan.json").read_text())
    assert plan.configs[1].stats.unknown_ids == ["other__repo-0", "other__repo-1"]


def test_a_calibration_for_another_retriever_is_refused(small: dict[str, Path]) -> None:
    calibration = write_calibration(small["tmp"] / "lexical.json", shipped_calibration("lexical"))
    rows = [{**r, "retriever": "bm25"} for r in _jsonl(small["pred"])]
    bm25 = _write_jsonl(small["tmp"] / "bm25.jsonl", rows)
    res = _plan(small, "--config", f"b={bm25},gate=0.5,calibration={calibration}")
    assert res.exit_code == 2, res.output
    assert "the calibration measured retriever 'lexical', not 'bm25'" in _error_line(res.output)
    # without calibration=, codegrep-gate's one rule (as `codegrep localize --gate`): bm25 has
    # no shipped calibration, so none is chosen, rather than the lexical one then refused
    res = _plan(small, "--config", f"b={bm25},gate")
    assert res.exit_code == 2, res.output
    line = _error_line(res.output)
    assert "no calibration for 'bm25' (shipped: lexical)" in line
    assert "give calibration=FILE" in line
    # ungated, the same predictions need no calibration
    assert _plan(small, "--config", f"b={bm25}").exit_code == 0


def test_names_given_twice_are_refused(small: dict[str, Path]) -> None:
    pred = str(small["pred"])
    for argv in (
        ["--config", f"a={pred}", "--config", f"a={pred},gate"],
        ["--config", f"baseline={pred}"],
        ["--baseline", "none", "--config", f"none={pred}"],
    ):
        res = _plan(small, *argv)
        assert res.exit_code == 2, argv
        assert "given twice" in _error_line(res.output)
        assert not (small["tmp"] / "out").exists()


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ("a", "expected NAME=PREDICTIONS"),
        ("a b={pred}", "the name must be"),
        ("plan.json={pred}", "the plan has a file of that name"),
        ("a={pred},colour=red", "is not KEY=VALUE"),
        ("a={pred},gate=1.5", "less than or equal to 1"),
        ("a={pred},calibration=c.json", "add gate[=T]"),
        ("a={pred},gate,gate=0.5", "gate given twice"),
        ("a={tmp}/missing.jsonl", "no such file"),
        ("a={inst}", "names a file; is it a predictions file"),
        ("a={tmp}", "is a directory"),
    ],
)
def test_bad_configurations_exit_2(small: dict[str, Path], config: str, says: str) -> None:
    filled = config.format(**{k: str(v) for k, v in small.items()})
    res = _plan(small, "--config", filled)
    assert res.exit_code == 2, res.output
    assert says in _error_line(res.output)


def test_an_output_folder_that_is_not_empty(small: dict[str, Path]) -> None:
    out = small["tmp"] / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    res = _plan(small, "--config", f"lex={small['pred']}")
    assert res.exit_code == 2
    assert "is not empty" in _error_line(res.output)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    # --force writes beside what is there
    assert _plan(small, "--config", f"lex={small['pred']}", "--force").exit_code == 0
    # and overwrites its own files on a second plan, leaving the rest alone
    (out / "lex" / "infer").mkdir()
    (out / "lex" / "infer" / "output.jsonl").write_text("a run")
    again = _plan(small, "--config", f"lex={small['pred']},gate", "--force")
    assert again.exit_code == 0, again.output
    assert "the runner resumes from it" in again.output
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "lex" / "infer" / "output.jsonl").read_text() == "a run"
    assert Plan.model_validate_json((out / "plan.json").read_text()).configs[1].kind == "gated"


def test_force_never_overwrites_a_file_no_plan_wrote(small: dict[str, Path]) -> None:
    out = small["tmp"] / "out"
    out.mkdir()
    (out / "commands.sh").write_text("echo mine\n")
    res = _plan(small, "--force")
    assert res.exit_code == 2
    assert "no earlier plan" in _error_line(res.output)
    assert (out / "commands.sh").read_text() == "echo mine\n"
    assert sorted(p.name for p in out.iterdir()) == ["commands.sh"]


def test_seed_shuffles_once_for_every_configuration(small: dict[str, Path]) -> None:
    res = _plan(small, "--config", f"lex={small['pred']}", "--seed", "3", "--limit", "4")
    assert res.exit_code == 0, res.output
    out = small["tmp"] / "out"
    ids = (out / "instances.txt").read_text().split()
    assert len(ids) == 4
    assert ids != [f"o__r-{n}" for n in range(4)]
    for config in ("baseline", "lex"):
        assert [r["instance_id"] for r in _jsonl(out / config / "dataset.jsonl")] == ids
    same = _plan(
        small, "--config", f"lex={small['pred']}", "--seed", "3", "--limit", "4", out="out2"
    )
    assert same.exit_code == 0
    assert (small["tmp"] / "out2" / "instances.txt").read_text().split() == ids


def test_missing_predictions_run_without_injection_and_are_counted(
    small: dict[str, Path],
) -> None:
    few = _write_jsonl(small["tmp"] / "few.jsonl", _jsonl(small["pred"])[:2])
    res = _plan(small, "--config", f"lex={few}")
    assert res.exit_code == 0, res.output
    assert "4 of 6 instance(s) have no prediction" in res.output
    lines = _jsonl(small["tmp"] / "out" / "lex" / "gate.jsonl")
    assert [g["prediction"] for g in lines] == [True, True, False, False, False, False]
    assert all(g["injected"] == [] for g in lines[2:])


def test_rows_with_the_harness_fields_are_graded_offline(small: dict[str, Path]) -> None:
    rows = [
        {
            **r,
            "version": "1.0",
            "environment_setup_commit": "def",
            "test_patch": _patch("t.py"),
            "FAIL_TO_PASS": '["t::a"]',
            "PASS_TO_PASS": "[]",
            "expected_spans": {"m0.py": [1]},
        }
        for r in _jsonl(small["inst"])
    ]
    inst = _write_jsonl(small["tmp"] / "full.jsonl", rows)
    res = runner.invoke(
        app,
        ["downstream", "plan", "-i", str(inst), "--model", "m", "-o", str(small["tmp"] / "out")],
    )
    assert res.exit_code == 0, res.output
    out = small["tmp"] / "out"
    assert f"--dataset_name {out / 'baseline' / 'dataset.jsonl'}" in res.stdout
    row = _jsonl(out / "baseline" / "dataset.jsonl")[0]
    assert row["FAIL_TO_PASS"] == ["t::a"]
    assert row["version"] == "1.0"
    assert "expected_spans" not in row  # columns the runner cannot type are left out


def test_parse_config_option() -> None:
    spec = parse_config_option("cg=p.jsonl,gate,bound=point,max_files=2")
    assert (spec.kind, spec.gate, spec.bound, spec.max_files) == ("gated", 0.45, "point", 2)
    assert parse_config_option("bm25=b.jsonl").kind == "ungated"


def test_the_report_command_reads_what_the_runs_leave(
    small: dict[str, Path], runner_checkout: Any
) -> None:
    """The runner's output.jsonl, the harness's summary and the run's read.json (stamped from a
    checkout at the pins) at the paths the plan names, made up here (no Docker), are what
    `downstream report --manifest` reads."""
    pins = ["--model-revision", "abc123", "--server", "vllm==0.11.0", "--tool-parser", "hermes",
            "--skills", "0123abcd"]  # fmt: skip
    configs = ["--config", f"lex={small['pred']}", "--config", f"gated={small['pred']},gate"]
    res = _plan(small, *configs, *pins)
    assert res.exit_code == 0, res.output
    # the same plan without the pins: its runs cannot be shown to share them
    assert _plan(small, *configs, out="unpinned").exit_code == 0
    out = small["tmp"] / "out"
    plan = Plan.model_validate_json((out / "plan.json").read_text())
    ids = (out / "instances.txt").read_text().split()
    bench = runner_checkout(small["tmp"] / "bench", BENCHMARKS_COMMIT)
    for k, c in enumerate(plan.configs):
        (step,) = [cmd for cmd in c.commands if cmd.step == "stamp"]
        stamp = [a if a != "$BENCHMARKS" else str(bench) for a in step.argv]
        assert runner.invoke(app, stamp[1:]).exit_code == 0
        metrics = {"accumulated_token_usage": {"prompt_tokens": 900, "completion_tokens": 100},
                   "response_latencies": [{"latency": 1.0}] * 7}  # fmt: skip
        _write_jsonl(
            out / c.files["agent_output"],
            [{"instance_id": i, "history": [], "test_result": {"git_patch": "diff"},
              "metrics": metrics, "error": None} for i in ids],
        )  # fmt: skip
        summary = out / c.files["harness_report"]
        summary.parent.mkdir(parents=True)
        resolved = ids[: k + 1]
        summary.write_text(json.dumps({
            "resolved_ids": resolved, "unresolved_ids": ids[k + 1 :], "error_ids": [],
            "empty_patch_ids": [], "incomplete_ids": [], "schema_version": 2,
        }))  # fmt: skip
    argv = [*plan.report.argv[1:], "--resamples", "100"]
    assert argv[:2] == ["downstream", "report"]
    report = runner.invoke(app, argv)
    assert report.exit_code == 0, report.output
    table = (out / "table3.md").read_text()
    for c in plan.configs:
        assert c.name in table
    # manifests that leave a pin NOT GIVEN are not equal in it, though both say null
    unpinned = small["tmp"] / "unpinned"
    for c in plan.configs:
        (out / c.files["manifest"]).write_text((unpinned / c.files["manifest"]).read_text())
    refused = runner.invoke(app, argv)
    assert refused.exit_code == 2, refused.output
    for key in ("model_revision", "server", "tool_parser", "skills"):
        assert f"{key} (not pinned in" in refused.output


@pytest.mark.skipif(shutil.which("bash") is None, reason="the link step is a bash command")
def test_the_link_step_finds_the_one_runner_output(small: dict[str, Path]) -> None:
    assert _plan(small).exit_code == 0
    out = small["tmp"] / "out"
    plan = Plan.model_validate_json((out / "plan.json").read_text())
    (link,) = [c for c in plan.configs[0].commands if c.step == "link"]
    infer = out / "baseline" / "infer"
    none = subprocess.run(link.argv, capture_output=True, text=True)
    assert none.returncode == 1
    assert "found 0" in none.stderr
    # the runner names its folder after the dataset, the model and the SDK commit
    made = infer / "__tmp__out-test" / "m_sdk_abc1234_maxiter_100_N_baseline" / "output.jsonl"
    made.parent.mkdir(parents=True)
    made.write_text("{}\n")
    subprocess.run(link.argv, check=True)
    assert (out / "baseline" / "output.jsonl").resolve() == made.resolve()
    (infer / "again" / "output.jsonl").parent.mkdir(parents=True)
    (infer / "again" / "output.jsonl").write_text("{}\n")
    two = subprocess.run(link.argv, capture_output=True, text=True)
    assert two.returncode == 1
    assert "found 2" in two.stderr


def test_a_link_planted_beside_the_plans_files_is_never_followed(tmp_path: Path) -> None:
    from swe_eval.downstream._plan_writing import _write

    victim = tmp_path / "victim.sh"
    victim.write_text("keep me\n")
    out = tmp_path / "plan"
    out.mkdir()
    # the fixed temporary name the writer used to open with a plain write: it wrote through it
    (out / ".commands.sh.plan-tmp").symlink_to(victim)
    _write(out / "commands.sh", b"echo run\n", 0o755)
    assert victim.read_text() == "keep me\n"
    assert (out / "commands.sh").read_bytes() == b"echo run\n"
    assert (out / "commands.sh").stat().st_mode & 0o777 == 0o755
    assert sorted(p.name for p in out.iterdir()) == [".commands.sh.plan-tmp", "commands.sh"]
