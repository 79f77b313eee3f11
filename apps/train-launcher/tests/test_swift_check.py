"""`plan --check` where ms-swift is not installed (the workspace), and the launcher's side of it:
the trainer's Python, the carried rules, the flags a rule names, `launch` refusing a stage.
ms-swift's own verdicts are tested with the pinned ms-swift: tests/swift/ (the launch tier)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from train_launcher import NodeInfo, PlanError, build_plan, launch, load_config
from train_launcher.cli import app
from train_launcher.launch import Event
from train_launcher.swift_check import (
    CANNOT,
    StageCheck,
    SwiftCheck,
    carried_rules,
    check_stages,
    flags_named,
    trainer_python,
)
from typer.testing import CliRunner

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _script(path: Path, first_line: str) -> Path:
    path.write_text(f"{first_line}\nexit 0\n")
    path.chmod(0o755)
    return path


def _paper(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "plan",
        "--config",
        str(CONFIGS / "paper-8xb200.yaml"),
        "--set",
        f"base_dir={tmp_path}",
        *[x for item in extra for x in ("--set", item)],
    ]


def test_plan_check_without_a_swift_executable_cannot_check(tmp_path: Path) -> None:
    run = CliRunner().invoke(app, [*_paper(tmp_path, "swift.executable=no-such-swift"), "--check"])
    assert run.exit_code == 2
    assert f"error: {CANNOT} ('no-such-swift' is not an executable on PATH)" in run.output


def test_plan_check_where_ms_swift_does_not_import_cannot_check(tmp_path: Path) -> None:
    """A `swift` whose Python has no ms-swift (this workspace's): the probe really runs there
    and answers that `swift.arguments` does not import."""
    swift = _script(tmp_path / "swift", f"#!{sys.executable}")
    run = CliRunner().invoke(app, [*_paper(tmp_path, f"swift.executable={swift}"), "--check"])
    assert run.exit_code == 2
    assert f"error: {CANNOT} ({sys.executable}: ModuleNotFoundError: No module named" in (
        run.output
    )
    # one line for it, after the plan
    assert run.output.count(f"error: {CANNOT}") == 1


def test_plan_without_check_says_it_could_not_and_passes(tmp_path: Path) -> None:
    swift = _script(tmp_path / "swift", f"#!{sys.executable}")
    run = CliRunner().invoke(app, _paper(tmp_path, f"swift.executable={swift}"))
    assert run.exit_code == 0, run.output
    assert f"trainer check: {CANNOT} ({sys.executable}:" in run.output


def test_plan_json_carries_the_verdict(tmp_path: Path) -> None:
    import json

    run = CliRunner().invoke(app, [*_paper(tmp_path, "swift.executable=nope"), "--json"])
    assert run.exit_code == 0, run.output
    verdict = json.loads(run.output)["trainer_check"]
    assert verdict["status"] == "cannot"
    assert verdict["reason"].startswith(CANNOT)


def test_the_trainer_python_is_the_scripts_interpreter(tmp_path: Path) -> None:
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = _script(bin_dir / "python3.11", "#!/bin/sh")
    config = load_config(
        CONFIGS / "paper-8xb200.yaml",
        [f"base_dir={tmp_path}", "data.fetch=[]", f"swift.executable={bin_dir / 'swift'}"],
    )
    _script(bin_dir / "swift", f"#!{python}")
    assert trainer_python(config) == (python, "")
    # `#!/usr/bin/env python3`: the python3 on the stage's PATH
    _script(bin_dir / "python3", "#!/bin/sh")
    _script(bin_dir / "swift", "#!/usr/bin/env python3")
    assert trainer_python(config, {"PATH": str(bin_dir)}) == (bin_dir / "python3", "")
    # a wrapper that is not Python: the python beside it
    _script(bin_dir / "python", "#!/bin/sh")
    _script(bin_dir / "swift", "#!/bin/bash")
    assert trainer_python(config) == (bin_dir / "python", "")
    (bin_dir / "python").unlink()
    found, why = trainer_python(config)
    assert found is None
    assert "no Python found" in why


def test_the_flags_a_rule_names() -> None:
    """Messages as ms-swift 4.6 and argparse raise them (swift/rlhf_trainers/args_mixin.py)."""
    argv = [
        "--num_generations",
        "8",
        "--per_device_train_batch_size",
        "4",
        "--per_device_eval_batch_size",
        "4",
        "--gradient_accumulation_steps",
        "2",
        "--sleep_level",
        "x",
    ]
    eval_rule = (
        "The global eval batch size (1 x 4) must be evenly divisible by num_generations_eval "
        "(8). Valid values: [1, 2, 4]."
    )
    assert flags_named(eval_rule, argv) == ("--num_generations", "--per_device_eval_batch_size")
    gen_rule = "generation_batch_size (24) must be evenly divisible by num_generations (3)."
    assert flags_named(gen_rule, argv) == (
        "--num_generations",
        "--per_device_train_batch_size",
        "--gradient_accumulation_steps",
    )
    assert flags_named("argument --sleep_level/--sleep-level: invalid int value: 'x'", argv) == (
        "--sleep_level",
    )
    assert flags_named("remaining_argv: ['--nope', '1']", argv) == ("--nope",)
    assert flags_named("something else entirely", argv) == ()


def _grpo(tmp_path: Path, *sets: str) -> tuple[Any, Any]:
    config = load_config(
        CONFIGS / "paper-8xb200.yaml", [f"base_dir={tmp_path}", "data.fetch=[]", *sets]
    )
    plan = build_plan(config, CONFIGS / "paper-8xb200.yaml", node=NodeInfo())
    (command,) = [c for c in plan.stage("grpo").commands if not c.background]
    return config, command


def test_the_shipped_configs_break_no_carried_rule(tmp_path: Path) -> None:
    for name in ("paper-8xb200.yaml", "single-gpu.yaml"):
        config = load_config(CONFIGS / name, [f"base_dir={tmp_path}", "data.fetch=[]"])
        plan = build_plan(config, CONFIGS / name, node=NodeInfo())
        for stage in plan.stages:
            for command in stage.commands:
                if stage.name in ("sft", "grpo") and not command.background:
                    assert carried_rules(stage.name, command, config) == []


def test_more_visible_gpus_than_processes_is_refused_with_vllm(tmp_path: Path) -> None:
    """is_mp (swift/utils/env.py): 2 visible GPUs for 1 process is device_map model
    parallelism; ms-swift's _check_grpo refuses it with vLLM. train.env reaches the command."""
    config, command = _grpo(
        tmp_path, "cluster.gpus_per_node=1", "train.env={CUDA_VISIBLE_DEVICES: '0,1'}"
    )
    (found,) = carried_rules("grpo", command, config)
    assert found.flags == ("CUDA_VISIBLE_DEVICES", "NPROC_PER_NODE")
    assert "device_map model parallelism, which ms-swift refuses with GRPO with vLLM" in found.rule
    assert "rlhf_args.py in _check_grpo" in found.where


def test_colocate_tensor_parallel_must_divide_the_processes(tmp_path: Path) -> None:
    config, command = _grpo(tmp_path, "rollout.tensor_parallel_size=3")
    (found,) = carried_rules("grpo", command, config)
    assert found.flags == ("--vllm_tensor_parallel_size",)
    assert found.rule == "vllm_tensor_parallel_size (3) must divide world size (8) evenly"


def test_check_stages_on_a_plan_without_training_stages_passes(tmp_path: Path) -> None:
    config, _ = _grpo(tmp_path, f"swift.executable={sys.executable}")
    verdict = check_stages(config, [])
    assert verdict.status == "passed"
    assert verdict.lines()[1] == "  no training stage in this plan"


def _refusing(stages: Any) -> SwiftCheck:
    (stage,) = stages
    return SwiftCheck(
        status="failed",
        python="/venv/bin/python",
        stages=(
            StageCheck(
                stage=stage.name,
                ok=False,
                flags=("--per_device_eval_batch_size",),
                rule="ValueError: The global eval batch size (1 x 4) must be evenly divisible",
                where="swift/rlhf_trainers/args_mixin.py:239 in _init_generation_batch_params",
            ),
        ),
    )


def test_launch_does_not_start_a_stage_the_check_refuses(
    cpu_config: Callable[..., Path], fake_runner: Any, no_gpu: NodeInfo
) -> None:
    path = cpu_config()
    with pytest.raises(PlanError) as caught:
        launch(load_config(path), path, node=no_gpu, runner=fake_runner, check=_refusing)
    text = str(caught.value)
    assert "stage grpo not started: the trainer's own check refused its command line" in text
    assert "grpo: --per_device_eval_batch_size: ValueError: The global eval batch size" in text
    assert "args_mixin.py:239" in text
    assert "swift rlhf" not in fake_runner.tools()
    assert "codegrep-model dataset" in fake_runner.tools()  # the stages before it ran


def test_launch_starts_a_stage_the_check_cannot_judge_and_says_so(
    cpu_config: Callable[..., Path], fake_runner: Any, no_gpu: NodeInfo
) -> None:
    path = cpu_config()
    events: list[Event] = []
    asked: list[str] = []

    def cannot(stages: Any) -> SwiftCheck:
        asked.extend(s.name for s in stages)
        return SwiftCheck(status="cannot", reason=f"{CANNOT} (test)")

    launch(
        load_config(path),
        path,
        node=no_gpu,
        runner=fake_runner,
        check=cannot,
        on_event=events.append,
        sleep=lambda s: None,
    )
    assert asked == ["grpo"]  # only training stages are judged
    assert "swift rlhf" in fake_runner.tools()
    assert [(e.kind, e.message) for e in events if e.kind == "check"] == [
        ("check", f"{CANNOT} (test)")
    ]


def test_launch_force_starts_a_refused_stage(
    cpu_config: Callable[..., Path], fake_runner: Any, no_gpu: NodeInfo
) -> None:
    path = cpu_config()
    launch(
        load_config(path),
        path,
        node=no_gpu,
        runner=fake_runner,
        check=_refusing,
        force=True,
        sleep=lambda s: None,
    )
    assert "swift rlhf" in fake_runner.tools()


def test_the_probe_gets_a_port_of_its_own_and_no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """With vLLM, ms-swift's set_default_ddp_config starts a one-process group on MASTER_PORT
    (29500 by default): a check beside a running training (or another check) met EADDRINUSE."""
    from train_launcher.swift_check import _probe_env

    monkeypatch.setenv("MASTER_PORT", "29500")
    env = _probe_env({"CUDA_VISIBLE_DEVICES": "0,1", "NPROC_PER_NODE": "2", "NODE_RANK": "1"})
    assert env["MASTER_PORT"] != "29500"
    assert 1024 <= int(env["MASTER_PORT"]) <= 65535
    assert env["CUDA_VISIBLE_DEVICES"] == ""
    assert "NPROC_PER_NODE" not in env
    assert "NODE_RANK" not in env


def test_an_error_of_the_machine_is_no_broken_rule(tmp_path: Path) -> None:
    """A network or import error while ms-swift builds its arguments (EADDRINUSE was seen) says
    nothing of the command line: "cannot check", so that launch does not refuse the stage."""
    from train_launcher.swift_check import _verdict

    config, _ = _grpo(tmp_path)
    checks = [{"stage": "grpo", "argv": ["--num_generations", "8"]}]

    def answer(kind: str, message: str) -> dict[str, Any]:
        raw = {"stage": "grpo", "ok": False, "kind": kind, "message": message, "where": "x.py:1"}
        return {"importable": True, "versions": {"ms-swift": "4.6.0"}, "results": [raw]}

    machine = _verdict(
        answer("DistNetworkError", "address already in use"), config, [], checks, {}, Path("py")
    )
    assert machine.status == "cannot"
    assert machine.reason.startswith(
        "cannot check grpo: ms-swift raised DistNetworkError while building its arguments"
    )
    rule = _verdict(
        answer("ValueError", "num_generations (3) ..."), config, [], checks, {}, Path("py")
    )
    assert rule.status == "failed"
    assert rule.problems == [
        "grpo: --num_generations: ValueError: num_generations (3) ... [x.py:1]"
    ]
