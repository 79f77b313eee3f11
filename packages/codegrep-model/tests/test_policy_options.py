"""Every command reads its policy flags through `spec_from_options`: `--policy SPEC` (any kind
the registry knows, or an import path `module:Class`), and the old `--base-url`/`--model`."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from codegrep_model import (
    PolicyReply,
    PolicySpec,
    PolicySpecError,
    parse_policy_spec,
    policy_from_spec,
    spec_from_options,
)

MODULE = '''
from codegrep_model import PolicyReply


class Fixed:
    """A policy written outside the package: it answers one file."""

    name = "fixed-answer"

    async def reply(self, request):
        return PolicyReply(content='{"files": ["a.py"]}')


class Unnamed:
    @property
    def name(self):
        return "something-else"

    async def reply(self, request):
        return PolicyReply(content="{}")


class NotAPolicy:
    pass


def broken():
    raise RuntimeError("no GPU here")
'''


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[str]:
    """An importable module of policies that the package does not know."""
    (tmp_path / "outside_policies.py").write_text(MODULE, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        yield "outside_policies"
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("outside_policies", None)


def test_the_old_flags_are_a_served_spec() -> None:
    url = "http://127.0.0.1:8000/v1"
    assert spec_from_options(None, base_url=url) == parse_policy_spec(f"openai:codegrep@{url}")
    assert str(spec_from_options(None, base_url=url, model="m")) == f"openai:m@{url}"
    assert spec_from_options(f"openai:m@{url}") == spec_from_options(None, base_url=url, model="m")
    assert spec_from_options(None) == PolicySpec("lexical")
    assert spec_from_options(None, default="lexical-heuristic") == PolicySpec("lexical-heuristic")


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"policy": "lexical", "base_url": "http://h/v1"}, "both name the policy"),
        ({"policy": None, "base_url": "ftp://x"}, "--base-url ftp://x: not an http"),
        ({"policy": None, "model": "m"}, "no --base-url is given"),
        ({"policy": "bm25"}, "--policy: policy 'bm25': not one of"),
    ],
)
def test_flags_that_name_no_policy_say_why(kwargs: dict[str, str | None], says: str) -> None:
    policy = kwargs.pop("policy")
    with pytest.raises(PolicySpecError, match=says):
        spec_from_options(policy, **kwargs)


async def test_an_import_path_runs_a_policy_from_outside(outside: str) -> None:
    spec = spec_from_options(f"{outside}:Fixed")
    assert (spec.kind, str(spec), spec.name) == ("import", f"{outside}:Fixed", "fixed-answer")
    policy = policy_from_spec(spec)
    assert policy.name == spec.name
    reply = await policy.reply(None)  # type: ignore[arg-type]  # this policy reads nothing
    assert reply == PolicyReply(content='{"files": ["a.py"]}')


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("Unnamed", "the policy's name is 'something-else'"),
        ("NotAPolicy", "not a Policy"),
        ("broken", "RuntimeError: no GPU here"),
        ("Missing", "has no Missing"),
    ],
)
def test_an_import_path_that_makes_no_fitting_policy_is_refused(
    outside: str, target: str, says: str
) -> None:
    with pytest.raises(PolicySpecError, match=says):
        policy_from_spec(spec_from_options(f"{outside}:{target}"))


def test_an_import_path_that_does_not_import_is_refused() -> None:
    spec = spec_from_options("no_such_module_here:Policy")
    with pytest.raises(PolicySpecError, match="cannot import no_such_module_here"):
        spec.name  # noqa: B018
