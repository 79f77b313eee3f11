"""`localize`: one rollout of a policy over a local directory or a (repository, commit) pair.

A directory is searched as it is (its working tree, uncommitted changes included, read-only);
with a commit, the repository's objects at that commit are searched instead, and a name like
`psf/requests` is cloned into a cache first. `worktree_sandbox.TreePool.open` decides which;
a caller that serves many requests passes its own long-lived pool.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from pathlib import Path

from codegrep_model import (
    Instance,
    Policy,
    RolloutConfig,
    RolloutRecord,
    run_rollout,
)
from codegrep_model.policies import DEFAULT_POLICY, policy_from_spec
from pydantic import ValidationError
from worktree_sandbox import BareRepoCache, SandboxError, SandboxLimits, TreePool
from worktree_sandbox.errors import CommitRequiredError

from codegrep.errors import RepositoryInputError
from codegrep.localize_options import DEFAULT_SOURCE
from codegrep.response import Localization, LocalizedFile

__all__ = ["Localization", "LocalizedFile", "clone_cache", "localize"]

_DEFAULT_CACHE_DIR = Path("~/.cache/codegrep/repos")
# What a checkout of this one rollout may take (tmpfs: RAM), as `serve`'s default; what no
# tool reads (files over the size limit) is never written (see worktree_sandbox).
DEFAULT_MAX_CHECKOUT_BYTES = 512 << 20


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


def _record_repo(folder: Path, name: str) -> str:
    """The owner/name the rollout record gives `repo`: itself when it is a repository name,
    `local/<folder name>` for a folder (the pool says what is wrong with anything else)."""
    if not folder.is_dir() and re.fullmatch(r"[^/\s]+/[^/\s]+", name):
        return name
    base = re.sub(r"[\s/]+", "-", folder.resolve().name).strip("-")
    return f"local/{base if base not in ('', '.', '..') else 'root'}"


async def localize(
    repo: str | Path,
    issue: str,
    *,
    commit: str | None = None,
    policy: Policy | None = None,
    config: RolloutConfig | None = None,
    cache_dir: Path | None = None,
    source: str = DEFAULT_SOURCE,
    pool: TreePool | None = None,
    folders: bool = True,
    grep_engine: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> Localization:
    """Files of `repo` that `issue` needs, most important first, each with a reason.

    `repo` is what `TreePool.open` takes: a folder (as it is, or at `commit`) or owner/name at
    `commit`. Without `pool`, a pool is made for this call, with no checkout, whose clone cache
    (`cache_dir`, default ~/.cache/codegrep/repos; `source`) is made only if `repo` is a name.
    ``folders=False``: `repo` is a repository name, never a folder of this machine, even when
    one of that name exists (what a server must assume of a request's text). `grep_engine`:
    the pool's grep engine by its `worktree_sandbox.GREP_ENGINES` name (None: the default).

    A bare repository (a folder with git's objects and no working tree) needs `commit`: as a
    folder it has no files to search. Without `pool`, a repository name not cloned yet is
    cloned first, said to `progress` (one line before, one after), and its seconds are the
    answer's `clone_s`, apart from `latency_s`.
    """
    started = time.perf_counter()
    chosen = policy or policy_from_spec(DEFAULT_POLICY)
    name = str(repo)
    local = Path(name).expanduser()
    if folders and commit is None and _is_bare(local):
        raise RepositoryInputError(
            f"{name} is a bare git repository (no working tree to search): give --commit "
            "(a commit, branch or tag; --commit HEAD for its HEAD)"
        )
    clone_s = 0.0
    try:
        instance = Instance(
            instance_id="localize",
            repo=_record_repo(local, name) if folders else name,
            base_commit=commit,
            problem_statement=issue,
        )
    except ValidationError as exc:  # e.g. "owner/..": shaped like a name, not one
        raise RepositoryInputError(
            f"{name!r} is neither a folder nor a repository name (owner/name)"
        ) from exc
    try:
        if pool is not None:
            record = await _run(pool, name, commit, chosen, instance, config, folders)
        else:
            root = (cache_dir or _DEFAULT_CACHE_DIR).expanduser()
            cache: BareRepoCache | None = None
            if commit is not None and not (folders and local.is_dir()):
                # a repository name: cloned (or fetched) before the search, its time apart
                cache = clone_cache(root, source)
                clone_s = await _prepare(cache, name, commit, progress)
                started = time.perf_counter()
            # No checkout: this one rollout is served from git objects, nothing is written.
            limits = SandboxLimits(grep_engine=grep_engine)
            made = cache
            async with TreePool(
                made if made is not None else (lambda: clone_cache(root, source)),
                limits=limits,
                materialize="never",
                # the checkout made on demand (a pattern only ripgrep runs) is bounded too:
                # past it, grep says to simplify the pattern
                max_checkout_bytes=DEFAULT_MAX_CHECKOUT_BYTES,
            ) as own:
                record = await _run(own, name, commit, chosen, instance, config, folders)
    except CommitRequiredError as exc:
        raise RepositoryInputError(
            f"{name!r} is not a directory; a repository name (owner/name) needs --commit"
        ) from exc
    except SandboxError as exc:
        raise RepositoryInputError(str(exc)) from exc
    answer = record.answer
    files = answer.files if answer else ()
    scores = answer.scores if answer and answer.scores is not None else (None,) * len(files)
    return Localization(
        files=tuple(
            LocalizedFile(p, _reason(record, p), s) for p, s in zip(files, scores, strict=True)
        ),
        status=record.status,
        policy=record.policy,
        turns=record.stats.turns,
        tool_calls=record.stats.tool_calls,
        tokens=record.usage.total_tokens,
        latency_s=time.perf_counter() - started,
        record=record,
        ranking=tuple((p, s) for p, s in answer.ranking) if answer and answer.ranking else None,
        clone_s=clone_s,
    )


def _is_bare(folder: Path) -> bool:
    """Whether `folder` is a bare git repository: git's HEAD, objects and refs, no `.git`."""
    try:
        return (
            (folder / "HEAD").is_file()
            and (folder / "objects").is_dir()
            and (folder / "refs").is_dir()
            and not (folder / ".git").exists()
        )
    except OSError:
        return False


async def _prepare(
    cache: BareRepoCache, name: str, commit: str, progress: Callable[[str], None] | None
) -> float:
    """Clone `name` into `cache` (or fetch `commit`) when needed, saying so; the seconds it
    took (0 when the clone already had the commit). A name the cache refuses is left to the
    pool, which says what is wrong with it."""
    try:
        BareRepoCache.check_repo_name(name)
    except SandboxError:
        return 0.0
    if cache.lookup(name, commit) is not None:
        return 0.0
    first = not cache.has(name)
    if progress is not None:
        what = "cloning" if first else f"fetching {commit} of"
        progress(
            f"{what} {name} into {cache.git_dir(name)}"
            + (" (the first time only; later runs reuse the clone)" if first else "")
        )
    prepared = await asyncio.to_thread(cache.ensure, name, [commit])
    if progress is not None:
        progress(f"{'cloned' if first else 'fetched'} {name} in {prepared.seconds:.1f} s")
    return prepared.seconds


def clone_cache(root: Path, source: str) -> BareRepoCache:
    """The clone cache, made when a repository name needs it; a folder that cannot be one (a
    file in its place, no permission) is the caller's bad input, not a crash."""
    try:
        return BareRepoCache(root, source)
    except OSError as exc:
        raise RepositoryInputError(
            f"cannot use {root} as the clone cache (--cache): {exc.strerror or exc}"
        ) from exc


async def _run(
    pool: TreePool,
    repo: str,
    commit: str | None,
    policy: Policy,
    instance: Instance,
    config: RolloutConfig | None,
    folders: bool,
) -> RolloutRecord:
    async with pool.open(repo, commit, folders=folders) as tree:
        return await run_rollout(policy, tree, instance, config=config)
