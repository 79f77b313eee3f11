"""A small synchronous wrapper for scripts and notebooks.

The asyncio API is the real one (the rollout engine uses it); this runs a pool on an event loop
in a background thread and blocks on each call. Not for: concurrency inside one thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Coroutine, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar

from worktree_sandbox.cache import BareRepoCache
from worktree_sandbox.directory_tree import DirectoryTree
from worktree_sandbox.models import (
    GlobArgs,
    GlobResult,
    GrepArgs,
    GrepResult,
    ReadArgs,
    ReadResult,
    SandboxLimits,
)
from worktree_sandbox.pool import Materialize, TreePool
from worktree_sandbox.tree import Tree

__all__ = ["SyncSandbox", "SyncTree"]

_T = TypeVar("_T")


class SyncTree:
    """Blocking methods over one tree; arguments as models or as keywords."""

    def __init__(self, sandbox: SyncSandbox, tree: Tree, exit_stack: contextlib.AsyncExitStack):
        self._sandbox = sandbox
        self.tree = tree
        self._stack = exit_stack

    def grep(self, pattern: str | GrepArgs, **kwargs: Any) -> GrepResult:
        args = pattern if isinstance(pattern, GrepArgs) else GrepArgs(pattern=pattern, **kwargs)
        return self._sandbox.run(self.tree.grep(args))

    def glob(self, pattern: str | GlobArgs, **kwargs: Any) -> GlobResult:
        args = pattern if isinstance(pattern, GlobArgs) else GlobArgs(pattern=pattern, **kwargs)
        return self._sandbox.run(self.tree.glob(args))

    def read(self, path: str | ReadArgs, **kwargs: Any) -> ReadResult:
        args = path if isinstance(path, ReadArgs) else ReadArgs(path=path, **kwargs)
        return self._sandbox.run(self.tree.read(args))

    def call(
        self, name: str, arguments: Mapping[str, Any] | str | None
    ) -> GrepResult | GlobResult | ReadResult:
        return self._sandbox.run(self.tree.call(name, arguments))

    def files(self) -> tuple[str, ...]:
        return self._sandbox.run(self.tree.files())

    def read_bytes(self, path: str) -> bytes:
        return self._sandbox.run(self.tree.read_bytes(path))

    def close(self) -> None:
        self._sandbox.run(self._stack.aclose())

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class SyncSandbox:
    """``with SyncSandbox(cache) as sb: sb.tree("psf/requests", sha).grep("def get")``."""

    def __init__(
        self,
        cache: BareRepoCache | Callable[[], BareRepoCache] | None = None,
        *,
        limits: SandboxLimits | None = None,
        workdir: str | os.PathLike[str] | None = None,
        materialize: Materialize = "auto",
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="worktree-sandbox", daemon=True
        )
        self._thread.start()
        self.pool = TreePool(cache, limits=limits, workdir=workdir, materialize=materialize)
        self._trees: list[SyncTree] = []
        self._closed = False

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def _enter(self, cm: contextlib.AbstractAsyncContextManager[Tree]) -> SyncTree:
        async def enter() -> tuple[Tree, contextlib.AsyncExitStack]:
            stack = contextlib.AsyncExitStack()
            tree = await stack.enter_async_context(cm)
            return tree, stack

        tree, stack = self.run(enter())
        handle = SyncTree(self, tree, stack)
        self._trees.append(handle)
        return handle

    def open(
        self, repo: str | os.PathLike[str], commit: str | None = None, *, folders: bool = True
    ) -> SyncTree:
        """A folder as it is, a folder at a commit, or owner/name at a commit (`TreePool.open`)."""
        return self._enter(self.pool.open(repo, commit, folders=folders))

    def tree(self, repo: str, commit: str) -> SyncTree:
        return self._enter(self.pool.tree(repo, commit))

    def tree_at(self, git_dir: str | os.PathLike[str], commit: str) -> SyncTree:
        return self._enter(self.pool.tree_at(git_dir, commit))

    def directory(self, path: str | os.PathLike[str]) -> SyncTree:
        return self._enter(DirectoryTree(path, runtime=self.pool.runtime))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for handle in self._trees:
            with contextlib.suppress(Exception):
                handle.close()
        self.run(self.pool.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
