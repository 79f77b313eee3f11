"""The batch runner: resumable, honest about failures, predictions in DESIGN.md's shape."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from codegrep_model import Instance, LexicalPolicy, ToolTree, run_batch
from codegrep_records import load_predictions
from worktree_sandbox import DirectoryTree, SandboxError


def instances(n: int) -> list[Instance]:
    return [
        Instance(
            instance_id=f"shop-{i}",
            repo="acme/shop" if i != 2 else "acme/missing",
            base_commit="HEAD",
            problem_statement="`Cart.add_item` raises ValueError: quantity must be positive",
            gold_files=("shop/cart.py",),
        )
        for i in range(n)
    ]


def run(small_repo: Path, out: Path, *, limit: int | None = None, jobs: int = 2) -> object:
    @asynccontextmanager
    async def open_tree(inst: Instance) -> AsyncIterator[ToolTree]:
        if inst.repo == "acme/missing":
            raise SandboxError("no such repository")
        async with DirectoryTree(small_repo) as tree:
            yield tree

    return asyncio.run(
        run_batch(
            LexicalPolicy(),
            instances(5),
            open_tree,
            predictions=out / "pred.jsonl",
            rollouts=out / "roll.jsonl",
            jobs=jobs,
            limit=limit,
        )
    )


def test_batch_resumes_and_counts_errors(small_repo: Path, tmp_path: Path) -> None:
    first = run(small_repo, tmp_path, limit=3)
    assert (first.total, first.answered, first.errors) == (3, 2, 1)  # type: ignore[attr-defined]
    preds = list(load_predictions(tmp_path / "pred.jsonl").records)
    assert sorted(p.instance_id for p in preds) == ["shop-0", "shop-1"]
    assert all(p.files == ("shop/cart.py",) for p in preds)
    assert all(p.retriever == "lexical" and p.turns == 3 and p.tool_calls > 0 for p in preds)
    second = run(small_repo, tmp_path)
    # the failed instance is retried (and fails again); the two done ones are skipped
    assert second.skipped == 2  # type: ignore[attr-defined]
    assert second.total == 3  # type: ignore[attr-defined]
    assert second.errors == 1  # type: ignore[attr-defined]
    assert len(list(load_predictions(tmp_path / "pred.jsonl").records)) == 4
    rollouts = [json.loads(x) for x in (tmp_path / "roll.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rollouts].count("error") == 2
    assert "no such repository" in next(r["error"] for r in rollouts if r["status"] == "error")
    meta = json.loads((tmp_path / "pred.jsonl.meta.json").read_text())
    assert meta["policy"] == "lexical"
    assert meta["errors"] == 1
    assert meta["bad_prediction_rows"] == 0


def test_a_torn_prediction_row_is_counted_and_rerun(small_repo: Path, tmp_path: Path) -> None:
    run(small_repo, tmp_path, limit=2)
    pred = tmp_path / "pred.jsonl"
    lines = pred.read_text().splitlines()
    pred.write_text(lines[0] + "\n" + lines[1][:20] + "\n")  # a run killed mid-write
    again = run(small_repo, tmp_path, limit=1)
    assert len(again.bad_prediction_rows) == 1  # type: ignore[attr-defined]
    assert ":2:" in again.bad_prediction_rows[0]  # type: ignore[attr-defined]
    assert again.skipped == 1  # type: ignore[attr-defined]
    meta = json.loads((tmp_path / "pred.jsonl.meta.json").read_text())
    assert meta["bad_prediction_rows"] == 1
