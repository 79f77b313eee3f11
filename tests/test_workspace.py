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
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]

# docs/architecture.md ("Dependency direction"): codegrep-records (the shared records and rules)
# depends on no package of ours; grpo-rewards depends on nothing at all (its path normalizer is
# held equal to the records' one by tests/test_one_path_rule.py); worktree-sandbox and catm may
# use codegrep-records; codegrep-gate (calibration, gate and prompt rendering, light enough to
# serve with) may use codegrep-records and grpo-rewards (its F-beta); codegrep-model may use
# codegrep-records, grpo-rewards, worktree-sandbox and catm; swe-eval may use all; apps use
# packages, never the reverse. codegrep-cli (the command-line kit: --version, the error exit, the
# flag convention; typer only) depends on no package of ours and is used by every member with a
# command line, so that typer never reaches a member without one.
ALLOWED: dict[str, set[str]] = {
    "codegrep-records": set(),
    "codegrep-cli": set(),
    "codegrep-report": set(),
    "grpo-rewards": set(),
    "worktree-sandbox": {"codegrep-records", "codegrep-cli"},
    "catm": {"codegrep-records", "codegrep-cli"},
    "codegrep-gate": {"codegrep-records", "grpo-rewards"},
    "codegrep-model": {
        "codegrep-records",
        "codegrep-cli",
        "grpo-rewards",
        "worktree-sandbox",
        "catm",
    },
    "swe-eval": {
        "codegrep-records",
        "codegrep-cli",
        "grpo-rewards",
        "worktree-sandbox",
        "catm",
        "codegrep-gate",
        "codegrep-model",
        "codegrep-report",
    },
}
HEAVY = ("torch", "vllm", "swift", "swebench", "transformers", "trl", "sentence_transformers")


@dataclass(frozen=True)
class Member:
    dist: str
    module: str
    path: Path
    is_app: bool
    version: str
    dependencies: tuple[str, ...]
    requirements: tuple[str, ...]


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
                    version=meta["version"],
                    dependencies=tuple(_dist_name(d) for d in meta.get("dependencies", [])),
                    requirements=tuple(meta.get("dependencies", [])),
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
        assert allowed is not None, (
            f"{member.dist} is not in ALLOWED (docs/architecture.md's dependency direction)"
        )
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


def _next_breaking(version: str) -> Version:
    """The first release that may break `version`: the next minor in 0.x, else the next major."""
    v = Version(version)
    return Version(f"0.{v.minor + 1}") if v.major == 0 else Version(f"{v.major + 1}")


@pytest.mark.parametrize("member", MEMBERS, ids=IDS)
def test_sibling_dependencies_have_ranges(member: Member) -> None:
    # The workspace sources pin siblings only inside this repository; a built wheel carries just
    # the requirement, so without a range pip would pair this member with any future sibling.
    for text in member.requirements:
        req = Requirement(text)
        sibling = BY_DIST.get(canonicalize_name(req.name))
        if sibling is None:
            continue
        assert str(req.specifier), f"{member.dist}: {req.name} has no version range"
        assert req.specifier.contains(sibling.version), (
            f"{member.dist}: {req.name}{req.specifier} rejects the current {sibling.version}"
        )
        breaking = _next_breaking(sibling.version)
        assert not req.specifier.contains(breaking), (
            f"{member.dist}: {req.name}{req.specifier} admits {breaking}, which may break it"
        )


def _assigns_literal_version(init: Path) -> bool:
    tree = ast.parse(init.read_text(), filename=str(init))
    return any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)
        and isinstance(node.value, ast.Constant)
        and node.value.value != "0+unknown"
        for node in tree.body
    )


@pytest.mark.parametrize("member", MEMBERS, ids=IDS)
def test_version_comes_from_metadata(member: Member) -> None:
    # One source of truth: pyproject's version, read back from the installed metadata.
    init = member.path / "src" / member.module / "__init__.py"
    assert not _assigns_literal_version(init), f"{member.module} hard-codes __version__"
    pkg = importlib.import_module(member.module)
    assert pkg.__version__ == member.version, (
        f"{member.module}.__version__ is {pkg.__version__}, pyproject says {member.version}"
    )


