"""A repository at one commit: reads from git objects, grep on a background read-only checkout.
Not for: pooling and sharing trees (see `TreePool`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Container, Iterable, Mapping
from pathlib import Path

from worktree_sandbox._git import CatFileBatch, TreeEntry, parse_ls_tree, run_capped
from worktree_sandbox._grep_backends import (
    PatternError,
    RawMatch,
    folder_backend,
    git_grep,
    git_grep_blobs,
)
from worktree_sandbox._liveness import owner_tag
from worktree_sandbox._materialize import MAX_LINK_BYTES, materialize, written
from worktree_sandbox._owned import make_owned_dir, remove_owned
from worktree_sandbox._paths import name_text
from worktree_sandbox._runtime import Runtime
from worktree_sandbox.errors import SandboxError
from worktree_sandbox.models import GrepArgs
from worktree_sandbox.tree import Tree, _Stat

__all__ = ["CommitTree"]


PAGE_BYTES = 4096  # tmpfs (/dev/shm) and most file systems give a file whole 4 KiB pages


def checkout_footprint(file_sizes: Iterable[int], folders: int) -> int:
    """What a checkout takes in memory (tmpfs) or on disk, not what its blobs add up to: each
    file its size rounded up to whole pages, at least one (an empty or one-byte file still
    takes an inode and a page), and a page per folder. 20,000 one-byte files are ~80 MiB, not
    20 KB."""
    pages = sum(max(1, -(-size // PAGE_BYTES)) for size in file_sizes)
    return (pages + folders) * PAGE_BYTES


class CommitTree(Tree):
    """A repository at one commit: reads from git objects, grep on a background checkout.

    Setup costs only a commit check; the file list (`git ls-tree`) and a read-only checkout
    (written from the blobs into `checkout_parent`, tmpfs by default) are made in the background.
    Until the checkout is ready, grep runs `git grep` on the commit object; then the folder
    engine `folder_backend` picks (ripgrep), when it `searches_checkouts`. Tree
    entries no checkout could hold safely ('..', '.git', duplicates, a path below a file or
    link) are left out of every backend and listed in `refused_entries`.

    Without `checkout_parent`, `fallback_parent` (when given) says where a checkout is made on
    demand: only when `git grep` cannot run a pattern that ripgrep accepts (PCRE2's JIT stack
    or match limit, a construct PCRE2 refuses), so that such a call, and every grep after it,
    gets ripgrep's answer instead of an error.
    """

    def __init__(
        self,
        git_dir: Path,
        commit: str,
        *,
        runtime: Runtime | None = None,
        batch: CatFileBatch | None = None,
        checkout_parent: Path | None = None,
        label: str | None = None,
        admit_checkout: Callable[[int], Awaitable[bool]] | None = None,
        fallback_parent: Callable[[], Path] | None = None,
    ) -> None:
        super().__init__(runtime)
        self.git_dir = git_dir
        self.commit = commit
        self.label = label or f"{git_dir.name}@{commit[:12]}"
        self.memo_key = f"{git_dir}@{commit}"
        self._batch = batch or CatFileBatch(git_dir)
        self._own_batch = batch is None
        self._entries: dict[str, TreeEntry] | None = None
        self._sorted: tuple[str, ...] | None = None
        self._list_task: asyncio.Task[dict[str, TreeEntry]] | None = None
        self._checkout_parent = checkout_parent
        # Asked with the checkout's size (its blobs' bytes) before anything is written; False:
        # no checkout, grep stays on git objects (a pool's byte budget for checkouts).
        self._admit_checkout = admit_checkout
        self._fallback_parent = fallback_parent
        self._checkout_task: asyncio.Task[Path | None] | None = None
        self.checkout: Path | None = None
        self._holder: Path | None = None
        self.checkout_seconds: float | None = None
        self.refused_entries: tuple[str, ...] = ()
        self._sizes_map: dict[str, int] | None = None
        self._raw_paths = False  # some name is not UTF-8 (see `name_text`)

    def start(self) -> None:
        """Begin the background work (file list, checkout); called by the pool on setup."""
        loop = asyncio.get_running_loop()
        if self._list_task is None:
            self._list_task = loop.create_task(self._list())
        if self._checkout_parent is not None and self._checkout_task is None:
            self._checkout_task = loop.create_task(self._materialize(self._checkout_parent))

    async def wait_checkout(self) -> Path | None:
        """The checkout folder once ready (None when there is none to wait for)."""
        return await self._checkout_task if self._checkout_task is not None else None

    async def _list(self) -> dict[str, TreeEntry]:
        out = await run_capped(
            ["git", f"--git-dir={self.git_dir}", "ls-tree", "-r", "-z", "-l", "--full-tree",
             self.commit],
            cwd=None, timeout=120.0, max_stdout=1 << 30, git_dir=self.git_dir,
        )  # fmt: skip
        if out.returncode != 0:
            raise SandboxError(f"git ls-tree {self.commit} failed: {out.stderr.decode().strip()}")
        entries, refused = parse_ls_tree(out.stdout)
        self.refused_entries = tuple(refused)
        self._raw_paths = any(e.raw_path is not None for e in entries.values())
        return entries

    async def _entries_map(self) -> dict[str, TreeEntry]:
        if self._entries is None:
            if self._list_task is None:
                self.start()
            assert self._list_task is not None
            self._entries = await asyncio.shield(self._list_task)
        return self._entries

    async def _names(self) -> Container[str]:
        return await self._entries_map()

    async def files(self) -> tuple[str, ...]:
        if self._sorted is None:
            self._sorted = tuple(sorted(await self._entries_map()))
        return self._sorted

    async def _sizes(self) -> Mapping[str, int]:
        if self._sizes_map is None:
            entries = await self._entries_map()
            self._sizes_map = {p: e.size for p, e in entries.items() if not e.is_symlink}
        return self._sizes_map

    async def _stat(self, path: str) -> _Stat | None:
        entries = await self._entries_map()
        entry = entries.get(path)
        if entry is not None:
            if entry.is_symlink:
                if entry.size > MAX_LINK_BYTES:  # no path: its text is never loaded
                    return _Stat("symlink", entry.size, "")
                got = await self._batch.get(entry.oid)
                target = name_text(got[1]) if got else ""
                return _Stat("symlink", entry.size, target)
            return _Stat("file", entry.size)
        if path in await self._directories():
            return _Stat("dir")
        return None

    async def read_bytes(self, path: str) -> bytes:
        entry = (await self._entries_map()).get(path)
        got = await self._batch.get(entry.oid) if entry is not None else None
        if got is None:
            raise SandboxError(f"no file {path!r} at {self.label}")
        return got[1]

    async def _materialize(self, parent: Path) -> Path | None:
        """Write the commit read-only into a fresh folder; None when that failed."""
        entries = await self._entries_map()
        cap = self.runtime.limits.max_file_bytes
        if self._admit_checkout is not None:
            # what is written: no file over the size limit, no link whose text is no path
            size = checkout_footprint(
                (max(e.size, 0) for e in entries.values() if written(e, cap)),
                len(await self._directories()),
            )
            if not await self._admit_checkout(size):
                return None
        start = time.perf_counter()
        # The marked holder is what gets removed; ripgrep searches `tree/` inside it, where
        # nothing but the commit's files is.
        parent.mkdir(parents=True, exist_ok=True)
        holder = make_owned_dir(parent / f"{self.commit[:12]}-{uuid.uuid4().hex[:8]}", owner_tag())
        self._holder = holder
        dest = holder / "tree"
        os.mkdir(dest, 0o700)
        stop = threading.Event()
        work = asyncio.ensure_future(
            asyncio.to_thread(materialize, self.git_dir, entries.items(), dest, stop, cap)
        )
        try:
            done = await asyncio.shield(work)
        except asyncio.CancelledError:
            stop.set()
            with contextlib.suppress(BaseException):
                await work
            remove_owned(holder)
            raise
        except (OSError, ValueError, IndexError):
            done = False
        if not done:
            remove_owned(holder)
            return None
        self.checkout = dest
        self.checkout_seconds = time.perf_counter() - start
        return dest

    @property
    def checkout_ready(self) -> bool:
        return self.checkout is not None

    async def _grep_raw(
        self, args: GrepArgs, targets: list[str] | None, deadline: float
    ) -> tuple[list[RawMatch], bool, str]:
        backend = folder_backend(
            self.runtime.rg, self.runtime.limits.max_file_bytes, self.runtime.limits.grep_engine
        )
        if not backend.searches_checkouts:
            return await self._git_grep(args, targets, deadline)
        if self.checkout is not None:
            matches, overflowed = await backend.search(
                self.checkout, args, targets, deadline, ignore_rules=False, git_dir=None
            )
            return matches, overflowed, backend.name
        await backend.check_pattern(args.pattern)
        # git grep stops at a blob the clone lacks; the checkout simply has no such file.
        partial = any(e.size < 0 for e in (await self._entries_map()).values())
        if partial and await self._checkout_coming():
            return await self._grep_raw(args, targets, deadline)
        try:
            return await self._git_grep(args, targets, deadline)
        except PatternError as exc:
            # ripgrep accepted the pattern but PCRE2 refused it ('(?u)', 'a{100000}') or gave
            # up on it (its JIT stack or match limit): ripgrep on the checkout answers, as it
            # will for the same call once the checkout is ready, so the answer never depends
            # on timing; a tree without one makes it now (see `fallback_parent`).
            if await self._checkout_coming() or await self._checkout_on_demand():
                return await self._grep_raw(args, targets, deadline)
            raise PatternError(
                f"{exc} (git grep cannot run this pattern, and this tree has no checkout for "
                "ripgrep: simplify the pattern)"
            ) from None

    async def _checkout_on_demand(self) -> bool:
        """Make the checkout now, for a tree made without one; whether there is one."""
        if self._fallback_parent is None or self._checkout_task is not None or self._closed:
            return False
        try:
            parent = self._fallback_parent()
        except (OSError, SandboxError):
            return False
        self._checkout_task = asyncio.get_running_loop().create_task(self._materialize(parent))
        return await self._checkout_coming()

    async def _checkout_coming(self) -> bool:
        """Wait for the checkout when one is being made; whether there is one now."""
        if self._checkout_task is None:
            return False
        return await asyncio.shield(self._checkout_task) is not None

    async def _git_grep(
        self, args: GrepArgs, targets: list[str] | None, deadline: float
    ) -> tuple[list[RawMatch], bool, str]:
        base = ["git", f"--git-dir={self.git_dir}"]
        entries = await self._entries_map()
        if self.refused_entries:
            # A crafted tree: git would also search what we left out (the second of duplicate
            # names, what lies below a link), so the blobs we serve are searched by id.
            paths_of: dict[str, list[str]] = {}
            for name in targets if targets is not None else list(entries):
                entry = entries[name]
                if not entry.is_symlink and entry.size >= 0:
                    paths_of.setdefault(entry.oid, []).append(name)
            matches, overflowed = await git_grep_blobs(
                base, paths_of, args, deadline=deadline, git_dir=self.git_dir
            )
            return matches, overflowed, "git-grep"
        if targets is not None and self._raw_paths:
            # git takes a path's own bytes (`raw_path` where the name is not UTF-8): as a str
            # that the file system's encoding (surrogateescape) turns back into them.
            targets = [
                os.fsdecode(raw) if (raw := entries[t].raw_path) is not None else t for t in targets
            ]
        matches, overflowed = await git_grep(
            base, self.commit, args, targets, cwd=None, deadline=deadline, git_dir=self.git_dir
        )
        # git grep searches symlink blobs (the link text); ripgrep does not. Keep them equal.
        matches = [m for m in matches if not entries[m[0]].is_symlink] if entries else matches
        return matches, overflowed, "git-grep"

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for task in (self._list_task, self._checkout_task):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self._checkout_task is not None and self._checkout_task.done():
            with contextlib.suppress(BaseException):
                self._checkout_task.result()
        if self._holder is not None:
            remove_owned(self._holder)
            self._holder = None
            self.checkout = None
        if self._own_batch:
            await self._batch.close()
