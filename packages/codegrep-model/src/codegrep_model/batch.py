"""The batch runner: one policy over many instances, predictions and rollouts out as JSONL.

Resumable: instances that already have a prediction are skipped. Honest: an instance whose tree
cannot be opened or whose policy fails is written to the rollouts file with status `error`, gets
no prediction (so a rerun retries it) and is counted in the summary; it never silently leaves the
denominator. Fallback answers are predictions with `fallback: true`; in strict mode a rollout
without an answer is a prediction with no files, counted as `unanswered`.

Two layers: `run_batch` (async) runs a policy over instances already in memory with trees the
caller opens; `run_batch_file` is the whole job behind `codegrep-model batch` and swe-eval's
`predict -r lexical|agent`: read and filter an instances file, check the outputs, the ranker and
the endpoint, build the policy with `policy_from_spec`, open trees from a clone cache and run.
Neither prints: what a user should see goes to an `on_event` callback as typed events, and bad
input is a `BatchInputError` whose one-line message names the flag both commands share. Not for:
the rollout loop itself (`engine.py`) or the command line (`cli.py`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import codegrep_records as records
from codegrep_records.io import load_records, why_unwritable

from codegrep_model.budget import TokenCounter
from codegrep_model.engine import RolloutConfig, ToolTree, definitions_mode, run_rollout
from codegrep_model.errors import BatchInputError, BatchStoppedError, PolicySpecError
from codegrep_model.policies.protocol import Policy
from codegrep_model.prompts import PromptSet
from codegrep_model.records import (
    Instance,
    Prediction,
    RolloutCounts,
    RolloutRecord,
    prediction_from_rollout,
)

if TYPE_CHECKING:
    from codegrep_model.policies.spec import PolicySpec

__all__ = [
    "DEFAULT_SOURCE",
    "DEFAULT_TIMEOUT_S",
    "BadInputRow",
    "BatchEvent",
    "BatchPlan",
    "BatchStarted",
    "BatchSummary",
    "RolloutDone",
    "run_batch",
    "run_batch_file",
]

#: The layout of a batch's `<predictions>.meta.json`; one without `schema_version` is 1.
BATCH_META_SCHEMA_VERSION = 1

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_SOURCE = "https://github.com/{repo}.git"

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

    def describe(self) -> str:
        """The one line a command says when the batch is over."""
        return (
            f"answered {self.answered}, fallback {self.fallback}, errors {self.errors}, "
            f"skipped {self.skipped} ({self.wall_s:.1f} s)"
        )

    def failure(self) -> str | None:
        """What to say when some rollouts failed (None when none did)."""
        if not self.errors:
            return None
        return (
            f"{self.errors} of {self.total} instance(s) failed; they have no prediction, and a "
            "rerun retries them"
        )


@dataclass(frozen=True)
class BadInputRow:
    """A row of the instances file, or of the predictions file already there, that did not
    parse; `text` says which and what the batch does about it."""

    text: str


@dataclass(frozen=True)
class BatchPlan:
    """What the batch found before it checks the policy: instances kept, already done, to run."""

    instances: int
    done: int
    todo: int
    predictions: Path
    rollouts: Path

    @property
    def text(self) -> str:
        return (
            f"{self.instances} instances, {self.done} already done, {self.todo} to run -> "
            f"{self.predictions}, {self.rollouts}"
        )


@dataclass(frozen=True)
class BatchStarted:
    """The rollouts begin: `total` of them, with the policy named `policy`."""

    policy: str
    total: int


@dataclass(frozen=True)
class RolloutDone:
    """One rollout ended (written to the files; an error too)."""

    record: RolloutRecord


#: What `run_batch_file` tells its `on_event` callback, in this order: bad rows, the plan,
#: then (unless a dry run) the start and one `RolloutDone` per rollout.
BatchEvent = BadInputRow | BatchPlan | BatchStarted | RolloutDone


def _finished(path: Path, bad: list[str] | None = None) -> set[str]:
    """Instances with a prediction in `path`; rows that do not parse go to `bad`."""
    if not path.exists():
        return set()
    loaded = load_records(path, Prediction, key=None)
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
    counter: TokenCounter | None = None,
) -> BatchSummary:
    """Run `policy` on `instances` (first `limit` not yet done), `jobs` rollouts at a time.

    `counter` counts tokens for `config.budget` (a trainer's tokenizer, so that rollouts made
    here, e.g. a teacher's for SFT rows, are cut exactly as the trainer's own would be)."""
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
                            policy, tree, inst, config=config, prompts=prompts, counter=counter
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
        "schema_version": BATCH_META_SCHEMA_VERSION,
        "policy": policy.name,
        # the definition index the rollouts had (`engine.definitions_mode`): a calibration
        # measured on these predictions records it
        "definitions": definitions_mode(),
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


def _endpoint_problem(base_url: str, api_key: str | None, timeout: float) -> str | None:
    """Why nothing answers at `base_url`, or None when something does (whatever its status).

    One GET of `{base_url}/models`, the route OpenAI-compatible servers list models on: only a
    refused or impossible connection counts, so a server without that route still passes.
    """
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        httpx.get(f"{base_url.rstrip('/')}/models", headers=headers, timeout=min(timeout, 10.0))
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol) as exc:
        return f"{type(exc).__name__}: {exc}"
    except httpx.InvalidURL as exc:
        return f"not a URL ({exc})"
    except httpx.HTTPError:
        return None  # it answered, or began to: what it says shows up per request
    return None


def run_batch_file(
    instances: Path,
    *,
    predictions: Path,
    cache: Path,
    spec: PolicySpec,
    source: str = DEFAULT_SOURCE,
    rollouts: Path | None = None,
    jobs: int = 4,
    limit: int | None = None,
    repos: Sequence[str] | None = None,
    api_key: str | None = None,
    timeout_s: float | None = None,
    ranker: Path | None = None,
    dry_run: bool = False,
    on_event: Callable[[BatchEvent], None] | None = None,
    grep_engine: str | None = None,
) -> BatchSummary | None:
    """Run the policy `spec` names over the instances file `instances`; resumable.

    Appends predictions to `predictions` and rollouts to `rollouts` (default: beside it,
    `.rollouts.jsonl`); `repos` keeps only those repositories' instances (each must have one),
    `limit` caps the new ones. Trees come from a `BareRepoCache` at `cache` cloned from `source`.
    A served spec's endpoint is checked first (`api_key`, `timeout_s` per request, default
    120 s); `ranker` replaces LexicalPolicy's shipped ranker. Returns the summary, or None on a
    dry run (everything checked, nothing run). Raises `BatchInputError` on bad input (before any
    rollout) and `BatchStoppedError` when the run cannot go on; exceptions `on_event` raises
    pass through (raised at a `BatchPlan`, nothing has been written). `grep_engine`: the
    trees' grep engine by its `worktree_sandbox.GREP_ENGINES` name (None: the default).
    """
    from worktree_sandbox import (
        BareRepoCache,
        SandboxError,
        SandboxLimits,
        TreePool,
        check_grep_engine,
    )

    from codegrep_model.policies.lexical.ranker import Ranker, RankerError
    from codegrep_model.policies.spec import policy_from_spec

    def tell(event: BatchEvent) -> None:
        if on_event is not None:
            on_event(event)

    if limit is not None and limit < 0:  # the CLIs' option types say this before we run
        raise BatchInputError(f"--limit must be >= 0, got {limit}")
    try:
        check_grep_engine(grep_engine)
    except SandboxError as exc:
        raise BatchInputError(f"--grep-engine: {exc}") from None
    request_timeout = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    if not request_timeout > 0:  # also NaN
        raise BatchInputError(
            f"--timeout must be a positive number of seconds, got {request_timeout:g}"
        )
    rollouts = rollouts or predictions.with_name(
        predictions.name.removesuffix(".jsonl") + ".rollouts.jsonl"
    )
    for flag, out in (("-o", predictions), ("--rollouts", rollouts)):
        if out.suffix == ".gz":
            # batch appends as it goes and resumes from what is there: plain JSON Lines only
            raise BatchInputError(f"{flag} {out}: batch appends to it; name a .jsonl file")
    if predictions.resolve() == rollouts.resolve():
        raise BatchInputError(
            f"-o and --rollouts are the same file ({predictions}); name two files"
        )
    for flag, out in (("-o", predictions), ("--rollouts", rollouts)):
        problem = why_unwritable(out)
        if problem is not None:
            raise BatchInputError(f"cannot write {flag} {out}: {problem}")
    try:
        loaded = records.load_instances(instances)
    except records.RecordError as exc:  # missing, a folder, not JSON, parquet without pyarrow
        raise BatchInputError(str(exc)) from None
    for bad in loaded.problems:
        tell(BadInputRow(f"skipped bad row {bad}"))
    if not loaded.records:
        raise BatchInputError(f"{instances}: no valid instance row ({len(loaded.problems)} bad)")
    known = {r.repo for r in loaded.records}
    for name in repos or []:
        if name not in known:
            raise BatchInputError(f"--repo {name}: no instance of this repository in {instances}")
    rows = [r for r in loaded.records if not repos or r.repo in repos]
    unparsed: list[str] = []
    done = _finished(predictions, unparsed)
    for msg in unparsed:
        tell(BadInputRow(f"bad prediction row (its instance runs again) {msg}"))
    new = [r for r in rows if r.instance_id not in done]
    todo = new[: limit if limit is not None else None]
    tell(BatchPlan(len(rows), len(rows) - len(new), len(todo), predictions, rollouts))
    if ranker is not None and spec.kind == "lexical-heuristic":
        raise BatchInputError("--heuristic means no ranker; drop --ranker or --heuristic")
    if ranker is not None and spec.kind not in ("lexical", "lexical-heuristic"):
        runs = "--base-url runs a model" if spec.served else f"--policy {spec} runs another"
        raise BatchInputError(f"--ranker and --heuristic are LexicalPolicy's; {runs}")
    try:
        learned = Ranker.load(ranker) if ranker is not None else None
    except RankerError as exc:
        raise BatchInputError(str(exc)) from None
    if spec.served and spec.base_url is not None:
        unreachable = _endpoint_problem(spec.base_url, api_key, request_timeout)
        if unreachable is not None:
            raise BatchInputError(f"--base-url {spec.base_url} cannot be reached: {unreachable}")
    if dry_run:
        return None
    try:
        repo_cache = BareRepoCache(cache, source=source)
    except (SandboxError, OSError) as exc:  # a --source naming no repository, an unusable --cache
        raise BatchInputError(str(exc)) from None
    try:
        policy = policy_from_spec(spec, api_key=api_key, timeout_s=request_timeout, ranker=learned)
    except PolicySpecError as exc:  # an import path that does not make a policy, a bad target
        raise BatchInputError(str(exc)) from None

    async def go() -> BatchSummary:
        async with TreePool(repo_cache, limits=SandboxLimits(grep_engine=grep_engine)) as pool:

            @asynccontextmanager
            async def open_tree(inst: Instance) -> AsyncIterator[ToolTree]:
                # A row names a repository, never a folder that happens to be here.
                async with pool.open(inst.repo, inst.base_commit, folders=False) as tree:
                    yield tree

            tell(BatchStarted(policy.name, len(todo)))
            summary = await run_batch(
                policy,
                rows,
                open_tree,
                predictions=predictions,
                rollouts=rollouts,
                jobs=jobs,
                limit=limit,
                on_record=lambda record: tell(RolloutDone(record)),
            )
        close = getattr(policy, "aclose", None)  # a served model's connections
        if close is not None:
            await close()
        return summary

    try:
        return asyncio.run(go())
    except (OSError, SandboxError) as exc:  # a full disk, a pool that cannot start
        raise BatchStoppedError(f"the batch stopped: {type(exc).__name__}: {exc}") from None
