"""The batch runner: resumable, honest about failures, predictions as codegrep-records'
`Prediction`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from codegrep_model import Instance, ToolTree, run_batch
from codegrep_model.policies.lexical import LexicalPolicy
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
    # the definitions mode the rollouts ran in, which a calibration of these predictions records
    assert meta["definitions"] == "tree-sitter"
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


def test_run_batch_file_is_the_whole_job_without_a_command_line(
    small_repo: Path, tmp_path: Path
) -> None:
    import functools
    import subprocess

    import pytest
    from codegrep_model import BatchInputError, BatchPlan, PolicySpec, run_batch_file
    from codegrep_model.batch import BadInputRow, BatchEvent, BatchStarted, RolloutDone
    from codegrep_model.policies import served_spec

    sha = subprocess.run(
        ["git", "-C", str(small_repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    rows = [
        {
            "instance_id": f"shop-{i}",
            "repo": "acme/shop",
            "base_commit": sha,
            "problem_statement": "`Cart.add_item` raises ValueError: quantity must be positive",
        }
        for i in range(3)
    ]
    instances = tmp_path / "instances.jsonl"
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{broken\n")
    pred = tmp_path / "out" / "pred.jsonl"
    events: list[BatchEvent] = []
    run_file = functools.partial(
        run_batch_file,
        instances,
        predictions=pred,
        cache=tmp_path / "cache",
        source=str(small_repo.parent / "{name}"),
        jobs=2,
        on_event=events.append,
    )

    # a dry run checks and says its plan, and writes nothing
    assert run_file(spec=PolicySpec("lexical"), dry_run=True) is None
    assert [type(e) for e in events] == [BadInputRow, BatchPlan]
    assert isinstance(events[0], BadInputRow)
    assert events[0].text.startswith("skipped bad row ")
    plan = events[1]
    assert isinstance(plan, BatchPlan)
    assert (plan.instances, plan.done, plan.todo) == (3, 0, 3)
    assert plan.rollouts == tmp_path / "out" / "pred.rollouts.jsonl"
    assert not pred.exists()
    assert not (tmp_path / "cache").exists()

    events.clear()
    summary = run_file(spec=PolicySpec("lexical"), limit=2)
    assert summary is not None
    assert (summary.total, summary.answered, summary.errors) == (2, 2, 0)
    assert summary.failure() is None
    assert summary.describe().startswith("answered 2, fallback 0, errors 0, skipped 0 (")
    started = [e for e in events if isinstance(e, BatchStarted)]
    assert [(s.policy, s.total) for s in started] == [("lexical", 2)]
    done = [e.record.instance_id for e in events if isinstance(e, RolloutDone)]
    assert sorted(done) == ["shop-0", "shop-1"]
    preds = [json.loads(x) for x in pred.read_text().splitlines()]
    assert [p["files"] for p in preds] == [["shop/cart.py"]] * 2

    # resumed: the two done ones are skipped, the third runs
    events.clear()
    again = run_file(spec=PolicySpec("lexical"))
    assert again is not None
    assert (again.total, again.skipped) == (1, 2)
    plan = next(e for e in events if isinstance(e, BatchPlan))
    assert (plan.done, plan.todo) == (2, 1)

    # bad input is one BatchInputError naming the flag, before any rollout
    with pytest.raises(BatchInputError, match=r"^--repo no/such: no instance"):
        run_file(spec=PolicySpec("lexical"), repos=["no/such"])
    with pytest.raises(BatchInputError, match=r"^--timeout must be a positive number"):
        run_file(spec=PolicySpec("lexical"), timeout_s=0.0)
    with pytest.raises(BatchInputError, match=r"^--limit must be >= 0"):
        run_file(spec=PolicySpec("lexical"), limit=-1)
    with pytest.raises(BatchInputError, match=r"^--base-url http://127\.0\.0\.1:9/v1 cannot be"):
        run_file(spec=served_spec("http://127.0.0.1:9/v1", "m"), timeout_s=5.0)
    assert len(pred.read_text().splitlines()) == 3
