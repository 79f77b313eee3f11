"""ms-swift's own argument classes built from a stage's command line: the other half of
`train_launcher.swift_check`, run by the trainer's Python (the one beside `swift`), never
imported by the launcher (it imports ms-swift, which the launcher's environment may not have).

    PYTHON _swift_probe.py REQUEST.json RESULT.json

REQUEST: `{"checks": [{"stage", "command" (sft|rlhf), "argv", "world_size", "bf16_gpu",
"stand_ins": {model id: folder}, "server_mode"}]}`. RESULT: `{"importable", "error",
"versions", "results": [{"stage", "ok", "kind", "message", "where", "notes", "built"}]}`.

Each command line goes through `swift.utils.parse_args` with `SftArguments` or
`RLHFArguments`, which is what `swift sft` / `swift rlhf` do first: `__post_init__` builds the
trainer's `Seq2SeqTrainingArguments` / `GRPOConfig` and runs every rule of theirs. What reads
the live machine is fed the configured run instead, and each such seam is said in `notes`:

- `TrainingArguments.world_size` (from accelerate's process state) returns the configured
  trainer world size: `GRPOConfig`'s batch rules read it;
- `is_torch_bf16_gpu_available` answers for the configured GPU (a CUDA run), not for this
  machine: `TrainingArguments._validate_args` reads it for bf16;
- a model hub id is not downloaded: `safe_snapshot_download` in `swift.model.model_meta` gives a
  folder holding the model's `config.json` (the launcher writes it from its table);
- in server mode `_init_external_vllm` (which connects to the rollout server) does nothing;
- `--deepspeed NAME` is resolved and parsed as ms-swift does (one of its `swift/config/*.json`,
  or a JSON file) and then left out of the build: without a GPU DeepSpeed cannot set itself up.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import io
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

DS_NAMES = ("zero0", "zero1", "zero2", "zero3", "zero2_offload", "zero3_offload")
PACKAGES = ("swift", "trl", "transformers", "accelerate", "peft", "torch", "deepspeed")


def _where(tb: Any) -> str:
    """The deepest frame of the traceback in a library (site-packages), as `pkg/file.py:LINE
    in FUNC`; else the deepest frame."""
    frames = traceback.extract_tb(tb)
    chosen = None
    for frame in frames:
        parts = Path(frame.filename).parts
        if "site-packages" in parts or any(p in parts for p in PACKAGES):
            chosen = frame
    if chosen is None and frames:
        chosen = frames[-1]
    if chosen is None:
        return ""
    parts = Path(chosen.filename).parts
    if "site-packages" in parts:
        rel = "/".join(parts[parts.index("site-packages") + 1 :])
    else:
        rel = "/".join(parts[-3:])
    return f"{rel}:{chosen.lineno} in {chosen.name}"


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


def _deepspeed(argv: list[str], notes: list[str]) -> tuple[list[str], dict[str, Any] | None]:
    """`--deepspeed` resolved and parsed as ms-swift's `SftArguments._init_deepspeed` does, then
    left out of the build, DeepSpeed importable or not: on a machine without a GPU DeepSpeed
    cannot set itself up (its accelerator, `init_distributed`), which would read as a broken
    rule; the check is the same everywhere. Its config is returned."""
    if "--deepspeed" not in argv:
        return argv, None
    i = argv.index("--deepspeed")
    value = argv[i + 1] if i + 1 < len(argv) else ""
    spec = importlib.util.find_spec("swift")
    origin = spec.origin if spec is not None else None
    folder = Path(origin or ".").parent / "config"
    path = folder / f"{value}.json" if value in DS_NAMES else Path(value)
    if not path.is_file():
        raise ValueError(
            f"--deepspeed {value}: neither one of ms-swift's configs ({', '.join(DS_NAMES)}) "
            "nor a JSON file"
        )
    config = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(config, dict):
        raise ValueError(f"--deepspeed {value}: {path} is not a JSON object")
    notes.append(
        f"--deepspeed {value} was resolved and parsed as ms-swift does ({path.name}) and left "
        "out of the build: DeepSpeed sets itself up on the GPUs, its own checks run at launch"
    )
    return argv[:i] + argv[i + 2 :], config


@contextlib.contextmanager
def _fed(check: dict[str, Any], notes: list[str]) -> Any:
    """The seams that read this machine, answering for the configured run (module docstring)."""
    rlhf_args = importlib.import_module("swift.arguments.rlhf_args")
    model_meta = importlib.import_module("swift.model.model_meta")
    transformers = importlib.import_module("transformers")
    training_args = importlib.import_module("transformers.training_args")

    saved: list[tuple[Any, str, Any]] = []
    absent = object()

    def put(owner: Any, name: str, value: Any) -> None:
        saved.append((owner, name, vars(owner).get(name, absent)))
        setattr(owner, name, value)

    world = int(check["world_size"])
    put(transformers.TrainingArguments, "world_size", property(lambda self: world))
    notes.append(f"world size {world}: the configured trainer processes")
    if check.get("bf16_gpu") is not None:
        answer = bool(check["bf16_gpu"])
        put(training_args, "is_torch_bf16_gpu_available", lambda: answer)
        notes.append(f"bf16 on the GPU: {'yes' if answer else 'no'}, as the configured GPU has it")
    stand_ins: dict[str, str] = dict(check.get("stand_ins") or {})
    if stand_ins:
        real = model_meta.safe_snapshot_download

        def snapshot(model_id_or_path: str, *args: Any, **kwargs: Any) -> Any:
            if model_id_or_path in stand_ins:
                return stand_ins[model_id_or_path]
            return real(model_id_or_path, *args, **kwargs)

        put(model_meta, "safe_snapshot_download", snapshot)
    if check.get("server_mode"):
        put(rlhf_args.RLHFArguments, "_init_external_vllm", lambda self: None)
        notes.append("server mode: the rollout server is not contacted (launch waits for it)")
    try:
        yield
    finally:
        for owner, name, before in reversed(saved):
            if before is absent:
                with contextlib.suppress(AttributeError):
                    delattr(owner, name)
            else:
                setattr(owner, name, before)


def _built(args: Any, deepspeed: dict[str, Any] | None) -> dict[str, Any]:
    ta = getattr(args, "training_args", None)
    out: dict[str, Any] = {}
    for name in (
        "per_device_train_batch_size",
        "per_device_eval_batch_size",
        "gradient_accumulation_steps",
        "generation_batch_size",
        "steps_per_generation",
        "world_size",
        "eval_strategy",
        "bf16",
        "fp16",
    ):
        if ta is not None and hasattr(ta, name):
            out[name] = _plain(getattr(ta, name))
    for name in (
        "num_generations",
        "use_vllm",
        "vllm_mode",
        "sleep_level",
        "lora_rank",
        "vllm_max_lora_rank",
        "vllm_enable_lora",
        "offload_optimizer",
        "offload_model",
        "loss_scale",
        "max_length",
        "max_completion_length",
        "model_type",
        "template",
        "truncation_strategy",
    ):
        if hasattr(args, name):
            out[name] = _plain(getattr(args, name))
    ds = deepspeed if deepspeed is not None else getattr(args, "deepspeed", None)
    if isinstance(ds, dict):
        stage = (ds.get("zero_optimization") or {}).get("stage")
        out["zero_stage"] = _plain(stage)
        offload = (ds.get("zero_optimization") or {}).get("offload_optimizer") or {}
        out["zero_offload_optimizer"] = _plain(offload.get("device"))
    return out


def _one(check: dict[str, Any]) -> dict[str, Any]:
    arguments = importlib.import_module("swift.arguments")
    parse_args = importlib.import_module("swift.utils").parse_args

    notes: list[str] = []
    result: dict[str, Any] = {"stage": check["stage"], "ok": False, "notes": notes}
    cls = arguments.RLHFArguments if check["command"] == "rlhf" else arguments.SftArguments
    err = io.StringIO()
    try:
        argv, deepspeed = _deepspeed(list(check["argv"]), notes)
        with _fed(check, notes), contextlib.redirect_stderr(err):
            args, remaining = parse_args(cls, argv)
            built = _built(args, deepspeed)  # inside: the fed world size is what it read
    except SystemExit as exc:  # argparse: a flag it does not take, a value of a wrong type
        lines = [x for x in err.getvalue().splitlines() if x.strip()]
        message = lines[-1] if lines else f"argument parser exit {exc.code}"
        result.update(
            kind="argparse",
            message=message.split(" error: ", 1)[-1],
            where=f"transformers/hf_argparser.py ({cls.__name__})",
        )
        return result
    except Exception as exc:  # every rule of ms-swift, trl and transformers raises one
        result.update(kind=type(exc).__name__, message=str(exc), where=_where(exc.__traceback__))
        return result
    if remaining:
        # what SwiftPipeline._parse_args raises before anything runs
        result.update(
            kind="ValueError",
            message=f"remaining_argv: {remaining}",
            where="swift/pipelines/base.py in SwiftPipeline._parse_args",
        )
        return result
    result.update(ok=True, built=built)
    return result


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    out: dict[str, Any] = {"importable": False, "results": []}
    try:
        importlib.import_module("swift.arguments")
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    else:
        out["importable"] = True
        versions: dict[str, str | None] = {}
        for name in ("ms-swift", "trl", "transformers", "accelerate", "torch", "deepspeed"):
            try:
                versions[name] = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                versions[name] = None
        out["versions"] = versions
        out["results"] = [_one(check) for check in request["checks"]]
    Path(argv[2]).write_text(json.dumps(out), encoding="utf-8")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.exit(main(sys.argv))
