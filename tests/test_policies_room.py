"""The policies are one room (`codegrep_model.policies`): outside it, code talks to a policy
through the protocol only. No `isinstance` on a policy class anywhere else in the workspace, and
what a policy reads of the tree beyond its calls is asked through the protocol (`needs`,
`for_tree`), never carried by the request or looked up by attribute name.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from codegrep_model.policies import PolicyRequest
from codegrep_model.policies.protocol import Policy, TreePolicy

ROOT = Path(__file__).resolve().parents[1]
ROOM = ROOT / "packages" / "codegrep-model" / "src" / "codegrep_model" / "policies"


def _policy_classes() -> set[str]:
    """Every class defined in the room whose name ends in `Policy`, protocols left out."""
    names = set()
    for path in ROOM.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Policy"):
                names.add(node.name)
    return names - {Policy.__name__, TreePolicy.__name__}


def _sources_outside_the_room() -> list[Path]:
    roots = [*ROOT.glob("packages/*/src"), *ROOT.glob("apps/*/src")]
    return [p for r in roots for p in r.rglob("*.py") if ROOM not in p.parents]


def _names(node: ast.expr) -> set[str]:
    return {
        n.id if isinstance(n, ast.Name) else n.attr
        for n in ast.walk(node)
        if isinstance(n, ast.Name | ast.Attribute)
    }


def test_the_room_holds_the_backends() -> None:
    assert {"LexicalPolicy", "OpenAIPolicy", "LocalPolicy", "ShortlistPolicy"} <= _policy_classes()


def test_no_isinstance_on_a_policy_class_outside_the_room() -> None:
    classes = _policy_classes()
    found = []
    for path in _sources_outside_the_room():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("isinstance", "issubclass")
                and len(node.args) == 2
                and _names(node.args[1]) & classes
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found


def test_the_tree_is_asked_through_the_protocol_not_carried_by_the_request() -> None:
    fields = {f.name for f in dataclasses.fields(PolicyRequest)}
    assert not fields & {"definitions", "commit_log"}
    found = []
    for path in _sources_outside_the_room():
        text = path.read_text("utf-8")
        for word in ("uses_history", "request.definitions", "request.commit_log"):
            if word in text:
                found.append(f"{path.relative_to(ROOT)}: {word}")
    assert not found, found


def test_no_policy_class_is_named_in_code_outside_the_room() -> None:
    # Outside the room a policy is made by the registry (`policy_from_spec`) or a factory of
    # the room (`lexical_explorer`), never by its class; prose in docstrings may name one.
    classes = _policy_classes()
    found = []
    for path in _sources_outside_the_room():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            named = (
                {a.name for a in node.names} if isinstance(node, ast.ImportFrom) else set()
            ) | ({node.id} if isinstance(node, ast.Name) else set())
            if isinstance(node, ast.Attribute):
                named.add(node.attr)
            if named & classes:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found
