"""The run as stages of exact commands: what `plan` prints and `launch` runs.

`build_plan(config, config_file)` turns a `RunConfig` into a `NodePlan`: the stages in order, each
with its commands (argv, the environment they add, the node they run on), its outputs and the
rule that says those outputs are valid (`stage_validity`), plus the estimates and every finding
of the checks against this node. Stages:

0. `fetch` (only with `data.fetch`): `python -m train_launcher.fetch` for each input a dataset
   hub holds (instances, trajectories, held-out instances), at its pinned revision.
1. `labels` (only with trajectories): `catm mine` -> labels.
2. `prepare`: `worktree-sandbox prepare` for the training (and held-out) instances: every bare
   clone and commit, with a disk report. It comes before the datasets because the dataset
   builder opens every tree.
3. `datasets`: `codegrep-model dataset grpo` (train/val split by repository), and the instances
   of each split (`python -m train_launcher.subset`) for the teacher and the evaluation.
4. `sft-data` (with `sft.enabled`): teacher rollouts (`codegrep-model batch`) on the training
   split, then `codegrep-model dataset sft`.
5. `sft` (with `sft.enabled`): `swift sft`, LoRA.
6. `grpo`: `swift rlhf --rlhf_type grpo` with codegrep-model's plugin (the `codegrep_tools`
   multi-turn scheduler, the `codegrep_v3` reward, the advantage scale), early stopping on the
   validation reward; in server mode, `swift rollout` first, on GPUs of its own.
7. `eval:checkpoint-N` for each saved checkpoint (`vllm serve` or `swift deploy` with the
   adapter, `swe-eval predict -r agent` on the held-out instances, `swe-eval retrieval`), then
   `eval-summary` (every checkpoint side by side).

The plan reads the output folder for what only exists once earlier stages ran: the last SFT
checkpoint, the checkpoint GRPO resumes from, the checkpoints to evaluate. Where one is not
there yet the argv holds a `<...>` placeholder and the stage lists it in `late`; `launch`
re-plans before each stage, so it never runs one.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from codegrep_records import RecordError
from codegrep_records.io import read_json_object

from train_launcher._plan_inputs import input_findings
from train_launcher._plan_records import STAGE_ORDER, NodeCommand, NodePlan, Stage, base_stage
from train_launcher._plan_select import select_stages, stage_validity
from train_launcher.config import RunConfig, reward_func_name
from train_launcher.errors import PlanError
from train_launcher.estimate import estimate
from train_launcher.node import NodeInfo
from train_launcher.outputs import (
    Layout,
    check_training,
    complete_checkpoints,
    finished_checkpoint,
    latest_checkpoint,
)

__all__ = [
    "SCHEDULER",
    "STAGE_ORDER",
    "SUBSET_MODULE",
    "NodeCommand",
    "NodePlan",
    "Stage",
    "base_stage",
    "build_plan",
    "plugin_path",
    "select_stages",
    "stage_validity",
]

SCHEDULER = "codegrep_tools"
SUBSET_MODULE = "train_launcher.subset"
FETCH_MODULE = "train_launcher.fetch"
SERVED_NAME = "codegrep"
LATE_SFT = "sft checkpoint"
LATE_CHECKPOINT = "grpo checkpoints"


def plugin_path(config: RunConfig) -> Path:
    """The ms-swift plugin file: the config's, else the installed codegrep-model's."""
    if config.train.plugin is not None:
        return config.train.plugin
    from codegrep_model.train import swift_plugin_path

    return swift_plugin_path()


def _tool(name: str) -> str:
    """A console script of this environment (beside the interpreter) when it is there."""
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else name


Value = str | int | float | bool | Path | tuple[str, ...] | None


def _text(value: str | int | float | bool | Path) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _opts(options: dict[str, Value]) -> list[str]:
    """`{"--a": 1, "--b": None, "--c": ("x", "y")}` -> `["--a", "1", "--c", "x", "y"]`: None
    leaves a flag out, booleans are written true/false (ms-swift's way), tuples give values."""
    out: list[str] = []
    for flag, value in options.items():
        if value is None:
            continue
        if isinstance(value, tuple):
            out += [flag, *value]
        else:
            out += [flag, _text(value)]
    return out


def _repeat(flag: str, values: Sequence[str | Path]) -> list[str]:
    """`--val-repo a --val-repo b`: a flag given once per value."""
    return [x for v in values for x in (flag, str(v))]


def _labels(config: RunConfig, layout: Layout) -> Path | None:
    if config.data.labels is not None:
        return config.data.labels
    return layout.labels if config.data.trajectories else None


def _eval_instances(config: RunConfig, layout: Layout) -> Path:
    return config.evaluation.instances or layout.val_instances


def _has_val_split(config: RunConfig, layout: Layout) -> bool:
    """Whether GRPO has validation rows: the dataset report's count once it exists, else
    whether the config asks for a split."""
    try:
        val = read_json_object(layout.grpo_data / "report.json").get("val")
    except RecordError:  # absent, or unreadable: the datasets stage's check says which
        val = None
    if isinstance(val, int) and not isinstance(val, bool):
        return val > 0
    return config.data.val_fraction > 0 or bool(config.data.val_repos)


def _gpu_list(first: int, count: int) -> str:
    return ",".join(str(i) for i in range(first, first + count))


def _clones(config: RunConfig) -> dict[str, Value]:
    return {"--cache": config.data.cache, "--source": config.data.source}


# --- stage builders --------------------------------------------------------------------------


def _fetch_stage(config: RunConfig) -> Stage:
    commands = []
    for f in config.fetched:
        argv = [sys.executable, "-m", FETCH_MODULE]
        argv += _opts(
            {
                "--repo-id": f.repo_id,
                "--revision": f.revision,
                "--split": f.split,
                "--source": f.source,
                "--limit": f.limit,
                "-o": f.output,
            }
        )
        commands.append(NodeCommand(argv=tuple(argv), env=dict(config.env)))
    return Stage(
        name="fetch",
        title="download the training inputs at their pinned revisions",
        commands=tuple(commands),
        outputs=tuple(f.output for f in config.fetched),
        check="each file has a .fetch.json naming its repository, revision and split, "
        "and that many rows (>= 1)",
    )


def _labels_stage(config: RunConfig, layout: Layout) -> Stage:
    m, d = config.mining, config.data
    argv = [_tool("catm"), "mine", *map(str, d.trajectories)]
    argv += _opts(
        {
            "-i": d.instances,
            "-o": layout.labels,
            "--judge": m.judge,
            "--endpoint": m.endpoint,
            "-j": m.jobs,
            "--threshold": m.threshold,
            "--timeout": m.timeout,
        }
    )
    return Stage(
        name="labels",
        title="mine relevance labels from the trajectories (catm)",
        commands=(NodeCommand(argv=tuple(argv), env=dict(config.env)),),
        outputs=(layout.labels, layout.labels_stats),
        check="labels.jsonl reads with no bad row and >= 1 label; its .stats.json is JSON",
        requires=("fetch",),
    )


def _prepare_stage(config: RunConfig, layout: Layout) -> Stage:
    d, e = config.data, config.evaluation
    sets = [(d.instances, layout.prepare_train, d.limit)]
    if e.enabled and e.instances is not None:
        sets.append((e.instances, layout.prepare_eval, e.limit))
    commands = []
    for instances, report, limit in sets:
        argv = [_tool("worktree-sandbox"), "prepare"]
        argv += _opts({"-i": instances, **_clones(config), "-o": report, "--limit": limit})
        commands.append(NodeCommand(argv=tuple(argv), env=dict(config.env)))
    return Stage(
        name="prepare",
        title="bare clones and every base commit (worktree-sandbox prepare)",
        commands=tuple(commands),
        outputs=tuple(report for _, report, _ in sets),
        check="each report is JSON, with no failure or skipped row and every commit present",
        requires=("fetch",),
    )


def _datasets_stage(config: RunConfig, layout: Layout) -> Stage:
    d = config.data
    argv = [_tool("codegrep-model"), "dataset", "grpo"]
    argv += _opts(
        {
            "-i": d.instances,
            "-o": layout.grpo_data,
            **_clones(config),
            "--labels": _labels(config, layout),
            "--val-fraction": None if d.val_repos else d.val_fraction,
            "--seed": config.seed,
            "--limit": d.limit,
            "-j": d.jobs,
        }
    )
    argv += _repeat("--val-repo", d.val_repos)
    commands = [NodeCommand(argv=tuple(argv), env=dict(config.env))]
    for split, out in (("train", layout.train_instances), ("val", layout.val_instances)):
        rows = layout.grpo_data / f"{split}.jsonl"
        sub = [sys.executable, "-m", SUBSET_MODULE]
        sub += _opts({"--rows": rows, "-i": d.instances, "-o": out})
        commands.append(NodeCommand(argv=tuple(sub), env=dict(config.env)))
    outputs: tuple[Path, ...] = ()
    if config.train.val_limit is not None:
        sample = [sys.executable, "-m", SUBSET_MODULE]
        sample += _opts(
            {
                "--rows": layout.grpo_data / "val.jsonl",
                "--sample": config.train.val_limit,
                "--seed": config.seed,
                "-o": layout.val_eval,
            }
        )
        commands.append(NodeCommand(argv=tuple(sample), env=dict(config.env)))
        outputs = (layout.val_eval,)
    return Stage(
        name="datasets",
        title="GRPO rows split by repository, and each split's instances",
        commands=tuple(commands),
        outputs=(
            layout.grpo_data / "train.jsonl",
            layout.grpo_data / "val.jsonl",
            layout.grpo_data / "report.json",
            layout.train_instances,
            layout.val_instances,
            *outputs,
        ),
        check="report.json is JSON and train/val.jsonl have its row counts (train >= 1); "
        "the split instance files match; the capped validation sample is there",
        requires=("labels", "prepare"),
    )


def _sft_data_stage(config: RunConfig, layout: Layout) -> Stage:
    s = config.sft
    commands = []
    rollouts: tuple[Path, ...] = s.rollouts
    if not rollouts:
        batch = [_tool("codegrep-model"), "batch"]
        batch += _opts(
            {
                "-i": layout.train_instances,
                "-o": layout.teacher_predictions,
                "--rollouts": layout.teacher_rollouts,
                **_clones(config),
                "-j": s.jobs,
                "--limit": s.limit,
                "--base-url": s.teacher_base_url,
                "--model": s.teacher_model if s.teacher_base_url else None,
                "--timeout": s.teacher_timeout if s.teacher_base_url else None,
            }
        )
        commands.append(NodeCommand(argv=tuple(batch), env=dict(config.env)))
        rollouts = (layout.teacher_rollouts,)
    rows = [_tool("codegrep-model"), "dataset", "sft", *map(str, rollouts)]
    rows += _opts(
        {
            "-i": layout.train_instances,
            "-o": layout.sft_data,
            "--labels": _labels(config, layout),
            "--threshold": s.threshold,
            "--reward": config.train.reward,
        }
    )
    # each row's weight (its reward) on its trained messages, which `swift sft` reads below
    rows.append("--loss-scale")
    commands.append(NodeCommand(argv=tuple(rows), env=dict(config.env)))
    teacher = "given rollouts" if s.rollouts else (s.teacher_base_url or "the lexical policy")
    return Stage(
        name="sft-data",
        title=f"SFT rows from rollouts ({teacher})",
        commands=tuple(commands),
        outputs=(layout.sft_data, layout.sft_report),
        check="sft.jsonl has as many rows as its report's `kept`, >= 1",
        requires=("datasets",),
    )


def _node_env(config: RunConfig, node_rank: int, gpus: int) -> dict[str, str]:
    """torchrun's variables as ms-swift reads them, and the devices this node gives."""
    if not config.uses_gpu:
        return {"CUDA_VISIBLE_DEVICES": ""}
    env = {"CUDA_VISIBLE_DEVICES": _gpu_list(0, gpus)}
    if gpus > 1 or config.cluster.nodes > 1:
        env["NPROC_PER_NODE"] = str(gpus)
    if config.cluster.nodes > 1:
        env["NNODES"] = str(config.cluster.nodes)
        env["NODE_RANK"] = str(node_rank)
        env["MASTER_ADDR"] = config.cluster.master_addr
        env["MASTER_PORT"] = str(config.cluster.master_port)
    return env


def _model_args(config: RunConfig) -> list[str]:
    m = config.model
    return _opts(
        {
            "--model": m.path,
            "--model_type": m.model_type,
            "--template": m.template,
            "--torch_dtype": m.torch_dtype,
            "--enable_thinking": m.enable_thinking,
        }
    )


def _tuner_args(config: RunConfig) -> list[str]:
    lora = config.lora
    if lora.tuner == "full":
        return ["--tuner_type", "full"]
    return _opts(
        {
            "--tuner_type": "lora",
            "--lora_rank": lora.rank,
            "--lora_alpha": lora.alpha,
            "--lora_dropout": lora.dropout,
            "--target_modules": lora.target_modules,
        }
    )


def _ranks(config: RunConfig, node_rank: int | None) -> list[int]:
    return list(range(config.cluster.nodes)) if node_rank is None else [node_rank]


def _sft_stage(config: RunConfig, layout: Layout, node_rank: int | None) -> Stage:
    s, t = config.sft, config.train
    argv = [config.swift.executable, "sft", *_model_args(config), *_tuner_args(config)]
    by_steps = s.max_steps is not None
    argv += _opts(
        {
            "--dataset": layout.sft_data,
            "--split_dataset_ratio": "0",
            "--learning_rate": s.learning_rate,
            "--per_device_train_batch_size": s.per_device_train_batch_size,
            "--gradient_accumulation_steps": s.gradient_accumulation_steps,
            "--max_length": t.max_length,
            "--max_steps": s.max_steps,
            "--num_train_epochs": None if by_steps else s.num_train_epochs,
            "--save_strategy": "steps" if by_steps else "epoch",
            "--save_steps": s.max_steps,
            "--save_only_model": True,
            "--gradient_checkpointing": t.gradient_checkpointing,
            "--deepspeed": t.deepspeed if config.uses_gpu else None,
            "--logging_steps": t.logging_steps,
            "--report_to": t.report_to,
            "--seed": config.seed,
            "--output_dir": layout.sft_dir,
            "--add_version": False,
            # the rows' per-message loss_scale (the reward, in (0, 1]) weights the loss; a scale
            # other than 0 and 1 needs is_binary_loss_scale false (codegrep_model.datasets)
            "--loss_scale": "default",
            "--is_binary_loss_scale": False,
        }
    )
    argv += [*config.swift.extra_args, *s.extra_args]
    gpus = config.cluster.gpus_per_node if config.uses_gpu else 0
    commands = tuple(
        NodeCommand(
            argv=tuple(argv),
            env={**_node_env(config, rank, gpus), **config.env, **s.env},
            node_rank=rank,
        )
        for rank in _ranks(config, node_rank)
    )
    return Stage(
        name="sft",
        title="SFT warm start (swift sft, LoRA)",
        commands=commands,
        outputs=(layout.sft_dir / "logging.jsonl",),
        check="ms-swift's final message is in logging.jsonl and its last checkpoint is complete",
        nodes="all",
        requires=("sft-data",),
    )


def _vllm_args(config: RunConfig) -> dict[str, Value]:
    r, c = config.rollout, config.cluster
    lora = r.enable_lora and config.lora.tuner == "lora"
    if r.engine != "vllm":
        return {"--use_vllm": False}
    if r.mode == "colocate":
        return {
            "--use_vllm": True,
            "--vllm_mode": "colocate",
            "--vllm_gpu_memory_utilization": r.gpu_memory_utilization,
            "--vllm_tensor_parallel_size": r.tensor_parallel_size,
            "--vllm_max_model_len": r.max_model_len,
            # colocate: ms-swift gives vLLM `max_lora_rank=args.lora_rank`
            # (swift/rlhf_trainers/rollout_mixin.py, _prepare_vllm_engine) and never reads
            # --vllm_max_lora_rank, so it is not written; `swift rollout` reads it (below)
            "--vllm_enable_lora": True if lora else None,
            "--sleep_level": r.sleep_level,
        }
    return {
        "--use_vllm": True,
        "--vllm_mode": "server",
        "--vllm_server_host": r.server.host or ("127.0.0.1" if c.nodes == 1 else c.master_addr),
        "--vllm_server_port": r.server.port,
        "--vllm_server_timeout": r.server.timeout,
        "--vllm_server_pass_dataset": True,
    }


def _grpo_stage(config: RunConfig, layout: Layout, node_rank: int | None) -> Stage:
    t = config.train
    plugin = plugin_path(config)
    late: list[str] = []
    finished = check_training(layout.grpo_dir).ok
    resume = None if finished else latest_checkpoint(layout.grpo_dir)
    sft: str | None = None
    if config.sft.enabled:
        done = finished_checkpoint(layout.sft_dir)
        if done is None:
            late.append(LATE_SFT)
        sft = str(done) if done else f"<{layout.sft_dir}/checkpoint-N: the SFT run's last one>"
    validate = _has_val_split(config, layout)
    stop = t.early_stopping if validate else None
    argv = [config.swift.executable, "rlhf", "--rlhf_type", "grpo", *_model_args(config)]
    argv += _tuner_args(config)
    argv += _opts(
        {
            # a fresh run starts from the SFT adapter; a resumed one takes its own from the
            # checkpoint; the reference model is the SFT policy either way
            "--adapters": sft if resume is None else None,
            "--ref_adapters": sft,
            "--external_plugins": plugin,
            "--multi_turn_scheduler": None if config.server_mode else SCHEDULER,
            "--max_turns": None if config.server_mode else t.max_turns,
            "--reward_funcs": reward_func_name(t.reward),
            "--dataset": layout.grpo_data / "train.jsonl",
            "--val_dataset": (
                (layout.val_eval if t.val_limit is not None else layout.grpo_data / "val.jsonl")
                if validate
                else None
            ),
            "--split_dataset_ratio": "0",
            **_vllm_args(config),
            "--offload_optimizer": t.offload_optimizer if config.uses_gpu else None,
            "--offload_model": t.offload_model if config.uses_gpu else None,
            "--deepspeed": t.deepspeed if config.uses_gpu else None,
            "--num_generations": t.num_generations,
            "--num_generations_eval": t.num_generations_eval,
            "--per_device_train_batch_size": t.per_device_train_batch_size,
            # ms-swift: eval batch x processes a multiple of num_generations (RunConfig)
            "--per_device_eval_batch_size": config.eval_batch_size,
            "--gradient_accumulation_steps": t.gradient_accumulation_steps,
            "--max_completion_length": t.max_completion_length,
            "--max_length": t.max_length,
            "--temperature": t.temperature,
            "--beta": t.beta,
            "--loss_type": t.loss_type,
            "--learning_rate": t.learning_rate,
            "--max_steps": t.max_steps,
            "--save_strategy": "steps",
            "--save_steps": t.save_steps,
            "--save_total_limit": t.save_total_limit,
            "--eval_strategy": "steps" if validate else "no",
            "--eval_steps": t.eval_steps if validate else None,
            "--early_stop_interval": stop.patience if stop else None,
            "--metric_for_best_model": stop.metric if stop else None,
            "--greater_is_better": True if stop else None,
            "--gradient_checkpointing": t.gradient_checkpointing,
            "--logging_steps": t.logging_steps,
            "--log_completions": t.log_completions,
            "--report_to": t.report_to,
            "--seed": config.seed,
            "--data_seed": config.seed,
            "--output_dir": layout.grpo_dir,
            "--add_version": False,
            "--resume_from_checkpoint": resume,
        }
    )
    argv += [*config.swift.extra_args, *t.extra_args]
    commands: list[NodeCommand] = []
    ranks = _ranks(config, node_rank)
    if config.server_mode and 0 in ranks:
        commands.append(_rollout_server(config, plugin))
    log = {"CODEGREP_ROLLOUT_LOG": str(layout.rollout_log)}
    for rank in ranks:
        env = {**_node_env(config, rank, config.trainer_gpus_per_node), **config.env, **log}
        commands.append(NodeCommand(argv=tuple(argv), env={**env, **t.env}, node_rank=rank))
    engine = f"vLLM {config.rollout.mode}" if config.rollout.engine == "vllm" else "no vLLM"
    return Stage(
        name="grpo",
        title=f"GRPO (swift rlhf, codegrep plugin, {engine})",
        commands=tuple(commands),
        outputs=(layout.grpo_dir / "logging.jsonl", layout.rollout_log),
        check="ms-swift's final message is in logging.jsonl and its last checkpoint is complete "
        "(an unfinished run resumes from its last complete checkpoint-N)",
        nodes="all",
        requires=("datasets", "sft") if config.sft.enabled else ("datasets",),
        late=tuple(late),
        resume_from=resume,
    )


def _rollout_server(config: RunConfig, plugin: Path) -> NodeCommand:
    r, t = config.rollout, config.train
    s = r.server
    lora = r.enable_lora and config.lora.tuner == "lora"
    argv = [config.swift.executable, "rollout", *_model_args(config)]
    argv += _opts(
        {
            "--vllm_tensor_parallel_size": r.tensor_parallel_size,
            "--vllm_data_parallel_size": s.data_parallel_size
            or max(1, s.gpus // r.tensor_parallel_size),
            "--vllm_max_model_len": r.max_model_len,
            "--vllm_use_async_engine": True,
            "--vllm_enable_lora": True if lora else None,
            "--vllm_max_lora_rank": config.lora.rank if lora else None,
            "--external_plugins": plugin,
            "--multi_turn_scheduler": SCHEDULER,
            "--max_turns": t.max_turns,
            "--host": "0.0.0.0",
            "--port": s.port,
        }
    )
    argv += list(config.swift.extra_args)
    gpus = _gpu_list(config.trainer_gpus_per_node, s.gpus)
    return NodeCommand(
        argv=tuple(argv),
        env={"CUDA_VISIBLE_DEVICES": gpus, **config.env, **t.env},
        node_rank=0,
        background=True,
        ready_url=f"http://127.0.0.1:{s.port}/health/",
        ready_timeout=s.ready_timeout,
    )


def _trained_with_qwen3_template(config: RunConfig) -> bool:
    """Whether ms-swift trains the model with its `qwen3` template: named so, or chosen by
    ms-swift for a Qwen3 model when no template is named."""
    m = config.model
    if m.template is not None:
        return m.template == "qwen3"
    return "qwen3" in (m.model_type or m.path).lower()


def _eval_server(config: RunConfig, checkpoint: str) -> NodeCommand:
    e, m = config.evaluation, config.model
    full = config.lora.tuner == "full"
    if e.server == "vllm":
        argv = [config.swift.vllm_executable, "serve", checkpoint if full else m.path]
        if full:
            argv += ["--served-model-name", SERVED_NAME]
        else:
            argv += ["--enable-lora", "--lora-modules", f"{SERVED_NAME}={checkpoint}"]
        thinking = None if m.enable_thinking else json.dumps({"enable_thinking": False})
        argv += _opts(
            {
                "--max-lora-rank": None if full else config.lora.rank,
                "--host": "127.0.0.1",
                "--port": e.port,
                "--dtype": m.torch_dtype,
                "--tensor-parallel-size": e.tensor_parallel_size,
                "--max-model-len": config.rollout.max_model_len,
                "--tool-call-parser": "hermes",
                "--seed": config.seed,
                "--default-chat-template-kwargs": thinking,
            }
        )
        argv.append("--enable-auto-tool-choice")
        if _trained_with_qwen3_template(config):
            # ms-swift's qwen3 template keeps every assistant turn's <think> block in training;
            # Qwen3's own chat template drops it from every earlier turn: serve with the one
            # that renders the episode as training did (codegrep_model.train)
            from codegrep_model.train import qwen3_chat_template_path

            argv += ["--chat-template", str(qwen3_chat_template_path())]
    else:
        argv = [config.swift.executable, "deploy"]
        if full:
            argv += [*_model_args(config), "--served_model_name", SERVED_NAME]
            argv[argv.index("--model") + 1] = checkpoint
        else:
            argv += [*_model_args(config), "--adapters", f"{SERVED_NAME}={checkpoint}"]
        argv += _opts(
            {
                "--infer_backend": "vllm" if config.uses_gpu else "pt",
                "--host": "127.0.0.1",
                "--port": e.port,
            }
        )
        argv += list(config.swift.extra_args)
    argv += list(e.extra_args)
    gpus = _gpu_list(0, e.tensor_parallel_size) if config.uses_gpu else ""
    return NodeCommand(
        argv=tuple(argv),
        env={"CUDA_VISIBLE_DEVICES": gpus, **config.env, **e.env},
        background=True,
        ready_url=f"http://127.0.0.1:{e.port}/v1/models",
        ready_model=SERVED_NAME,
        ready_timeout=e.ready_timeout,
    )


def _eval_stages(config: RunConfig, layout: Layout) -> list[Stage]:
    e = config.evaluation
    found = [p for _, p in complete_checkpoints(layout.grpo_dir)]
    if e.checkpoints == "last":
        last = finished_checkpoint(layout.grpo_dir) or (found[-1] if found else None)
        found = [last] if last is not None else []
    names, paths = [p.name for p in found], [str(p) for p in found]
    late: tuple[str, ...] = ()
    if not found:
        names, paths = ["checkpoint-N"], [f"<{layout.grpo_dir}/checkpoint-N: each saved one>"]
        late = (LATE_CHECKPOINT,)
    instances = _eval_instances(config, layout)
    env = dict(config.env)
    stages: list[Stage] = []
    for name, path in zip(names, paths, strict=True):
        predictions, scores = layout.eval_predictions(name), layout.eval_scores(name)
        predict = [_tool("swe-eval"), "predict"]
        predict += _opts(
            {
                "-r": "agent",
                "-i": instances,
                "-o": predictions,
                **_clones(config),
                "--base-url": f"http://127.0.0.1:{e.port}/v1",
                "--model": SERVED_NAME,
                "-j": e.jobs,
                "--timeout": e.timeout,
                "--limit": e.limit,
            }
        )
        score = [_tool("swe-eval"), "retrieval"]
        score += _opts(
            {
                "-i": instances,
                "-p": predictions,
                "--labels": e.labels,
                "--name": name,
                "-f": "json",
                "-o": scores,
                "--seed": config.seed,
                "--limit": e.limit,
            }
        )
        stages.append(
            Stage(
                name=f"eval:{name}",
                title=f"evaluate {name} on the held-out instances ({e.server})",
                commands=(
                    _eval_server(config, path),
                    NodeCommand(argv=tuple(predict), env=env),
                    NodeCommand(argv=tuple(score), env=env),
                ),
                outputs=(predictions, scores),
                check="predictions are not empty and retrieval.json is JSON",
                late=late,
            )
        )
    summary = [_tool("swe-eval"), "retrieval", "-i", str(instances)]
    summary += _repeat("-p", [layout.eval_predictions(n) for n in names])
    summary += _repeat("--name", names)
    summary += _opts(
        {
            "--labels": e.labels,
            "-f": "markdown",
            "-o": layout.eval_summary,
            "--seed": config.seed,
            "--limit": e.limit,
        }
    )
    stages.append(
        Stage(
            name="eval-summary",
            title="every evaluated checkpoint side by side (swe-eval retrieval)",
            commands=(NodeCommand(argv=tuple(summary), env=env),),
            outputs=(layout.eval_summary,),
            check="summary.md names every evaluated checkpoint",
            requires=tuple(s.name for s in stages),
            late=late,
        )
    )
    return stages


# --- the plan --------------------------------------------------------------------------------


def build_plan(
    config: RunConfig,
    config_file: Path,
    *,
    node: NodeInfo,
    node_rank: int | None = None,
) -> NodePlan:
    """Every stage with its exact commands, the estimates and the findings on `node`.

    `node_rank` None: the commands of every node; N: only node N's (nodes other than 0 run
    only the training stages).
    """
    c = config.cluster
    if node_rank is not None and not 0 <= node_rank < c.nodes:
        raise PlanError(f"--node-rank {node_rank}: this run has nodes 0..{c.nodes - 1}")
    layout = Layout(config.output_dir)
    plugin = plugin_path(config)
    stages: list[Stage] = []
    if config.fetched:
        stages.append(_fetch_stage(config))
    if config.data.trajectories:
        stages.append(_labels_stage(config, layout))
    stages.append(_prepare_stage(config, layout))
    stages.append(_datasets_stage(config, layout))
    if config.sft.enabled:
        stages.append(_sft_data_stage(config, layout))
        stages.append(_sft_stage(config, layout, node_rank))
    stages.append(_grpo_stage(config, layout, node_rank))
    if config.evaluation.enabled:
        stages += _eval_stages(config, layout)
    present = {s.name for s in stages}
    stages = [
        s.model_copy(update={"requires": tuple(r for r in s.requires if r in present)})
        for s in stages
    ]
    if node_rank not in (None, 0):
        stages = [s for s in stages if s.nodes == "all"]
    estimates, found = estimate(
        config,
        node,
        eval_instances=config.evaluation.instances if config.evaluation.enabled else None,
    )
    findings = input_findings(config, plugin) + found
    return NodePlan(
        config_file=config_file,
        run=config.name,
        output_dir=config.output_dir,
        node_rank=node_rank,
        nodes=c.nodes,
        plugin=plugin,
        stages=tuple(stages),
        estimates=estimates,
        findings=tuple(findings),
    )
