"""The run config: one YAML file that says what `codegrep-train plan|launch` does.

`load_config(path)` reads it into a `RunConfig` whose defaults are the CodeGrep paper's run
(Qwen3-14B, LoRA, optimizer offload, vLLM colocated, one 8×B200 node, a 2000-step budget with
early stopping on the validation reward, reward v3, at most 4 turns). Values the paper does not
state (LoRA rank and alpha, learning rate, generations per prompt, save and eval intervals, the
vLLM memory share) are the launcher's choices and are marked so in the field descriptions.

Relative paths in the file are resolved against `base_dir` (itself relative to the file's
folder; default: the file's folder), so a run re-launched from another working directory finds
the same outputs. `model.path` is read as a local folder only when it starts with `/`, `./`,
`../` or `~`; anything else is a model hub id.

Every problem is reported at once, each with the file, the YAML line and the field
(`ConfigError`); a field the schema does not know is an error, with the closest known name.
This module is not for building commands (`plan`) or probing the node (`node`).
"""

from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml  # type: ignore[import-untyped, unused-ignore]
from codegrep_records import RecordError
from codegrep_records.io import read_text_file
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from train_launcher._yaml import MAX_YAML_BYTES, load_yaml
from train_launcher.errors import ConfigError, ConfigProblem

__all__ = [
    "PAPER",
    "ClusterSection",
    "DataSection",
    "EarlyStopping",
    "EvaluationSection",
    "FetchSource",
    "LoraSection",
    "MiningSection",
    "ModelSection",
    "RolloutSection",
    "RunConfig",
    "ServerSection",
    "SftSection",
    "SwiftSection",
    "TrainSection",
    "apply_overrides",
    "expand_env",
    "load_config",
    "reward_func_name",
]

#: What the CodeGrep paper states about its run (the rest of the defaults are our choices).
PAPER = {
    "model": "Qwen/Qwen3-14B",
    "tuner": "lora",
    "offload_optimizer": True,
    "rollout": "vLLM colocated",
    "gpus": "1 node x 8 B200",
    "wall_clock_h": 27.0,
    "stopped_at_step": 897,
    "max_steps": 2000,
    "max_turns": 4,
    "max_calls_per_turn": 8,
    "reward": "v3",
}

_CONTEXT_BASE = "base"


def _resolve_path(value: Path, info: ValidationInfo) -> Path:
    """A relative path is taken from the config's base folder (see the module docstring)."""
    path = value.expanduser()
    base = (info.context or {}).get(_CONTEXT_BASE)
    if base is not None and not path.is_absolute():
        path = Path(base) / path
    return Path(os.path.normpath(path)) if path.is_absolute() else path


#: A path in the config: `~` expanded, relative ones joined to the base folder.
ConfigPath = Annotated[Path, AfterValidator(_resolve_path)]


def _looks_like_path(text: str) -> bool:
    return text.startswith(("/", "./", "../", "~")) or text in (".", "..")


def reward_func_name(reward: str) -> str:
    """`v3` -> `codegrep_v3` (the name the plugin registers); other names as they are."""
    return f"codegrep_{reward}" if reward in ("v1", "v2", "v3") else reward


def _known_rewards() -> tuple[str, ...]:
    from grpo_rewards.swift_orm import SWIFT_ORMS

    return ("v1", "v2", "v3", *SWIFT_ORMS)


class _Section(BaseModel):
    # validate_default: a default path (data.cache) is resolved like a written one.
    # allow_inf_nan=False: YAML reads `.inf` and `.nan` as floats, and a bound such as `gt=0`
    # lets `.inf` through; no number of a run (a temperature, a timeout, a size, a share) is
    # meaningful infinite or NaN, and the tools it reaches would hang, overflow or misbehave.
    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False
    )


class ModelSection(_Section):
    path: str = Field(
        "Qwen/Qwen3-14B",
        description="A model hub id, or a local folder (a path starting /, ./, ../ or ~). "
        "Paper: Qwen3-14B.",
    )
    torch_dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16"
    enable_thinking: bool = Field(
        False, description="Qwen3's thinking mode, in training and in the evaluation server."
    )
    model_type: str | None = Field(None, description="ms-swift --model_type (local models).")
    template: str | None = Field(None, description="ms-swift --template (local models).")
    params_b: float | None = Field(
        None,
        gt=0,
        description="Parameters in billions, for the estimates, when neither the name nor a "
        "local folder tells.",
    )

    @field_validator("path")
    @classmethod
    def _local_path(cls, value: str, info: ValidationInfo) -> str:
        if not value.strip():
            raise ValueError("must name a model")
        if _looks_like_path(value):
            return str(_resolve_path(Path(value), info))
        return value

    @property
    def is_local(self) -> bool:
        return _looks_like_path(self.path)


