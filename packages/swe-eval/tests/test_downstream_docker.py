"""One real SWE-bench harness run, where a Docker daemon and swebench are at hand.

The gold patch of `psf__requests-2317` (SWE-bench Lite) goes through
`swebench.harness.run_evaluation` (the version `downstream plan` pins: 4.1.0), and
`read_harness_report` reads what the harness wrote: the instance must come out resolved. It needs
a Docker daemon, the swebench package and the network (the harness pulls its images and the
dataset), so it is marked `docker` and skips, saying which is missing, everywhere else.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from swe_eval.downstream import read_harness_report

pytestmark = pytest.mark.docker

INSTANCE = "psf__requests-2317"


def _docker_daemon() -> str | None:
    """Why there is no usable Docker daemon, or None when there is one."""
    if shutil.which("docker") is None:
        return "no docker command"
    try:
        proc = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "docker info timed out"
    return None if proc.returncode == 0 else "no Docker daemon answers (docker info failed)"


def test_the_harness_resolves_the_gold_patch(tmp_path: Path, shared_data: Path) -> None:
    why = _docker_daemon()
    if why is not None:
        pytest.skip(f"needs a Docker daemon: {why}")
    if importlib.util.find_spec("swebench") is None:
        pytest.skip("needs swebench (pip install 'swebench==4.1.0')")
    lite = [json.loads(x) for x in (shared_data / "swebench" / "lite.jsonl").open()]
    row = next(r for r in lite if r["instance_id"] == INSTANCE)
    predictions = tmp_path / "gold.jsonl"
    predictions.write_text(
        json.dumps({"instance_id": INSTANCE, "model_name_or_path": "gold",
                    "model_patch": row["patch"]}) + "\n"
    )  # fmt: skip
    run_id = "swe-eval-docker-test"
    proc = subprocess.run(
        [
            sys.executable, "-m", "swebench.harness.run_evaluation",
            "--dataset_name", "princeton-nlp/SWE-bench_Lite", "--split", "test",
            "--predictions_path", str(predictions), "--instance_ids", INSTANCE,
            "--max_workers", "1", "--timeout", "1800", "--run_id", run_id,
        ],
        cwd=tmp_path, capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    summaries = list(tmp_path.glob(f"*.{run_id}.json"))
    assert len(summaries) == 1, sorted(p.name for p in tmp_path.iterdir())
    report = read_harness_report(summaries[0])
    assert report.verdicts[INSTANCE].resolved
