"""`plan --check`: each training stage's exact command line judged by the installed ms-swift.

A node costs money by the hour, and ms-swift checks its arguments only as `swift sft` /
`swift rlhf` start, on the node. `check_stages` builds, on this machine and without a GPU, what
those commands build first: `SftArguments` / `RLHFArguments` from the stage's argv, whose
`__post_init__` makes the trainer's `Seq2SeqTrainingArguments` / `GRPOConfig` (ms-swift's
subclass of trl's) and runs every rule of ms-swift, trl and transformers on them.

Where it runs: in the trainer's Python, the one that runs `swift` (the shebang of
`swift.executable`, else the `python` beside it), which is where ms-swift is installed; the
launcher's own environment may not have it (it is a separate venv in CI and may be on a node).
`_swift_probe.py` is started there as a file with a request and answers in a result file
(module docstring of `_swift_probe`: what reads the live machine is fed the configured run).
When there is no such Python, or ms-swift does not import in it, the answer is `cannot`:
"cannot check: ms-swift is not importable here".

The probe is given the stage's argv with three things replaced, each said in the verdict: the
output folder (ms-swift creates it: a scratch folder of the check's own, removed after), an SFT
adapter not made yet (a stand-in folder), and a hub model id (a folder with the model's
`config.json` from the launcher's Qwen3 table: nothing is downloaded). A local model folder
must be there.

Two rules read the live world only once training starts, so no argument class runs them;
they are carried here, each with a test that pins it to ms-swift's source
(tests/swift/test_plan_check.py, run by the launch tier with the pinned ms-swift):

- `swift.utils.env.is_mp`: visible GPUs per process >= 2 is device_map model parallelism,
  which ms-swift refuses with vLLM (`RLHFArguments._check_grpo`) and with DeepSpeed
  (`SftArguments._init_deepspeed`); and the visible GPUs must be a multiple of the processes;
- colocate vLLM: `--vllm_tensor_parallel_size` must divide the trainer's processes
  (`RolloutTrainerMixin._prepare_vllm`, swift/rlhf_trainers/rollout_mixin.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from train_launcher._plan_records import NodeCommand, Stage
from train_launcher.config import RunConfig

__all__ = [
    "CANNOT",
    "TRAIN_STAGES",
    "StageCheck",
    "SwiftCheck",
    "carried_rules",
    "check_stages",
    "trainer_python",
]

CANNOT = "cannot check: ms-swift is not importable here"
TRAIN_STAGES = ("sft", "grpo")
PROBE = Path(__file__).with_name("_swift_probe.py")
#: GPUs without bf16 (pre-Ampere): transformers refuses bf16 on them.
NO_BF16 = ("V100", "T4", "P100", "P40", "K80", "M60", "TITAN V")
#: torchrun's variables: the probe is one process, the world size is fed to it instead.
TORCHRUN_ENV = ("NPROC_PER_NODE", "NNODES", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT")
#: Qwen3's config.json fields the table does not hold (every dense Qwen3).
QWEN3_VOCAB = 151936
QWEN3_MAX_POSITIONS = 40960
QWEN3_TIED = ("qwen3-0.6b", "qwen3-1.7b", "qwen3-4b")

Status = Literal["passed", "failed", "cannot"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class StageCheck(_Record):
    """One training stage's command line as ms-swift judged it."""

    stage: str
    ok: bool
    flags: tuple[str, ...] = Field((), description="The flags the broken rule names.")
    rule: str = Field("", description="The rule's own message (the exception it raised).")
    where: str = Field("", description="Where the rule is: file:line in function.")
    carried: bool = Field(False, description="A rule carried by the launcher (module doc).")
    notes: tuple[str, ...] = ()
    built: dict[str, Any] = Field(default_factory=dict)

    def line(self) -> str:
        if self.ok:
            return f"{self.stage}: passed"
        flags = ", ".join(self.flags) or "(no single flag)"
        source = f" [{self.where}]" if self.where else ""
        return f"{self.stage}: {flags}: {self.rule}{source}"