class LoraSection(_Section):
    tuner: Literal["lora", "full"] = Field("lora", description="Paper: LoRA.")
    rank: int = Field(32, ge=1, description="Our choice (the paper does not state it).")
    alpha: int = Field(64, ge=1, description="Our choice (the paper does not state it).")
    dropout: float = Field(0.05, ge=0.0, lt=1.0)
    target_modules: tuple[str, ...] = Field(("all-linear",), min_length=1)


class FetchSource(_Section):
    """One training input the `fetch` stage downloads: a split of a dataset repository at a
    pinned revision, written as JSON lines to `output` (see `train_launcher.fetch`)."""

    output: ConfigPath = Field(
        description="The file it writes: data.instances, one of data.trajectories or "
        "evaluation.instances."
    )
    repo_id: str = Field(description="The dataset repository, OWNER/NAME.")
    revision: str = Field(
        description="A commit id (40 hex digits) pins the rows; a branch or tag is recorded "
        "as the commit it resolved to in <output>.fetch.json."
    )
    split: str = "train"
    source: str = Field(
        "hub", description="hub (Hugging Face), or a local mirror folder or file:// URL."
    )
    limit: int | None = Field(None, ge=1, description="At most this many rows.")
    stands_for: str = Field("", description="The paper's data this stands in for (docs only).")

    @field_validator("repo_id")
    @classmethod
    def _repo_id(cls, value: str) -> str:
        from train_launcher.fetch import FetchInputError, _check_names

        try:
            _check_names(value, "main", "train")
        except FetchInputError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("source")
    @classmethod
    def _fetch_source(cls, value: str, info: ValidationInfo) -> str:
        if value == "hub" or value.startswith("file://"):
            return value
        if "://" in value:
            raise ValueError("use hub, a folder or a file:// URL")
        return str(_resolve_path(Path(value), info))


class DataSection(_Section):
    fetch: tuple[FetchSource, ...] = Field(
        (), description="Inputs to download first (the `fetch` stage); none: they are there."
    )
    instances: ConfigPath = Field(description="SWE-bench-style training instances.")
    trajectories: tuple[ConfigPath, ...] = Field(
        (), description="Agent trajectories for `catm mine`; none: the patch files are the gold."
    )
    labels: ConfigPath | None = Field(
        None, description="Labels mined before (a `catm mine` output): no mining stage."
    )
    val_fraction: float = Field(
        0.05, ge=0.0, lt=1.0, description="Share of instances held for validation, by repository."
    )
    val_repos: tuple[str, ...] = Field(
        (), description="Validation repositories (replace the share)."
    )
    limit: int | None = Field(None, ge=0, description="At most this many instances.")
    cache: ConfigPath = Field(Path("cache"), description="The clone cache (bare clones).")
    source: str = Field(
        "https://github.com/{repo}.git",
        description="Where clones come from: a URL template or a folder pattern.",
    )
    jobs: int = Field(8, ge=1, description="Trees opened at a time by the dataset builder.")

    @field_validator("source")
    @classmethod
    def _source(cls, value: str, info: ValidationInfo) -> str:
        if "{" not in value:
            raise ValueError("must contain {repo}, or {owner} and {name}")
        if "://" in value or value.startswith("git@"):
            return value
        return str(_resolve_path(Path(value), info))


class MiningSection(_Section):
    judge: str = Field("none", description="Judge model for `catm mine`, or none (keep all).")
    endpoint: str | None = Field(None, description="The judge's OpenAI-compatible endpoint.")
    jobs: int = Field(16, ge=1)
    threshold: float = Field(0.15, ge=0.0, le=1.0, description="Gold threshold on w(f).")
    timeout: float = Field(60.0, gt=0.0, description="Seconds per judge request.")


