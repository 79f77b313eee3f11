"""`codegrep localize` bounds its checkout: the one it makes on demand (for a pattern only
ripgrep runs) is admitted against a byte budget, as `serve`'s are."""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from codegrep_model import PolicyReply, PolicyRequest, ToolCall
from worktree_sandbox._git import find_rg

MakeRepo = Callable[[Path, dict[str, str]], Path]
# the module (the package's `localize` is the function of that name)
localize_module = importlib.import_module("codegrep.localize")


class GrepPolicy:
    """Greps once with a pattern git grep's PCRE2 refuses and ripgrep runs; then answers."""

    name = "grep-probe"

    def __init__(self) -> None:
        self.results: list[str] = []

    async def reply(self, request: PolicyRequest) -> PolicyReply:
        if request.observations or request.history:
            seen = request.observations or request.history[-1]
            self.results += [o.result.text if o.result else "refused" for o in seen]
            return PolicyReply(content=json.dumps({"files": ["a.py"]}))
        call = ToolCall(id="c0", name="grep", arguments=json.dumps({"pattern": r"(?u)\w+_here"}))
        return PolicyReply(content=None, tool_calls=(call,))


@pytest.mark.skipif(find_rg() is None, reason="needs ripgrep")
def test_the_checkout_on_demand_is_within_the_budget(
    tmp_path: Path, make_repo: MakeRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "value_here = 1\n" * 2000})

    def run() -> list[str]:
        policy = GrepPolicy()
        asyncio.run(localize_module.localize(repo, "value", commit="HEAD", policy=policy))
        return policy.results

    # within the budget: the checkout is made and ripgrep answers
    assert "a.py:1: value_here = 1" in run()[0]
    # over it (a checkout takes at least a page): none is made, and the call says why
    monkeypatch.setattr(localize_module, "DEFAULT_MAX_CHECKOUT_BYTES", 4096)
    (answer,) = run()
    assert answer.startswith("Error:"), answer
    assert "no checkout" in answer, answer
