"""Fixtures: run configs written to a temporary folder, nodes with and without GPUs, and a fake
runner that plays each tool of the pipeline by writing the outputs the real one writes."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from train_launcher import NodeInfo
from train_launcher.node import GpuInfo
from train_launcher.plan import NodeCommand

CONFIGS = Path(__file__).resolve().parents[1] / "configs"

PATCH = "diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def instance(i: int, repo: str = "o/shop", path: str = "shop/cart.py") -> dict[str, Any]:
    return {
        "instance_id": f"{repo.replace('/', '__')}-{i}",
        "repo": repo,
        "base_commit": "0" * 40,
        "problem_statement": f"issue {i}: the cart total is wrong",
        "patch": PATCH.format(f=path),
    }


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def no_gpu() -> NodeInfo:
    return NodeInfo(gpus=(), gpu_probe="no GPU here (test)")


@pytest.fixture
def b200_node() -> NodeInfo:
    gpus = tuple(GpuInfo(i, "NVIDIA B200", 183359) for i in range(8))
    return NodeInfo(gpus=gpus, gpu_probe="nvidia-smi: 8 GPU(s), NVIDIA B200, 179 GiB each")


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


@pytest.fixture
def cpu_config(tmp_path: Path) -> Callable[..., Path]:
    """A CPU run config with every input present (tiny model folder, instances of two
    repositories, trajectories, held-out instances); keyword sections override it."""

    def make(**sections: Any) -> Path:
        inputs = tmp_path / "inputs"
        write_jsonl(
            inputs / "instances.jsonl",
            [instance(1), instance(2), instance(3, "o/lib", "lib/core.py")],
        )
        write_jsonl(inputs / "trajectories.jsonl", [{"instance_id": "o__shop-1", "messages": []}])
        write_jsonl(inputs / "heldout.jsonl", [instance(9)])
        model = inputs / "tiny-qwen3"
        model.mkdir(parents=True, exist_ok=True)
        (model / "config.json").write_text(
            json.dumps(
                {
                    "hidden_size": 32,
                    "num_hidden_layers": 2,
                    "intermediate_size": 64,
                    "num_attention_heads": 4,
                    "num_key_value_heads": 2,
                    "head_dim": 8,
                    "vocab_size": 400,
                    "tie_word_embeddings": True,
                }
            )
        )
        base: dict[str, Any] = {
            "name": "test-cpu",
            "output_dir": "out",
            "seed": 0,
            "model": {
                "path": "./inputs/tiny-qwen3",
                "torch_dtype": "float32",
                "model_type": "qwen3",
                "template": "qwen3",
            },
            "lora": {"rank": 8, "alpha": 32},
            "data": {
                "instances": "inputs/instances.jsonl",
                "trajectories": ["inputs/trajectories.jsonl"],
                "val_repos": ["o/lib"],
                "cache": "cache",
                "source": "inputs/mirrors/{owner}+{name}",
                "jobs": 1,
            },
            "cluster": {"device": "cpu", "gpus_per_node": 0},
            "rollout": {"engine": "none"},
            "train": {
                "num_generations": 4,
                "max_steps": 6,
                "per_device_train_batch_size": 4,
                "gradient_accumulation_steps": 1,
                "max_completion_length": 64,
                "max_length": 4096,
                "offload_optimizer": False,
                "offload_model": False,
                "deepspeed": None,
                "gradient_checkpointing": False,
                "save_steps": 2,
                "eval_steps": 2,
                "early_stopping": {"patience": 2},
                "report_to": ["none"],
            },
            "sft": {"enabled": False, "max_steps": 2},
            "evaluation": {
                "enabled": True,
                "instances": "inputs/heldout.jsonl",
                "server": "swift",
                "port": 18011,
                "checkpoints": "all",
                "jobs": 1,
            },
        }
        path = tmp_path / "run.yaml"
        path.write_text(yaml.safe_dump(_merge(base, sections), sort_keys=False))
        return path

    return make


def _flag(argv: tuple[str, ...], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


@dataclass
class FakeService:
    command: NodeCommand
    stopped: bool = False

    def ready(self) -> bool:
        return True

    def alive(self) -> bool:
        return not self.stopped

    def stop(self) -> None:
        self.stopped = True


@dataclass
class FakeRunner:
    """Plays every tool: records each command and writes the outputs the real tool writes.

    `fail` maps a word of the argv (`rlhf`, `grpo`...) to an exit status to return instead;
    `kill_grpo_after` makes `swift rlhf` leave that many complete checkpoints (and one cut
    short) and then raise KeyboardInterrupt, as a killed launch would end.
    """

    calls: list[NodeCommand] = field(default_factory=list)
    services: list[FakeService] = field(default_factory=list)
    fail: dict[str, int] = field(default_factory=dict)
    kill_grpo_after: int | None = None

    def tools(self) -> list[str]:
        """`catm mine`, `swift rlhf`...: each call's program name and first word."""
        return [f"{Path(c.argv[0]).name} {c.argv[1]}" for c in self.calls]

    def start(self, command: NodeCommand, log: Path) -> FakeService:
        self.calls.append(command)
        service = FakeService(command)
        self.services.append(service)
        return service

    def run(self, command: NodeCommand, log: Path) -> int:
        self.calls.append(command)
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a") as fh:
            fh.write(f"$ {command.shell()}\n")
        argv = command.argv
        for word, rc in self.fail.items():
            if word in argv:
                return rc
        tool = Path(argv[0]).name
        if tool == "catm":
            out = Path(_flag(argv, "-o") or "")
            write_jsonl(out, [{"instance_id": "o__shop-1", "patch_files": ["shop/cart.py"]}])
            out.with_name(out.name + ".stats.json").write_text("{}")
        elif tool == "worktree-sandbox":
            out = Path(_flag(argv, "-o") or "")
            out.parent.mkdir(parents=True, exist_ok=True)
            repos = [{"repo": "o/shop", "commits": 1, "commits_ok": 1}]
            out.write_text(json.dumps({"repos": repos, "failures": [], "skipped_rows": []}))
        elif tool == "codegrep-model" and argv[1:3] == ("dataset", "grpo"):
            out = Path(_flag(argv, "-o") or "")
            write_jsonl(
                out / "train.jsonl", [{"instance_id": "o__shop-1"}, {"instance_id": "o__shop-2"}]
            )
            write_jsonl(out / "val.jsonl", [{"instance_id": "o__lib-3"}])
            (out / "report.json").write_text(json.dumps({"train": 2, "val": 1}))
        elif tool == "codegrep-model" and argv[1] == "batch":
            write_jsonl(Path(_flag(argv, "--rollouts") or ""), [{"instance_id": "o__shop-1"}])
            write_jsonl(Path(_flag(argv, "-o") or ""), [{"instance_id": "o__shop-1"}])
        elif tool == "codegrep-model" and argv[1:3] == ("dataset", "sft"):
            out = Path(_flag(argv, "-o") or "")
            write_jsonl(out, [{"messages": []}])
            out.with_name("sft.report.json").write_text(json.dumps({"kept": 1}))
        elif "-m" in argv and "train_launcher.fetch" in argv:  # the real one, from a mirror
            from train_launcher.fetch import main as fetch_main

            return fetch_main(list(argv[argv.index("train_launcher.fetch") + 1 :]))
        elif "-m" in argv and "train_launcher.subset" in argv:
            from train_launcher.subset import main

            return main(list(argv[argv.index("train_launcher.subset") + 1 :]))
        elif argv[1] in ("sft", "rlhf"):
            return self._train(argv)
        elif tool == "swe-eval" and argv[1] == "predict":
            write_jsonl(Path(_flag(argv, "-o") or ""), [{"instance_id": "o__shop-9", "files": []}])
        elif tool == "swe-eval" and argv[1] == "retrieval":
            out = Path(_flag(argv, "-o") or "")
            out.parent.mkdir(parents=True, exist_ok=True)
            names = [argv[i + 1] for i, a in enumerate(argv) if a == "--name"]
            out.write_text(json.dumps({"systems": names}) + "\n")
        return 0

    def _train(self, argv: tuple[str, ...]) -> int:
        out = Path(_flag(argv, "--output_dir") or "")
        steps = int(_flag(argv, "--max_steps") or 2)
        every = int(_flag(argv, "--save_steps") or steps)
        resume = _flag(argv, "--resume_from_checkpoint")
        first = int(Path(resume).name.split("-")[1]) if resume else 0
        saved = [s for s in range(every, steps + 1, every) if s > first]
        for n, step in enumerate(saved, start=1):
            ckpt = out / f"checkpoint-{step}"
            ckpt.mkdir(parents=True, exist_ok=True)
            (ckpt / "adapter_model.safetensors").write_bytes(b"w")
            if self.kill_grpo_after is not None and argv[1] == "rlhf" and n > self.kill_grpo_after:
                raise KeyboardInterrupt  # killed while saving: no trainer_state.json
            (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": step}))
        final = {"last_model_checkpoint": str(out / f"checkpoint-{steps}"), "global_step": steps}
        with (out / "logging.jsonl").open("a") as fh:
            fh.write(json.dumps(final) + "\n")
        if argv[1] == "rlhf":
            write_jsonl(out / "codegrep_rollouts.jsonl", [{"step": 0}])
        return 0


@pytest.fixture
def fake_runner() -> FakeRunner:
    return FakeRunner()


@pytest.fixture
def make_runner() -> type[FakeRunner]:
    """The class, for tests that need more than one runner or its options."""
    return FakeRunner
