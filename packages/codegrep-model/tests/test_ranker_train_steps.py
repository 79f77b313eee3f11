"""`codegrep-model train-ranker`'s library steps, called directly without the CLI."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
from codegrep_model.policies.lexical.ranker import Ranker, RankerError
from codegrep_model.policies.lexical.ranker_train import (
    TrainingNote,
    collect_in_cache,
    fit_examples,
    load_training_instances,
    pending_instances,
)
from worktree_sandbox import BareRepoCache

_PATCH = "diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-x\n+y\n"


def _row(i: int, sha: str, repo: str = "acme/shop") -> dict[str, str]:
    return {
        "instance_id": f"shop-{i}",
        "repo": repo,
        "base_commit": sha,
        "problem_statement": "`Cart.total_price` ignores discounts",
        "patch": _PATCH.format(f="shop/cart.py"),
    }


def test_the_steps_load_run_and_fit(tmp_path: Path, small_repo: Path) -> None:
    sha = subprocess.run(
        ["git", "-C", str(small_repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("".join(json.dumps(_row(i, sha)) + "\n" for i in range(3)) + "{bad\n")
    second.write_text(json.dumps(_row(0, sha)) + "\n" + json.dumps(_row(9, sha, "o/x")) + "\n")
    notes: list[TrainingNote] = []
    training = load_training_instances([first, second], exclude_repos=["o/x"], on_note=notes.append)
    assert [r.instance_id for r in training.rows] == ["shop-0", "shop-1", "shop-2"]
    assert [n.level for n in notes] == ["warning", "info"]
    assert notes[0].text.startswith("skipped bad row")
    assert notes[1].text == f"{second}: 1 instance(s) already in an earlier -i file, used once"
    assert [d["instances"] for d in training.trained_on] == [3, 0]
    assert [d["repeats_of_earlier_files"] for d in training.trained_on] == [0, 1]

    examples = tmp_path / "ex.jsonl"
    todo = pending_instances(training.rows, examples, limit=2)
    assert [r.instance_id for r in todo] == ["shop-0", "shop-1"]
    cache = BareRepoCache(tmp_path / "cache", source=str(small_repo.parent / "{name}"))
    done: list[str] = []
    written, errors = asyncio.run(
        collect_in_cache(todo, cache, examples, on_done=lambda i, _e: done.append(i))
    )
    assert (written, errors) == (2, [])
    assert sorted(done) == ["shop-0", "shop-1"]
    todo = pending_instances(training.rows, examples)
    assert [r.instance_id for r in todo] == ["shop-2"]
    asyncio.run(collect_in_cache(todo, cache, examples))

    notes.clear()
    ranker, report = fit_examples(
        examples,
        instance_ids=[r.instance_id for r in training.rows],
        trained_on=training.trained_on,
        on_note=notes.append,
    )
    assert notes[0].text.startswith("fitting on 3 instances")
    assert report.instances == 3
    assert isinstance(ranker, Ranker)
    assert ranker.meta["trained_on"] == training.trained_on
    assert ranker.meta["examples"] == "ex.jsonl"


def test_a_conflicting_instance_is_a_ranker_error(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(json.dumps(_row(0, "a" * 40)) + "\n")
    second.write_text(json.dumps(_row(0, "b" * 40)) + "\n")
    with pytest.raises(RankerError, match=f"{second}: instance shop-0 is also in an earlier"):
        load_training_instances([first, second])
    with pytest.raises(RankerError):
        load_training_instances([tmp_path / "missing.jsonl"])
