"""docs/architecture.md says how the members depend on each other; the code says it too. This
test reads the member graph from the code (each member's imports of the others, as
`tests/test_workspace.py` reads them, and its pyproject dependencies) and fails when the doc's
dependency table or its floors disagree, or when the doc names a member that is not there or
leaves one out."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _workspace_test() -> object:
    """tests/test_workspace.py, whose member reading (names, imports, dependencies) this test
    shares rather than repeats (the suite imports test files by path, not as a package)."""
    name = "_architecture_doc_workspace"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "test_workspace.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_ws = _workspace_test()
MEMBERS = _ws.MEMBERS  # type: ignore[attr-defined]
BY_DIST = _ws.BY_DIST  # type: ignore[attr-defined]
_imported_members = _ws._imported_members  # type: ignore[attr-defined]
DOC = ROOT / "docs" / "architecture.md"
TABLE = "<!-- member-graph: checked by tests/test_architecture_doc.py -->"
FLOORS = "<!-- member-floors: checked by tests/test_architecture_doc.py -->"


def _graph() -> dict[str, set[str]]:
    """Member -> the members its source imports."""
    return {m.dist: _imported_members(m) for m in MEMBERS}


def _floors(graph: dict[str, set[str]]) -> dict[str, int]:
    """1 for a member that imports none of ours; else one above the highest it imports."""
    floors: dict[str, int] = {}

    def floor(name: str) -> int:
        if name not in floors:
            floors[name] = 1 + max((floor(d) for d in graph[name]), default=0)
        return floors[name]

    for name in graph:
        floor(name)
    return floors


def _section(text: str, marker: str) -> list[str]:
    """The lines after `marker` up to the first blank line."""
    assert marker in text, f"{DOC.name} has no {marker!r} block"
    lines = text.split(marker, 1)[1].lstrip("\n").splitlines()
    out = []
    for line in lines:
        if not line.strip():
            break
        out.append(line)
    return out


def _names(cell: str) -> set[str]:
    return set(re.findall(r"`([a-z][a-z0-9-]*)`", cell))


def _doc_table(text: str) -> dict[str, tuple[str, set[str]]]:
    """Member -> (kind, imported members) as the doc's table says."""
    rows = {}
    for line in _section(text, TABLE)[2:]:  # header, rule
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 3, f"not a member row: {line!r}"
        (member,) = _names(cells[0])
        rows[member] = (cells[1], _names(cells[2]))
    return rows


def _doc_floors(text: str) -> dict[str, int]:
    floors = {}
    for line in _section(text, FLOORS):
        match = re.fullmatch(r"floor (\d+): (.*)", line.strip())
        assert match, f"not a floor line: {line!r}"
        for name in _names(match[2]):
            assert name not in floors, f"{name} is on two floors"
            floors[name] = int(match[1])
    return floors


def _table_problems(text: str) -> list[str]:
    """Where the doc's member table disagrees with the imports ([] when it agrees)."""
    graph = _graph()
    doc = _doc_table(text)
    problems = [f"the doc misses {name}" for name in sorted(set(graph) - set(doc))]
    problems += [f"no member {name}" for name in sorted(set(doc) - set(graph))]
    for name in sorted(set(graph) & set(doc)):
        kind, deps = doc[name]
        if deps != graph[name]:
            problems.append(f"{name}: the doc says {sorted(deps)}, the code {sorted(graph[name])}")
        if kind != ("app" if BY_DIST[name].is_app else "package"):
            problems.append(f"{name}: kind {kind}")
    return problems


def test_the_doc_lists_every_member_with_what_it_imports() -> None:
    assert _table_problems(DOC.read_text(encoding="utf-8")) == []


def test_every_import_of_a_member_is_declared() -> None:
    """The graph the doc draws is also the one the pyproject files declare (no member imports
    one it does not depend on, and none declares one it never imports)."""
    for member in MEMBERS:
        declared = {d for d in member.dependencies if d in BY_DIST}
        assert declared == _imported_members(member), member.dist


def test_the_doc_floors_are_the_graphs() -> None:
    assert _doc_floors(DOC.read_text(encoding="utf-8")) == _floors(_graph()), (
        "docs/architecture.md's floors disagree with the imports (floor 1 imports no member; "
        "each other member sits one floor above the highest member it imports)"
    )


def test_the_check_fails_on_a_doc_that_disagrees() -> None:
    """Not vacuous: an arrow left out, an app drawn on swe-eval, a member left out, are seen."""
    text = DOC.read_text(encoding="utf-8")
    row = "| `codegrep-gate` | package | `codegrep-records`, `grpo-rewards` |"
    assert row in text
    no_arrow = text.replace(row, "| `codegrep-gate` | package | `codegrep-records` |")
    assert _table_problems(no_arrow) == [
        "codegrep-gate: the doc says ['codegrep-records'], the code "
        "['codegrep-records', 'grpo-rewards']"
    ]
    assert _table_problems(text.replace(row + "\n", "")) == ["the doc misses codegrep-gate"]
    old_floor = "floor 4: `swe-eval`, `codegrep`,"
    upward = text.replace(old_floor, "floor 5: `codegrep`\nfloor 4: `swe-eval`,")
    assert upward != text
    assert _doc_floors(upward) != _floors(_graph())
