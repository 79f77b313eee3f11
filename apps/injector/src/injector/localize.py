"""`localize`: one rollout of a policy over a local directory or a (repository, commit) pair.

A directory is searched as it is (its working tree, uncommitted changes included, read-only);
with a commit, the repository's objects at that commit are searched instead (through
`worktree_sandbox.TreePool`), and a name like `psf/requests` is cloned into a cache first.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from codegrep_model import (
    Instance,
    LexicalPolicy,
    Policy,
    RolloutConfig,
    RolloutRecord,
    ToolTree,
    run_rollout,
)
from worktree_sandbox import BareRepoCache, DirectoryTree, SandboxError, TreePool

from injector.errors import RepositoryInputError

__all__ = ["Localization", "LocalizedFile", "localize"]


@dataclass(frozen=True)
class LocalizedFile:
    path: str
    reason: str


@dataclass(frozen=True)
class Localization:
    files: tuple[LocalizedFile, ...]
    status: str
    policy: str
    turns: int
    tool_calls: int
    tokens: int
    latency_s: float
    record: RolloutRecord

    def to_json(self) -> dict[str, object]:
        answer = self.record.answer
        return {
            "files": [f.path for f in self.files],
            "reasons": {f.path: f.reason for f in self.files},
            "line_ranges": {k: [list(r) for r in v] for k, v in answer.line_ranges.items()}
            if answer
            else {},
            "status": self.status,
            "policy": self.policy,
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "tokens": self.tokens,
            "latency_s": round(self.latency_s, 3),
            "issue_bytes": self.record.issue_bytes,
            "issue_cut_to": self.record.issue_cut_to,
            "error": self.record.error,
        }


def _reason(record: RolloutRecord, path: str) -> str:
    """The policy's own reason, else what the search saw of the file."""
    if record.answer is not None and record.answer.reasons.get(path):
        return record.answer.reasons[path]
    seen = [c for t in record.turns for c in t.calls if path in c.paths]
    if record.status == "fallback":
        return "read during the search (fallback: the model gave no answer)"
    if any(c.call.name == "read" for c in seen):
        return "read and chosen by the model"
    if seen:
        return f"found by {len(seen)} search call(s)"
    return "named by the model"


@asynccontextmanager
async def _open_tree(
    repo: str, commit: str | None, cache_dir: Path | None, source: str
) -> AsyncIterator[ToolTree]:
    local = Path(repo).expanduser()
    if local.is_dir():
        if commit is None:
            async with DirectoryTree(local) as tree:
                yield tree
            return
        async with TreePool(materialize="never") as pool, pool.tree_at(local, commit) as tree:
            yield tree
        return
    if repo.count("/") != 1 or commit is None:
        raise RepositoryInputError(
            f"{repo!r} is not a directory; a repository name (owner/name) needs --commit"
        )
    cache = BareRepoCache(cache_dir or Path("~/.cache/codegrep/repos").expanduser(), source)
    async with TreePool(cache, materialize="never") as pool, pool.tree(repo, commit) as tree:
        yield tree


async def localize(
    repo: str | Path,
    issue: str,
    *,
    commit: str | None = None,
    policy: Policy | None = None,
    config: RolloutConfig | None = None,
    cache_dir: Path | None = None,
    source: str = "https://github.com/{repo}.git",
) -> Localization:
    """Files of `repo` that `issue` needs, most important first, each with a reason."""
    started = time.perf_counter()
    chosen = policy or LexicalPolicy()
    name = str(repo)
    local = Path(name).expanduser()
    label = local.resolve().name if local.is_dir() else name
    instance = Instance(
        instance_id="localize",
        repo=label,
        base_commit=commit or "WORKTREE",
        problem_statement=issue,
    )
    try:
        async with _open_tree(name, commit, cache_dir, source) as tree:
            record = await run_rollout(chosen, tree, instance, config=config)
    except SandboxError as exc:
        raise RepositoryInputError(str(exc)) from exc
    files = record.answer.files if record.answer else ()
    return Localization(
        files=tuple(LocalizedFile(p, _reason(record, p)) for p in files),
        status=record.status,
        policy=record.policy,
        turns=record.stats.turns,
        tool_calls=record.stats.tool_calls,
        tokens=record.usage.total_tokens,
        latency_s=time.perf_counter() - started,
        record=record,
    )
