"""Concurrency limit, timeouts that kill the child, memoization and shared in-flight calls."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from worktree_sandbox import GrepArgs, ReadArgs, SandboxLimits, ToolErrorKind, TreePool


def _children_with(token: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if token.encode() in fh.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


async def test_concurrency_limit_with_70_calls(repo: Any, workdir: Path) -> None:
    limits = SandboxLimits(max_concurrency=4, cache_entries=0)
    async with (
        TreePool(limits=limits, workdir=workdir, materialize="always") as pool,
        pool.tree_at(repo.path, repo.commits[-1]) as tree,
    ):
        calls = [tree.grep(GrepArgs(pattern=f"line {i}\\b", path="big")) for i in range(70)]
        results = await asyncio.gather(*calls)
        assert all(r.ok for r in results)
        assert [r.total_matches for r in results[1:4]] == [1, 1, 1]
        assert pool.runtime.peak_in_flight == 4
        assert pool.runtime.in_flight == 0


async def test_64_concurrent_calls_all_answered(repo: Any, workdir: Path) -> None:
    limits = SandboxLimits(cache_entries=0)  # the default limit, 64
    async with (
        TreePool(limits=limits, workdir=workdir) as pool,
        pool.tree_at(repo.path, repo.commits[-1]) as tree,
    ):
        results = await asyncio.gather(
            *(tree.call("grep", {"pattern": f"line {i}0 "}) for i in range(100))
        )
        assert all(r.ok for r in results)
        assert pool.runtime.peak_in_flight <= 64


async def test_timeout_kills_the_child(tmp_path: Path, repo: Any, workdir: Path) -> None:
    # 40 MB of text with a token that appears nowhere else: a grep that cannot finish in 50 ms.
    token = "zq" + os.urandom(4).hex()
    repo.commit({"slow/big.txt": ("abc " * 25 + "\n") * 400_000})
    limits = SandboxLimits(timeout_s=0.05, max_file_bytes=1 << 30)
    async with (
        TreePool(limits=limits, workdir=workdir, materialize="never") as pool,
        pool.tree_at(repo.path, repo.commits[-1]) as tree,
    ):
        start = time.perf_counter()
        r = await tree.grep(GrepArgs(pattern=f"(a|b|c)+{token}"))
        elapsed = time.perf_counter() - start
        assert r.error is ToolErrorKind.TIMEOUT, r.text
        assert "0.05 s" in r.text
        assert elapsed < 2.0
        await asyncio.sleep(0.2)
        assert _children_with(token) == []
        # A timeout is not memoized: the next call runs again.
        again = await tree.grep(GrepArgs(pattern=f"(a|b|c)+{token}"))
        assert not again.cached


async def test_pathological_regex_is_stopped(repo: Any, workdir: Path) -> None:
    repo.commit({"evil.txt": ("x" * 40 + "\n") * 2000})
    limits = SandboxLimits(timeout_s=1.0)
    async with (
        TreePool(limits=limits, workdir=workdir, materialize="never") as pool,
        pool.tree_at(repo.path, repo.commits[-1]) as tree,
    ):
        start = time.perf_counter()
        r = await tree.grep(GrepArgs(pattern=r"(x+x+)+y", path="evil.txt"))
        assert time.perf_counter() - start < 3.0
        # Either the backtracking engine ran out of time, or it gave up on its own limit, or a
        # linear engine answered: in every case the call is answered in bounded time.
        assert r.error in (None, ToolErrorKind.TIMEOUT, ToolErrorKind.INVALID_PATTERN)
        assert r.matches == ()


async def test_memo_and_inflight_sharing(repo: Any, workdir: Path) -> None:
    async with (
        TreePool(workdir=workdir) as pool,
        pool.tree_at(repo.path, repo.commits[-1]) as a,
        pool.tree_at(repo.path, repo.commits[-1]) as b,
    ):
        assert a is b  # one tree per commit, shared
        args = GrepArgs(pattern="parse_config", glob="*.py")
        results = await asyncio.gather(*(a.grep(args) for _ in range(8)))
        assert sum(r.cached for r in results) == 7
        assert len({r.text for r in results}) == 1
        later = await a.read(ReadArgs(path="README.md"))
        again = await b.read(ReadArgs(path="README.md"))
        assert not later.cached
        assert again.cached
        assert again.text == later.text
        assert pool.runtime.memo_hits == 8


async def test_trees_are_refcounted_and_closed(repo: Any, workdir: Path) -> None:
    pool = TreePool(workdir=workdir, materialize="always", max_idle_trees=1)
    async with pool.tree_at(repo.path, repo.commits[0]) as t0:
        first = t0.checkout
        assert first is not None
        assert first.is_dir()
        assert not os.access(first / "README.md", os.W_OK) or os.geteuid() == 0
        assert (first.stat().st_mode & 0o222) == 0  # read-only by construction
    async with pool.tree_at(repo.path, repo.commits[1]) as t1:
        assert t1.checkout is not None
    async with pool.tree_at(repo.path, repo.commits[1]):
        pass
    # Two idle trees with room for one: the older was closed and its checkout removed.
    assert not first.exists()
    assert pool.open_trees == 1
    await pool.close()
    assert pool.open_trees == 0
    assert list(workdir.iterdir()) == []


async def test_queue_is_served_in_arrival_order(repo: Any, workdir: Path) -> None:
    # One slot: calls from two "rollouts" interleaved on arrival finish in that same order.
    limits = SandboxLimits(max_concurrency=1, cache_entries=0)
    finished: list[str] = []
    async with (
        TreePool(limits=limits, workdir=workdir, materialize="always") as pool,
        pool.tree_at(repo.path, repo.commits[-1]) as tree,
    ):

        async def call(tag: str, i: int) -> None:
            await tree.grep(GrepArgs(pattern=f"line {i}\\b", path="big"))
            finished.append(tag)

        order = [f"{r}{i}" for i in range(6) for r in "AB"]
        await asyncio.gather(*(call(tag, n) for n, tag in enumerate(order)))
    assert finished == order


async def test_a_cancelled_call_does_not_cancel_the_calls_sharing_it(
    repo: Any, workdir: Path
) -> None:
    async with (
        TreePool(workdir=workdir, materialize="always") as pool,
        pool.tree_at(repo.path, repo.commits[-1]) as tree,
    ):
        args = GrepArgs(pattern="parse_config", path="big")
        first = asyncio.ensure_future(tree.grep(args))
        await asyncio.sleep(0)  # the first call is in flight
        second = asyncio.ensure_future(tree.grep(args))
        await asyncio.sleep(0)
        first.cancel()
        result = await second
        assert first.cancelled()
        assert result.ok
        assert result.total_matches == 3000
