"""Inputs of the CPU smoke run (configs/cpu-smoke.yaml), offline, under BASE_DIR/inputs:

  tiny-qwen3/            a 2-layer Qwen3, random weights, a byte-level BPE trained here
  instances.jsonl        SWE-bench Lite instances of psf/requests (training)
  heldout.jsonl          SWE-bench Lite instances of pallets/flask (evaluation, never trained on)
  trajectories.jsonl     the shared OpenHands GLM-4.6 sessions of those instances (for catm)
  mirrors/OWNER+NAME     a link to a local clone per repository (--mirrors DIR holding
                         OWNER+NAME or OWNER+NAME/repo), else a bare clone from GitHub (network)

Usage: python make-cpu-inputs.py BASE_DIR [--data DIR] [--mirrors DIR] [--train N] [--heldout N]
--data defaults to $CODEGREP_SHARED_DATA, else the shared data folder beside the checkout.
Needs transformers and tokenizers (the ms-swift venv has them). Idempotent: what exists is kept.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

TRAIN_REPO = "psf/requests"
HELDOUT_REPO = "pallets/flask"
SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
]


def tiny_qwen3(out: Path, corpus: list[str]) -> None:
    """As codegrep-model's tests/train/test_swift_train.py builds it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer)
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIALS[1:],
    )
    hf.save_pretrained(out)
    config = Qwen3Config(
        vocab_size=len(hf),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=32768,
        eos_token_id=hf.eos_token_id,
        pad_token_id=hf.pad_token_id,
        tie_word_embeddings=True,
    )
    import torch

    torch.manual_seed(0)
    Qwen3ForCausalLM(config).save_pretrained(out)


def repo_texts(bare: Path, commit: str, limit: int = 60) -> list[str]:
    files = subprocess.run(
        ["git", "--git-dir", str(bare), "ls-tree", "-r", "--name-only", commit],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    texts = ["\n".join(files)]
    for f in [f for f in files if f.endswith(".py")][:limit]:
        show = ["git", "--git-dir", str(bare), "show", f"{commit}:{f}"]
        texts.append(subprocess.run(show, capture_output=True, text=True, errors="replace").stdout)
    return texts


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("base_dir", type=Path)
    shared = Path(__file__).resolve().parents[3].parent / "shared" / "data"
    data = Path(os.environ.get("CODEGREP_SHARED_DATA", shared))
    ap.add_argument("--data", type=Path, default=data)
    ap.add_argument("--mirrors", type=Path, default=None)
    ap.add_argument("--train", type=int, default=4)
    ap.add_argument("--heldout", type=int, default=2)
    a = ap.parse_args()
    inputs = a.base_dir / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)

    lite = [json.loads(x) for x in (a.data / "swebench" / "lite.jsonl").open()]
    train = sorted((r for r in lite if r["repo"] == TRAIN_REPO), key=lambda r: r["instance_id"])
    held = sorted((r for r in lite if r["repo"] == HELDOUT_REPO), key=lambda r: r["instance_id"])
    train, held = train[: a.train], held[: a.heldout]
    for name, rows in (("instances.jsonl", train), ("heldout.jsonl", held)):
        (inputs / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    ids = {r["instance_id"] for r in train}
    n = 0
    with (
        gzip.open(a.data / "openhands_glm46_lite" / "sessions.jsonl.gz", "rt") as src,
        (inputs / "trajectories.jsonl").open("w") as dst,
    ):
        for line in src:
            if json.loads(line).get("instance_id") in ids:
                dst.write(line if line.endswith("\n") else line + "\n")
                n += 1

    mirrors = inputs / "mirrors"
    mirrors.mkdir(exist_ok=True)
    for repo in (TRAIN_REPO, HELDOUT_REPO):
        slug = repo.replace("/", "+")
        link = mirrors / slug
        if link.exists():
            continue
        if a.mirrors is None:
            url = f"https://github.com/{repo}.git"
            subprocess.run(["git", "clone", "--quiet", "--bare", url, str(link)], check=True)
            continue
        found = [t for t in (a.mirrors / slug / "repo", a.mirrors / slug) if t.is_dir()]
        if not found:
            print(f"error: --mirrors {a.mirrors}: no clone of {repo} at {slug}", file=sys.stderr)
            return 2
        link.symlink_to(found[0].resolve())

    model = inputs / "tiny-qwen3"
    if not (model / "config.json").is_file():
        corpus = [r["problem_statement"] for r in train + held]
        for r in train + held:
            corpus += repo_texts(mirrors / r["repo"].replace("/", "+"), r["base_commit"], 20)
        tiny_qwen3(model, corpus)
    print(
        f"inputs in {inputs}: {len(train)} training instances ({TRAIN_REPO}), {len(held)} "
        f"held out ({HELDOUT_REPO}), {n} trajectories, model {model}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
