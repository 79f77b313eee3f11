"""ci/gpu-smoke.sh says what it ran and never passes on a smaller path than it was asked for.
No GPU here: the refusals run the script itself; the verdict runs its own Python block on run
folders laid out as ms-swift writes them (args.json, logging.jsonl, the checkpoint)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "ci" / "gpu-smoke.sh"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """PATH with a `swift` whose Python (beside it) is this one, which has no vLLM, and the
    workspace's tools; a model folder with a config.json."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    swift = bin_dir / "swift"
    swift.write_text("#!/bin/sh\nexit 0\n")
    swift.chmod(0o755)
    python = bin_dir / "python"
    if not python.exists():
        python.symlink_to(sys.executable)
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}")
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    env = {k: v for k, v in os.environ.items() if k not in ("MODE", "ENGINE", "DRY_RUN", "VENV")}
    return {**env, "PATH": path, "MODEL": str(model), **extra}


def _smoke(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), str(tmp_path / "smoke")],
        env=_env(tmp_path, **extra),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_without_vllm_the_default_mode_stops_rather_than_passing(tmp_path: Path) -> None:
    """It used to pick ENGINE=none quietly and could print PASS without vLLM."""
    run = _smoke(tmp_path)
    assert run.returncode == 2
    assert "MODE=one needs vLLM, which does not import in" in run.stderr
    assert "PASS" not in run.stdout + run.stderr
    run = _smoke(tmp_path, MODE="paper")
    assert run.returncode == 2
    assert "MODE=paper needs vLLM" in run.stderr


def test_the_old_engine_switch_is_refused(tmp_path: Path) -> None:
    run = _smoke(tmp_path, ENGINE="none")
    assert run.returncode == 2
    assert "ENGINE is gone: MODE=one|paper|transformers says what runs" in run.stderr


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_without_a_gpu_the_transformers_mode_stops(tmp_path: Path) -> None:
    run = _smoke(tmp_path, MODE="transformers")
    assert run.returncode == 2
    assert "no GPU (nvidia-smi lists none; DRY_RUN=1 to plan only)" in run.stderr


# --- the verdict ----------------------------------------------------------------------------


def _verdict_block() -> str:
    text = SCRIPT.read_text()
    blocks = re.findall(r"<<'PY'\n(.*?)\nPY\n", text, flags=re.S)
    return str(blocks[-1])


def _run_folder(tmp_path: Path, args: dict[str, Any], steps: int = 3) -> Path:
    grpo = tmp_path / "out" / "grpo"
    (grpo / f"checkpoint-{steps}").mkdir(parents=True)
    (grpo / f"checkpoint-{steps}" / "adapter_model.safetensors").write_bytes(b"x")
    (grpo / "args.json").write_text(json.dumps(args))
    rows = [
        {"global_step/max_steps": f"{i}/{steps}", "loss": 0.1, "kl": 0.01, "reward": 0.5}
        for i in range(1, steps + 1)
    ]
    (grpo / "logging.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"verdict": "OK: no alarm"}))
    return grpo


def _verdict(
    tmp_path: Path, grpo: Path, mode: str, engine: str, sleep: str, zero: str, procs: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-",
            str(grpo),
            "3",
            "0",
            "0",
            str(tmp_path / "report.json"),
            mode,
            engine,
            "0.33.0" if engine == "vllm" else "",
            sleep,
            zero,
            procs,
            "420",
        ],
        input=_verdict_block(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


PAPER_ARGS = {
    "use_vllm": True,
    "vllm_mode": "colocate",
    "sleep_level": 1,
    "deepspeed": {"zero_optimization": {"stage": 3}},
    "global_world_size": 2,
    "vllm_enable_lora": True,
    "offload_model": True,
    "offload_optimizer": True,
}


def test_the_paper_mode_passes_saying_what_ran(tmp_path: Path) -> None:
    grpo = _run_folder(tmp_path, PAPER_ARGS)
    run = _verdict(tmp_path, grpo, "paper", "vllm", "1", "zero3", "2")
    assert run.returncode == 0, run.stdout + run.stderr
    last = run.stdout.strip().splitlines()[-1]
    assert last.startswith("GPU SMOKE (paper): PASS [engine vllm 0.33.0 colocate, sleep level 1, ")
    assert "ZeRO stage 3, 2 process(es), LoRA sync on" in last


def test_a_run_on_another_path_than_asked_fails(tmp_path: Path) -> None:
    """ms-swift's own args.json is the judge: a paper-mode run that ran one process without
    ZeRO at sleep level 0 is a FAIL naming each difference."""
    ran = {**PAPER_ARGS, "sleep_level": 0, "deepspeed": None, "global_world_size": 1}
    grpo = _run_folder(tmp_path, ran)
    run = _verdict(tmp_path, grpo, "paper", "vllm", "1", "zero3", "2")
    assert run.returncode == 1
    last = run.stdout.strip().splitlines()[-1]
    assert last.startswith("GPU SMOKE (paper): FAIL: ")
    assert "MODE=paper asked sleep_level=1, ms-swift ran 0" in last
    assert "MODE=paper asked zero_stage=3, ms-swift ran None" in last
    assert "MODE=paper asked processes=2, ms-swift ran 1" in last


def test_the_transformers_mode_says_what_it_did_not_exercise(tmp_path: Path) -> None:
    ran = {"use_vllm": False, "sleep_level": 0, "deepspeed": None, "global_world_size": 1}
    grpo = _run_folder(tmp_path, ran)
    run = _verdict(tmp_path, grpo, "transformers", "none", "0", "null", "1")
    assert run.returncode == 0, run.stdout + run.stderr
    last = run.stdout.strip().splitlines()[-1]
    assert "engine transformers (the trainer generates)" in last
    assert "vLLM, its sleep and the LoRA weight sync were NOT exercised" in last


def test_no_args_json_is_no_pass(tmp_path: Path) -> None:
    grpo = _run_folder(tmp_path, PAPER_ARGS)
    (grpo / "args.json").unlink()
    run = _verdict(tmp_path, grpo, "one", "vllm", "1", "null", "1")
    assert run.returncode == 1
    assert "what ran is unknown" in run.stdout
