"""Rough figures for a run, and the config judged against the node: disk, GPU memory, time.

Every figure is a documented rule, not a measurement of the run:

- **Model size.** `model.params_b` when given; else a local folder's `config.json` (the
  parameter count of a Qwen/Llama-style decoder) or its `*.safetensors` bytes; else the
  Qwen3 table below; else a number before `B` in the name (`Qwen2.5-7B`). Weights take
  params x 2 bytes in bfloat16/float16, 4 in float32.
- **Disk for clones.** One bare clone per repository of the training and held-out instances:
  measured when the clone cache already holds it (the bytes under
  `<cache>/repos/<owner>__<name>.git`, `worktree_sandbox.BareRepoCache`'s layout), else the
  table `REPO_SIZES_MIB` (SWE-bench's repositories; measured by worktree-sandbox's benchmark
  where it says so, rough otherwise), else 200 MiB.
- **Trees.** Checkouts live on tmpfs (`/dev/shm`, worktree-sandbox's default workdir): each
  trainer process keeps at most 16 idle trees plus the ones in use (taken as 8), so at most
  min(trees, processes per node x 24) trees x the largest tree (table, else 20 MiB).
- **Checkpoints.** A LoRA checkpoint holds the adapter in float32 plus Adam's two moments
  (3 x 4 bytes per LoRA parameter); LoRA parameters are rank x sum(in + out) of the targeted
  linear layers (all seven per layer for `all-linear`). A full checkpoint holds the weights and
  12 bytes per parameter of optimizer state. One checkpoint per `save_steps` up to `max_steps`
  (or `save_total_limit`).
- **GPU memory (colocate).** vLLM gets `gpu_memory_utilization` of each GPU and must hold the
  weights / tensor parallel size x 1.15 (the rest is KV cache). The update (the trainer's step,
  vLLM asleep) needs, per GPU: the weights / trainer processes with ZeRO-3 (all of them
  without); the trainable states: a LoRA adapter in fp32 with its gradient and Adam's two
  moments (16 bytes a parameter), or for full fine-tuning bf16 gradients and fp32 master
  weights and moments (2 + 12 bytes), split by ZeRO-2/-1 as DeepSpeed splits them. ms-swift's
  `--offload_optimizer` / `--offload_model` move those to the host only while vLLM generates and
  back for the update (`GRPOTrainer.offload_context`, swift/rlhf_trainers/grpo_trainer.py), so
  they count here; DeepSpeed's own `zero*_offload` keeps the optimizer on the host. Then the
  logits of one micro-batch at the cap, per_device_train_batch_size x max_length x vocabulary
  x 2 bytes (4 x 32768 x 151,936 x 2 B = 37 GiB for Qwen3), the activations (with gradient
  checkpointing each layer's input, layers x hidden x 2 bytes a token, plus one layer
  recomputed at 34 x hidden bytes a token, Korthikanti et al. 2022 with flash attention;
  without it 34 x hidden bytes a token a layer), and 5% of the GPU for the CUDA context and
  fragmentation. It has the GPU less vLLM's share with `sleep_level: 0`, 95% of it when vLLM
  sleeps. Validation computes the loss without gradients: its batch (`eval_batch_size`) of
  logits and one layer's activations at a time. Where either does not fit at max_length, the
  longest sequence that does is said. In
  server mode the rollout GPUs hold the weights at 90% use and the trainer has whole GPUs. The
  evaluation server needs weights / its tensor parallel size at 90%.
- **Host RAM (a node).** 8 GiB per GPU process (rough: Python, torch, CUDA context); at
  `sleep_level: 1` vLLM keeps its weights in host RAM while asleep (weights / tensor parallel
  per GPU: 27.5 GiB a GPU for Qwen3-14B; level 2 drops them); `--offload_model` moves each
  process's weights (its ZeRO-3 shard) out during the rollout, with a full fine-tune's
  reference model; `--offload_optimizer` moves Adam's moments (8 bytes a trainable parameter,
  its ZeRO shard; with DeepSpeed the host buffers stay allocated, `offload_optimizer` in
  swift/rlhf_trainers/rollout_mixin.py); DeepSpeed's own offload keeps optimizer (and ZeRO-3
  parameters) there. Summed, a bound (the sleeping vLLM and the offloaded trainer alternate
  within a step), and checked against the node's `/proc/meminfo` on a GPU node, else
  `cluster.host_memory_gib`; above 90% of it is an error.
- **Time per step.** The paper's run: 27 h for 897 steps on 8 B200 = 108.4 s per step, taken as
  `PAPER_COMPLETIONS_PER_STEP` (64) completions of Qwen3-14B; scaled linearly by completions
  per step, by parameters, by 8 / the run's GPUs (trainer and rollout) and by the GPU's speed
  relative to a B200 (`GPU_SPEED`). For the paper's own run every factor is 1: the figure is
  the paper's by construction, not a prediction (`TimeEstimate.by_construction`). On CPU:
  1.75 s per completion (a tiny Qwen3 on 2 cores: 7 s per 4-completion step, integration
  notes).
- **Evaluation time.** At the same seconds per completion as a training step (generation
  dominates a GRPO step): ms-swift's validation every `eval_steps`, `train.val_limit` prompts x
  `num_generations_eval` (else `num_generations`) completions each (the whole split when there
  is no cap: 5% of the instances); and each checkpoint evaluation (`evaluation.checkpoints`:
  every `save_steps`, or the last), one greedy rollout for each of `evaluation.limit` held-out
  instances on a server of `evaluation.tensor_parallel_size` GPUs, so x GPUs / that size. Both
  are added to the training hours in the totals.
"""

