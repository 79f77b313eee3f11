"""The batch runner: one policy over many instances, predictions and rollouts out as JSONL.

Resumable: instances that already have a prediction are skipped. Honest: an instance whose tree
cannot be opened or whose policy fails is written to the rollouts file with status `error`, gets
no prediction (so a rerun retries it) and is counted in the summary; it never silently leaves the
denominator. Fallback answers are predictions with `fallback: true`; in strict mode a rollout
without an answer is a prediction with no files, counted as `unanswered`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import codegrep_records as records

from codegrep_model.engine import RolloutConfig, ToolTree, run_rollout
from codegrep_model.policy import Policy
from codegrep_model.prompts import PromptSet
from codegrep_model.records import (
    Instance,
    Prediction,
    RolloutCounts,
    RolloutRecord,
    prediction_from_rollout,
)

__all__ = ["BatchSummary", "run_batch"]

TreeOpener = Callable[[Instance], AbstractAsyncContextManager[ToolTree]]


@dataclass
class BatchSummary:
    total: int = 0
    skipped: int = 0
    answered: int = 0
    fallback: int = 0
    unanswered: int = field(
        default=0, metadata={"doc": "Strict mode only: no answer and, by design, no fallback."}
    )
    errors: int = 0
    wall_s: float = 0.0
    error_messages: list[str] = field(default_factory=list)
    bad_prediction_rows: list[str] = field(
        default_factory=list,
        metadata={
            "doc": "Rows of the existing predictions file that did not parse (their "
            "instances are run again); file and line each."
        },
    )

    @property
    def done(self) -> int:
        return self.answered + self.fallback + self.unanswered


def _finished(path: Path, bad: list[str] | None = None) -> set[str]:
    """Instances with a prediction in `path`; rows that do not parse go to `bad`."""
    if not path.exists():
        return set()
    loaded = records.load_records(path, Prediction, key=None)
    if bad is not None:
        bad.extend(str(p) for p in loaded.problems)
    return {p.instance_id for p in loaded.records}


async def run_batch(
    policy: Policy,
    instances: Sequence[Instance],
    open_tree: TreeOpener,
    *,
    predictions: Path,
    rollouts: Path | None = None,
    jobs: int = 4,
    limit: int | None = None,
    config: RolloutConfig | None = None,
    prompts: PromptSet | None = None,
    on_record: Callable[[RolloutRecord], None] | None = None,
) -> BatchSummary:
    """Run `policy` on `instances` (first `limit` not yet done), `jobs` rollouts at a time."""
    if limit is not None and limit < 0:
        # a negative slice would silently drop instances from the end instead
        raise ValueError(f"limit must be >= 0, got {limit}")
    started = time.perf_counter()
    summary = BatchSummary()
    done = _finished(predictions, summary.bad_prediction_rows)
    todo = [i for i in instances if i.instance_id not in done]
    summary.skipped = len(instances) - len(todo)
    if limit is not None:
        todo = todo[:limit]
    summary.total = len(todo)
    predictions.parent.mkdir(parents=True, exist_ok=True)
    if rollouts is not None:
        rollouts.parent.mkdir(parents=True, exist_ok=True)
    gate = asyncio.Semaphore(max(1, jobs))
    lock = asyncio.Lock()
    with ExitStack() as stack:
        pred_f = stack.enter_context(predictions.open("a", encoding="utf-8"))
        roll_f = stack.enter_context(rollouts.open("a", encoding="utf-8")) if rollouts else None

        async def one(inst: Instance) -> None:
            async with gate:
                try:
                    async with open_tree(inst) as tree:
                        record = await run_rollout(
                            policy, tree, inst, config=config, prompts=prompts
                        )
                except Exception as exc:  # a tree that cannot be opened: infrastructure
                    record = RolloutRecord(
                        instance_id=inst.instance_id,
                        repo=inst.repo,
                        commit=inst.base_commit,
                        policy=policy.name,
                        status="error",
                        stats=RolloutCounts(turns=0, tool_calls=0, calls_per_turn=0.0),
                        error=f"{type(exc).__name__}: {exc}",
                    )
                async with lock:
                    if record.status == "error":
                        summary.errors += 1
                        summary.error_messages.append(f"{inst.instance_id}: {record.error}")
                    else:
                        if record.status == "answered":
                            summary.answered += 1
                        elif record.status == "fallback":
                            summary.fallback += 1
                        else:
                            summary.unanswered += 1
                        pred = prediction_from_rollout(record)
                        pred_f.write(pred.model_dump_json(exclude_none=True) + "\n")
                        pred_f.flush()
                    if roll_f is not None:
                        roll_f.write(record.model_dump_json() + "\n")
                        roll_f.flush()
                if on_record is not None:
                    on_record(record)

        await asyncio.gather(*(one(i) for i in todo))
    summary.wall_s = time.perf_counter() - started
    meta = {
        "policy": policy.name,
        "config": (config or RolloutConfig()).model_dump(),
        "total": summary.total,
        "skipped": summary.skipped,
        "answered": summary.answered,
        "fallback": summary.fallback,
        "unanswered": summary.unanswered,
        "errors": summary.errors,
        "bad_prediction_rows": len(summary.bad_prediction_rows),
        "wall_s": round(summary.wall_s, 3),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    meta_path = predictions.with_name(predictions.name + ".meta.json")
    meta_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return summary
