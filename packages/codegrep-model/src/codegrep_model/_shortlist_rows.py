"""Answer-task rows: the GRPO rows of `_grpo_rows` with their prompt replaced by the answer
task's (`codegrep_model.policies.shortlist`): the issue and `LexicalPolicy`'s shortlist, found
by its exploration of the instance's tree. `dataset grpo --shortlist K` writes them.

Each tree is checked out (the exploration greps and reads it), `jobs` at a time. An instance
whose exploration fails is dropped as `tree_error` with the reason, as a tree that cannot be
opened is. The rows keep their gold columns, so `--reward_funcs fbeta_file` scores them with no
tool statistics; they have no tools (`tools` "[]"), so ms-swift renders them without a tools
block, as `ShortlistPolicy` renders its prompt.
Not for: the paper's episode rows (`_grpo_rows`), or reading and writing files (the CLI).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from worktree_sandbox import BareRepoCache, SandboxError, TreePool

from codegrep_model._dataset_rows import Dropped
from codegrep_model._grpo_rows import (
    GrpoDataset,
    GrpoRow,
    PromptMessage,
    ShortlistLine,
    ShortlistRowEntry,
    _fill_repos,
)
from codegrep_model.engine import run_rollout
from codegrep_model.episode import RolloutConfig
from codegrep_model.policies.lexical import lexical_explorer
from codegrep_model.policies.protocol import PolicyNeeds, PolicyReply, PolicyRequest, TreeContext
from codegrep_model.policies.shortlist import (
    Explorer,
    ShortlistConfig,
    ShortlistEntry,
    shortlist_messages,
)
from codegrep_model.records import Instance

__all__ = ["entries_of_row", "row_with_entries", "shortlist_rows"]


class _Capture:
    """LexicalPolicy, keeping the shortlist of each answer turn it is asked for."""

    def __init__(self, explorer: Explorer, config: ShortlistConfig) -> None:
        self.explorer = explorer
        self.config = config
        self.entries: dict[str, list[ShortlistEntry]] = {}

    @property
    def name(self) -> str:
        return self.explorer.name

    @property
    def needs(self) -> PolicyNeeds:
        return self.explorer.needs

    def for_tree(self, context: TreeContext) -> _Capture:
        """The capture of one rollout: the explorer bound to its tree, the same shortlists."""
        bound = _Capture(self.explorer.for_tree(context), self.config)
        bound.entries = self.entries
        return bound

    async def reply(self, request: PolicyRequest) -> PolicyReply:
        reply = await self.explorer.reply(request)
        if not reply.tool_calls:  # its answer (it answers before the last turn when done)
            iid = request.instance.instance_id
            self.entries[iid] = await self.explorer.shortlist(request, self.config)
        return reply


def row_with_entries(
    row: GrpoRow, entries: Sequence[ShortlistEntry], config: ShortlistConfig
) -> GrpoRow:
    """`row` as an answer-task row showing `entries` (in their order)."""
    system, user = shortlist_messages(row.repo, row.problem_statement, entries, config)
    return row.model_copy(
        update={
            "messages": (PromptMessage.model_validate(system), PromptMessage.model_validate(user)),
            "tools": "[]",
            "rollout_config": "",
            "shortlist": tuple(
                ShortlistRowEntry(
                    path=e.path,
                    reason=e.reason,
                    lines=tuple(ShortlistLine(line=n, text=t) for n, t in e.lines),
                )
                for e in entries
            ),
        }
    )


def entries_of_row(row: GrpoRow) -> list[ShortlistEntry]:
    """The shortlist an answer-task row shows."""
    return [
        ShortlistEntry(e.path, e.reason, tuple((x.line, x.text) for x in e.lines))
        for e in row.shortlist
    ]


async def shortlist_rows(
    dataset: GrpoDataset,
    cache: BareRepoCache,
    *,
    config: ShortlistConfig,
    explorer: Explorer | None = None,
    rollout: RolloutConfig | None = None,
    explorers: Mapping[str, Explorer] | None = None,
    jobs: int = 2,
    on_row: Callable[[int, int], None] | None = None,
) -> GrpoDataset:
    """`dataset`'s rows as answer-task rows. `explorer` (default: `LexicalPolicy()`, the shipped
    ranker) explores each row's tree; `explorers` may give another per repository (a ranker
    that never saw that repository, say). `on_row(done, total)` is called as rows finish."""
    fallback = _Capture(explorer or lexical_explorer(), config)
    captures = {repo: _Capture(p, config) for repo, p in (explorers or {}).items()}
    rows = [("train", r) for r in dataset.train] + [("val", r) for r in dataset.val]
    out: dict[str, list[GrpoRow]] = {"train": [], "val": []}
    dropped: list[Dropped] = []
    gate = asyncio.Semaphore(max(1, jobs))
    done = 0
    if on_row is not None:
        on_row(0, len(rows))
    results: dict[int, GrpoRow | str] = {}
    async with TreePool(cache) as pool:

        async def one(n: int, row: GrpoRow) -> None:
            nonlocal done
            capture = captures.get(row.repo, fallback)
            inst = Instance(
                instance_id=row.instance_id,
                repo=row.repo,
                base_commit=row.base_commit,
                problem_statement=row.problem_statement,
            )
            async with gate:
                try:
                    async with pool.open(row.repo, row.base_commit, folders=False) as tree:
                        record = await run_rollout(capture, tree, inst, config=rollout)
                except (SandboxError, OSError) as exc:
                    results[n] = f"{type(exc).__name__}: {exc}"
                else:
                    entries = capture.entries.pop(row.instance_id, None)
                    if record.status == "error" or entries is None:
                        results[n] = f"exploration failed: {record.error or 'no answer turn'}"
                    else:
                        results[n] = row_with_entries(row, entries, config)
            done += 1
            if on_row is not None:
                on_row(done, len(rows))

        await asyncio.gather(*(one(n, r) for n, (_, r) in enumerate(rows)))
    for n, (split, row) in enumerate(rows):
        got = results[n]
        if isinstance(got, str):
            dropped.append(Dropped(row.instance_id, row.repo, "tree_error", got))
        else:
            out[split].append(got)
    report = replace(
        dataset.report,
        dropped=dataset.report.dropped + dropped,
        tree_errors=dataset.report.tree_errors + len(dropped),
        train=len(out["train"]),
        val=len(out["val"]),
    )
    kept = out["train"] + out["val"]
    report.gold_sources = dict(sorted(Counter(r.gold_source for r in kept).items()))
    _fill_repos(report, kept, frozenset(report.val_repos))
    return GrpoDataset(out["train"], out["val"], report)
