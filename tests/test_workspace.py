"""Workspace-wide contracts: what each member may import, what importing it costs, what it exports.

These hold for every member found under packages/ and apps/, so a new member is checked the moment
it exists.
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# DESIGN.md: grpo-rewards, worktree-sandbox and catm depend on no package of ours; codegrep-model
# may use those three; swe-eval may use all four; apps use packages, never the reverse.
ALLOWED: dict[str, set[str]] = {
    "grpo-rewards": set(),
    "worktree-sandbox": set(),
    "catm": set(),
    "codegrep-model": {"grpo-rewards", "worktree-sandbox", "catm"},
    "swe-eval": {"grpo-rewards", "worktree-sandbox", "catm", "codegrep-model"},
}
HEAVY = ("torch", "vllm", "swift", "swebench", "transformers", "trl", "sentence_transformers")


@dataclass(frozen=True)
class Member:
    dist: str
    module: str
    path: Path
    is_app: bool
    dependencies: tuple[str, ...]


def _dist_name(requirement: str) -> str:
    name = requirement
    for sep in "<>=!~[; @":
        name = name.split(sep, 1)[0]
    return name.strip().lower().replace("_", "-")


def _members() -> list[Member]:
    found = []
    for kind in ("packages", "apps"):
        for pyproject in sorted((ROOT / kind).glob("*/pyproject.toml")):
            meta = tomllib.loads(pyproject.read_text())["project"]
            src = pyproject.parent / "src"
            modules = [p.name for p in src.iterdir() if (p / "__init__.py").exists()]
            where = pyproject.parent.name
            assert len(modules) == 1, f"{where}: expected one import package in src/"
            found.append(
                Member(
                    dist=meta["name"],
                    module=modules[0],
                    path=pyproject.parent,
                    is_app=kind == "apps",
                    dependencies=tuple(_dist_name(d) for d in meta.get("dependencies", [])),
                )
            )
    return found


MEMBERS = _members()
BY_MODULE = {m.module: m for m in MEMBERS}
BY_DIST = {m.dist: m for m in MEMBERS}
IDS = [m.dist for m in MEMBERS]


def test_workspace_has_members() -> None:
    assert "worktree-sandbox" in BY_DIST


@pytest.mark.parametrize("member", MEMBERS, ids=IDS)
def test_member_layout(member: Member) -> None:
    for name in ("README.md", "CHANGELOG.md"):
        assert (member.path / name).is_file(), f"{member.dist} has no {name}"
    meta = tomllib.loads((member.path / "pyproject.toml").read_text())["project"]
    assert meta.get("version"), f"{member.dist} has no version of its own"
    assert member.module == member.dist.replace("-", "_"), "import name must match the distribution"


def _imported_members(member: Member) -> set[str]:
    """Workspace members this member's source imports (absolute imports only)."""
    seen: set[str] = set()
    for py in (member.path / "src").rglob("*.py"):
        tree = ast.parse(py.read_text(), filename=str(py))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".", 1)[0]
                if top in BY_MODULE and top != member.module:
                    seen.add(BY_MODULE[top].dist)
    return seen


@pytest.mark.parametrize("member", MEMBERS, ids=IDS)
def test_dependency_direction(member: Member) -> None:
    ours_declared = {d for d in member.dependencies if d in BY_DIST}
    ours_imported = _imported_members(member)
    if member.is_app:
        assert not any(BY_DIST[d].is_app for d in ours_declared | ours_imported), (
            f"{member.dist}: an app must not depend on another app"
        )
    else:
        allowed = ALLOWED.get(member.dist)
        assert allowed is not None, f"{member.dist} is not in DESIGN.md's dependency table"
        assert ours_declared <= allowed, f"{member.dist} declares {ours_declared - allowed}"
        assert ours_imported <= allowed, f"{member.dist} imports {ours_imported - allowed}"
        assert not any(BY_DIST[d].is_app for d in ours_imported), "packages never import apps"
    # An import of a member must be declared, or the member does not install on its own.
    assert ours_imported <= ours_declared, (
        f"{member.dist} imports {ours_imported - ours_declared} without declaring it"
    )


def _submodules(module: str) -> list[str]:
    pkg = importlib.import_module(module)
    names = [module]
    for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{module}."):
        names.append(info.name)
    return names


@pytest.mark.parametrize("member", MEMBERS, ids=IDS)
def test_import_is_light(member: Member) -> None:
    # A fresh interpreter: this test process may already hold heavy modules from other tests.
    code = (
        "import importlib, json, sys\n"
        f"for name in {_submodules(member.module)!r}:\n"
        "    if name.rsplit('.', 1)[-1] == '__main__':\n"
        "        continue\n"
        "    importlib.import_module(name)\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    heavy = json.loads(out.stdout.strip().splitlines()[-1])
    assert heavy == [], f"importing {member.module} pulled in {heavy}"


@pytest.mark.parametrize("member", MEMBERS, ids=IDS)
def test_all_is_what_is_exported(member: Member) -> None:
    pkg = importlib.import_module(member.module)
    exported = getattr(pkg, "__all__", None)
    assert exported is not None, f"{member.module} has no __all__"
    assert len(exported) == len(set(exported)), f"{member.module}.__all__ has duplicates"
    missing = [n for n in exported if not hasattr(pkg, n)]
    assert not missing, f"{member.module}.__all__ names what it does not define: {missing}"
    public = {
        name
        for name, value in vars(pkg).items()
        if not name.startswith("_") and not isinstance(value, type(sys)) and name != "annotations"
    }
    extra = public - set(exported)
    assert not extra, f"{member.module} exports {extra} outside __all__"
