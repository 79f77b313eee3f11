"""Per-(repo, commit) trees, shared and reference-counted across rollouts, cleaned up always.

GRPO samples several rollouts of one prompt at once: they all get the same `CommitTree` (one file
list, one checkout, one result memo), never a copy. A tree nobody holds stays warm in a small LRU
and is closed when evicted or when the pool closes. Checkouts live in a folder
of the pool's own under `<workdir>`, marked with the tag of its process (see `_owned`); a pool that
starts removes the marked folders of owners that are gone (a process killed with SIGKILL cleans up
on the next start, whoever starts it) and never touches anything else in `<workdir>`.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import secrets
import tempfile
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Literal, NamedTuple, Self

from worktree_sandbox._git import CatFileBatch, ChildTimeout, git_env, run_capped
from worktree_sandbox._liveness import owner_alive, owner_tag
from worktree_sandbox._owned import (
    ensure_private_dir,
    make_owned_dir,
    owned_tag,
    remove_empty_of_dead,
    remove_owned,
)
from worktree_sandbox._runtime import Runtime
from worktree_sandbox._signals import forget_on_signal, remove_on_signal
from worktree_sandbox.cache import _REPO_NAME, BareRepoCache
from worktree_sandbox.commit_tree import CommitTree
from worktree_sandbox.directory_tree import DirectoryTree
from worktree_sandbox.errors import (
    CommitNotFoundError,
    CommitRequiredError,
    SandboxClosedError,
    SandboxError,
)
from worktree_sandbox.locations import repository_locations
from worktree_sandbox.models import SandboxLimits
from worktree_sandbox.tree import Tree

__all__ = [
    "Materialize",
    "PoolStats",
    "PruneReport",
    "TreePool",
    "default_workdir",
    "prune_workdir",
]

Materialize = Literal["auto", "always", "never"]


def default_workdir() -> Path:
    """Where checkouts go: tmpfs (/dev/shm) when it is there and writable, else the temp dir."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm / f"worktree-sandbox-{os.getuid()}"
    return Path(tempfile.gettempdir()) / f"worktree-sandbox-{os.getuid()}"


class PruneReport(NamedTuple):
    folders: int  # folders of dead owners removed
    freed_bytes: int
    not_ours: tuple[str, ...] = ()  # entries this package did not make: left as they are


def prune_workdir(workdir: str | os.PathLike[str]) -> PruneReport:
    """Remove the checkout folders this package made for processes that are gone.

    Only folders carrying our marker are candidates (see `_owned`); anything else in `workdir`
    is listed in `not_ours` and left alone, so a workdir such as `~` or `/tmp` is safe.
    """
    root = Path(workdir)
    if not root.is_dir():
        return PruneReport(0, 0)
    folders = freed = 0
    not_ours: list[str] = []
    for entry in sorted(root.iterdir()):
        tag = owned_tag(entry)
        if tag is None and remove_empty_of_dead(entry, entry.name.partition(".")[0]):
            folders += 1  # killed between making the folder and marking it
        elif tag is None:
            not_ours.append(entry.name)
        elif not owner_alive(tag):
            done = remove_owned(entry, tag=tag)
            freed += done.freed_bytes
            folders += done.removed
    return PruneReport(folders, freed, tuple(not_ours))


_RESOLVE_TIMEOUT_S = 30.0


def _check_git_dir(git_dir: Path) -> None:
    """Refuse a repository git would wait on: a FIFO, socket or device file (or a link to one)
    in its git dir, common dir or object stores (`repository_locations` walks them; it opens
    nothing but small regular pointer files), or a config that cannot be listed (`git_env`).
    Raises `RepositoryLayoutError`."""
    repository_locations(git_dir)
    git_env(git_dir)


def _remove_at_exit(path: Path, pid: int) -> None:
    if os.getpid() == pid:  # a forked child inherits the handler; the folder is not its own
        remove_owned(path)


# Timings kept per pool: the most recent ones, as a server's pool serves leases without end.
_STAT_SAMPLES = 4096


def _samples() -> deque[float]:
    return deque(maxlen=_STAT_SAMPLES)


@dataclass
class PoolStats:
    trees_opened: int = 0
    trees_closed: int = 0
    checkouts: int = 0
    checkout_seconds: deque[float] = field(default_factory=_samples)  # the last 4,096
    checkouts_refused: int = 0  # over the byte budget with nothing idle to evict: git objects
    budget_evictions: int = 0  # idle trees closed to make room for a checkout
    checkout_bytes_peak: int = 0  # the most checkout bytes held at once
    setup_seconds: deque[float] = field(default_factory=_samples)  # the last 4,096