from __future__ import annotations

import math
import os
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from codegrep_records import RecordError
from codegrep_records.io import read_json_object

from train_launcher.config import RunConfig
from train_launcher.estimate._figures import (
    GIB,
    MIB,
    DiskEstimate,
    Estimates,
    Finding,
    GpuEstimate,
    HostEstimate,
    Level,
    ModelSize,
    RepoSize,
    TimeEstimate,
)
from train_launcher.estimate._memory import gpu_estimate, host_estimate
from train_launcher.node import NodeInfo

__all__ = [
    "GPU_SPEED",
    "PAPER_COMPLETIONS_PER_STEP",
    "PAPER_SECONDS_PER_STEP",
    "REPO_SIZES_MIB",
    "DiskEstimate",
    "Estimates",
    "Finding",
    "GpuEstimate",
    "HostEstimate",
    "ModelSize",
    "RepoSize",
    "TimeEstimate",
    "bare_clone_dir",
    "duration",
    "estimate",
    "model_size",
]

PAPER_SECONDS_PER_STEP = 27 * 3600 / 897
PAPER_COMPLETIONS_PER_STEP = 64
PAPER_GPUS = 8
PAPER_PARAMS_B = 14.77
CPU_SECONDS_PER_COMPLETION = 1.75
IDLE_TREES_PER_PROCESS = 16
BUSY_TREES_PER_PROCESS = 8

#: GPU throughput relative to a B200 (rough; from vendor bf16 dense figures).
GPU_SPEED: dict[str, float] = {
    "B300": 1.1,
    "B200": 1.0,
    "GB200": 1.0,
    "B100": 0.8,
    "H200": 0.55,
    "H100": 0.45,
    "H800": 0.45,
    "H20": 0.1,
    "A100": 0.2,
    "A800": 0.2,
    "L40S": 0.15,
    "RTX 4090": 0.12,
}

#: (bare clone MiB, one tree MiB) of SWE-bench's repositories. "m": measured by
#: worktree-sandbox's benchmark (its README); the others are rough.
REPO_SIZES_MIB: dict[str, tuple[float, float]] = {
    "psf/requests": (40.1, 1.5),  # m
    "pallets/flask": (34.6, 1.5),  # m
    "sympy/sympy": (337.2, 19.0),  # m
    "sphinx-doc/sphinx": (145.1, 16.3),  # m
    "astropy/astropy": (223.9, 30.8),  # m
    "django/django": (300.0, 38.0),  # tree m (release archives); clone rough
    "matplotlib/matplotlib": (450.0, 120.0),
    "scikit-learn/scikit-learn": (200.0, 35.0),
    "pydata/xarray": (60.0, 8.0),
    "pylint-dev/pylint": (50.0, 12.0),
    "pytest-dev/pytest": (40.0, 8.0),
    "mwaskom/seaborn": (60.0, 6.0),
}
DEFAULT_REPO_MIB = (200.0, 20.0)


