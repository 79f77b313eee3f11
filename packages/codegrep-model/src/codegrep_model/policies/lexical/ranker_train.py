"""Training data for the learned ranking: LexicalPolicy rollouts on real repositories, the
candidates of each answer turn with their features, and the gold files of the instance.

The rollouts run the heuristic policy with the ranker's usage greps
(`LexicalPolicy(heuristic=True, usage_greps=True)`): the ranker only reorders and cuts the
answer, and the calls of every turn are the same with or without it, so its features at
inference come from the same kind of rollout as its training rows.

Examples are written as JSON Lines, one instance per line (resumable: instances already in the
file are not run again), so a refit with other settings needs no rollouts
(`load_training_instances`, `pending_instances`, `collect_in_cache` and `fit_examples` are the
steps of `codegrep-model train-ranker`, which only prints what they report as `TrainingNote`s):

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
from typing import TYPE_CHECKING, Literal

from codegrep_records.io import write_records

from codegrep_model.engine import RolloutConfig, ToolTree, run_rollout
from codegrep_model.policies.lexical.policy import Candidate, LexicalPolicy
from codegrep_model.policies.lexical.ranker import (
    Example,
    FitReport,
    Ranker,
    RankerError,
    Selection,
    fit,
)
from codegrep_model.policies.protocol import PolicyNeeds, PolicyReply, PolicyRequest, TreeContext
from codegrep_model.records import Instance

if TYPE_CHECKING:
    from worktree_sandbox import BareRepoCache

__all__ = [
    "InstanceCandidates",
    "TrainingInstances",
    "TrainingNote",
    "collect",
    "collect_in_cache",
    "examples_of",
    "fit_examples",
    "load_training_instances",
    "pending_instances",
    "read_examples",
]

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

    def __init__(
        self,
        inner: LexicalPolicy | None = None,
        seen: dict[str, tuple[Candidate, ...]] | None = None,
    ) -> None:
        self.inner = inner or LexicalPolicy(heuristic=True, usage_greps=True, history=True)
        self.seen: dict[str, tuple[Candidate, ...]] = {} if seen is None else seen

    @property
    def needs(self) -> PolicyNeeds:
        return self.inner.needs

    def for_tree(self, context: TreeContext) -> _Recorder:
        """The recorder of one rollout: the policy bound to its tree, the same candidates."""
        return _Recorder(self.inner.for_tree(context), self.seen)

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


@dataclass(frozen=True)
class TrainingNote:
    """A line for the person running the training: `warning` for rows left out."""

    text: str
    level: Literal["info", "warning"] = "info"


NoteSink = Callable[[TrainingNote], None]


@dataclass(frozen=True)
class TrainingInstances:
    """The training instances, each once, and what the ranker file records about their files."""

    rows: list[Instance]
    trained_on: list[dict[str, object]]


def load_training_instances(
    paths: Sequence[Path],
    *,
    exclude_repos: Iterable[str] = (),
    on_note: NoteSink | None = None,
) -> TrainingInstances:
    """The instances of `paths` in order, leaving out `exclude_repos`' and repeats of an earlier
    file's instance (the same repository, commit and patch: trained on once).

    Raises `RankerError` for an unreadable file or an instance id that an earlier file gives
    another repository, commit or patch."""
    import hashlib

    import codegrep_records as records

    note = on_note or (lambda _: None)
    excluded = set(exclude_repos)
    rows: list[Instance] = []
    by_id: dict[str, Instance] = {}
    data: list[dict[str, object]] = []
    for path in paths:
        try:
            loaded = records.load_instances(path)
        except records.RecordError as exc:
            raise RankerError(str(exc)) from None
        for bad in loaded.problems:
            note(TrainingNote(f"skipped bad row {bad}", "warning"))
        kept, repeated = [], 0
        for r in loaded.records:
            if r.repo in excluded:
                continue
            first = by_id.get(r.instance_id)
            if first is None:
                by_id[r.instance_id] = r
                kept.append(r)
            elif (first.repo, first.base_commit, first.patch) == (r.repo, r.base_commit, r.patch):
                repeated += 1
            else:
                raise RankerError(
                    f"{path}: instance {r.instance_id} is also in an earlier -i file with "
                    "another repository, commit or patch; which one is right?"
                )
        rows.extend(kept)
        data.append(
            {
                "file": path.name,
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                "instances": len(kept),
                "repeats_of_earlier_files": repeated,
                "repos": sorted({r.repo for r in kept}),
            }
        )
        if repeated:
            note(
                TrainingNote(
                    f"{path}: {repeated} instance(s) already in an earlier -i file, used once"
                )
            )
    return TrainingInstances(rows, data)


def pending_instances(
    rows: Sequence[Instance], examples: Path, limit: int | None = None
) -> list[Instance]:
    """The instances of `rows` not yet in `examples` (at most `limit`); `RankerError` for an
    examples file that cannot be read."""
    try:
        have = {r.instance_id for r in read_examples(examples)} if examples.exists() else set()
    except OSError as exc:
        raise RankerError(str(exc)) from None
    return [r for r in rows if r.instance_id not in have][: limit if limit is not None else None]


async def collect_in_cache(
    instances: Sequence[Instance],
    repo_cache: BareRepoCache,
    output: Path,
    *,
    jobs: int = 2,
    on_done: Callable[[str, str | None], None] | None = None,
) -> tuple[int, list[str]]:
    """`collect` over trees of `repo_cache` (one pool for the run; no folder listings)."""
    from worktree_sandbox import TreePool

    async with TreePool(repo_cache) as pool:

        def open_tree(inst: Instance) -> AbstractAsyncContextManager[ToolTree]:
            return pool.open(inst.repo, inst.base_commit, folders=False)

        return await collect(instances, open_tree, output, jobs=jobs, on_done=on_done)


def fit_examples(
    examples: Path,
    *,
    instance_ids: Iterable[str] = (),
    l2: float = 10.0,
    folds: int = 5,
    seed: int = 0,
    trained_on: list[dict[str, object]] | None = None,
    on_note: NoteSink | None = None,
    selection: Selection = "threshold",
) -> tuple[Ranker, FitReport]:
    """Fit the ranker and its cut (`selection`: `ranker.fit`'s) on the rows of `examples`
    (only `instance_ids`' when given).

    Raises `RankerError` for a bad examples file or too little to fit on."""
    table = read_examples(examples)
    wanted = set(instance_ids)
    if wanted:
        table = [t for t in table if t.instance_id in wanted]
    if on_note is not None:
        on_note(
            TrainingNote(
                f"fitting on {len(table)} instances: one fit per fold by repository ({folds} at "
                "most), the cut, then the final fit (a minute or two for a few hundred instances)"
            )
        )
    return fit(
        examples_of(table),
        l2=l2,
        folds=folds,
        seed=seed,
        meta={"trained_on": trained_on or [], "examples": examples.name},
        selection=selection,
    )
