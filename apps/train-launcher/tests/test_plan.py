"""The plan: the exact commands of each stage, per node, and the checks against the node."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from codegrep_model.train import qwen3_chat_template_path, swift_plugin_path
from train_launcher import NodeInfo, NodePlan, RunConfig, build_plan, load_config
from train_launcher.cli import app
from train_launcher.errors import ConfigError
from train_launcher.estimate import PAPER_SECONDS_PER_STEP, model_size
from train_launcher.node import GpuInfo
from train_launcher.plan import NodeCommand
from typer.testing import CliRunner

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _paper(tmp_path: Path, *extra: str) -> tuple[RunConfig, Path]:
    instances = tmp_path / "instances.jsonl"
    instances.write_text(
        json.dumps({"instance_id": "psf__requests-1", "repo": "psf/requests", "base_commit": "a"})
        + "\n"
    )
    heldout = tmp_path / "heldout.jsonl"
    heldout.write_text(instances.read_text())
    traj = tmp_path / "t.jsonl"
    traj.write_text("{}\n")
    path = CONFIGS / "paper-8xb200.yaml"
    overrides = [
        f"base_dir={tmp_path}",
        f"data.instances={instances}",
        f"data.trajectories=[{traj}]",
        f"evaluation.instances={heldout}",
        "data.fetch=[]",
        *extra,
    ]
    return load_config(path, overrides), path


def _pairs(argv: tuple[str, ...]) -> dict[str, str]:
    """`--flag value` pairs of an argv (the last value of a flag given twice)."""
    out = {}
    for i, token in enumerate(argv[:-1]):
        if token.startswith("-") and not argv[i + 1].startswith("--"):
            out[token] = argv[i + 1]
    return out


def _trainers(plan: NodePlan, stage: str = "grpo") -> list[NodeCommand]:
    return [c for c in plan.stage(stage).commands if not c.background]


def test_the_paper_plan_holds_the_paper_runs_flags(tmp_path: Path, b200_node: NodeInfo) -> None:
    config, path = _paper(tmp_path)
    plan = build_plan(config, path, node=b200_node)
    (grpo,) = _trainers(plan)
    assert grpo.argv[:4] == ("swift", "rlhf", "--rlhf_type", "grpo")
    flags = _pairs(grpo.argv)
    expected = {
        "--model": "Qwen/Qwen3-14B",
        "--torch_dtype": "bfloat16",
        "--tuner_type": "lora",
        "--lora_rank": "32",
        "--lora_alpha": "64",
        "--target_modules": "all-linear",
        "--use_vllm": "true",
        "--vllm_mode": "colocate",
        "--vllm_gpu_memory_utilization": "0.45",
        "--vllm_enable_lora": "true",
        "--sleep_level": "1",
        "--offload_optimizer": "true",
        "--offload_model": "true",
        "--deepspeed": "zero3",
        "--num_generations": "8",
        "--multi_turn_scheduler": "codegrep_tools",
        "--max_turns": "4",
        "--reward_funcs": "codegrep_v3",
        "--external_plugins": str(swift_plugin_path()),
        "--max_steps": "2000",
        "--save_steps": "50",
        "--eval_steps": "50",
        "--early_stop_interval": "5",
        "--metric_for_best_model": "reward",
        "--learning_rate": "1e-05",
        "--add_version": "false",
        "--output_dir": str(tmp_path / "runs" / "paper-8xb200" / "grpo"),
        "--dataset": str(tmp_path / "runs" / "paper-8xb200" / "data" / "grpo" / "train.jsonl"),
        "--val_dataset": str(
            tmp_path / "runs" / "paper-8xb200" / "data" / "grpo" / "val_eval.jsonl"
        ),
    }
    assert {k: flags.get(k) for k in expected} == expected
    assert "--resume_from_checkpoint" not in grpo.argv
    # colocate: ms-swift gives vLLM --lora_rank and ignores --vllm_max_lora_rank
    assert "--vllm_max_lora_rank" not in grpo.argv
    assert grpo.env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
    assert grpo.env["NPROC_PER_NODE"] == "8"
    assert "NNODES" not in grpo.env
    assert plan.plugin == swift_plugin_path()
    assert plan.plugin.is_file()
    assert not plan.errors, plan.errors


def test_the_stages_and_their_commands(tmp_path: Path, b200_node: NodeInfo) -> None:
    config, path = _paper(tmp_path)
    plan = build_plan(config, path, node=b200_node)
    names = [s.name for s in plan.stages]
    assert names == ["labels", "prepare", "datasets", "grpo", "eval:checkpoint-N", "eval-summary"]
    (mine,) = plan.stage("labels").commands
    assert Path(mine.argv[0]).name == "catm"
    assert mine.argv[1] == "mine"
    assert str(config.data.trajectories[0]) in mine.argv
    prepare = plan.stage("prepare").commands
    assert [_pairs(c.argv)["-i"] for c in prepare] == [
        str(config.data.instances),
        str(config.evaluation.instances),
    ]
    build = plan.stage("datasets").commands[0]
    assert build.argv[1:3] == ("dataset", "grpo")
    assert _pairs(build.argv)["--labels"] == str(config.output_dir / "labels" / "labels.jsonl")
    assert _pairs(build.argv)["--val-fraction"] == "0.05"
    evaluate = plan.stage("eval:checkpoint-N")
    server, predict, score = evaluate.commands
    assert server.background
    assert server.argv[:2] == ("vllm", "serve")
    assert "--enable-lora" in server.argv
    assert "--enable-auto-tool-choice" in server.argv
    # a Qwen3 trained with ms-swift's qwen3 template is served with the template that keeps
    # every turn's <think> block, as training encoded it
    assert _pairs(server.argv)["--chat-template"] == str(qwen3_chat_template_path())
    assert server.ready_url == "http://127.0.0.1:8000/v1/models"
    assert predict.argv[1:4] == ("predict", "-r", "agent")
    assert _pairs(predict.argv)["--base-url"] == "http://127.0.0.1:8000/v1"
    assert _pairs(predict.argv)["-i"] == str(config.evaluation.instances)
    assert score.argv[1] == "retrieval"
    assert _pairs(score.argv)["-f"] == "json"
    assert evaluate.late == ("grpo checkpoints",)


def test_several_nodes_get_their_own_torchrun_variables(tmp_path: Path, no_gpu: NodeInfo) -> None:
    config, path = _paper(tmp_path, "cluster.nodes=2", "cluster.master_addr=10.0.0.1")
    plan = build_plan(config, path, node=no_gpu)
    commands = _trainers(plan)
    assert [c.node_rank for c in commands] == [0, 1]
    for rank, c in enumerate(commands):
        assert c.env["NNODES"] == "2"
        assert c.env["NODE_RANK"] == str(rank)
        assert c.env["MASTER_ADDR"] == "10.0.0.1"
        assert c.env["MASTER_PORT"] == "29500"
        assert c.env["NPROC_PER_NODE"] == "8"
    assert commands[0].argv == commands[1].argv
    # one node's plan: the training stages only, with that node's rank
    second = build_plan(config, path, node=no_gpu, node_rank=1)
    assert [s.name for s in second.stages] == ["grpo"]
    (only,) = second.stage("grpo").commands
    assert only.env["NODE_RANK"] == "1"
    assert not any(f.level == "error" for f in plan.findings), plan.findings


def test_several_nodes_need_a_reachable_master(tmp_path: Path, no_gpu: NodeInfo) -> None:
    config, path = _paper(tmp_path, "cluster.nodes=2")
    plan = build_plan(config, path, node=no_gpu)
    assert any(f.topic == "nodes" and "master_addr" in f.message for f in plan.errors)


def test_server_mode_runs_swift_rollout_on_gpus_of_its_own(
    tmp_path: Path, b200_node: NodeInfo
) -> None:
    config, path = _paper(tmp_path, "rollout.mode=server", "rollout.server.gpus=2")
    plan = build_plan(config, path, node=b200_node)
    server, trainer = plan.stage("grpo").commands
    assert server.background
    assert server.argv[:2] == ("swift", "rollout")
    assert server.env["CUDA_VISIBLE_DEVICES"] == "6,7"
    s = _pairs(server.argv)
    assert s["--vllm_data_parallel_size"] == "2"
    assert s["--multi_turn_scheduler"] == "codegrep_tools"
    assert s["--max_turns"] == "4"
    assert s["--external_plugins"] == str(swift_plugin_path())
    assert s["--vllm_use_async_engine"] == "true"
    assert s["--port"] == "8001"
    assert server.ready_url == "http://127.0.0.1:8001/health/"
    t = _pairs(trainer.argv)
    assert t["--vllm_mode"] == "server"
    assert t["--vllm_server_host"] == "127.0.0.1"
    assert t["--vllm_server_port"] == "8001"
    assert t["--vllm_server_pass_dataset"] == "true"
    assert "--multi_turn_scheduler" not in trainer.argv
    assert "--sleep_level" not in trainer.argv
    assert trainer.env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5"
    assert trainer.env["NPROC_PER_NODE"] == "6"
    # `swift rollout` builds its own vLLM engine and reads --vllm_max_lora_rank
    assert s["--vllm_max_lora_rank"] == "32"


def _eval_batch(plan: NodePlan) -> int:
    (grpo,) = _trainers(plan)
    return int(_pairs(grpo.argv)["--per_device_eval_batch_size"])


def test_the_single_gpu_eval_batch_meets_ms_swifts_rule(tmp_path: Path) -> None:
    """ms-swift (swift/rlhf_trainers/args_mixin.py, `_init_generation_batch_params`, from
    `GRPOConfig.__post_init__`) raises unless eval batch x processes is a multiple of
    num_generations. The plan wrote the train batch (4) on one GPU with 8 generations."""
    path = CONFIGS / "single-gpu.yaml"
    # the single-GPU config as it was: 4 per device, 8 generations for validation too
    old = ["train.num_generations_eval=null", "train.per_device_train_batch_size=4"]
    config = load_config(path, [f"base_dir={tmp_path}", "data.fetch=[]", *old])
    plan = build_plan(config, path, node=NodeInfo(gpus=(), gpu_probe="no GPU here"))
    assert config.trainer_world_size == 1
    assert config.train.num_generations == 8
    assert _eval_batch(plan) == 8  # the smallest size >= the train batch (4) that meets it
    # as shipped: 2 generations per validation prompt (--num_generations_eval), batch 2
    config = load_config(path, [f"base_dir={tmp_path}", "data.fetch=[]"])
    plan = build_plan(config, path, node=NodeInfo(gpus=(), gpu_probe="no GPU here"))
    (grpo,) = _trainers(plan)
    assert _pairs(grpo.argv)["--num_generations_eval"] == "2"
    assert _eval_batch(plan) == 2


@pytest.mark.parametrize(
    ("sets", "expected"),
    [
        ((), 4),  # 8 processes: 4 x 8 is a multiple of 8
        (("cluster.gpus_per_node=2", "train.gradient_accumulation_steps=8"), 4),  # 4 x 2
        (("cluster.gpus_per_node=3", "train.num_generations=6"), 4),  # 4 x 3 = 12
        (("cluster.gpus_per_node=3",), 8),  # 4 x 3 = 12 is not a multiple of 8; 8 x 3 is
        (("cluster.gpus_per_node=1",), 8),
        (("train.per_device_eval_batch_size=2",), 2),  # given, and 2 x 8 meets it
    ],
)
def test_the_eval_batch_is_chosen_by_the_rule(
    tmp_path: Path, b200_node: NodeInfo, sets: tuple[str, ...], expected: int
) -> None:
    config, path = _paper(tmp_path, *sets)
    batch = _eval_batch(build_plan(config, path, node=b200_node))
    assert batch == expected
    assert (batch * config.trainer_world_size) % config.train.num_generations == 0


def test_an_eval_batch_that_breaks_the_rule_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        _paper(tmp_path, "cluster.gpus_per_node=1", "train.per_device_eval_batch_size=4")
    text = "\n".join(caught.value.lines())
    assert "train.per_device_eval_batch_size" in text
    assert "multiple of 8 generations" in text


def test_the_cpu_plan_uses_no_gpu_and_no_vllm(
    cpu_config: Callable[..., Path], no_gpu: NodeInfo
) -> None:
    path = cpu_config(sft={"enabled": True})
    config = load_config(path)
    plan = build_plan(config, path, node=no_gpu)
    names = [s.name for s in plan.stages]
    assert names[:6] == ["labels", "prepare", "datasets", "sft-data", "sft", "grpo"]
    (grpo,) = _trainers(plan)
    flags = _pairs(grpo.argv)
    assert flags["--use_vllm"] == "false"
    assert grpo.env["CUDA_VISIBLE_DEVICES"] == ""
    for absent in ("--deepspeed", "--offload_optimizer", "--vllm_mode", "NPROC_PER_NODE"):
        assert absent not in grpo.argv
        assert absent not in grpo.env
    # the SFT adapter is not there yet: a placeholder, and the stage waits for it
    assert flags["--adapters"].startswith("<")
    assert plan.stage("grpo").late == ("sft checkpoint",)
    batch, rows = plan.stage("sft-data").commands
    assert batch.argv[1] == "batch"
    assert "--base-url" not in batch.argv
    assert rows.argv[1:3] == ("dataset", "sft")
    server = plan.stage("eval:checkpoint-N").commands[0]
    assert server.argv[:2] == ("swift", "deploy")
    assert _pairs(server.argv)["--infer_backend"] == "pt"
    assert not plan.errors, plan.errors


def test_no_validation_split_means_no_eval_during_training(
    cpu_config: Callable[..., Path], no_gpu: NodeInfo
) -> None:
    path = cpu_config(data={"val_repos": [], "val_fraction": 0.0}, train={"early_stopping": None})
    plan = build_plan(load_config(path), path, node=no_gpu)
    (grpo,) = _trainers(plan)
    assert "--val_dataset" not in grpo.argv
    assert _pairs(grpo.argv)["--eval_strategy"] == "no"
    assert "--early_stop_interval" not in grpo.argv
    stopping = cpu_config(data={"val_repos": [], "val_fraction": 0.0})
    plan = build_plan(load_config(stopping), stopping, node=no_gpu)
    assert any(f.topic == "early stopping" for f in plan.errors)


def test_no_gpu_here_is_a_warning_for_a_gpu_config(tmp_path: Path, no_gpu: NodeInfo) -> None:
    config, path = _paper(tmp_path)
    plan = build_plan(config, path, node=no_gpu)
    gpu = [f for f in plan.findings if f.topic == "gpu"]
    assert [f.level for f in gpu] == ["warning"]
    assert "no GPU here" in gpu[0].message
    assert plan.estimates.gpu is not None
    assert plan.estimates.gpu.memory_from.startswith("cluster.gpu_memory_gib")


def test_too_few_gpus_or_too_little_memory_are_errors(tmp_path: Path) -> None:
    config, path = _paper(tmp_path)
    two = NodeInfo(gpus=tuple(GpuInfo(i, "NVIDIA H100", 81559) for i in range(2)), gpu_probe="2")
    plan = build_plan(config, path, node=two)
    assert any(f.topic == "gpu" and f.level == "error" for f in plan.findings)
    big, path = _paper(tmp_path, "model.path=Qwen/Qwen3-32B", "rollout.gpu_memory_utilization=0.2")
    eight = NodeInfo(gpus=tuple(GpuInfo(i, "NVIDIA H100", 81559) for i in range(8)), gpu_probe="8")
    plan = build_plan(big, path, node=eight)
    assert any(f.topic == "gpu memory" and "vLLM" in f.message for f in plan.errors)


def test_the_time_rule_gives_the_papers_27_hours(tmp_path: Path, b200_node: NodeInfo) -> None:
    config, path = _paper(tmp_path)
    t = build_plan(config, path, node=b200_node).estimates.time
    assert t is not None
    assert t.seconds_per_step == pytest.approx(PAPER_SECONDS_PER_STEP, abs=0.1)
    assert t.hours_at_paper_stop == pytest.approx(27.0, abs=0.05)
    one, path = _paper(
        tmp_path,
        "cluster.gpus_per_node=1",
        "cluster.gpu=H100",
        "train.deepspeed=null",
        "train.per_device_train_batch_size=8",
        "train.gradient_accumulation_steps=8",
    )
    slow = build_plan(one, path, node=b200_node.__class__()).estimates.time
    assert slow is not None
    # the same 64 completions on one H100: 8 times fewer GPUs, each 0.45 of a B200
    assert slow.seconds_per_step == pytest.approx(PAPER_SECONDS_PER_STEP * 8 / 0.45, rel=1e-3)


def test_clone_sizes_are_measured_when_the_cache_has_them(
    tmp_path: Path, b200_node: NodeInfo
) -> None:
    config, path = _paper(tmp_path)
    bare = config.data.cache / "repos" / "psf__requests.git"
    (bare / "objects").mkdir(parents=True)
    (bare / "objects" / "pack").write_bytes(b"x" * 3 * 1024 * 1024)
    disk = build_plan(config, path, node=b200_node).estimates.disk
    assert disk is not None
    (requests,) = disk.repos
    assert (requests.how, requests.bare_mib, requests.commits) == ("measured", 3.0, 1)
    assert disk.clones_to_fetch_gib == 0
    # LoRA rank 32 on Qwen3-14B: 128.45M parameters, 12 bytes each in a checkpoint, 40 saves
    assert disk.checkpoints == 40
    assert disk.checkpoint_gib == pytest.approx(128.45e6 * 12 / 1024**3, rel=1e-3)


def test_a_local_models_size_comes_from_its_config(cpu_config: Callable[..., Path]) -> None:
    size = model_size(load_config(cpu_config()))
    assert size.source.endswith("config.json")
    assert size.params_b is not None
    assert 0 < size.params_b < 0.001
    assert size.lora_params_m is not None
    assert size.lora_params_m > 0


def test_plan_prints_every_command_and_json_too(tmp_path: Path, b200_node: NodeInfo) -> None:
    _config, _ = _paper(tmp_path)
    args = [
        "plan",
        "--config",
        str(CONFIGS / "paper-8xb200.yaml"),
        "--set",
        f"base_dir={tmp_path}",
        "--set",
        f"data.instances={tmp_path / 'instances.jsonl'}",
        "--set",
        f"data.trajectories=[{tmp_path / 't.jsonl'}]",
        "--set",
        f"evaluation.instances={tmp_path / 'heldout.jsonl'}",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    for text in (
        "catm mine",
        "worktree-sandbox prepare",
        "dataset grpo",
        "swift rlhf",
        "vllm serve",
        "swe-eval predict",
        "swe-eval retrieval",
        "NPROC_PER_NODE=8",
        "--reward_funcs codegrep_v3",
        "estimates:",
        "findings:",
        "s/step",
    ):
        # the tools are named by their path beside this interpreter
        assert text in result.stdout.replace(f"{Path(sys.executable).parent}/", ""), text
    data = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert [s["name"] for s in data["stages"]][:4] == ["labels", "prepare", "datasets", "grpo"]
    assert data["status"]["grpo"]["valid"] is False
    assert data["estimates"]["time"]["seconds_per_step"] == pytest.approx(108.4, abs=0.1)


def test_plan_exits_2_on_errors_and_on_a_bad_node_rank(tmp_path: Path) -> None:
    missing = CliRunner().invoke(
        app,
        [
            "plan",
            "--config",
            str(CONFIGS / "paper-8xb200.yaml"),
            "--set",
            f"base_dir={tmp_path}",
            "--set",
            "data.fetch=[]",  # nothing fetches the inputs: they must be there
        ],
    )
    assert missing.exit_code == 2
    assert "data.instances" in missing.stderr
    assert "does not exist" in missing.stderr
    assert "swift rlhf" in missing.stdout  # the plan is printed all the same
    rank = CliRunner().invoke(
        app, ["plan", "--config", str(CONFIGS / "paper-8xb200.yaml"), "--node-rank", "3"]
    )
    assert rank.exit_code == 2
    assert "--node-rank 3: this run has nodes 0..0" in rank.stderr


def test_the_estimate_counts_evaluation_and_caps_it(tmp_path: Path, b200_node: NodeInfo) -> None:
    # 31,977 rows (the paper's) and a 5% validation split: ms-swift's validation of the whole
    # split every 50 steps was ~1,600 prompts x 8 generations, about 6 h each, and no part of
    # the 60 h estimate
    many = tmp_path / "many.jsonl"
    row = {"repo": "o/r", "base_commit": "a", "problem_statement": "x", "patch": ""}
    lines = (json.dumps({**row, "instance_id": f"o__r-{i}"}) + "\n" for i in range(31977))
    many.write_text("".join(lines))
    whole, _ = _paper(tmp_path, f"data.instances={many}", "train.val_limit=null")
    t = build_plan(whole, CONFIGS / "paper-8xb200.yaml", node=b200_node).estimates.time
    assert t is not None
    per_eval = t.validation_hours / (2000 // 50)
    assert 5.5 < per_eval < 6.5
    assert t.total_hours_at_max_steps > t.hours_at_max_steps + t.validation_hours - 0.01
    capped, _ = _paper(tmp_path, f"data.instances={many}")
    plan = build_plan(capped, CONFIGS / "paper-8xb200.yaml", node=b200_node)
    t = plan.estimates.time
    assert t is not None
    assert "40 x 64 prompts x 8 generations" in t.eval_rule
    assert "1 x 1 greedy rollouts" in t.eval_rule  # the held-out file has one instance
    assert t.total_hours_at_max_steps == pytest.approx(
        t.hours_at_max_steps + t.validation_hours + t.checkpoint_eval_hours, abs=0.01
    )
    assert any("with evaluation" in f.message for f in plan.findings)
    # GRPO validates on the capped, seeded sample the datasets stage writes
    (grpo,) = _trainers(plan)
    sample = [c.argv for c in plan.stage("datasets").commands if "--sample" in c.argv]
    assert len(sample) == 1
    assert _pairs(sample[0])["--sample"] == "64"
    assert _pairs(grpo.argv)["--val_dataset"] == _pairs(sample[0])["-o"]


def test_sft_rows_carry_their_weight_into_the_loss(tmp_path: Path, b200_node: NodeInfo) -> None:
    # the rows' `weight` was written and never read: ms-swift weights a row only through
    # per-message loss_scale and --is_binary_loss_scale false
    config, path = _paper(tmp_path, "sft.enabled=true")
    plan = build_plan(config, path, node=b200_node)
    rows = [c.argv for c in plan.stage("sft-data").commands if "sft" in c.argv]
    assert len(rows) == 1
    assert "--loss-scale" in rows[0]
    flags = _pairs(_trainers(plan, "sft")[0].argv)
    assert flags["--loss_scale"] == "default"
    assert flags["--is_binary_loss_scale"] == "false"


# --- the estimate as ms-swift trains (issue: offload, logits, host RAM) -----------------------


def test_offload_optimizer_leaves_the_update_as_it_is(tmp_path: Path, b200_node: NodeInfo) -> None:
    """ms-swift's --offload_optimizer moves Adam's moments out while vLLM generates and back
    for the update (GRPOTrainer.offload_context): the update needs them either way."""
    needs = []
    for offload in ("true", "false"):
        for tuner in ("lora", "full"):
            config, path = _paper(
                tmp_path, f"train.offload_optimizer={offload}", f"lora.tuner={tuner}"
            )
            gpu = build_plan(config, path, node=b200_node).estimates.gpu
            assert gpu is not None
            needs.append((tuner, gpu.trainer_need_gib, gpu.trainer_parts_gib["trainable"]))
    assert needs[0] == needs[2]  # LoRA: the same with and without offload
    assert needs[1] == needs[3]  # full fine-tuning too
    # full fine-tuning of 14.77B on 8: bf16 gradients and fp32 master + m + v, ZeRO-3 split
    assert needs[1][2] == pytest.approx(14.77e9 * 14 / 8 / 1024**3, rel=1e-3)


def test_the_logits_at_the_cap_are_counted(tmp_path: Path) -> None:
    """4 x 32768 x 151,936 x 2 B = 37 GiB of logits: the single-GPU run as it was (4 per
    device) does not fit at max_length, and the plan says which length does."""
    path = CONFIGS / "single-gpu.yaml"
    config = load_config(
        path,
        [f"base_dir={tmp_path}", "data.fetch=[]", "train.per_device_train_batch_size=4"],
    )
    plan = build_plan(config, path, node=NodeInfo(gpus=(), gpu_probe="no GPU here"))
    gpu = plan.estimates.gpu
    assert gpu is not None
    assert gpu.trainer_parts_gib["logits"] == pytest.approx(
        4 * 32768 * 151936 * 2 / 1024**3, abs=0.01
    )
    assert gpu.trainer_need_gib > gpu.trainer_gib
    assert gpu.fits_sequence_tokens is not None
    assert 10000 < gpu.fits_sequence_tokens < 32768
    (warn,) = [f for f in plan.findings if f.message.startswith("at max_length 32768 the update")]
    assert warn.level == "warning"
    assert f"sequences up to about {gpu.fits_sequence_tokens} tokens fit" in warn.message
    # as shipped (2 per device): it fits, and so does validation's batch
    config = load_config(path, [f"base_dir={tmp_path}", "data.fetch=[]"])
    plan = build_plan(config, path, node=NodeInfo(gpus=(), gpu_probe="no GPU here"))
    gpu = plan.estimates.gpu
    assert gpu is not None
    assert gpu.trainer_need_gib <= gpu.trainer_gib
    assert gpu.validation_need_gib is not None
    assert gpu.validation_need_gib <= gpu.trainer_gib
    assert not [f for f in plan.findings if f.topic == "gpu memory"]


def test_host_ram_for_the_sleeping_vllm_is_checked_against_the_node(
    tmp_path: Path, b200_node: NodeInfo
) -> None:
    """Sleep level 1 keeps vLLM's weights in host RAM: 27.5 GiB a GPU, 220 GiB on 8."""
    config, path = _paper(tmp_path)
    plan = build_plan(config, path, node=b200_node)  # no RAM probed: cluster.host_memory_gib
    host = plan.estimates.host
    assert host is not None
    assert host.parts_gib["vllm asleep (sleep_level 1)"] == pytest.approx(27.51 * 8, abs=0.1)
    assert host.memory_gib == 2048
    assert not [f for f in plan.errors if f.topic == "host memory"]
    small = NodeInfo(gpus=b200_node.gpus, gpu_probe=b200_node.gpu_probe, memory_gib=256.0)
    plan = build_plan(config, path, node=small)
    (err,) = [f for f in plan.errors if f.topic == "host memory"]
    assert "of 256 GiB (this node (/proc/meminfo))" in err.message
    # sleep level 2 drops the weights instead of keeping them
    config, path = _paper(tmp_path, "rollout.sleep_level=2")
    host = build_plan(config, path, node=small).estimates.host
    assert host is not None
    assert "vllm asleep (sleep_level 1)" not in host.parts_gib
    assert not [f for f in build_plan(config, path, node=small).errors if f.topic == "host memory"]