class ClusterSection(_Section):
    device: Literal["cuda", "cpu"] = "cuda"
    nodes: int = Field(1, ge=1, description="Paper: 1.")
    gpus_per_node: int = Field(8, ge=0, description="Paper: 8.")
    gpu: str = Field("B200", description="The GPU model of the target nodes (time estimate).")
    gpu_memory_gib: float = Field(
        180.0, gt=0.0, description="Memory of one GPU of the target nodes, GiB (B200: 180)."
    )
    host_memory_gib: float | None = Field(
        None,
        gt=0.0,
        description="Host RAM of one target node, GiB, for the host-memory check when `plan` "
        "runs off the node (on a GPU node its /proc/meminfo is read). None: not checked.",
    )
    master_addr: str = Field("127.0.0.1", description="Node 0's address (several nodes).")
    master_port: int = Field(29500, ge=1, le=65535)


class ServerSection(_Section):
    gpus: int = Field(2, ge=1, description="GPUs of each node given to `swift rollout`.")
    host: str | None = Field(None, description="The rollout server's host (default: node 0).")
    port: int = Field(8001, ge=1, le=65535)
    data_parallel_size: int | None = Field(
        None, ge=1, description="vLLM data parallel size (default: gpus / tensor_parallel_size)."
    )
    timeout: float = Field(240.0, gt=0.0, description="Trainer's --vllm_server_timeout.")
    ready_timeout: float = Field(1800.0, gt=0.0, description="Seconds to wait for it to start.")


class RolloutSection(_Section):
    engine: Literal["vllm", "none"] = Field(
        "vllm", description="vllm, or none: the trainer generates (CPU smoke runs)."
    )
    mode: Literal["colocate", "server"] = Field("colocate", description="Paper: colocate.")
    gpu_memory_utilization: float = Field(
        0.45, gt=0.0, lt=1.0, description="vLLM's share of each GPU (colocate). Our choice."
    )
    tensor_parallel_size: int = Field(1, ge=1)
    max_model_len: int = Field(32768, ge=256)
    enable_lora: bool = Field(True, description="Sync LoRA weights only (--vllm_enable_lora).")
    sleep_level: Literal[0, 1, 2] = Field(1, description="Colocate: free vLLM during training.")
    server: ServerSection = ServerSection()


class EarlyStopping(_Section):
    patience: int = Field(
        5, ge=1, description="Evaluations without a better validation reward before stopping."
    )
    metric: str = Field("reward", description="ms-swift's GRPO eval metric to watch.")


class TrainSection(_Section):
    num_generations: int = Field(8, ge=2, description="Generations per prompt. Our choice.")
    num_generations_eval: int | None = Field(
        None,
        ge=1,
        description="Generations per validation prompt (ms-swift --num_generations_eval); "
        "None: num_generations. Fewer make validation cheaper and its batch smaller.",
    )
    max_turns: int = Field(4, ge=1, description="Paper: 3 exploration turns + 1 answer turn.")
    learning_rate: float = Field(1e-5, gt=0.0, description="Our choice.")
    max_steps: int = Field(2000, ge=1, description="Paper: a 2000-step budget.")
    per_device_train_batch_size: int = Field(4, ge=1)
    per_device_eval_batch_size: int | None = Field(
        None,
        ge=1,
        description="Validation prompts' completions per device. None: chosen by ms-swift's "
        "rule (this x trainer processes must be a multiple of num_generations): the train "
        "batch when it meets the rule, else the smallest size above it that does.",
    )
    gradient_accumulation_steps: int = Field(2, ge=1)
    max_completion_length: int = Field(2048, ge=1, description="Tokens per turn.")
    max_length: int = Field(32768, ge=256)
    temperature: float = Field(1.0, gt=0.0)
    beta: float = Field(0.04, ge=0.0, description="KL coefficient (the monitor watches KL).")
    loss_type: str = "grpo"
    offload_optimizer: bool = Field(True, description="Paper: optimizer offload.")
    offload_model: bool = True
    deepspeed: str | None = Field("zero3", description="ms-swift --deepspeed, or null.")
    gradient_checkpointing: bool = True
    val_limit: int | None = Field(
        64,
        ge=1,
        description="Validation prompts ms-swift evaluates every eval_steps (a seeded sample "
        "of the validation split; each gets num_generations completions). Our choice: the "
        "whole split (5% of the paper's 31,977 rows) would cost hours per evaluation. None: all.",
    )
    save_steps: int = Field(50, ge=1, description="Our choice.")
    eval_steps: int = Field(50, ge=1, description="Our choice; keep equal to save_steps.")
    save_total_limit: int | None = Field(None, ge=1)
    logging_steps: int = Field(1, ge=1)
    early_stopping: EarlyStopping | None = Field(
        EarlyStopping(), description="Patience on the validation reward; null: run max_steps."
    )
    reward: str = Field("v3", description="v1, v2, v3 (paper: v3) or a grpo_rewards name.")
    report_to: tuple[str, ...] = ("tensorboard",)
    log_completions: bool = True
    plugin: ConfigPath | None = Field(
        None, description="The ms-swift plugin file (default: the installed codegrep-model's)."
    )
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment for GRPO.")
    extra_args: tuple[str, ...] = Field((), description="Appended to `swift rlhf` as they are.")

    @field_validator("reward")
    @classmethod
    def _reward(cls, value: str) -> str:
        known = _known_rewards()
        if value not in known:
            raise ValueError(f"unknown reward {value!r}; known: {', '.join(known)}")
        return value


