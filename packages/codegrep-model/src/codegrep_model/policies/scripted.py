"""`ScriptedPolicy`: replies given in advance, for tests and demos. It ships with the package so
that no test needs a real model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from codegrep_model.errors import PolicyError
from codegrep_model.policies.protocol import PolicyReply, PolicyRequest
from codegrep_model.records import ToolCall

__all__ = ["ScriptedPolicy", "call"]

Step = PolicyReply | Callable[[PolicyRequest], PolicyReply]

_ids = iter(range(1, 1 << 62))


def call(
    name: str, arguments: dict[str, Any] | str | None = None, *, id: str | None = None
) -> ToolCall:
    """A tool call for a script: `call("grep", {"pattern": "def f"})`."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ToolCall(id=id or f"s{next(_ids)}", name=name, arguments=args)


class ScriptedPolicy:
    """Returns its replies in order (a reply, or a function of the request); running out raises
    `PolicyError`. `delay_s` makes each reply take that long, to measure what is not the model."""

    def __init__(self, steps: Sequence[Step], *, name: str = "scripted", delay_s: float = 0.0):
        self._steps = list(steps)
        self._name = name
        self.delay_s = delay_s
        self.requests: list[PolicyRequest] = []

    @property
    def name(self) -> str:
        return self._name

    async def reply(self, request: PolicyRequest) -> PolicyReply:
        self.requests.append(request)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if len(self.requests) > len(self._steps):
            raise PolicyError(f"script has {len(self._steps)} replies; asked for another")
        step = self._steps[len(self.requests) - 1]
        return step(request) if callable(step) else step
