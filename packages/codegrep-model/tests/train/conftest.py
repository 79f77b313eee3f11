"""Fixtures of the training tests: a small real git repository served through a clone cache,
the issues asked about it, and their GRPO rows as `codegrep_model.datasets.grpo_rows` writes
them (the rows `codegrep-model dataset grpo` makes)."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from codegrep_model import Instance
from codegrep_model.datasets import grpo_rows
from worktree_sandbox import BareRepoCache, TreePool

REPO = "acme/shop"

FILES = {
    "README.md": "# shop\nA tiny shop.\n",
    "shop/__init__.py": "from shop.cart import Cart\n",
    "shop/cart.py": (
        "class Cart:\n"
        "    def __init__(self):\n"
        "        self.items = []\n\n"
        "    def add_item(self, sku, qty):\n"
        "        if qty <= 0:\n"
        "            raise ValueError('quantity must be positive for every line')\n"
        "        self.items.append((sku, qty))\n\n"
        "    def total_price(self, prices):\n"
        "        return sum(prices[s] * q for s, q in self.items)\n"
    ),
    "shop/pricing.py": "def apply_discount(total, rate):\n    return total * (1 - rate)\n",
    "shop/util/money.py": "def round_cents(x):\n    return round(x, 2)\n",
    "shop/inventory.py": (
        "class Inventory:\n"
        "    def __init__(self):\n"
        "        self.stock = {}\n\n"
        "    def reserve_stock(self, sku, qty):\n"
        "        if self.stock.get(sku, 0) < qty:\n"
        "            raise KeyError('not enough stock for reservation')\n"
        "        self.stock[sku] -= qty\n"
    ),
    "tests/test_cart.py": (
        "from shop.cart import Cart\n\ndef test_add_item():\n    Cart().add_item('a', 1)\n"
    ),
}

# (instance id, issue, gold files): each names what a developer would grep for
ISSUES = (
    (
        "shop-1",
        "Cart.add_item raises ValueError 'quantity must be positive for every line' for zero "
        "quantities; a zero quantity should be ignored.",
        ("shop/cart.py",),
    ),
    (
        "shop-2",
        "apply_discount returns a negative total when the rate is above 1; clamp the discount.",
        ("shop/pricing.py",),
    ),
    (
        "shop-3",
        "round_cents rounds half to even (round_cents(0.125) gives 0.12); money needs half-up.",
        ("shop/util/money.py",),
    ),
    (
        "shop-4",
        "Inventory.reserve_stock raises KeyError 'not enough stock for reservation' instead of "
        "a clear OutOfStock error.",
        ("shop/inventory.py",),
    ),
)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


@dataclass(frozen=True)
class Sandbox:
    """A repository reachable as `REPO` through a clone cache (`cache_dir`, `source`)."""

    root: Path
    cache_dir: str
    source: str
    commit: str
    repo: str = REPO
    issues: tuple[tuple[str, str, tuple[str, ...]], ...] = ISSUES
    files_text: tuple[str, ...] = tuple(FILES.values())
    tree_files: tuple[str, ...] = ()  # the tree's file list at `commit`

    grpo: tuple[dict[str, Any], ...] = ()  # one GRPO row per issue, as JSON

    def instance(self, index: int = 0) -> Instance:
        iid, text, gold = self.issues[index]
        return Instance(
            instance_id=iid,
            repo=self.repo,
            base_commit=self.commit,
            problem_statement=text,
            gold_files=gold,
        )

    def rows(self) -> list[dict[str, Any]]:
        """The GRPO rows (copies: a test may change them)."""
        return copy.deepcopy(list(self.grpo))


def make_sandbox(root: Path) -> Sandbox:
    src = root / "src" / "shop"
    src.mkdir(parents=True)
    _git(src, "init", "-q", "-b", "main")
    for rel, text in FILES.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _git(src, "add", "-A")
    _git(src, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init")
    commit = _git(src, "rev-parse", "HEAD").strip()
    cache_dir, source = str(root / "cache"), str(root / "src" / "{name}")

    async def tree_files() -> tuple[str, ...]:
        async with (
            TreePool(BareRepoCache(cache_dir, source), materialize="never") as pool,
            pool.open(REPO, commit, folders=False) as tree,
        ):
            return await tree.files()

    box = Sandbox(
        root=root,
        cache_dir=cache_dir,
        source=source,
        commit=commit,
        tree_files=asyncio.run(tree_files()),
    )
    instances = [box.instance(i) for i in range(len(ISSUES))]
    dataset = asyncio.run(grpo_rows(instances, BareRepoCache(cache_dir, source), val_fraction=0.0))
    assert len(dataset.train) == len(ISSUES), dataset.report
    grpo = tuple(r.model_dump(mode="json") for r in dataset.train)
    return dataclasses.replace(box, grpo=grpo)


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return make_sandbox(tmp_path / "sandbox")
