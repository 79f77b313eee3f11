"""The answer-turn experiment's decision rule (benchmarks/learn_answer.py), as the README
states it: learned only when both seeds' intervals for GRPO − SFT control lie above 0, and a
negative counts only where the test had 80% power for the named effect."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "learn_answer.py"


@pytest.fixture(scope="module")
def la() -> ModuleType:
    spec = importlib.util.spec_from_file_location("learn_answer_under_test", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _diff(lo: float, hi: float, sd: float) -> dict[str, Any]:
    return {"mean": (lo + hi) / 2, "interval": [lo, hi], "sd": sd}


def test_power_matches_the_mde(la: ModuleType) -> None:
    # the MDE at 80% power is, by definition, the effect detected with power 0.8
    n, sd = 100, 0.5
    assert la.power(n, sd, la.mde(n, sd)) == pytest.approx(0.8, abs=1e-9)
    assert la.power(n, sd, 0.05) < 0.8 < la.power(n, sd, 0.2)


def test_both_seeds_above_zero_is_learned(la: ModuleType) -> None:
    d = {"grpo_s0-sft_control": _diff(0.02, 0.2, 0.4), "grpo_s1-sft_control": _diff(0.01, 0.3, 0.4)}
    assert la.decide(d, 100)["verdict"] == "GRPO learned"


def test_one_seed_above_zero_is_inconclusive(la: ModuleType) -> None:
    d = {"grpo_s0-sft_control": _diff(0.02, 0.2, 0.4), "grpo_s1-sft_control": _diff(-0.1, 0.1, 0.4)}
    assert la.decide(d, 100)["verdict"] == "inconclusive"


def test_a_negative_counts_only_with_power(la: ModuleType) -> None:
    powered = {f"grpo_s{s}-sft_control": _diff(-0.1, 0.05, 0.4) for s in (0, 1)}
    weak = {f"grpo_s{s}-sft_control": _diff(-0.1, 0.05, 0.7) for s in (0, 1)}
    assert la.decide(powered, 100)["verdict"] == f"no effect of {la.EFFECT} or more"
    assert la.decide(weak, 100)["verdict"] == "underpowered"


def test_no_verdict_before_both_seeds_ran(la: ModuleType) -> None:
    assert la.decide({}, 100) is None
    one = la.decide({"grpo_s0-sft_control": _diff(0.1, 0.2, 0.3)}, 100)
    assert one["verdict"] == "not decided"
    assert "grpo_s1" in one["why"]
    assert list(one["seeds"]) == ["grpo_s0"]


def test_the_committed_adapter_form_is_bfloat16_with_its_configs(
    la: ModuleType, tmp_path: Path
) -> None:
    """`learn_answer.py bf16`: the GRPO arms are merged from this copy, so it must hold the
    checkpoint's weights rounded to bfloat16 (nothing else changed) and its configs."""
    torch = pytest.importorskip("torch", reason="needs torch (the ms-swift venv)")
    st = pytest.importorskip("safetensors.torch", reason="needs safetensors (the ms-swift venv)")
    src, dst = tmp_path / "checkpoint-40", tmp_path / "adapters" / "grpo-s1"
    src.mkdir()
    weights = {
        "a.lora_A.weight": torch.randn(8, 16, dtype=torch.float32),
        "a.lora_B.weight": torch.randn(16, 8, dtype=torch.float32),
        "steps": torch.arange(3),
    }
    st.save_file(weights, src / "adapter_model.safetensors")
    for name in ("adapter_config.json", "args.json", "trainer_state.json"):
        (src / name).write_text(f'{{"name": "{name}"}}\n')
    (src / "optimizer.pt").write_bytes(b"not copied")
    la.bf16_adapter(src, dst)
    got = st.load_file(dst / "adapter_model.safetensors")
    assert set(got) == set(weights)
    for key in ("a.lora_A.weight", "a.lora_B.weight"):
        assert got[key].dtype == torch.bfloat16
        assert torch.equal(got[key], weights[key].to(torch.bfloat16))
    assert got["steps"].dtype == torch.int64
    assert torch.equal(got["steps"], weights["steps"])
    assert sorted(p.name for p in dst.iterdir()) == [
        "adapter_config.json", "adapter_model.safetensors", "args.json", "trainer_state.json"
    ]  # fmt: skip
    assert (dst / "args.json").read_text() == (src / "args.json").read_text()
