"""Probing the node: `nvidia-smi` as found on PATH (here a script playing it), and free space."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest
from train_launcher.node import existing_parent, free_bytes, probe_gpus, probe_node


def _fake_smi(folder: Path, body: str, monkeypatch: pytest.MonkeyPatch) -> None:
    smi = folder / "nvidia-smi"
    smi.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(folder))


def test_gpus_from_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = "0, NVIDIA B200, 183359\\n1, NVIDIA B200, 183359\\n"
    _fake_smi(
        tmp_path,
        f"assert '--format=csv,noheader,nounits' in sys.argv\nprint('{lines}')",
        monkeypatch,
    )
    gpus, said = probe_gpus()
    assert [(g.index, g.name, g.memory_mib) for g in gpus] == [
        (0, "NVIDIA B200", 183359),
        (1, "NVIDIA B200", 183359),
    ]
    assert said == "nvidia-smi: 2 GPU(s), NVIDIA B200, 179 GiB each"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            'print("NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver")'
            "\nsys.exit(9)",
            "nvidia-smi failed: NVIDIA-SMI has failed",
        ),
        ("print('No devices were found')", "output not understood"),
        ("print('')", "nvidia-smi lists none"),
    ],
    ids=["driver-down", "garbage", "empty"],
)
def test_a_broken_nvidia_smi_is_no_gpu_and_a_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, reason: str
) -> None:
    _fake_smi(tmp_path, body, monkeypatch)
    gpus, said = probe_gpus()
    assert gpus == ()
    assert said.startswith("no GPU here (")
    assert reason in said


def test_no_nvidia_smi_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    node = probe_node([tmp_path / "not" / "made" / "yet"])
    assert not node.has_gpu
    assert node.gpu_probe == "no GPU here (nvidia-smi not found)"
    assert node.free[str(tmp_path / "not" / "made" / "yet")] > 0


def test_free_space_is_measured_where_the_path_would_be(tmp_path: Path) -> None:
    assert existing_parent(tmp_path / "a" / "b") == tmp_path
    n = free_bytes(tmp_path / "a" / "b")
    assert n is not None
    assert n > 0


def test_plan_on_a_node_with_too_few_gpus_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from train_launcher.cli import app
    from typer.testing import CliRunner

    _fake_smi(tmp_path, "print('0, NVIDIA H100 80GB HBM3, 81559')", monkeypatch)
    instances = tmp_path / "i.jsonl"
    instances.write_text('{"instance_id": "a-1", "repo": "a/b", "base_commit": "c"}\n')
    config = tmp_path / "c.yaml"
    config.write_text(
        f"output_dir: out\ndata: {{instances: {instances}, val_fraction: 0.1}}\n"
        f"evaluation: {{instances: {instances}}}\n"
    )
    result = CliRunner().invoke(app, ["plan", "--config", str(config)])
    assert result.exit_code == 2
    assert "nvidia-smi: 1 GPU(s), NVIDIA H100 80GB HBM3, 80 GiB each; the config wants 8" in (
        result.stderr
    )
    # memory is checked against this node's GPUs, not the config's B200 figure
    assert "79.6 GiB per GPU (this node (nvidia-smi))" in result.stdout
    assert "/ 0.45 (NVIDIA H100 80GB HBM3 vs B200)" in result.stdout