def test_the_papers_time_is_the_papers_by_construction(tmp_path: Path, b200_node: NodeInfo) -> None:
    config, path = _paper(tmp_path)
    t = build_plan(config, path, node=b200_node).estimates.time
    assert t is not None
    assert t.by_construction
    assert "the paper's own figure by construction" in t.rule
    single = CONFIGS / "single-gpu.yaml"
    config = load_config(single, [f"base_dir={tmp_path}", "data.fetch=[]"])
    t = build_plan(config, single, node=b200_node).estimates.time
    assert t is not None
    assert not t.by_construction


def test_the_host_memory_is_read_from_meminfo(tmp_path: Path) -> None:
    from train_launcher.node import host_memory_gib

    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       2113929216 kB\nMemFree:        1 kB\n")
    assert host_memory_gib(meminfo) == pytest.approx(2016.0, abs=0.1)
    meminfo.write_text("MemTotal: lots\n")
    assert host_memory_gib(meminfo) is None
    assert host_memory_gib(tmp_path / "absent") is None


def test_a_model_not_trained_with_the_qwen3_template_gets_no_chat_template(
    tmp_path: Path, b200_node: NodeInfo
) -> None:
    config, path = _paper(tmp_path, "model.path=meta-llama/Llama-3.1-8B-Instruct")
    server = build_plan(config, path, node=b200_node).stage("eval:checkpoint-N").commands[0]
    assert "--chat-template" not in server.argv
