"""GPU and host memory of a run as ms-swift trains it: the rules of `train_launcher.estimate`'s
docstring ("GPU memory", "Host RAM"), each with the ms-swift source it follows."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from codegrep_records import RecordError
from codegrep_records.io import read_json_object

from train_launcher.config import RunConfig
from train_launcher.estimate._figures import (
    GIB,
    Finding,
    GpuEstimate,
    HostEstimate,
    Level,
    ModelSize,
)
from train_launcher.node import NodeInfo

__all__ = ["HOST_GIB_PER_PROCESS", "gpu_estimate", "host_estimate"]


@dataclass(frozen=True)
class _Zero:
    """The DeepSpeed ZeRO stage of `train.deepspeed` and whether its config offloads."""

    stage: int
    offload: bool  # DeepSpeed's own offload: optimizer (and ZeRO-3 params) on the host

    @classmethod
    def of(cls, config: RunConfig) -> _Zero:
        name = config.train.deepspeed if config.uses_gpu else None
        if not name:
            return cls(0, False)
        found = re.fullmatch(r"zero([0-3])(_offload)?", name)
        if found:
            return cls(int(found.group(1)), bool(found.group(2)))
        try:
            z = read_json_object(Path(name)).get("zero_optimization") or {}
            stage = int(z.get("stage") or 0)
            device = (z.get("offload_optimizer") or {}).get("device")
        except (RecordError, ValueError, TypeError, AttributeError):
            return cls(0, False)
        return cls(stage, device == "cpu")


def _shards(config: RunConfig, zero: _Zero) -> tuple[int, int, int]:
    """How many ways the parameters, gradients and optimizer states are split (ZeRO 3/2/1)."""
    n = config.trainer_world_size
    return (n if zero.stage >= 3 else 1, n if zero.stage >= 2 else 1, n if zero.stage >= 1 else 1)


def _trainable_gib(config: RunConfig, size: ModelSize, zero: _Zero) -> float:
    """What the update holds on each GPU besides the weights: the trainable parameters' own
    copy (LoRA, fp32), their gradients and Adam's states. ms-swift's --offload_optimizer moves
    the states to the host only while vLLM generates and back for the update
    (`GRPOTrainer.offload_context`), so they count here; DeepSpeed's own offload
    (`zero*_offload`) keeps them on the host."""
    p_shard, g_shard, o_shard = _shards(config, zero)
    if config.lora.tuner == "lora":
        t = (size.lora_params_m or 0.0) * 1e6
        own, grads, states = t * 4 / p_shard, t * 4 / g_shard, t * 8 / o_shard
    else:
        t = (size.params_b or 0.0) * 1e9
        own, grads, states = 0.0, t * 2 / g_shard, t * 12 / o_shard  # fp32 master + m + v
    return (own + grads + (0.0 if zero.offload else states)) / GIB


def gpu_estimate(
    config: RunConfig, size: ModelSize, node: NodeInfo
) -> tuple[GpuEstimate | None, list[Finding]]:
    findings: list[Finding] = []
    if not config.uses_gpu or size.weights_gib is None:
        return None, findings
    if node.has_gpu:
        mem = min(g.memory_gib for g in node.gpus)
        memory_from = "this node (nvidia-smi)"
    else:
        mem = config.cluster.gpu_memory_gib
        memory_from = "cluster.gpu_memory_gib (no GPU here)"
    w = size.weights_gib
    r, t = config.rollout, config.train
    vllm: float | None = None
    vllm_need: float | None = None
    if r.engine == "vllm":
        vllm_need = w / r.tensor_parallel_size * 1.15
        if config.server_mode:
            vllm = mem * 0.9
            trainer_has = mem * 0.95
        else:
            vllm = mem * r.gpu_memory_utilization
            trainer_has = mem * (1 - r.gpu_memory_utilization) if r.sleep_level == 0 else mem * 0.95
        if vllm_need > vllm:
            findings.append(
                Finding(
                    level="error",
                    topic="gpu memory",
                    message=f"vLLM's {vllm:.0f} GiB per GPU cannot hold {vllm_need:.0f} GiB "
                    f"(weights {w:.0f} GiB / tensor parallel {r.tensor_parallel_size}, +15%): "
                    "raise "
                    "rollout.gpu_memory_utilization or rollout.tensor_parallel_size",
                )
            )
    else:
        trainer_has = mem * 0.95
    zero = _Zero.of(config)
    p_shard, _, _ = _shards(config, zero)
    batch, length = t.per_device_train_batch_size, t.max_length
    parts: dict[str, float] = {
        "weights": w / p_shard,
        "trainable": _trainable_gib(config, size, zero),
        "overhead": mem * 0.05,
    }
    fixed = sum(parts.values())
    per_token: float | None = None
    if size.hidden and size.layers and size.vocab:
        h, layers = size.hidden, size.layers
        act = (layers * h * 2 + h * 34) if t.gradient_checkpointing else layers * h * 34
        per_token = (size.vocab * 2 + act) / GIB
        parts["logits"] = batch * length * size.vocab * 2 / GIB
        parts["activations"] = batch * length * act / GIB
        rule = (
            f"weights / {p_shard} (ZeRO-{zero.stage}) + trainable states + logits "
            f"({batch} x {length} tokens x {size.vocab} x 2 B) + activations ("
            + (
                "checkpointed: layers x hidden x 2 B + one layer's 34 x hidden B"
                if t.gradient_checkpointing
                else "34 x hidden B per layer"
            )
            + " per token) + 5% overhead, at max_length"
        )
    else:
        parts["activations"] = mem * 0.15
        rule = "weights + trainable states + 15% of the GPU (architecture unknown)"
    need = sum(parts.values())
    fits: int | None = None
    if per_token is not None:
        fits = max(0, int((trainer_has - fixed) / per_token / batch))
    validates = t.early_stopping is not None and (
        config.data.val_fraction > 0 or bool(config.data.val_repos)
    )
    eval_micro: float | None = None
    if validates and size.hidden and size.vocab:
        # validation computes the loss without gradients: its batch's logits and one layer's
        # activations at a time (ms-swift's eval batch, RunConfig.eval_batch_size)
        eb = config.eval_batch_size
        eval_token = (size.vocab * 2 + size.hidden * 34) / GIB
        eval_micro = fixed + eb * length * eval_token
        if eval_micro > trainer_has:
            eval_fits = max(0, int((trainer_has - fixed) / eval_token / eb))
            findings.append(
                Finding(
                    level="warning",
                    topic="gpu memory",
                    message=f"at max_length {length} validation ({eb} completions per device) "
                    f"may need {eval_micro:.0f} GiB per GPU of about {trainer_has:.0f} GiB; "
                    f"sequences up to about {eval_fits} tokens fit: lower "
                    "train.num_generations_eval or train.max_length",
                )
            )
    if need > trainer_has:
        longest = (
            ""
            if fits is None
            else (f"; sequences up to about {fits} tokens fit ({batch} per device)")
        )
        findings.append(
            Finding(
                level="warning",
                topic="gpu memory",
                message=f"at max_length {length} the update may need {need:.0f} GiB per GPU "
                f"and has about {trainer_has:.0f} GiB (logits {parts.get('logits', 0):.0f}, "
                f"activations {parts['activations']:.0f}){longest}: lower "
                "train.max_length or the batch, or use ZeRO-3",
            )
        )
    eval_need: float | None = None
    if config.evaluation.enabled:
        eval_need = w / config.evaluation.tensor_parallel_size
        if eval_need > mem * 0.9:
            findings.append(
                Finding(
                    level="error",
                    topic="gpu memory",
                    message=f"the evaluation server needs {eval_need:.0f} GiB per GPU, above "
                    "90% of "
                    f"{mem:.0f} GiB: raise evaluation.tensor_parallel_size",
                )
            )
    est = GpuEstimate(
        gpu_memory_gib=round(mem, 1),
        memory_from=memory_from,
        weights_gib=round(w, 2),
        vllm_gib=None if vllm is None else round(vllm, 1),
        vllm_need_gib=None if vllm_need is None else round(vllm_need, 1),
        trainer_gib=round(trainer_has, 1),
        trainer_need_gib=round(need, 1),
        eval_need_gib=None if eval_need is None else round(eval_need, 1),
        trainer_parts_gib={k: round(v, 2) for k, v in parts.items()},
        fits_sequence_tokens=None if fits is None else min(fits, length),
        validation_need_gib=None if eval_micro is None else round(eval_micro, 1),
        rule=rule,
    )
    return est, findings


#: Each GPU process's own host memory (Python, torch, CUDA context, vLLM's engine): rough.
HOST_GIB_PER_PROCESS = 8.0


def host_estimate(
    config: RunConfig, size: ModelSize, node: NodeInfo
) -> tuple[HostEstimate | None, list[Finding]]:
    """Host RAM of one node (see the module docstring). Counted together, a bound: the vLLM
    weights asleep (the update) and the trainer offloaded (the rollout) alternate in a step."""
    if not config.uses_gpu or size.weights_gib is None:
        return None, []
    w = size.weights_gib
    r, t = config.rollout, config.train
    zero = _Zero.of(config)
    p_shard, _, o_shard = _shards(config, zero)
    procs = config.trainer_gpus_per_node
    parts: dict[str, float] = {"processes": HOST_GIB_PER_PROCESS * procs}
    if r.engine == "vllm" and not config.server_mode and r.sleep_level == 1:
        # level 1 keeps the weights in host RAM while asleep; level 2 drops them
        parts["vllm asleep (sleep_level 1)"] = w / r.tensor_parallel_size * procs
    lora = config.lora.tuner == "lora"
    if t.offload_model:
        model = w / p_shard * procs
        if not lora and t.beta > 0:
            model *= 2  # the reference model, offloaded with it
        parts["offload_model (rollout)"] = model
    trainable = (size.lora_params_m or 0.0) * 1e6 if lora else (size.params_b or 0.0) * 1e9
    if t.offload_optimizer and not zero.offload:
        parts["offload_optimizer (Adam m, v)"] = trainable * 8 / o_shard * procs / GIB
    if zero.offload:
        parts["DeepSpeed offload (optimizer)"] = trainable * 12 / o_shard * procs / GIB
        if zero.stage >= 3:
            parts["DeepSpeed offload (parameters)"] = w / p_shard * procs
    need = sum(parts.values())
    if node.has_gpu and node.memory_gib is not None:
        have: float | None = node.memory_gib
        memory_from = "this node (/proc/meminfo)"
    elif config.cluster.host_memory_gib is not None:
        have = config.cluster.host_memory_gib
        memory_from = "cluster.host_memory_gib"
    else:
        have, memory_from = None, "unknown (set cluster.host_memory_gib)"
    findings: list[Finding] = []
    what = ", ".join(f"{k} {v:.0f}" for k, v in parts.items())
    if have is None:
        findings.append(
            Finding(
                level="info",
                topic="host memory",
                message=f"about {need:.0f} GiB of host RAM per node ({what}); not checked: "
                "set cluster.host_memory_gib, or run plan on the node",
            )
        )
    else:
        level: Level = "error" if need > have * 0.9 else "info"
        findings.append(
            Finding(
                level=level,
                topic="host memory",
                message=f"about {need:.0f} GiB of host RAM per node ({what}) of {have:.0f} GiB "
                f"({memory_from})"
                + (
                    ": lower rollout.sleep_level to 2 or turn offload off"
                    if level == "error"
                    else ""
                ),
            )
        )
    est = HostEstimate(
        need_gib=round(need, 1),
        parts_gib={k: round(v, 2) for k, v in parts.items()},
        memory_gib=None if have is None else round(have, 1),
        memory_from=memory_from,
        rule="processes x 8 GiB + vLLM's weights asleep at sleep level 1 + what "
        "--offload_model/--offload_optimizer move out during the rollout (+ DeepSpeed's own "
        "offload), summed (a bound)",
    )
    return est, findings
