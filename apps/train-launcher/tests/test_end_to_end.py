"""`codegrep-train launch` with the real tools on two small real repositories.

catm, worktree-sandbox and codegrep-model (its lexical policy as the SFT teacher) run for real,
as subprocesses of the real runner; only `swift` (ms-swift, not installed here) is a script that
checks its inputs and writes checkpoints and ms-swift's final message the way ms-swift does.
The evaluation needs a served model and is left out.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from train_launcher.cli import app
from typer.testing import CliRunner

FAKE_SWIFT = """#!{python}
import json, os, pathlib, sys

argv = sys.argv[1:]
with open(os.environ["FAKE_SWIFT_CALLS"], "a") as fh:
    fh.write(json.dumps(argv) + "\\n")

def flag(name, default=None):
    return argv[argv.index(name) + 1] if name in argv else default

dataset = pathlib.Path(flag("--dataset"))
assert dataset.is_file() and dataset.read_text().strip(), f"no rows in {{dataset}}"
if argv[0] == "rlhf":
    assert pathlib.Path(flag("--external_plugins")).is_file()
    for adapter in ("--adapters", "--ref_adapters"):
        if adapter in argv:
            assert pathlib.Path(flag(adapter)).is_dir(), flag(adapter)
out = pathlib.Path(flag("--output_dir"))
steps = int(flag("--max_steps", "2"))
every = int(flag("--save_steps", str(steps)))
resume = flag("--resume_from_checkpoint")
start = int(resume.rsplit("-", 1)[1]) if resume else 0
for step in range(every, steps + 1, every):
    if step <= start:
        continue
    ckpt = out / f"checkpoint-{{step}}"
    ckpt.mkdir(parents=True, exist_ok=True)
    (ckpt / "adapter_model.safetensors").write_bytes(b"weights")
    if os.environ.get("FAKE_SWIFT_DIE_AT") == str(step):
        sys.exit(137)  # killed while saving: no trainer_state.json
    (ckpt / "trainer_state.json").write_text(json.dumps({{"global_step": step}}))
with (out / "logging.jsonl").open("a") as fh:
    fh.write(json.dumps({{"last_model_checkpoint": str(out / f"checkpoint-{{steps}}")}}) + "\\n")
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def make_repo(root: Path, files: dict[str, str]) -> str:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@e.x", "commit", "-q", "-m", "init")
    return git(root, "rev-parse", "HEAD").strip()


