"""`plan --check` with the pinned ms-swift (the launch tier runs these in the swift venv; the
workspace has no ms-swift and skips them): the shipped configs pass, the rules a node would hit
are refused naming the stage, the flag and the rule, and every rule the launcher carries or
feeds (module docstrings of `train_launcher.swift_check` and `_swift_probe`) is pinned to the
ms-swift source it comes from, so that an ms-swift that changes it fails here, not on a node.

    VENV/bin/python -m pytest -o addopts="" --import-mode=importlib \
        apps/train-launcher/tests/with_swift
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest

pytest.importorskip("swift.arguments", reason="needs ms-swift (the launch tier's venv)")

from train_launcher import NodeInfo, RunConfig, build_plan, load_config
from train_launcher.cli import app
from train_launcher.swift_check import check_stages
from typer.testing import CliRunner

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SWIFT = Path(sys.executable).with_name("swift")


def _load(name: str, tmp_path: Path, *sets: str) -> RunConfig:
    return load_config(CONFIGS / name, [f"base_dir={tmp_path}", f"swift.executable={SWIFT}", *sets])


def _source(obj: object) -> str:
    return inspect.getsource(obj)  # type: ignore[arg-type]


# --- the shipped configs --------------------------------------------------------------------


def test_the_paper_config_passes_plan_check(tmp_path: Path) -> None:
    run = CliRunner().invoke(
        app,
        [
            "plan",
            "--check",
            "--config",
            str(CONFIGS / "paper-8xb200.yaml"),
            "--set",
            f"base_dir={tmp_path}",
            "--set",
            f"swift.executable={SWIFT}",
        ],
    )
    assert run.exit_code == 0, run.output
    assert "trainer check: passed (ms-swift 4.6.0, trl 0.29.1" in run.output
    assert "world size 8)" in run.output
    assert "  grpo: passed" in run.output


def test_the_single_gpu_config_passes_with_the_eval_batch_of_the_rule(tmp_path: Path) -> None:
    config = _load("single-gpu.yaml", tmp_path)
    plan = build_plan(config, CONFIGS / "single-gpu.yaml", node=NodeInfo())
    verdict = check_stages(config, plan.stages)
    assert verdict.status == "passed", verdict.lines()
    (grpo,) = verdict.stages
    assert grpo.built["world_size"] == 1
    assert grpo.built["per_device_eval_batch_size"] == 2  # num_generations_eval 2
    assert grpo.built["generation_batch_size"] == 16  # 2 per device x 1 x 8 accumulation
    assert grpo.built["sleep_level"] == 1


# --- what a node would have hit -------------------------------------------------------------


def test_three_generations_on_the_paper_config_is_refused(tmp_path: Path) -> None:
    """The config's own rule refuses it first (exit 2); without it, ms-swift's own."""
    run = CliRunner().invoke(
        app,
        [
            "plan",
            "--check",
            "--config",
            str(CONFIGS / "paper-8xb200.yaml"),
            "--set",
            f"base_dir={tmp_path}",
            "--set",
            "train.num_generations=3",
        ],
    )
    assert run.exit_code == 2
    assert "train.num_generations: 4 per device x 8 trainer processes x 2 accumulation" in (
        run.output
    )
    assert "generation_batch_size must be divisible by num_generations" in run.output
    config = _load("paper-8xb200.yaml", tmp_path)
    unchecked = config.model_copy(
        update={"train": config.train.model_copy(update={"num_generations": 3})}
    )
    plan = build_plan(unchecked, CONFIGS / "paper-8xb200.yaml", node=NodeInfo())
    verdict = check_stages(unchecked, plan.stages)
    assert verdict.status == "failed"
    (problem,) = verdict.problems
    assert problem.startswith("grpo: --num_generations, --per_device_train_batch_size, ")
    assert "generation_batch_size (64) must be evenly divisible by num_generations (3)" in problem
    assert "swift/rlhf_trainers/args_mixin.py:" in problem
    assert "in _init_generation_batch_params]" in problem


def test_the_old_single_gpu_eval_batch_is_refused_by_ms_swift(tmp_path: Path) -> None:
    """Defect 1 as the node met it: the train batch (4) as the eval batch on one process."""
    config = _load(
        "single-gpu.yaml",
        tmp_path,
        "train.num_generations_eval=null",
        "train.extra_args=[--per_device_eval_batch_size, '4']",
    )
    plan = build_plan(config, CONFIGS / "single-gpu.yaml", node=NodeInfo())
    verdict = check_stages(config, plan.stages)
    assert verdict.status == "failed"
    (problem,) = verdict.problems
    assert problem.startswith("grpo: --num_generations, --per_device_eval_batch_size: ValueError")
    assert "The global eval batch size (1 x 4) must be evenly divisible" in problem


# --- the seams and the carried rules, pinned to the source ----------------------------------


def test_the_world_size_ms_swift_reads_is_the_trainers_property() -> None:
    """Fed: `TrainingArguments.world_size` (accelerate's process count) is the configured one."""
    import transformers
    from swift.rlhf_trainers.args_mixin import RolloutTrainerArgumentsMixin

    rule = _source(RolloutTrainerArgumentsMixin._init_generation_batch_params)
    assert "num_processes = self.world_size" in rule
    assert "self.per_device_eval_batch_size * num_processes" in rule  # RunConfig.eval_batch_size
    assert "generation_batch_size % num_generations" in rule
    world = transformers.TrainingArguments.world_size
    assert isinstance(world, property)
    assert "distributed_state.num_processes" in _source(world.fget)


def test_bf16_is_judged_by_the_gpu_check_that_is_fed() -> None:
    import transformers.training_args as training_args

    validate = _source(training_args.TrainingArguments._validate_args)
    assert "not is_torch_bf16_gpu_available()" in validate
    assert callable(training_args.is_torch_bf16_gpu_available)


def test_the_model_download_is_the_seam_the_stand_in_replaces() -> None:
    import swift.model.model_meta as model_meta

    assert "model_dir = safe_snapshot_download(" in _source(model_meta.get_model_info_meta)
    assert callable(model_meta.safe_snapshot_download)


def test_server_mode_connects_only_in_init_external_vllm() -> None:
    from swift.arguments import RLHFArguments

    assert "init_communicator" in _source(RLHFArguments._init_external_vllm)
    assert "self._init_external_vllm()" in _source(RLHFArguments._init_rollout)


def test_deepspeed_names_are_ms_swifts() -> None:
    import swift
    from swift.arguments import SftArguments

    source = _source(SftArguments._init_deepspeed)
    assert "require_version('deepspeed')" in source
    assert "'zero0', 'zero1', 'zero2', 'zero3', 'zero2_offload', 'zero3_offload'" in source
    assert "is_mp()" in source  # the carried device_map rule, DeepSpeed side
    folder = Path(swift.__file__).parent / "config"
    assert (folder / "zero3.json").is_file()


def test_the_device_map_rule_is_ms_swifts() -> None:
    from swift.arguments import RLHFArguments
    from swift.utils import env

    is_mp = _source(env.is_mp)
    assert "n_gpu % local_world_size == 0" in is_mp
    assert "n_gpu // local_world_size >= 2" in is_mp
    assert "is_mp() and self.use_vllm" in _source(RLHFArguments._check_grpo)


def test_colocate_tensor_parallel_must_divide_the_processes_in_ms_swift() -> None:
    from swift.rlhf_trainers.rollout_mixin import RolloutTrainerMixin

    source = _source(RolloutTrainerMixin._prepare_vllm)
    assert "self.accelerator.num_processes % self.vllm_tensor_parallel_size == 0" in source
    assert "must divide world size" in source


def test_colocate_gives_vllm_the_lora_rank_and_the_server_its_own_flag() -> None:
    """Why the colocate plan writes no --vllm_max_lora_rank and `swift rollout` gets it."""
    import swift
    from swift.rlhf_trainers.rollout_mixin import RolloutTrainerMixin

    assert "'max_lora_rank': args.lora_rank" in _source(RolloutTrainerMixin._prepare_vllm_engine)
    assert "vllm_max_lora_rank" not in _source(RolloutTrainerMixin)
    # `swift rollout` (read as text: importing it imports vLLM, which CI has not)
    rollout = Path(swift.__file__).parent / "pipelines" / "infer" / "rollout.py"
    assert "'max_lora_rank': args.vllm_max_lora_rank" in rollout.read_text(encoding="utf-8")


def test_offload_is_for_the_rollout_only() -> None:
    """The estimate's rule: --offload_model/--offload_optimizer move the weights and Adam's
    moments to the host while vLLM generates and back for the update."""
    from swift.rlhf_trainers.grpo_trainer import GRPOTrainer

    source = _source(GRPOTrainer.offload_context)
    before, after = source.split("yield", 1)
    assert "self.offload_optimizer()" in before
    assert "self.load_optimizer()" in after
    assert "self.offload_model(model)" in before
    assert "self.load_model(model)" in after


def test_sleep_level_is_forced_to_0_without_colocated_vllm() -> None:
    from swift.arguments import RLHFArguments

    source = _source(RLHFArguments._init_grpo)
    assert "if self.async_generate or not self.use_vllm or self.vllm_mode == 'server':" in source
    assert "self.sleep_level = 0" in source
