"""Inputs of the CPU smoke run (configs/cpu-smoke.yaml), offline, under BASE_DIR/inputs:

  tiny-qwen3/            a 2-layer Qwen3, random weights, a byte-level BPE trained here
  instances.jsonl        SWE-bench Lite instances of psf/requests (training)
  heldout.jsonl          SWE-bench Lite instances of pallets/flask (evaluation, never trained on)
  trajectories.jsonl     the shared OpenHands GLM-4.6 sessions of those instances (for catm)
  mirrors/OWNER+NAME     a link to a local clone per repository (--mirrors DIR holding
                         OWNER+NAME or OWNER+NAME/repo), or a bare clone from GitHub
                         (--mirrors github; network)

With --self-contained (what CI uses: it has neither the shared data nor GitHub), the same files
are made from two small git repositories written here (example/shop to train on, example/textkit
held out), four and two issues whose gold patches are real `git diff`s of them, and one
OpenHands-style session per training issue. Everything else (the model, the launch) is the same.

Usage: python make-cpu-inputs.py BASE_DIR [--data DIR] [--mirrors DIR|github] [--self-contained]
                                 [--train N] [--heldout N] [--no-model]
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


# The self-contained inputs: two small repositories, each issue a real change of one file.
SHOP = {
    "shop/__init__.py": "from shop.cart import Cart\nfrom shop.pricing import apply_discount\n",
    "shop/cart.py": (
        "from shop.pricing import apply_discount\n\n\n"
        "class Cart:\n"
        "    def __init__(self):\n        self.items = []\n\n"
        "    def add_item(self, name, price, quantity=1):\n"
        "        self.items.append((name, price, quantity))\n\n"
        "    def total_price(self, discount=0.0):\n"
        "        total = sum(price for _, price, _ in self.items)\n"
        "        return apply_discount(total, discount)\n"
    ),
    "shop/pricing.py": (
        "def apply_discount(total, rate):\n"
        "    if rate > 1:\n        raise ValueError('rate above 1')\n"
        "    return total\n\n\n"
        "def round_price(value):\n    return int(value)\n"
    ),
    "shop/inventory.py": (
        "class Inventory:\n"
        "    def __init__(self):\n        self.stock = {}\n\n"
        "    def restock(self, name, count):\n"
        "        self.stock[name] = count\n\n"
        "    def reserve(self, name, count):\n"
        "        self.stock[name] = self.stock.get(name, 0) - count\n"
    ),
    "shop/receipt.py": (
        "def format_receipt(cart):\n"
        "    lines = [f'{name}: {price}' for name, price, _ in cart.items]\n"
        "    return '\\n'.join(lines)\n"
    ),
    "tests/test_cart.py": "from shop import Cart\n\n\ndef test_empty():\n"
    "    assert Cart().total_price() == 0\n",
    "README.md": "# shop\n\nA small shop: carts, pricing, inventory, receipts.\n",
}
SHOP_ISSUES = [
    (
        "shop/cart.py",
        "total = sum(price for _, price, _ in self.items)",
        "total = sum(price * quantity for _, price, quantity in self.items)",
        "Cart.total_price ignores the quantity of each item\n\nAdding an item with "
        "add_item('pen', 2.0, quantity=3) then calling total_price() gives 2.0, not 6.0.",
    ),
    (
        "shop/pricing.py",
        "    return total\n\n",
        "    return total * (1 - rate)\n\n",
        "apply_discount never discounts\n\napply_discount(100, 0.1) returns 100; expected 90.",
    ),
    (
        "shop/inventory.py",
        "self.stock[name] = self.stock.get(name, 0) - count",
        "if self.stock.get(name, 0) < count:\n            raise ValueError(name)\n"
        "        self.stock[name] -= count",
        "Inventory.reserve lets the stock go negative\n\nreserve('pen', 5) on an empty "
        "inventory leaves stock['pen'] == -5 instead of raising.",
    ),
    (
        "shop/receipt.py",
        "lines = [f'{name}: {price}' for name, price, _ in cart.items]",
        "lines = [f'{name} x{qty}: {price}' for name, price, qty in cart.items]",
        "format_receipt does not show quantities\n\nThe receipt of a cart lists each item "
        "without how many were bought.",
    ),
]
TEXTKIT = {
    "textkit/__init__.py": "",
    "textkit/slug.py": "def slugify(text):\n    return text.lower().replace(' ', '-')\n",
    "textkit/wrap.py": (
        "def wrap_lines(text, width):\n"
        "    return [text[i:i + width] for i in range(0, len(text), width)]\n"
    ),
    "README.md": "# textkit\n",
}
TEXTKIT_ISSUES = [
    (
        "textkit/slug.py",
        "return text.lower().replace(' ', '-')",
        "return '-'.join(text.lower().split())",
        "slugify keeps repeated dashes\n\nslugify('a  b') gives 'a--b'; expected 'a-b'.",
    ),
    (
        "textkit/wrap.py",
        "return [text[i:i + width] for i in range(0, len(text), width)]",
        "import textwrap\n\n    return textwrap.wrap(text, width)",
        "wrap_lines splits words in the middle\n\nwrap_lines('hello world', 7) cuts 'world'.",
    ),
]


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def _self_contained_repo(
    folder: Path, repo: str, files: dict[str, str], issues: list[tuple[str, str, str, str]]
) -> list[dict[str, str]]:
    """A git repository at `folder` (one commit) and its issues as SWE-bench rows: each patch
    is the `git diff` of a real change of the file, undone afterwards."""
    if not (folder / ".git").is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        _git(folder, "init", "-q", "-b", "main")
        for rel, text in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
        _git(folder, "add", "-A")
        _git(folder, "-c", "user.name=ci", "-c", "user.email=ci@example.invalid",
             "commit", "-q", "-m", "initial")  # fmt: skip
    commit = _git(folder, "rev-parse", "HEAD").strip()
    rows = []
    for n, (path, old, new, statement) in enumerate(issues, 1):
        text = files[path]
        assert old in text, (path, old)
        (folder / path).write_text(text.replace(old, new, 1))
        diff = _git(folder, "diff")
        _git(folder, "checkout", "-q", "--", path)
        rows.append({
            "instance_id": f"{repo.replace('/', '__')}-{n}",
            "repo": repo,
            "base_commit": commit,
            "problem_statement": statement,
            "patch": diff,
        })  # fmt: skip
    return rows


def _session(row: dict[str, str], path: str) -> dict[str, object]:
    """An OpenHands-style session (OpenAI messages) that opens the file, then reasons about it."""
    ws = f"/workspace/{row['repo'].split('/')[1]}"
    call = {
        "id": "c1",
        "type": "function",
        "function": {
            "name": "str_replace_editor",
            "arguments": json.dumps({"command": "view", "path": f"{ws}/{path}"}),
        },
    }
    reasoning = f"{path} is where the behaviour in the issue comes from; the fix belongs there. "
    return {
        "instance_id": row["instance_id"],
        "trajectory_id": f"ci-{row['instance_id']}",
        "messages": [
            {"role": "user", "content": f"<uploaded_files>\n{ws}\n</uploaded_files>\n"
             + row["problem_statement"]},
            {"role": "assistant", "content": "Let me look.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": (row["problem_statement"])},
            {"role": "assistant", "content": reasoning * 6},
        ],
    }  # fmt: skip


def self_contained(inputs: Path) -> tuple[list[dict[str, str]], list[dict[str, str]], int]:
    mirrors = inputs / "mirrors"
    train = _self_contained_repo(mirrors / "example+shop", "example/shop", SHOP, SHOP_ISSUES)
    held = _self_contained_repo(
        mirrors / "example+textkit", "example/textkit", TEXTKIT, TEXTKIT_ISSUES
    )
    for name, rows in (("instances.jsonl", train), ("heldout.jsonl", held)):
        (inputs / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    sessions = [_session(r, issue[0]) for r, issue in zip(train, SHOP_ISSUES, strict=True)]
    (inputs / "trajectories.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sessions))
    return train, held, len(sessions)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("base_dir", type=Path)
    shared = Path(__file__).resolve().parents[3].parent / "shared" / "data"
    data = Path(os.environ.get("CODEGREP_SHARED_DATA", shared))
    ap.add_argument("--data", type=Path, default=data)
    ap.add_argument("--mirrors", default=None, help="a folder of local clones, or github")
    ap.add_argument("--self-contained", action="store_true")
    ap.add_argument("--train", type=int, default=4)
    ap.add_argument("--heldout", type=int, default=2)
    ap.add_argument("--no-model", action="store_true", help="no tiny model (one is given)")
    a = ap.parse_args()
    inputs = a.base_dir / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    if a.self_contained:
        train_rows, held_rows, n_sessions = self_contained(inputs)
        model = inputs / "tiny-qwen3"
        if not a.no_model and not (model / "config.json").is_file():
            corpus = [r["problem_statement"] for r in train_rows + held_rows]
            corpus += list(SHOP.values()) + list(TEXTKIT.values())
            tiny_qwen3(model, corpus)
        print(
            f"self-contained inputs in {inputs}: {len(train_rows)} training instances "
            f"(example/shop), {len(held_rows)} held out (example/textkit), {n_sessions} "
            f"sessions, model {'(given elsewhere)' if a.no_model else model}"
        )
        return 0
    if not (a.data / "swebench" / "lite.jsonl").is_file():
        print(f"error: no SWE-bench Lite file under --data {a.data} (or use --self-contained)",
              file=sys.stderr)  # fmt: skip
        return 2

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
        if a.mirrors in (None, "github"):
            url = f"https://github.com/{repo}.git"
            subprocess.run(["git", "clone", "--quiet", "--bare", url, str(link)], check=True)
            continue
        where = Path(a.mirrors)
        found = [t for t in (where / slug / "repo", where / slug) if t.is_dir()]
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