class SwiftCheck(_Record):
    """The verdict of `check_stages`."""

    status: Status
    reason: str = ""
    python: str | None = None
    versions: dict[str, str | None] = Field(default_factory=dict)
    world_size: int = 1
    stages: tuple[StageCheck, ...] = ()

    @property
    def problems(self) -> list[str]:
        """One line per broken rule, naming the stage, the flags and the rule."""
        if self.status == "cannot":
            return [self.reason]
        return [s.line() for s in self.stages if not s.ok]

    def lines(self) -> list[str]:
        """The verdict as `plan` prints it."""
        if self.status == "cannot":
            return [f"trainer check: {self.reason}"]
        swift = self.versions.get("ms-swift") or "?"
        head = (
            f"trainer check: {self.status} (ms-swift {swift}, trl {self.versions.get('trl')}, "
            f"in {self.python}; world size {self.world_size})"
        )
        out = [head]
        if not self.stages:
            out.append("  no training stage in this plan")
        for s in self.stages:
            out.append(f"  {s.line()}")
            out += [f"    note: {n}" for n in s.notes]
        return out


# --- the trainer's Python -------------------------------------------------------------------


def trainer_python(config: RunConfig, env: dict[str, str] | None = None) -> tuple[Path | None, str]:
    """The Python that runs `swift.executable`, and why not when there is none: the script's
    `#!` interpreter (a venv's console script names its python), else `python` beside it."""
    exe = config.swift.executable
    path = (env or {}).get("PATH") or os.environ.get("PATH", "")
    found = shutil.which(exe, path=path)
    if found is None:
        return None, f"{exe!r} is not an executable on PATH"
    script = Path(found)
    try:
        with script.open("rb") as fh:
            first = fh.readline(512)
    except OSError as exc:
        return None, f"{script}: {exc.strerror or exc}"
    if first.startswith(b"#!"):
        words = first[2:].decode("utf-8", "replace").split()
        if words:
            interpreter = words[0]
            if Path(interpreter).name == "env" and len(words) > 1:
                named = shutil.which(words[1], path=path)
                interpreter = named or ""
            if interpreter and "python" in Path(interpreter).name and Path(interpreter).is_file():
                return Path(interpreter), ""
    beside = script.parent / "python"
    if beside.is_file():
        return beside, ""
    return None, f"no Python found for {script} (neither its #! line nor a python beside it)"


# --- carried rules --------------------------------------------------------------------------


def _flag(argv: Sequence[str], name: str) -> str | None:
    """The value of `name` in `argv` (the last one, as argparse keeps it)."""
    value = None
    for i, token in enumerate(argv[:-1]):
        if token == name:
            value = argv[i + 1]
    return value