def patch(path: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"


def trajectory(instance_id: str, path: str) -> dict[str, object]:
    ws = f"/workspace/{instance_id}"
    call = {
        "id": "c1",
        "type": "function",
        "function": {
            "name": "str_replace_editor",
            "arguments": json.dumps({"command": "view", "path": f"{ws}/{path}"}),
        },
    }
    return {
        "instance_id": instance_id,
        "trajectory_id": f"t-{instance_id}",
        "messages": [
            {"role": "user", "content": f"<uploaded_files>\n{ws}\n</uploaded_files>"},
            {"role": "assistant", "content": "look", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "1 class Cart: ..."},
            {"role": "assistant", "content": f"{path} computes the total; the bug is there " * 8},
        ],
    }


@pytest.mark.slow
def test_launch_with_the_real_tools_then_resume(tmp_path: Path) -> None:
    inputs = tmp_path / "inputs"
    shop = make_repo(
        inputs / "mirrors" / "o+shop",
        {
            "shop/cart.py": "class Cart:\n    def total_price(self, prices):\n        return 0\n",
            "shop/pricing.py": "def apply_discount(total, rate):\n    return total\n",
            "README.md": "# shop\n",
        },
    )
    lib = make_repo(
        inputs / "mirrors" / "o+lib",
        {"lib/core.py": "def parse_config(text):\n    return {}\n", "README.md": "# lib\n"},
    )
    issues = [
        ("o__shop-1", "o/shop", shop, "shop/cart.py", "Cart.total_price ignores prices"),
        ("o__shop-2", "o/shop", shop, "shop/pricing.py", "apply_discount never discounts"),
        ("o__lib-1", "o/lib", lib, "lib/core.py", "parse_config returns an empty dict"),
    ]
    rows = [
        {"instance_id": i, "repo": r, "base_commit": c, "problem_statement": s, "patch": patch(p)}
        for i, r, c, p, s in issues
    ]
    (inputs / "instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (inputs / "trajectories.jsonl").write_text(
        "".join(json.dumps(trajectory(i, p)) + "\n" for i, _, _, p, _ in issues)
    )
    swift = tmp_path / "fake-swift"
    swift.write_text(FAKE_SWIFT.format(python=sys.executable))
    swift.chmod(swift.stat().st_mode | stat.S_IEXEC)
    config = {
        "name": "e2e",
        "output_dir": "out",
        "seed": 0,
        "model": {"path": "Qwen/Qwen3-0.6B", "torch_dtype": "float32"},
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
            "num_generations": 2,
            "per_device_train_batch_size": 2,
            "gradient_accumulation_steps": 1,
            "max_steps": 6,
            "save_steps": 2,
            "eval_steps": 2,
            "offload_optimizer": False,
            "offload_model": False,
            "deepspeed": None,
            "report_to": ["none"],
        },
        "sft": {"enabled": True, "jobs": 1, "threshold": 0.0, "max_steps": 2},
        "evaluation": {"enabled": False},
        "swift": {"executable": str(swift)},
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    calls = tmp_path / "swift-calls.jsonl"
    env = {**os.environ, "FAKE_SWIFT_CALLS": str(calls), "FAKE_SWIFT_DIE_AT": "4"}
    out = tmp_path / "out"

    killed = CliRunner().invoke(app, ["launch", "--config", str(path)], env=env)
    assert killed.exit_code == 1, killed.output
    assert "stage grpo failed (exit 137)" in killed.stderr
    for stage in ("labels", "prepare", "datasets", "sft-data", "sft"):
        assert f"] {stage}: done" in killed.stdout, killed.stdout
    labels = [json.loads(x) for x in (out / "labels" / "labels.jsonl").open()]
    assert {x["instance_id"] for x in labels} == {i for i, *_ in issues}
    report = json.loads((out / "data" / "grpo" / "report.json").read_text())
    assert (report["train"], report["val"], report["val_repos"]) == (2, 1, ["o/lib"])
    assert (out / "data" / "sft.jsonl").read_text().strip()
    assert (out / "grpo" / "checkpoint-2" / "trainer_state.json").is_file()

    env.pop("FAKE_SWIFT_DIE_AT")
    resumed = CliRunner().invoke(app, ["launch", "--config", str(path)], env=env)
    assert resumed.exit_code == 0, resumed.output
    for stage in ("labels", "prepare", "datasets", "sft-data", "sft"):
        assert f"] {stage}: skipped" in resumed.stdout
    assert f"grpo: running (resuming from {out / 'grpo' / 'checkpoint-2'})" in resumed.stdout
    argvs = [json.loads(x) for x in calls.open()]
    assert [a[0] for a in argvs] == ["sft", "rlhf", "rlhf"]
    last = argvs[-1]
    assert last[last.index("--resume_from_checkpoint") + 1] == str(out / "grpo" / "checkpoint-2")
    assert last[last.index("--ref_adapters") + 1] == str(out / "sft" / "model" / "checkpoint-2")
    assert "--adapters" not in last  # a resumed run takes its adapter from its checkpoint
    assert argvs[1][argvs[1].index("--adapters") + 1] == str(out / "sft" / "model" / "checkpoint-2")
    assert (out / "grpo" / "checkpoint-6" / "trainer_state.json").is_file()
    assert "done: 1 stage(s) ran, 5 skipped" in resumed.stdout
