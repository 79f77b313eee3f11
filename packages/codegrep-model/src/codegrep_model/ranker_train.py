"""Training data for the learned ranking: LexicalPolicy rollouts on real repositories, the
candidates of each answer turn with their features, and the gold files of the instance.

The rollouts run the heuristic policy with the ranker's usage greps
(`LexicalPolicy(heuristic=True, usage_greps=True)`): the ranker only reorders and cuts the
answer, and the calls of every turn are the same with or without it, so its features at
inference come from the same kind of rollout as its training rows.

Examples are written as JSON Lines, one instance per line (resumable: instances already in the
file are not run again), so a refit with other settings needs no rollouts:

    {"instance_id": ..., "repo": ..., "gold": [...],
     "candidates": [{"path": ..., "features": {...}}, ...]}
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

from codegrep_records import write_records

from codegrep_model.engine import RolloutConfig, ToolTree, run_rollout
from codegrep_model.lexical import Candidate, LexicalPolicy
from codegrep_model.policy import PolicyReply, PolicyRequest
from codegrep_model.ranker import Example, RankerError
from codegrep_model.records import Instance

__all__ = ["InstanceCandidates", "collect", "examples_of", "read_examples"]

TreeOpener = Callable[[Instance], AbstractAsyncContextManager[ToolTree]]


@dataclass(frozen=True)
class InstanceCandidates:
    instance_id: str
    repo: str
    gold: tuple[str, ...]
    candidates: tuple[Candidate, ...]

    def to_json(self) -> str:
        return json.dumps(
            {
                "instance_id": self.instance_id,
                "repo": self.repo,
                "gold": list(self.gold),
                "candidates": [
                    {"path": c.path, "score": round(c.score, 6), "features": _rounded(c.features)}
                    for c in self.candidates
                ],
            },
            sort_keys=True,
        )


def _rounded(features: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 6) for k, v in sorted(features.items()) if v}


class _Recorder:
    """The heuristic LexicalPolicy, keeping the candidates of its answer (with the usage greps
    and the history that the ranked policy's features need)."""

    def __init__(self) -> None:
        self.inner = LexicalPolicy(heuristic=True, usage_greps=True, history=True)
        self.seen: dict[str, tuple[Candidate, ...]] = {}

    @property
    def uses_history(self) -> bool:
        return self.inner.uses_history

    @property
    def name(self) -> str:
        return self.inner.name

    async def reply(self, request: PolicyRequest) -> PolicyReply:
        reply = await self.inner.reply(request)
        if not reply.tool_calls:  # the answer (it may come before the answer turn)
            self.seen[request.instance.instance_id] = tuple(await self.inner.candidates(request))
        return reply


def read_examples(path: Path) -> list[InstanceCandidates]:
    """The instances of an examples file; a bad line is an error naming file and line.

    Lines are decoded by codegrep-records' row reader: not UTF-8, too deep, `1e999` or a
    5,000-digit number is such a bad line, as is a feature that is not a finite number.
    """
    from codegrep_records import RecordFileError, RowProblem, read_rows

    out: list[InstanceCandidates] = []
    try:
        rows = list(read_rows(path))
    except RecordFileError as exc:
        raise RankerError(str(exc)) from None
    for n, row in rows:
        if isinstance(row, RowProblem):
            raise RankerError(f"{path}:{n}: not an examples row ({row.message})")
        try:
            out.append(
                InstanceCandidates(
                    instance_id=str(row["instance_id"]),
                    repo=str(row["repo"]),
                    gold=tuple(str(g) for g in row["gold"]),
                    candidates=tuple(
                        Candidate(
                            path=str(c["path"]),
                            score=_finite(c.get("score", 0.0)),
                            features={k: _finite(v) for k, v in c["features"].items()},
                        )
                        for c in row["candidates"]
                    ),
                )
            )
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
            raise RankerError(f"{path}:{n}: not an examples row ({e!r})") from None
    return out


def _finite(value: object) -> float:
    number = float(value)  # type: ignore[arg-type]  # a str or a list: ValueError/TypeError
    if not math.isfinite(number):
        raise ValueError(f"{value!r} is not a finite number")
    return number


def examples_of(rows: Iterable[InstanceCandidates]) -> list[Example]:
    """One `Example` per candidate; an instance without candidates contributes none (its gold
    still counts against recall when the policy is evaluated, not here)."""
    out = []
    for row in rows:
        gold = set(row.gold)
        for c in row.candidates:
            out.append(
                Example(
                    group=row.instance_id,
                    path=c.path,
                    features=c.features,
                    gold=c.path in gold,
                    repo=row.repo,
                    gold_total=len(gold),
                )
            )
    return out


async def collect(
    instances: Sequence[Instance],
    open_tree: TreeOpener,
    output: Path,
    *,
    jobs: int = 2,
    config: RolloutConfig | None = None,
    on_done: Callable[[str, str | None], None] | None = None,
) -> tuple[int, list[str]]:
    """Run the heuristic policy on `instances` not yet in `output` and append their rows.

    Returns (rows written, error messages); an instance whose tree cannot be opened or whose
    rollout fails is reported and written nowhere, so a rerun retries it."""
    done = {r.instance_id for r in read_examples(output)} if output.exists() else set()
    todo = [i for i in instances if i.instance_id not in done]
    recorder = _Recorder()
    sem = asyncio.Semaphore(jobs)
    lock = asyncio.Lock()
    errors: list[str] = []
    written = 0

    async def one(inst: Instance) -> None:
        nonlocal written
        async with sem:
            try:
                async with open_tree(inst) as tree:
                    record = await run_rollout(recorder, tree, inst, config=config)
            except Exception as exc:
                errors.append(f"{inst.instance_id}: {type(exc).__name__}: {exc}")
                if on_done:
                    on_done(inst.instance_id, str(exc))
                return
        if record.status == "error":
            errors.append(f"{inst.instance_id}: rollout failed: {record.error}")
            if on_done:
                on_done(inst.instance_id, record.error or "error")
            return
        row = InstanceCandidates(
            instance_id=inst.instance_id,
            repo=inst.repo,
            gold=tuple(inst.gold_files_for()),
            candidates=recorder.seen.pop(inst.instance_id, ()),
        )
        async with lock:
            written += write_records(output, (row,), dump=InstanceCandidates.to_json, append=True)
        if on_done:
            on_done(inst.instance_id, None)

    await asyncio.gather(*(one(i) for i in todo))
    return written, errors