def test_source_checkout_without_install_imports() -> None:
    # grpo-rewards is standard library only, so it imports from src/ with site-packages (and the
    # installed metadata) out of reach; the version is then unknown rather than an error.
    src = BY_DIST["grpo-rewards"].path / "src"
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(src)!r})\n"
        "import grpo_rewards\n"
        "print(grpo_rewards.__version__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "0+unknown"


@pytest.mark.parametrize("member", MEMBERS, ids=IDS)
def test_typer_only_where_there_is_a_command_line(member: Member) -> None:
    # The CLI kit lives in codegrep-cli so that a member without a command line (the records,
    # the gate, the rewards, the report) never installs typer.
    meta = tomllib.loads((member.path / "pyproject.toml").read_text())["project"]
    if "typer" in member.dependencies and member.dist != "codegrep-cli":
        assert meta.get("scripts"), f"{member.dist} depends on typer but has no console script"
    if meta.get("scripts"):
        assert "codegrep-cli" in member.dependencies, f"{member.dist}: a CLI without the kit"


# -- import cycles ---------------------------------------------------------------------------------
# Two modules that import each other (at import time or inside a function) hold each other's
# private names and cannot be read, moved or tested apart; the CLIs had two such knots before the
# command-line kit (`codegrep.cli` with its serve/calibrate modules, `swe_eval.cli` with its
# downstream commands; `codegrep.localize` with `codegrep.service` through `Localization.to_json`,
# until both records moved to `codegrep.response`). Imports under `if TYPE_CHECKING:` never run
# and are not counted; an import of a module's own parent package is not either (Python has
# initialised it already). No cycle is allowed.


def _module_files(src: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's __init__) for every module under `src`."""
    found: dict[str, tuple[Path, bool]] = {}
    for py in sorted(src.rglob("*.py")):
        rel = py.relative_to(src).with_suffix("")
        is_pkg = rel.name == "__init__"
        found[".".join(rel.parts[:-1] if is_pkg else rel.parts)] = (py, is_pkg)
    return found


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """The import statements of `tree` that run: those under `if TYPE_CHECKING:` left out."""
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                hidden.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom) and id(n) not in hidden
    ]


def import_graph(srcs: list[Path]) -> dict[str, set[str]]:
    """Module -> the modules of `srcs` it imports (absolute and relative, at any depth)."""
    modules: dict[str, tuple[Path, bool]] = {}
    for src in srcs:
        modules.update(_module_files(src))
    graph: dict[str, set[str]] = {}
    for name, (py, is_pkg) in modules.items():
        package = name if is_pkg else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _runtime_nodes(ast.parse(py.read_text(), filename=str(py))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                targets = [base, *(f"{base}.{a.name}" for a in node.names)]
            edges.update(
                t for t in targets if t in modules and t != name and not name.startswith(t + ".")
            )
        graph[name] = edges
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    cycles.append(frozenset(group))
    return cycles


def test_no_import_cycle_between_modules() -> None:
    cycles = import_cycles(import_graph([m.path / "src" for m in MEMBERS]))
    assert not cycles, f"modules that import each other: {sorted(sorted(c) for c in cycles)}"


def test_the_cycle_check_finds_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "cli.py").write_text("from pkg.sub import cmd\n")
    (pkg / "sub" / "cmd.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg import other\n"
        "def run():\n    from ..cli import app\n"  # a function-level, relative import counts
    )
    (pkg / "other.py").write_text("from pkg.sub import cmd\n")  # cmd -> other only when typing
    (pkg / "sub" / "child.py").write_text("from pkg import sub\n")  # its own parent: not a cycle
    (pkg / "sub" / "__init__.py").write_text("from pkg.sub import child\n")
    assert import_cycles(import_graph([tmp_path])) == [frozenset({"pkg.cli", "pkg.sub.cmd"})]