@dataclass(frozen=True)
class _Arch:
    params_b: float
    hidden: int
    layers: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int = 151936  # every Qwen3 (config.json vocab_size)


#: Qwen3 dense models (their config.json).
_QWEN3: dict[str, _Arch] = {
    "qwen3-0.6b": _Arch(0.60, 1024, 28, 3072, 16, 8, 128),
    "qwen3-1.7b": _Arch(2.03, 2048, 28, 6144, 16, 8, 128),
    "qwen3-4b": _Arch(4.02, 2560, 36, 9728, 32, 8, 128),
    "qwen3-8b": _Arch(8.19, 4096, 36, 12288, 32, 8, 128),
    "qwen3-14b": _Arch(14.77, 5120, 40, 17408, 40, 8, 128),
    "qwen3-32b": _Arch(32.8, 5120, 64, 25600, 64, 8, 128),
}


# --- model ----------------------------------------------------------------------------------


def _arch_from_config(path: Path) -> _Arch | None:
    try:
        cfg = read_json_object(path / "config.json")  # hostile: a RecordFileError
        hidden = int(cfg["hidden_size"])
        layers = int(cfg["num_hidden_layers"])
        inter = int(cfg["intermediate_size"])
        heads = int(cfg["num_attention_heads"])
        kv = int(cfg.get("num_key_value_heads") or heads)
        head_dim = int(cfg.get("head_dim") or hidden // heads)
        vocab = int(cfg.get("vocab_size") or 0)
    except (RecordError, ValueError, KeyError, TypeError, ZeroDivisionError, OverflowError):
        return None
    per_layer = hidden * heads * head_dim * 2 + hidden * kv * head_dim * 2 + 3 * hidden * inter
    tied = bool(cfg.get("tie_word_embeddings", False))
    params = layers * per_layer + vocab * hidden * (1 if tied else 2)
    return _Arch(params / 1e9, hidden, layers, inter, heads, kv, head_dim, vocab)


def _lora_params(arch: _Arch, rank: int, targets: Iterable[str]) -> float:
    """rank x sum(in + out) over the targeted linear layers of every decoder layer."""
    h, q, kv = arch.hidden, arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    dims = {
        "q_proj": h + q,
        "k_proj": h + kv,
        "v_proj": h + kv,
        "o_proj": q + h,
        "gate_proj": h + arch.intermediate,
        "up_proj": h + arch.intermediate,
        "down_proj": arch.intermediate + h,
    }
    wanted = set(targets)
    per_layer = (
        sum(dims.values()) if "all-linear" in wanted else sum(dims.get(t, 0) for t in wanted)
    )
    return float(rank * per_layer * arch.layers)


def _dtype_bytes(dtype: str) -> int:
    return 4 if dtype == "float32" else 2


def model_size(config: RunConfig) -> ModelSize:
    """The model's parameters, weight bytes and LoRA parameters, and where the figure came from."""
    m = config.model
    arch: _Arch | None = None
    params: float | None = None
    source = "unknown: set model.params_b"
    if m.is_local:
        folder = Path(m.path)
        arch = _arch_from_config(folder)
        if arch is not None:
            params, source = arch.params_b, f"{folder / 'config.json'}"
        else:
            weights = (
                sum(p.stat().st_size for p in folder.glob("*.safetensors"))
                if folder.is_dir()
                else 0
            )
            if weights:
                params = weights / _dtype_bytes(m.torch_dtype) / 1e9
                source = f"{folder}/*.safetensors bytes"
    else:
        key = m.path.rsplit("/", 1)[-1].lower().removesuffix("-instruct")
        arch = _QWEN3.get(key)
        if arch is not None:
            params, source = arch.params_b, "Qwen3 table"
        else:
            found = re.search(r"(\d+(?:\.\d+)?)[bB](?![a-zA-Z])", m.path)
            if found:
                params, source = float(found.group(1)), "the number in the model name"
    if m.params_b is not None:
        params, source = m.params_b, "model.params_b"
    weights_gib = None if params is None else params * 1e9 * _dtype_bytes(m.torch_dtype) / GIB
    lora_m: float | None = None
    if config.lora.tuner == "lora":
        if arch is not None:
            lora_m = _lora_params(arch, config.lora.rank, config.lora.target_modules) / 1e6
        elif params is not None:
            # a decoder's linear layers are ~params/hidden wide in sum; hidden ~ 5120 at 14B
            lora_m = params * 1e9 * config.lora.rank / 5120 * 1.4 / 1e6
    return ModelSize(
        params_b=_sig(params),
        weights_gib=_sig(weights_gib),
        lora_params_m=_sig(lora_m),
        source=source,
        hidden=None if arch is None else arch.hidden,
        layers=None if arch is None else arch.layers,
        vocab=None if arch is None or not arch.vocab else arch.vocab,
    )


def _sig(value: float | None, digits: int = 4) -> float | None:
    """`value` to `digits` significant digits (tiny test models keep a size above zero)."""
    return None if value is None else float(f"{value:.{digits}g}")


# --- disk -----------------------------------------------------------------------------------


def bare_clone_dir(cache: Path, repo: str) -> Path:
    """Where `worktree_sandbox.BareRepoCache` keeps `repo`'s bare clone under `cache`."""
    return cache / "repos" / (repo.replace("/", "__") + ".git")


def _dir_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def _instance_commits(paths: Iterable[Path], limit: int | None) -> dict[str, tuple[int, set[str]]]:
    """repo -> (instances, base commits) over the instance files that can be read."""
    from codegrep_records import RecordError, load_instances

    ids: dict[str, set[str]] = defaultdict(set)
    commits: dict[str, set[str]] = defaultdict(set)
    for path in paths:
        try:
            rows = load_instances(path).records
        except RecordError:
            continue
        if limit is not None:
            rows = rows[:limit]
        for row in rows:
            ids[row.repo].add(row.instance_id)
            commits[row.repo].add(row.base_commit or "HEAD")
    return {repo: (len(ids[repo]), commits[repo]) for repo in ids}


def _checkpoint_gib(config: RunConfig, size: ModelSize) -> float:
    if config.lora.tuner == "lora":
        return (size.lora_params_m or 0.0) * 1e6 * 12 / GIB
    if size.params_b is None:
        return 0.0
    return size.params_b * 1e9 * (_dtype_bytes(config.model.torch_dtype) + 12) / GIB


def _disk(config: RunConfig, size: ModelSize, eval_instances: Path | None) -> DiskEstimate:
    files = [config.data.instances] + ([eval_instances] if eval_instances is not None else [])
    by_repo = _instance_commits([p for p in files if p.is_file()], config.data.limit)
    repos: list[RepoSize] = []
    to_fetch = 0.0
    for repo, (n, commits) in sorted(by_repo.items()):
        bare, tree = REPO_SIZES_MIB.get(repo, DEFAULT_REPO_MIB)
        how: Literal["measured", "table", "default"] = (
            "table" if repo in REPO_SIZES_MIB else "default"
        )
        cloned = bare_clone_dir(config.data.cache, repo)
        if cloned.is_dir():
            bare, how = _dir_bytes(cloned) / MIB, "measured"
        else:
            to_fetch += bare
        repos.append(
            RepoSize(
                repo=repo,
                instances=n,
                commits=len(commits),
                bare_mib=round(bare, 1),
                tree_mib=tree,
                how=how,
            )
        )
    trees = sum(r.commits for r in repos)
    processes = max(1, config.trainer_gpus_per_node)
    held = min(trees, processes * (IDLE_TREES_PER_PROCESS + BUSY_TREES_PER_PROCESS))
    largest = max((r.tree_mib for r in repos), default=0.0)
    t = config.train
    saves = t.max_steps // t.save_steps
    if t.save_total_limit is not None:
        saves = min(saves, t.save_total_limit)
    ckpt = _checkpoint_gib(config, size)
    sft = 1 if config.sft.enabled else 0
    outputs = ckpt * (saves + sft) + 1.0  # datasets, logs, predictions: ~1 GiB
    note = "" if repos else "no instances could be read: clone sizes unknown"
    return DiskEstimate(
        repos=tuple(repos),
        clones_gib=round(sum(r.bare_mib for r in repos) / 1024, 2),
        clones_to_fetch_gib=round(to_fetch / 1024, 2),
        trees=trees,
        trees_peak_gib=round(held * largest / 1024, 2),
        checkpoint_gib=round(ckpt, 3),
        checkpoints=saves + sft,
        outputs_gib=round(outputs, 2),
        note=note,
    )


# --- time -----------------------------------------------------------------------------------


def _gpu_speed(kind: str) -> float | None:
    k = kind.upper().replace("NVIDIA", "").strip()
    for name, speed in sorted(GPU_SPEED.items(), key=lambda kv: -len(kv[0])):
        if name.upper() in k:
            return speed
    return None


def _time(
    config: RunConfig,
    size: ModelSize,
    node: NodeInfo,
    instances: int | None = None,
    held_out: int | None = None,
) -> tuple[TimeEstimate, list[Finding]]:
    findings: list[Finding] = []
    t = config.train
    completions = config.completions_per_step
    by_construction = False
    if not config.uses_gpu:
        per_step = CPU_SECONDS_PER_COMPLETION * completions
        rule = f"{CPU_SECONDS_PER_COMPLETION} s per completion on CPU x {completions} completions"
    else:
        kind = node.gpus[0].name if node.has_gpu else config.cluster.gpu
        speed = _gpu_speed(kind)
        if speed is None:
            speed = 0.5
            findings.append(
                Finding(
                    level="info",
                    topic="time",
                    message=f"no speed figure for GPU {kind!r}: taken as half a B200",
                )
            )
        gpus = config.cluster.gpus_per_node * config.cluster.nodes
        params = size.params_b or PAPER_PARAMS_B
        per_step = (
            PAPER_SECONDS_PER_STEP
            * (completions / PAPER_COMPLETIONS_PER_STEP)
            * (params / PAPER_PARAMS_B)
            * (PAPER_GPUS / gpus)
            / speed
        )
        rule = (
            f"paper 27 h / 897 steps = {PAPER_SECONDS_PER_STEP:.1f} s/step (8 B200, "
            f"{PAPER_COMPLETIONS_PER_STEP} completions, {PAPER_PARAMS_B}B) x {completions}/"
            f"{PAPER_COMPLETIONS_PER_STEP} completions x {params:.2f}/{PAPER_PARAMS_B} params x "
            f"{PAPER_GPUS}/{gpus} GPUs / {speed} ({kind} vs B200)"
        )
        factors = (completions / PAPER_COMPLETIONS_PER_STEP, params / PAPER_PARAMS_B)
        by_construction = (
            all(math.isclose(f, 1.0, rel_tol=1e-3) for f in factors)
            and gpus == PAPER_GPUS
            and speed == 1.0
        )
        if by_construction:
            rule += ": every factor is 1, so this is the paper's own figure by construction"
    hours = per_step * t.max_steps / 3600
    stop = hours * 897 / 2000
    val_h, ckpt_h, eval_rule = _eval_time(config, per_step / completions, instances, held_out)
    return (
        TimeEstimate(
            seconds_per_step=round(per_step, 1),
            hours_at_max_steps=round(hours, 3),
            hours_at_paper_stop=round(stop, 3),
            rule=rule,
            validation_hours=round(val_h, 3),
            checkpoint_eval_hours=round(ckpt_h, 3),
            total_hours_at_max_steps=round(hours + val_h + ckpt_h, 3),
            total_hours_at_paper_stop=round((hours + val_h + ckpt_h) * 897 / 2000, 3),
            eval_rule=eval_rule,
            by_construction=by_construction,
        ),
        findings,
    )


def _eval_time(
    config: RunConfig, per_completion: float, instances: int | None, held_out: int | None
) -> tuple[float, float, str]:
    """Hours of ms-swift's validation and of the checkpoint evaluations over max_steps, and
    the rule in words (see the module docstring)."""
    t, e, d = config.train, config.evaluation, config.data
    parts: list[str] = []
    val_h = 0.0
    validates = t.early_stopping is not None and (d.val_fraction > 0 or bool(d.val_repos))
    if validates:
        whole = None if instances is None else max(1, round(instances * d.val_fraction))
        prompts = t.val_limit if t.val_limit is not None else whole
        if prompts is not None and whole is not None:
            prompts = min(prompts, whole)
        runs = t.max_steps // t.eval_steps
        if prompts is None:
            parts.append("validation: unknown (the split's size is unknown; set train.val_limit)")
        else:
            gens = config.eval_generations
            val_h = runs * prompts * gens * per_completion / 3600
            parts.append(
                f"validation: {runs} x {prompts} prompts x {gens} generations x "
                f"{per_completion:.2f} s = {duration(val_h * 3600)}"
            )
    ckpt_h = 0.0
    if e.enabled:
        count = t.max_steps // t.save_steps if e.checkpoints == "all" else 1
        rollouts = e.limit if e.limit is not None else held_out
        if rollouts is not None and held_out is not None:
            rollouts = min(rollouts, held_out)
        if rollouts is None:
            parts.append("checkpoints: unknown (set evaluation.limit)")
        else:
            gpus = max(1, config.cluster.gpus_per_node) * config.cluster.nodes
            scale = gpus / e.tensor_parallel_size if config.uses_gpu else 1.0
            ckpt_h = count * rollouts * per_completion * scale / 3600
            parts.append(
                f"checkpoints: {count} x {rollouts} greedy rollouts x {per_completion:.2f} s x "
                f"{scale:g} (GPUs / eval tensor parallel) = {duration(ckpt_h * 3600)}"
            )
    return val_h, ckpt_h, "; ".join(parts)


def duration(seconds: float) -> str:
    """`42 s`, `7.5 min`, `27 h`: a length of time as people read it."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


# --- all together ---------------------------------------------------------------------------


def _disk_findings(config: RunConfig, disk: DiskEstimate, node: NodeInfo) -> list[Finding]:
    from train_launcher.node import free_bytes

    out: list[Finding] = []

    def free(path: Path) -> int | None:
        n = node.free.get(str(path))
        return n if n is not None else free_bytes(path)

    cache_free = free(config.data.cache)
    if cache_free is not None and disk.repos:
        need = disk.clones_to_fetch_gib
        level: Level = "error" if need * GIB > cache_free else "info"
        out.append(
            Finding(
                level=level,
                topic="disk",
                message=f"clones: {need:.1f} GiB to fetch ({disk.clones_gib:.1f} GiB in all), "
                f"{cache_free / GIB:.0f} GiB free at {config.data.cache}",
            )
        )
    out_free = free(config.output_dir)
    if out_free is not None:
        level = "warning" if disk.outputs_gib * GIB > out_free else "info"
        out.append(
            Finding(
                level=level,
                topic="disk",
                message=f"outputs: about {disk.outputs_gib:.1f} GiB "
                f"({disk.checkpoints} checkpoint(s)"
                f" of {disk.checkpoint_gib:.2f} GiB), {out_free / GIB:.0f} GiB free at "
                f"{config.output_dir}",
            )
        )
    shm = Path("/dev/shm")
    shm_free = free(shm) if shm.is_dir() else None
    if shm_free is not None and disk.trees_peak_gib:
        level = "warning" if disk.trees_peak_gib * GIB > shm_free else "info"
        out.append(
            Finding(
                level=level,
                topic="disk",
                message=f"trees: up to {disk.trees_peak_gib:.1f} GiB of checkouts on tmpfs at once "
                f"({disk.trees} distinct trees), {shm_free / GIB:.0f} GiB free at {shm}",
            )
        )
    return out


def _node_findings(config: RunConfig, node: NodeInfo) -> list[Finding]:
    out: list[Finding] = []
    c = config.cluster
    if config.uses_gpu:
        if not node.has_gpu:
            out.append(
                Finding(
                    level="warning",
                    topic="gpu",
                    message=f"{node.gpu_probe}: this config wants {c.gpus_per_node} GPU(s) "
                    "per node; "
                    f"the GPU checks used cluster.gpu_memory_gib ({c.gpu_memory_gib:g} GiB). Run "
                    "`plan` on the GPU node to check it",
                )
            )
        else:
            n = len(node.gpus)
            level: Level = "error" if n < c.gpus_per_node else "info"
            out.append(
                Finding(
                    level=level,
                    topic="gpu",
                    message=f"{node.gpu_probe}; the config wants {c.gpus_per_node} per node",
                )
            )
            mem = min(g.memory_gib for g in node.gpus)
            if mem + 1 < c.gpu_memory_gib:
                out.append(
                    Finding(
                        level="warning",
                        topic="gpu",
                        message=f"this node's GPUs have {mem:.0f} GiB, the config says "
                        f"{c.gpu_memory_gib:g} GiB: the memory checks used this node's",
                    )
                )
    elif node.has_gpu:
        out.append(
            Finding(
                level="info",
                topic="gpu",
                message=f"{node.gpu_probe}; this is a CPU config and uses none of them",
            )
        )
    else:
        out.append(Finding(level="info", topic="gpu", message=f"{node.gpu_probe}; a CPU config"))
    return out


def estimate(
    config: RunConfig, node: NodeInfo, *, eval_instances: Path | None
) -> tuple[Estimates, list[Finding]]:
    """The estimates, and the findings of the config against `node` (disk, GPU, time)."""
    size = model_size(config)
    findings = _node_findings(config, node)
    if size.params_b is None:
        findings.append(
            Finding(
                level="warning",
                topic="model",
                message=f"the size of {config.model.path} is unknown (set model.params_b): no GPU "
                "memory or checkpoint estimate",
            )
        )
    disk = _disk(config, size, eval_instances)
    if disk.note:
        findings.append(Finding(level="warning", topic="disk", message=disk.note))
    findings += _disk_findings(config, disk, node)
    gpu, gpu_findings = gpu_estimate(config, size, node)
    findings += gpu_findings
    host, host_findings = host_estimate(config, size, node)
    findings += host_findings
    counted = _instance_commits([config.data.instances], config.data.limit)
    instances = sum(n for n, _ in counted.values()) or None
    held_out: int | None = None
    if eval_instances is not None:
        found = _instance_commits([eval_instances], None)
        held_out = sum(n for n, _ in found.values()) or None
    elif instances is not None:
        held_out = max(1, round(instances * config.data.val_fraction))
    time, time_findings = _time(config, size, node, instances, held_out)
    findings += time_findings
    if math.isfinite(time.hours_at_max_steps):
        findings.append(
            Finding(
                level="info",
                topic="time",
                message=f"about {time.seconds_per_step:g} s per step: "
                f"{duration(time.hours_at_max_steps * 3600)} for {config.train.max_steps} steps, "
                f"{duration(time.hours_at_paper_stop * 3600)} if it stops where the paper's did "
                "(897/2000)",
            )
        )
        findings.append(
            Finding(
                level="info",
                topic="time",
                message=f"with evaluation: {duration(time.total_hours_at_max_steps * 3600)} "
                f"for {config.train.max_steps} steps, "
                f"{duration(time.total_hours_at_paper_stop * 3600)} at the paper's stop "
                f"({time.eval_rule or 'no evaluation'})",
            )
        )
    return Estimates(model=size, disk=disk, gpu=gpu, time=time, host=host), findings