class SftSection(_Section):
    enabled: bool = Field(False, description="An SFT warm start before GRPO.")
    rollouts: tuple[ConfigPath, ...] = Field(
        (), description="Rollout files to learn from; none: `codegrep-model batch` makes them."
    )
    teacher_base_url: str | None = Field(
        None, description="The teacher's endpoint for `codegrep-model batch`; none: lexical."
    )
    teacher_model: str = "codegrep"
    teacher_timeout: float = Field(120.0, gt=0.0)
    jobs: int = Field(4, ge=1)
    limit: int | None = Field(None, ge=0)
    threshold: float = Field(0.5, description="Keep rollouts whose reward is at least this.")
    learning_rate: float = Field(1e-4, gt=0.0)
    num_train_epochs: int = Field(1, ge=1)
    max_steps: int | None = Field(None, ge=1, description="Overrides num_train_epochs.")
    per_device_train_batch_size: int = Field(1, ge=1)
    gradient_accumulation_steps: int = Field(8, ge=1)
    env: dict[str, str] = Field(default_factory=dict)
    extra_args: tuple[str, ...] = ()


class EvaluationSection(_Section):
    enabled: bool = True
    instances: ConfigPath | None = Field(
        None, description="Held-out instances; none: the GRPO validation split's instances."
    )
    labels: ConfigPath | None = Field(None, description="Alternative gold for the scores.")
    server: Literal["vllm", "swift"] = Field(
        "vllm", description="`vllm serve`, or `swift deploy` (its pt backend runs on CPU)."
    )
    port: int = Field(8000, ge=1, le=65535)
    tensor_parallel_size: int = Field(1, ge=1)
    checkpoints: Literal["all", "last"] = "all"
    jobs: int = Field(8, ge=1, description="Rollouts at a time in `swe-eval predict`.")
    timeout: float = Field(120.0, gt=0.0, description="Seconds per model request.")
    ready_timeout: float = Field(1800.0, gt=0.0, description="Seconds to wait for the server.")
    limit: int | None = Field(
        100,
        ge=0,
        description="Held-out instances per checkpoint: one greedy rollout each (the agent "
        "policy's temperature is 0). Our choice; None: all of them.",
    )
    env: dict[str, str] = Field(default_factory=dict)
    extra_args: tuple[str, ...] = Field((), description="Appended to the server command.")


class SwiftSection(_Section):
    executable: str = "swift"
    vllm_executable: str = "vllm"
    extra_args: tuple[str, ...] = Field(
        (), description="Appended to every swift command (sft, rlhf, rollout, deploy)."
    )


