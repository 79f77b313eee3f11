"""The estimate's records: what `plan` prints and `plan.json` holds (`train_launcher.estimate`
makes them; the rules are in its docstring)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

GIB = 1024**3
MIB = 1024**2

Level = Literal["error", "warning", "info"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class Finding(_Record):
    """One thing the checks say: `error` stops `launch` (unless forced), the rest inform."""

    level: Level
    topic: str
    message: str


class ModelSize(_Record):
    params_b: float | None
    weights_gib: float | None
    lora_params_m: float | None
    source: str
    hidden: int | None = None
    layers: int | None = None
    vocab: int | None = None


class RepoSize(_Record):
    repo: str
    instances: int
    commits: int
    bare_mib: float
    tree_mib: float
    how: Literal["measured", "table", "default"]


class DiskEstimate(_Record):
    repos: tuple[RepoSize, ...]
    clones_gib: float
    clones_to_fetch_gib: float
    trees: int
    trees_peak_gib: float
    checkpoint_gib: float
    checkpoints: int
    outputs_gib: float
    note: str = ""


class GpuEstimate(_Record):
    gpu_memory_gib: float
    memory_from: str
    weights_gib: float
    vllm_gib: float | None
    vllm_need_gib: float | None
    trainer_gib: float
    trainer_need_gib: float
    eval_need_gib: float | None
    trainer_parts_gib: dict[str, float] = {}
    fits_sequence_tokens: int | None = None
    validation_need_gib: float | None = None
    rule: str = ""


class HostEstimate(_Record):
    """Host RAM of one node: what ms-swift keeps there (sleep level, offload) and the node's."""

    need_gib: float
    parts_gib: dict[str, float]
    memory_gib: float | None
    memory_from: str
    rule: str = ""


class TimeEstimate(_Record):
    seconds_per_step: float
    hours_at_max_steps: float
    hours_at_paper_stop: float
    rule: str
    validation_hours: float = 0.0
    checkpoint_eval_hours: float = 0.0
    total_hours_at_max_steps: float = 0.0
    total_hours_at_paper_stop: float = 0.0
    eval_rule: str = ""
    by_construction: bool = False


class Estimates(_Record):
    model: ModelSize
    disk: DiskEstimate | None
    gpu: GpuEstimate | None
    time: TimeEstimate | None
    host: HostEstimate | None = None