def _true(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1", "yes")


def carried_rules(stage: str, command: NodeCommand, config: RunConfig) -> list[StageCheck]:
    """The rules no argument class runs (module docstring), on the stage's own argv and env."""
    out: list[StageCheck] = []
    argv, env = command.argv, command.env
    if not config.uses_gpu:
        return out
    visible = [d for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    try:
        procs = int(env.get("NPROC_PER_NODE", "1"))
    except ValueError:
        procs = 1
    vllm = _true(_flag(argv, "--use_vllm"))
    deepspeed = _flag(argv, "--deepspeed")
    if visible and procs >= 1:
        if len(visible) % procs:
            out.append(
                StageCheck(
                    stage=stage,
                    ok=False,
                    flags=("CUDA_VISIBLE_DEVICES", "NPROC_PER_NODE"),
                    rule=f"n_gpu: {len(visible)}, local_world_size: {procs} (the visible GPUs "
                    "must be a multiple of the processes per node)",
                    where="swift/utils/env.py in is_mp",
                    carried=True,
                )
            )
        elif len(visible) // procs >= 2 and (vllm or deepspeed):
            what = "GRPO with vLLM" if vllm else "DeepSpeed"
            out.append(
                StageCheck(
                    stage=stage,
                    ok=False,
                    flags=("CUDA_VISIBLE_DEVICES", "NPROC_PER_NODE"),
                    rule=f"{len(visible)} visible GPUs for {procs} process(es) is device_map "
                    f"model parallelism, which ms-swift refuses with {what}",
                    where="swift/utils/env.py in is_mp; "
                    + (
                        "swift/arguments/rlhf_args.py in _check_grpo"
                        if vllm
                        else "swift/arguments/sft_args.py in _init_deepspeed"
                    ),
                    carried=True,
                )
            )
    if vllm and _flag(argv, "--vllm_mode") == "colocate":
        try:
            tp = int(_flag(argv, "--vllm_tensor_parallel_size") or "1")
        except ValueError:
            tp = 0  # argparse refuses it in the probe, naming it
        world = config.trainer_world_size
        if tp > 0 and world % tp:
            out.append(
                StageCheck(
                    stage=stage,
                    ok=False,
                    flags=("--vllm_tensor_parallel_size",),
                    rule=f"vllm_tensor_parallel_size ({tp}) must divide world size ({world}) "
                    "evenly",
                    where="swift/rlhf_trainers/rollout_mixin.py in _prepare_vllm (colocate)",
                    carried=True,
                )
            )
    return out


# --- naming the flags of a rule's message ---------------------------------------------------

#: Phrases of ms-swift's messages that name a flag without its name.
_PHRASES = {
    "global eval batch size": ("--per_device_eval_batch_size",),
    "generation_batch_size": ("--per_device_train_batch_size", "--gradient_accumulation_steps"),
    "use_cpu": ("--torch_dtype",),
    "bf16": ("--torch_dtype",),
}


def flags_named(message: str, argv: Sequence[str]) -> tuple[str, ...]:
    """The flags of `argv` a rule's message names: `argument --x` (argparse), unknown flags
    (`remaining_argv`), each flag whose name is in the message, and the phrases above."""
    given = [t for t in argv if t.startswith("--")]
    found: list[str] = []
    for match in re.finditer(r"argument (--[A-Za-z0-9_]+)", message):
        found.append(match.group(1))
    if message.startswith("remaining_argv:"):
        found += re.findall(r"'(--[^']+)'", message)
    for flag in given:
        name = flag[2:]
        if re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9])", message):
            found.append(flag)
    low = message.lower()
    for phrase, flags in _PHRASES.items():
        if phrase in low:
            found += [f for f in flags if f in given]
    return tuple(dict.fromkeys(found))


# --- the check ------------------------------------------------------------------------------


def _stand_in_config(model: str) -> dict[str, Any] | None:
    """A hub model's config.json from the launcher's Qwen3 table, or None when unknown."""
    from train_launcher.estimate import _QWEN3

    key = model.rsplit("/", 1)[-1].lower().removesuffix("-instruct")
    arch = _QWEN3.get(key)
    if arch is None:
        return None
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "hidden_size": arch.hidden,
        "intermediate_size": arch.intermediate,
        "num_hidden_layers": arch.layers,
        "num_attention_heads": arch.heads,
        "num_key_value_heads": arch.kv_heads,
        "head_dim": arch.head_dim,
        "max_position_embeddings": QWEN3_MAX_POSITIONS,
        "vocab_size": QWEN3_VOCAB,
        "tie_word_embeddings": key in QWEN3_TIED,
        "torch_dtype": "bfloat16",
        "rope_theta": 1000000,
        "rms_norm_eps": 1e-06,
        "hidden_act": "silu",
        "bos_token_id": 151643,
        "eos_token_id": 151645,
    }


def _trainer_command(stage: Stage) -> NodeCommand | None:
    mine = sorted((c for c in stage.commands if not c.background), key=lambda c: c.node_rank)
    return mine[0] if mine else None