@dataclass
class _Slot:
    tree: CommitTree
    refs: int = 0


class TreePool:
    """Hands out shared `CommitTree`s; the one place that opens and closes them.

    One pool may live as long as a server and serve any number of concurrent requests: leases
    of one (repository, commit) share one tree, however the commit is spelled.

    ``cache``: the `BareRepoCache` that repository names are cloned into, or a callable that
    makes it the first time a name is opened (a command that may be given a folder then makes
    no cache folders unless it is given a name), or None (names are refused).
    ``materialize``: "auto" makes a read-only checkout in the background (grep then runs
    ripgrep on it), "always" also makes `tree()` wait for it, "never" serves
    everything from git objects.
    ``max_idle_trees``: trees nobody holds that stay open (least recently used closed first).
    ``max_checkout_bytes``: a budget for what the checkouts take (`checkout_footprint`: each
    file rounded up to whole 4 KiB pages, at least one, and a page per folder; summed over
    every open tree): before a checkout is written, idle trees are closed, least recently used
    first, until it fits; when it still does not (the trees in use hold the budget), that tree
    gets no checkout and serves grep from git objects. None: no budget.
    """

    def __init__(
        self,
        cache: BareRepoCache | Callable[[], BareRepoCache] | None = None,
        *,
        limits: SandboxLimits | None = None,
        workdir: str | os.PathLike[str] | None = None,
        materialize: Materialize = "auto",
        max_idle_trees: int = 16,
        max_checkout_bytes: int | None = None,
    ) -> None:
        self._cache = cache if isinstance(cache, BareRepoCache) else None
        self._make_cache = None if isinstance(cache, BareRepoCache) else cache
        self.runtime = Runtime(limits)
        self.workdir = Path(workdir).expanduser() if workdir is not None else default_workdir()
        self.materialize = materialize
        self.max_idle_trees = max_idle_trees
        self.max_checkout_bytes = max_checkout_bytes
        self._checkout_sizes: dict[tuple[str, str], int] = {}  # admitted checkouts, by tree
        self._admitting = asyncio.Lock()
        self.stats = PoolStats()
        self._slots: dict[tuple[str, str], _Slot] = {}
        self._idle: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._batches: dict[Path, CatFileBatch] = {}
        self._checked: set[Path] = set()  # git dirs `tree_at` has checked (`_check_git_dir`)
        self._own_dir: Path | None = None
        self._closed = False

    @property
    def limits(self) -> SandboxLimits:
        return self.runtime.limits

    @property
    def cache(self) -> BareRepoCache | None:
        """The clone cache; one given as a callable is made here, on first use."""
        if self._cache is None and self._make_cache is not None:
            self._cache = self._make_cache()
            self._make_cache = None
        return self._cache

    @property
    def has_cache(self) -> bool:
        """Whether repository names can be opened (without making a cache given as a callable)."""
        return self._cache is not None or self._make_cache is not None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def _checkout_parent(self) -> Path | None:
        return None if self.materialize == "never" else self._own_workdir()

    def _own_workdir(self) -> Path:
        """This pool's own folder for checkouts, made (and the workdir checked) on first use."""
        if self._own_dir is None:
            if self.workdir == default_workdir():
                self.workdir.parent.mkdir(parents=True, exist_ok=True)
                try:
                    ensure_private_dir(self.workdir)  # a shared place: refuse a planted link
                except PermissionError as exc:
                    raise SandboxError(f"refusing the default workdir: {exc}") from None
            else:
                self.workdir.mkdir(parents=True, exist_ok=True)
            prune_workdir(self.workdir)
            tag = owner_tag()
            # One folder per pool: two pools of one process must not remove each other's trees.
            own = make_owned_dir(self.workdir / f"{tag}.{secrets.token_hex(4)}", tag)
            self._own_dir = own
            # A pool nobody closed still leaves nothing behind at interpreter exit, nor when
            # SIGTERM or SIGHUP ends the process (see `_signals`).
            atexit.register(_remove_at_exit, own, os.getpid())
            remove_on_signal(own)
        return self._own_dir

    @contextlib.asynccontextmanager
    async def open(
        self, repo: str | os.PathLike[str], commit: str | None = None, *, folders: bool = True
    ) -> AsyncIterator[Tree]:
        """The one way to open a tree from what a user or a dataset row names.

        - a folder, no commit: the folder as it is (`DirectoryTree`, sharing this pool's gate
          and limits; never memoized, a new one per call);
        - a folder and a commit: its repository (bare or not) at that commit (`tree_at`);
        - `owner/name` and a commit: the bare clone in this pool's cache (`tree`), cloned or
          fetched on first use.

        ``folders=False``: `repo` is always a repository name, never a path of this machine,
        even when a folder of that name exists here: what dataset rows name, and what a server
        must assume of a request's text. A commit named twice, or in two spellings (a sha,
        `HEAD`), is one tree while anyone holds it.

        Raises `CommitRequiredError` for a name without a commit, and `SandboxError` for
        anything that is neither a folder nor a name, a name when the pool has no cache, and
        the errors of `tree`/`tree_at` (`RepositoryNotFoundError`, `CommitNotFoundError`).
        """
        if folders:
            local = Path(repo).expanduser()
            if local.is_dir():
                if commit is None:
                    async with DirectoryTree(local, self.runtime) as folder:
                        yield folder
                    return
                async with self.tree_at(local, commit) as tree:
                    yield tree
                return
        name = str(repo)
        if folders and not _REPO_NAME.match(name):
            raise SandboxError(f"{name!r} is neither a folder nor a repository name (owner/name)")
        if commit is None:
            said = f"{name!r} is not a folder here; a" if folders else f"{name!r}: a"
            raise CommitRequiredError(f"{said} repository name needs a commit")
        if not self.has_cache:
            raise SandboxError(f"{name!r} names a repository, and this pool has no cache")
        # `tree` checks the name (owner/name, no `..`) before anything is made for it.
        async with self.tree(name, commit) as tree:
            yield tree

    @contextlib.asynccontextmanager
    async def tree(self, repo: str, commit: str) -> AsyncIterator[CommitTree]:
        """A tree of `repo` (a name in the cache) at `commit`, shared while anyone holds it."""
        if self.cache is None:
            raise SandboxError("this pool has no BareRepoCache: use tree_at(git_dir, commit)")
        cache = self.cache
        git_dir = cache.git_dir(repo)
        if not cache.has(repo):
            await asyncio.to_thread(cache.ensure, repo, [commit])
        async with self._lease(git_dir, commit, label=repo) as tree:
            yield tree

    @contextlib.asynccontextmanager
    async def tree_at(
        self, git_dir: str | os.PathLike[str], commit: str
    ) -> AsyncIterator[CommitTree]:
        """A tree of the repository at `git_dir` (bare or not) at `commit`.

        A work tree whose `.git` is a file (a linked worktree, a submodule) is followed to its
        git dir by `repository_locations`, which reads the pointer without running git and
        raises `RepositoryLayoutError` for one that makes no sense.
        """
        path = Path(git_dir).resolve()
        label = path.name
        if (path / ".git").is_dir():
            path = path / ".git"
        elif (path / ".git").is_file():
            found = repository_locations(path).git_dir
            if found is not None:
                path = found
        if path not in self._checked:
            # Once per repository: no FIFO, socket or device file where git reads, and its
            # config listed (see `git_env`), in a thread: nothing after it waits on the loop.
            await asyncio.to_thread(_check_git_dir, path)
            self._checked.add(path)
        async with self._lease(path, commit, label=label) as tree:
            yield tree

    @contextlib.asynccontextmanager
    async def _lease(self, git_dir: Path, commit: str, *, label: str) -> AsyncIterator[CommitTree]:
        if self._closed:
            raise SandboxClosedError("the pool is closed")
        start = time.perf_counter()
        sha = await self._resolve(git_dir, commit, label)
        if self._closed:
            raise SandboxClosedError("the pool is closed")
        key = (str(git_dir), sha)
        # No await from the lookup to `refs += 1`: concurrent leases of one commit cannot both
        # open it, a slot just found cannot be evicted before it is held, and a lease cancelled
        # while it waits above holds nothing and leaves nothing to undo.
        slot = self._slots.get(key)
        if slot is None:
            slot = self._open(git_dir, sha, label)
        slot.refs += 1
        self._idle.pop(key, None)
        self.stats.setup_seconds.append(time.perf_counter() - start)
        try:
            if self.materialize == "always":
                await slot.tree.wait_checkout()
            yield slot.tree
        finally:
            slot.refs -= 1
            if slot.refs == 0 and not self._closed:
                self._idle[key] = None
                await self._evict()

    async def _resolve(self, git_dir: Path, commit: str, label: str) -> str:
        batch = self._batch(git_dir)
        if len(commit) == 40:
            got = await batch.get(f"{commit}^{{commit}}")
            if got is not None and got[0] == "commit":
                return commit
        cache = self._cache  # a cache not made yet holds no repository
        if cache is not None and git_dir.parent == cache.root / "repos":
            # Fetch on demand from the source (blocking git work stays off the loop).
            return await asyncio.to_thread(cache.resolve, label, commit)
        # A child of the loop, killed at its deadline: a git blocked on a file of the
        # repository (a FIFO swapped in) holds no thread of the shared pool.
        try:
            proc = await run_capped(
                ["git", f"--git-dir={git_dir}", "rev-parse", "--verify", "--quiet",
                 f"{commit}^{{commit}}"],
                cwd=None, timeout=_RESOLVE_TIMEOUT_S, max_stdout=4096, git_dir=git_dir,
            )  # fmt: skip
        except ChildTimeout:
            raise CommitNotFoundError(
                f"{label}: git could not resolve {commit!r} in {git_dir} within "
                f"{_RESOLVE_TIMEOUT_S:g} s"
            ) from None
        if proc.returncode != 0:
            raise CommitNotFoundError(f"{label}: no commit {commit!r} in {git_dir}")
        return proc.stdout.decode().strip()

    def _batch(self, git_dir: Path) -> CatFileBatch:
        batch = self._batches.get(git_dir)
        if batch is None:
            if not (git_dir / "HEAD").exists():
                raise SandboxError(f"{git_dir} is not a git repository")
            batch = self._batches[git_dir] = CatFileBatch(git_dir)
        return batch

    @property
    def checkout_bytes(self) -> int:
        """Bytes of the checkouts admitted and not yet closed (written or being written)."""
        return sum(self._checkout_sizes.values())

    def _admission(self, key: tuple[str, str]) -> Callable[[int], Awaitable[bool]]:
        async def admit(size: int) -> bool:
            async with self._admitting:
                budget = self.max_checkout_bytes
                if budget is not None:
                    while self.checkout_bytes + size > budget:
                        victim = next((k for k in self._idle if self._checkout_sizes.get(k)), None)
                        if victim is None:
                            self.stats.checkouts_refused += 1
                            return False
                        self._idle.pop(victim, None)
                        slot = self._slots.pop(victim, None)
                        self.stats.budget_evictions += 1
                        if slot is not None:
                            await self._close_tree(slot.tree, victim)
                if self._closed or key not in self._slots:
                    return False
                self._checkout_sizes[key] = size
                self.stats.checkout_bytes_peak = max(
                    self.stats.checkout_bytes_peak, self.checkout_bytes
                )
                return True

        return admit

    def _open(self, git_dir: Path, sha: str, label: str) -> _Slot:
        tree = CommitTree(
            git_dir,
            sha,
            runtime=self.runtime,
            batch=self._batch(git_dir),
            checkout_parent=self._checkout_parent(),
            label=f"{label}@{sha[:12]}",
            admit_checkout=self._admission((str(git_dir), sha)),
            fallback_parent=self._own_workdir,
        )
        tree.start()
        slot = _Slot(tree)
        self._slots[(str(git_dir), sha)] = slot
        self.stats.trees_opened += 1
        return slot

    async def _evict(self) -> None:
        while len(self._idle) > self.max_idle_trees:
            key, _ = self._idle.popitem(last=False)
            slot = self._slots.pop(key, None)
            if slot is not None:
                await self._close_tree(slot.tree, key)

    async def _close_tree(self, tree: CommitTree, key: tuple[str, str]) -> None:
        if tree.checkout_seconds is not None:
            self.stats.checkouts += 1
            self.stats.checkout_seconds.append(tree.checkout_seconds)
        await tree.close()
        self._checkout_sizes.pop(key, None)  # after the close: its files are gone then
        self.stats.trees_closed += 1

    @property
    def open_trees(self) -> int:
        return len(self._slots)

    async def close(self) -> None:
        """Close every tree and checkout; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        for key, slot in list(self._slots.items()):
            await self._close_tree(slot.tree, key)
        self._slots.clear()
        self._idle.clear()
        for batch in self._batches.values():
            await batch.close()
        self._batches.clear()
        if self._own_dir is not None:
            remove_owned(self._own_dir)
            forget_on_signal(self._own_dir)
            self._own_dir = None