class RunConfig(_Section):
    """One training run, from trajectories to an evaluated adapter."""

    name: str = "codegrep"
    base_dir: Path | None = Field(
        None,
        description="The folder relative paths start from, relative to the file's folder "
        "(default: the file's folder); `${NAME:-default}` reads the environment. Loaded "
        "configs hold it resolved.",
    )
    output_dir: ConfigPath = Field(description="Everything the run writes goes here.")
    seed: int = Field(
        42, ge=0, le=2**32 - 1, description="Every tool's seed (numpy takes 0 to 2**32 - 1)."
    )
    env: dict[str, str] = Field(default_factory=dict, description="Environment for every command.")
    model: ModelSection = ModelSection()
    lora: LoraSection = LoraSection()
    data: DataSection
    mining: MiningSection = MiningSection()
    cluster: ClusterSection = ClusterSection()
    rollout: RolloutSection = RolloutSection()
    train: TrainSection = TrainSection()
    sft: SftSection = SftSection()
    evaluation: EvaluationSection = EvaluationSection()
    swift: SwiftSection = SwiftSection()
    monitor: dict[str, Any] = Field(
        default_factory=dict, description="Passed to `codegrep-train monitor` as it is."
    )

    # --- derived figures the plan, the estimates and the checks share -------------------------

    @property
    def fetched(self) -> tuple[FetchSource, ...]:
        """The `data.fetch` sources whose output the run reads (data.instances, a
        trajectories file, evaluation.instances); the others are not fetched (a path
        overridden with a file of one's own)."""
        named = {self.data.instances, *self.data.trajectories}
        if self.evaluation.enabled and self.evaluation.instances is not None:
            named.add(self.evaluation.instances)
        return tuple(f for f in self.data.fetch if f.output in named)

    @property
    def uses_gpu(self) -> bool:
        return self.cluster.device == "cuda"

    @property
    def server_mode(self) -> bool:
        return self.rollout.engine == "vllm" and self.rollout.mode == "server"

    @property
    def trainer_gpus_per_node(self) -> int:
        """GPUs each node gives the trainer (all of them, less the rollout server's)."""
        if not self.uses_gpu:
            return 0
        taken = self.rollout.server.gpus if self.server_mode else 0
        return self.cluster.gpus_per_node - taken

    @property
    def trainer_world_size(self) -> int:
        """Trainer processes over all nodes (1 on CPU)."""
        return max(1, self.trainer_gpus_per_node) * self.cluster.nodes

    @property
    def eval_batch_size(self) -> int:
        """`--per_device_eval_batch_size`: the configured one, else the train batch when
        batch x trainer processes is a multiple of `num_generations` (ms-swift's rule:
        `RolloutTrainerArgumentsMixin._init_generation_batch_params` in
        swift/rlhf_trainers/args_mixin.py, from `GRPOConfig.__post_init__`; with
        `num_generations_eval` when set), else the smallest size above it that is."""
        t = self.train
        if t.per_device_eval_batch_size is not None:
            return t.per_device_eval_batch_size
        step = self.eval_generations // math.gcd(self.eval_generations, self.trainer_world_size)
        return -(-t.per_device_train_batch_size // step) * step

    @property
    def eval_generations(self) -> int:
        """Completions per validation prompt (ms-swift: num_generations_eval or
        num_generations)."""
        return self.train.num_generations_eval or self.train.num_generations

    @property
    def completions_per_step(self) -> int:
        t = self.train
        return (
            t.per_device_train_batch_size * self.trainer_world_size * t.gradient_accumulation_steps
        )


def _cross_checks(config: RunConfig) -> list[ConfigProblem]:
    """What no single field can say: fields that contradict each other."""
    out: list[ConfigProblem] = []
    c, r, t = config.cluster, config.rollout, config.train

    def bad(field: str, message: str) -> None:
        out.append(ConfigProblem(field, message))

    if c.device == "cpu":
        if r.engine == "vllm":
            bad("rollout.engine", "vLLM needs GPUs: use `engine: none` with `cluster.device: cpu`")
        if c.nodes > 1:
            bad("cluster.nodes", "a CPU run is one node")
        if config.evaluation.enabled and config.evaluation.server == "vllm":
            bad("evaluation.server", "`vllm serve` needs a GPU: use `server: swift` on CPU")
        if t.deepspeed:
            bad("train.deepspeed", "DeepSpeed needs GPUs: set it to null with `device: cpu`")
    else:
        if c.gpus_per_node < 1:
            bad("cluster.gpus_per_node", "a CUDA run needs at least one GPU per node")
        if config.server_mode:
            s = r.server
            if s.gpus >= c.gpus_per_node:
                bad(
                    "rollout.server.gpus",
                    f"{s.gpus} of {c.gpus_per_node} GPUs leaves none for the trainer",
                )
            dp = s.data_parallel_size or max(1, s.gpus // r.tensor_parallel_size)
            if dp * r.tensor_parallel_size > s.gpus:
                bad(
                    "rollout.server.data_parallel_size",
                    f"data {dp} x tensor {r.tensor_parallel_size} parallel needs more than "
                    f"the server's {s.gpus} GPUs",
                )
        elif r.engine == "vllm" and r.tensor_parallel_size > c.gpus_per_node:
            bad("rollout.tensor_parallel_size", f"above the {c.gpus_per_node} GPUs of a node")
        if config.evaluation.tensor_parallel_size > c.gpus_per_node:
            bad("evaluation.tensor_parallel_size", f"above the {c.gpus_per_node} GPUs of a node")
    if c.device == "cuda" and c.gpus_per_node >= 1 and config.trainer_gpus_per_node >= 1:
        per_gen = t.per_device_train_batch_size * config.trainer_world_size
        if (per_gen * t.gradient_accumulation_steps) % t.num_generations:
            bad(
                "train.num_generations",
                f"{t.per_device_train_batch_size} per device x {config.trainer_world_size} "
                f"trainer processes x {t.gradient_accumulation_steps} accumulation steps = "
                f"{per_gen * t.gradient_accumulation_steps} completions per step, not a "
                f"multiple of {t.num_generations} generations (ms-swift's rule: "
                "generation_batch_size must be divisible by num_generations)",
            )
    elif (t.per_device_train_batch_size * t.gradient_accumulation_steps) % t.num_generations:
        bad(
            "train.num_generations",
            f"{t.per_device_train_batch_size} per device x {t.gradient_accumulation_steps} "
            f"accumulation steps is not a multiple of {t.num_generations} generations",
        )
    if t.per_device_eval_batch_size is not None:
        world = config.trainer_world_size
        if (t.per_device_eval_batch_size * world) % config.eval_generations:
            bad(
                "train.per_device_eval_batch_size",
                f"{t.per_device_eval_batch_size} per device x {world} trainer processes is not a "
                f"multiple of {config.eval_generations} generations (ms-swift's rule for the "
                "validation batch; leave it unset to have it chosen)",
            )
    outputs = [f.output for f in config.data.fetch]
    for i, out_path in enumerate(outputs):
        if outputs.index(out_path) != i:
            bad(f"data.fetch.{i}.output", f"{out_path} is fetched twice")
    if config.data.labels is not None and config.data.trajectories:
        bad("data.labels", "give trajectories to mine or labels mined before, not both")
    if t.max_completion_length > t.max_length:
        bad("train.max_completion_length", f"above train.max_length ({t.max_length})")
    if r.engine == "vllm" and r.max_model_len < t.max_completion_length:
        bad("rollout.max_model_len", "below train.max_completion_length")
    if config.sft.enabled and config.lora.tuner != "lora":
        bad("sft.enabled", "the SFT warm start hands GRPO a LoRA adapter: needs `lora.tuner: lora`")
    return out


# --- reading the file ---------------------------------------------------------------------------


def apply_overrides(data: dict[str, Any], overrides: Sequence[str]) -> list[ConfigProblem]:
    """`--set a.b=VALUE` (VALUE read as YAML) into `data`, in place; the problems found."""
    problems: list[ConfigProblem] = []
    for item in overrides:
        key, sep, raw = item.partition("=")
        parts = key.strip().split(".")
        if not sep or not all(parts):
            problems.append(ConfigProblem("--set", f"{item!r} is not KEY=VALUE (a.b=1)"))
            continue
        try:
            value = load_yaml(raw)[0] if raw.strip() else ""
        except yaml.YAMLError as exc:
            problems.append(ConfigProblem("--set", f"{item!r}: the value is not YAML: {exc}"))
            continue
        here: dict[str, Any] = data
        for i, part in enumerate(parts[:-1]):
            nxt = here.get(part)
            if nxt is None:
                nxt = here[part] = {}
            if not isinstance(nxt, dict):
                where = ".".join(parts[: i + 1])
                problems.append(ConfigProblem("--set", f"{item!r}: {where} is not a section"))
                break
            here = nxt
        else:
            here[parts[-1]] = value
    return problems


def _line_of(root: yaml.Node | None, loc: Sequence[str | int]) -> int | None:
    """The 1-based YAML line of the field at `loc` (or of its nearest parent that exists)."""
    node = root
    line = None if node is None else node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    line, node = key.start_mark.line + 1, value
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _fields_at(loc: Sequence[str | int]) -> list[str]:
    """The field names the schema allows where `loc`'s last part sits (for "did you mean")."""
    model: Any = RunConfig
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return []
        annotation = field.annotation
        candidates = [annotation, *getattr(annotation, "__args__", ())]
        model = next(
            (a for a in candidates if isinstance(a, type) and issubclass(a, BaseModel)), None
        )
        if model is None:
            return []
    return list(getattr(model, "model_fields", {}))


def _describe(error: Mapping[str, Any]) -> str:
    kind = error.get("type", "")
    loc = tuple(error.get("loc", ()))
    if kind == "extra_forbidden":
        close = difflib.get_close_matches(str(loc[-1]), _fields_at(loc), n=1)
        return "unknown field" + (f"; did you mean {close[0]!r}?" if close else "")
    if kind == "missing":
        return "required, and missing"
    message = str(error.get("msg", "invalid"))
    message = message.removeprefix("Value error, ")
    value = error.get("input")
    if isinstance(value, str | int | float | bool) and kind not in ("value_error",):
        message += f" (got {value!r})"
    return message


def load_config(path: str | Path, overrides: Sequence[str] = ()) -> RunConfig:
    """Read, validate and resolve a run config; `ConfigError` names every problem."""
    path = Path(path)
    try:
        text = read_text_file(path, max_bytes=MAX_YAML_BYTES)
    except RecordError as exc:  # missing, a folder, not UTF-8, too large; names the file
        reason = str(exc).removeprefix(f"{path}: ")
        raise ConfigError(path, [ConfigProblem("", f"cannot read the config: {reason}")]) from None
    try:
        data, root = load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(path, [ConfigProblem("", f"not YAML: {problem}", line)]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(path, [ConfigProblem("", "the config must be a mapping of sections")])
    problems = apply_overrides(data, overrides)
    overridden = {item.partition("=")[0].strip() for item in overrides}
    folder = path.resolve().parent
    base = folder
    raw_base = data.get("base_dir")
    if isinstance(raw_base, str) and raw_base:
        expanded, unset = expand_env(raw_base)
        if unset:
            problems.append(
                ConfigProblem(
                    "base_dir",
                    f"${{{unset}}} is not set and has no default (write ${{{unset}:-FOLDER}})",
                    None if "base_dir" in overridden else _line_of(root, ["base_dir"]),
                )
            )
        base = Path(os.path.normpath(folder / Path(expanded).expanduser()))
    if raw_base is None or isinstance(raw_base, str):
        data["base_dir"] = str(base)
    try:
        config = RunConfig.model_validate(data, context={_CONTEXT_BASE: base})
    except ValidationError as exc:
        for error in exc.errors():
            loc = tuple(error.get("loc", ()))
            field = ".".join(str(p) for p in loc)
            line = None if field in overridden else _line_of(root, loc)
            problems.append(ConfigProblem(field, _describe(error), line))
        raise ConfigError(path, problems) from None
    problems += [
        ConfigProblem(
            p.field,
            p.message,
            None if p.field in overridden else _line_of(root, p.field.split(".")),
        )
        for p in _cross_checks(config)
    ]
    for field, where in (("base_dir", base), ("output_dir", config.output_dir)):
        if where.is_absolute() and where == Path(where.anchor):
            problems.append(
                ConfigProblem(
                    field,
                    f"resolves to {where}, the file system's root: runs are written under "
                    "base_dir, so set it (or $CODEGREP_HOME) to a folder of your own",
                    None if field in overridden else _line_of(root, [field]),
                )
            )
    if problems:
        raise ConfigError(path, problems)
    return config


_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(text: str, environ: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """`${NAME}` and `${NAME:-default}` in `text` from the environment (an empty value counts
    as unset); the text, and the first name that is unset with no default (else None)."""
    env = os.environ if environ is None else environ
    unset: list[str] = []

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = env.get(name) or default
        if value is None:
            unset.append(name)
            return ""
        return value

    return _ENV.sub(one, text), (unset[0] if unset else None)