def _bf16_gpu(config: RunConfig) -> bool | None:
    if not config.uses_gpu:
        return None  # a CPU run: this machine's own answer is the right one
    kind = config.cluster.gpu.upper()
    return not any(name in kind for name in NO_BF16)


def _request(
    config: RunConfig, stages: Sequence[Stage], work: Path
) -> tuple[list[dict[str, Any]], list[str], dict[str, list[str]]]:
    """The probe's checks, the reasons it cannot check, and per stage the notes of what was
    replaced in its argv."""
    checks: list[dict[str, Any]] = []
    cannot: list[str] = []
    replaced: dict[str, list[str]] = {}
    for stage in stages:
        command = _trainer_command(stage)
        if command is None or len(command.argv) < 2:
            continue
        argv = list(command.argv[2:])
        notes: list[str] = []
        stand_ins: dict[str, str] = {}
        out_dir = work / f"out-{stage.name}"
        for i, token in enumerate(argv[:-1]):
            value = argv[i + 1]
            if token == "--output_dir":
                argv[i + 1] = str(out_dir)
            elif token in ("--adapters", "--ref_adapters") and value.startswith("<"):
                adapter = work / "sft-adapter"
                adapter.mkdir(exist_ok=True)
                (adapter / "adapter_config.json").write_text(
                    json.dumps({"peft_type": "LORA", "r": config.lora.rank}), encoding="utf-8"
                )
                argv[i + 1] = str(adapter)
                note = "the SFT adapter is not made yet: a stand-in adapter folder"
                if note not in notes:
                    notes.append(note)
            elif token == "--model":
                if config.model.is_local:
                    if not Path(value, "config.json").is_file():
                        cannot.append(
                            f"cannot check {stage.name}: the model folder {value} has no "
                            "config.json yet"
                        )
                else:
                    made = _stand_in_config(value)
                    if made is None:
                        cannot.append(
                            f"cannot check {stage.name}: {value} is a hub model the launcher "
                            "knows no config.json of (nothing is downloaded): check where a "
                            "local folder of it is, with model.path"
                        )
                        continue
                    folder = work / "models" / value.replace("/", "__")
                    folder.mkdir(parents=True, exist_ok=True)
                    (folder / "config.json").write_text(json.dumps(made), encoding="utf-8")
                    stand_ins[value] = str(folder)
                    notes.append(
                        f"{value} is not downloaded: its config.json from the launcher's "
                        "Qwen3 table stands in"
                    )
        replaced[stage.name] = notes
        checks.append(
            {
                "stage": stage.name,
                "command": command.argv[1],
                "argv": argv,
                "world_size": config.trainer_world_size,
                "bf16_gpu": _bf16_gpu(config),
                "stand_ins": stand_ins,
                "server_mode": config.server_mode and stage.name == "grpo",
            }
        )
    return checks, cannot, replaced


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _probe_env(command_env: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, **command_env}
    for name in TORCHRUN_ENV:
        env.pop(name, None)
    env.update(
        # with vLLM, ms-swift's set_default_ddp_config makes a one-process group on
        # MASTER_PORT (default 29500, which a training run on this node may hold): a free one
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(_free_port()),
        CUDA_VISIBLE_DEVICES="",  # never the node's GPUs: the check is the same everywhere
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def check_stages(
    config: RunConfig, stages: Sequence[Stage], *, timeout: float = 600.0
) -> SwiftCheck:
    """Judge the training stages among `stages` (`sft`, `grpo`) with the installed ms-swift."""
    chosen = [s for s in stages if s.name in TRAIN_STAGES]
    world = config.trainer_world_size
    commands = [c for s in chosen if (c := _trainer_command(s)) is not None]
    env_of = commands[0].env if commands else dict(config.env)
    python, why = trainer_python(config, env_of)
    if python is None:
        return SwiftCheck(status="cannot", reason=f"{CANNOT} ({why})", world_size=world)
    if not chosen:
        return SwiftCheck(status="passed", python=str(python), world_size=world)
    work = Path(tempfile.mkdtemp(prefix="codegrep-train-check-"))
    try:
        checks, cannot, replaced = _request(config, chosen, work)
        if cannot:
            return SwiftCheck(
                status="cannot", reason="; ".join(cannot), python=str(python), world_size=world
            )
        request, result = work / "request.json", work / "result.json"
        request.write_text(json.dumps({"checks": checks}), encoding="utf-8")
        try:
            done = subprocess.run(
                [str(python), str(PROBE), str(request), str(result)],
                env=_probe_env(env_of),
                cwd=work,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return SwiftCheck(
                status="cannot",
                reason=f"cannot check: ms-swift's argument classes did not answer in {timeout:g} s",
                python=str(python),
                world_size=world,
            )
        except OSError as exc:
            return SwiftCheck(
                status="cannot",
                reason=f"{CANNOT} ({python}: {exc.strerror or exc})",
                world_size=world,
            )
        try:
            answer = json.loads(result.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            tail = (done.stderr or b"").decode("utf-8", "replace").strip().splitlines()[-3:]
            return SwiftCheck(
                status="cannot",
                reason=f"{CANNOT} ({python} exited {done.returncode}: {' | '.join(tail)})",
                python=str(python),
                world_size=world,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return _verdict(answer, config, chosen, checks, replaced, python)


#: What the rules of ms-swift, trl and transformers raise (and argparse's refusals). Anything
#: else (a network, import or OS error) is the machine, not the command line: "cannot check".
RULE_KINDS = frozenset(
    {"argparse", "ValueError", "AssertionError", "NotImplementedError", "TypeError", "KeyError"}
)


def _verdict(
    answer: dict[str, Any],
    config: RunConfig,
    chosen: Sequence[Stage],
    checks: list[dict[str, Any]],
    replaced: dict[str, list[str]],
    python: Path,
) -> SwiftCheck:
    world = config.trainer_world_size
    if not answer.get("importable"):
        error = str(answer.get("error") or "import failed")
        return SwiftCheck(status="cannot", reason=f"{CANNOT} ({python}: {error})", world_size=world)
    versions = {str(k): (None if v is None else str(v)) for k, v in answer["versions"].items()}
    argv_of = {c["stage"]: c["argv"] for c in checks}
    results: list[StageCheck] = []
    machine: list[str] = []
    for raw in answer.get("results", []):
        name = str(raw["stage"])
        notes = tuple(replaced.get(name, [])) + tuple(str(n) for n in raw.get("notes", []))
        if raw.get("ok"):
            results.append(
                StageCheck(stage=name, ok=True, notes=notes, built=dict(raw.get("built") or {}))
            )
        elif str(raw.get("kind")) not in RULE_KINDS:
            machine.append(
                f"cannot check {name}: ms-swift raised {raw.get('kind')} while building its "
                f"arguments, not one of their rules: {raw.get('message', '')} "
                f"[{raw.get('where', '')}]"
            )
        else:
            message = f"{raw.get('kind', 'error')}: {raw.get('message', '')}"
            results.append(
                StageCheck(
                    stage=name,
                    ok=False,
                    flags=flags_named(str(raw.get("message", "")), argv_of.get(name, [])),
                    rule=message,
                    where=str(raw.get("where", "")),
                    notes=notes,
                )
            )
    for stage in chosen:
        command = _trainer_command(stage)
        if command is not None:
            results += carried_rules(stage.name, command, config)
    status: Status = "passed" if all(r.ok for r in results) else "failed"
    if machine and status == "passed":
        return SwiftCheck(
            status="cannot",
            reason="; ".join(machine),
            python=str(python),
            versions=versions,
            world_size=world,
            stages=tuple(results),
        )
    return SwiftCheck(
        status=status,
        python=str(python),
        versions=versions,
        world_size=world,
        stages=tuple(results),
    )
