"""What every tool call goes through: the concurrency gate, the deadline, the result memo and one
run for identical calls in flight. Not for: running tools (see `Tree`).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TypeVar

from worktree_sandbox._git import (
    find_rg,
)
from worktree_sandbox._grep_backends import check_grep_engine
from worktree_sandbox.models import (
    GlobResult,
    GrepResult,
    ReadResult,
    SandboxLimits,
    ToolErrorKind,
)

__all__ = ["AnyResult", "Runtime"]

AnyResult = GrepResult | GlobResult | ReadResult
_R = TypeVar("_R", GrepResult, GlobResult, ReadResult)
_UNCACHEABLE = {ToolErrorKind.TIMEOUT, ToolErrorKind.INTERNAL}


class Runtime:
    """What the trees of one pool share: limits, the concurrency gate and the result memo."""

    def __init__(self, limits: SandboxLimits | None = None) -> None:
        self.limits = limits or SandboxLimits()
        check_grep_engine(self.limits.grep_engine)  # a bad --grep-engine, said before any call
        self.rg = find_rg()
        self._gate: asyncio.Semaphore | None = None
        self._memo: OrderedDict[tuple[str, str, str], AnyResult] = OrderedDict()
        self._inflight: dict[tuple[str, str, str], asyncio.Future[AnyResult | None]] = {}
        self.in_flight = 0
        self.peak_in_flight = 0
        self.memo_hits = 0

    @property
    def gate(self) -> asyncio.Semaphore:
        # Made lazily so that a Runtime can be built outside a running loop.
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.limits.max_concurrency)
        return self._gate

    def _remember(self, key: tuple[str, str, str], result: AnyResult) -> None:
        if self.limits.cache_entries == 0 or result.error in _UNCACHEABLE:
            return
        self._memo[key] = result
        self._memo.move_to_end(key)
        while len(self._memo) > self.limits.cache_entries:
            self._memo.popitem(last=False)

    async def run(
        self,
        key: tuple[str, str, str] | None,
        make: Callable[[float], Awaitable[_R]],
        on_error: Callable[[ToolErrorKind, str], _R],
    ) -> _R:
        """Run one tool call under the gate and the deadline; share it with identical calls."""
        start = time.perf_counter()
        if key is not None:
            hit = self._memo.get(key)
            if hit is not None:
                self._memo.move_to_end(key)
                self.memo_hits += 1
                return hit.model_copy(  # type: ignore[return-value]
                    update={"cached": True, "elapsed_ms": _ms(start)}
                )
            pending = self._inflight.get(key)
            if pending is not None:
                shared = await asyncio.shield(pending)
                if shared is None:  # the call it waited for was cancelled: run it here
                    return await self.run(key, make, on_error)
                self.memo_hits += 1
                return shared.model_copy(  # type: ignore[return-value]
                    update={"cached": True, "elapsed_ms": _ms(start)}
                )
        future: asyncio.Future[AnyResult | None] | None = None
        if key is not None:
            future = asyncio.get_running_loop().create_future()
            self._inflight[key] = future
        timeout = self.limits.timeout_s
        try:
            try:
                async with asyncio.timeout(timeout):
                    async with self.gate:
                        self.in_flight += 1
                        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
                        try:
                            result = await make(start + timeout)
                        finally:
                            self.in_flight -= 1
            except TimeoutError:
                result = on_error(
                    ToolErrorKind.TIMEOUT,
                    f"the call did not finish within {timeout:g} s and was stopped. Narrow it: "
                    "a more specific pattern, a path=, or a glob=",
                )
            except Exception as exc:  # a tool call never ends a rollout
                result = on_error(ToolErrorKind.INTERNAL, f"the sandbox failed: {exc}")
            result = result.model_copy(update={"elapsed_ms": _ms(start)})
            if key is not None:
                self._remember(key, result)
            if future is not None and not future.done():
                future.set_result(result)
            return result
        except BaseException:
            # Cancelled (its rollout was stopped): the calls waiting on this one must not be
            # cancelled with it, so they are told to run it themselves.
            if future is not None and not future.done():
                future.set_result(None)
            raise
        finally:
            if key is not None:
                self._inflight.pop(key, None)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 3)
