"""docs/architecture.md says how the members depend on each other; the code says it too. This
test reads the member graph from the code (each member's imports of the others, as
`tests/test_workspace.py` reads them, and its pyproject dependencies) and fails when the doc's
dependency table or its floors disagree, or when the doc names a member that is not there or
leaves one out."""

from __future__ import annotations

import ast
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


# The block of figures below is written from the code (`python tests/test_architecture_doc.py
# --write`), never by hand, and checked here: a module added, an export added or a file grown
# past the limit shows in the doc, or this test fails and says how to write it again.
MEMBERS_TODAY = (
    "<!-- members-today: written by `python tests/test_architecture_doc.py --write`, "
    "checked by tests/test_architecture_doc.py -->"
)
LONG_FILE_LINES = 800


def _sources(member: object) -> list[Path]:
    return sorted((member.path / "src").rglob("*.py"))  # type: ignore[attr-defined]


def _exported(init: Path) -> list[str]:
    """The names of a package's `__all__`, read from its source (a list or tuple of strings)."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            return [str(name) for name in value]
    return []


def _public_modules(member: object) -> list[str]:
    """The modules of a member a user may import: no part of the dotted name starts with `_`."""
    src = member.path / "src" / member.module  # type: ignore[attr-defined]
    out = []
    for py in _sources(member):
        parts = py.relative_to(src).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and not any(p.startswith("_") for p in parts):
            out.append(".".join(parts))
    return sorted(out)


def members_today() -> str:
    """The doc's generated block: per member its source files, public modules and exported
    names; the names exported by two or more members; the source files over the line limit."""
    rows = [
        "| member | source files | exported names | public modules |",
        "| --- | --- | --- | --- |",
    ]
    files = exports = 0
    by_name: dict[str, list[str]] = {}
    long_files = []
    for member in MEMBERS:
        sources = _sources(member)
        names = _exported(member.path / "src" / member.module / "__init__.py")
        for name in names:
            by_name.setdefault(name, []).append(member.dist)
        for py in sources:
            with py.open(encoding="utf-8") as fh:
                if sum(1 for _ in fh) > LONG_FILE_LINES:
                    long_files.append(py.relative_to(ROOT).as_posix())
        modules = ", ".join(f"`{m}`" for m in _public_modules(member)) or "none"
        rows.append(f"| `{member.dist}` | {len(sources)} | {len(names)} | {modules} |")
        files += len(sources)
        exports += len(names)
    rows.append(f"| all {len(MEMBERS)} | {files} | {exports} | |")
    shared = sorted(n for n, where in by_name.items() if len(where) > 1 and n != "__version__")
    rows.append("")
    rows.append(
        f"Names exported by two or more members (`__version__` aside): {len(shared)}"
        + (": " + ", ".join(f"`{n}` ({', '.join(by_name[n])})" for n in shared) if shared else "")
        + "."
    )
    rows.append("")
    rows.append(
        f"Source files over {LONG_FILE_LINES} lines: {len(long_files)}"
        + (": " + ", ".join(f"`{p}`" for p in sorted(long_files)) if long_files else "")
        + "."
    )
    return "\n".join(rows) + "\n"


def _block(text: str) -> str:
    """The doc's generated block as it stands: from after the marker to the next heading."""
    assert MEMBERS_TODAY in text, f"{DOC.name} has no members-today block"
    rest = text.split(MEMBERS_TODAY, 1)[1].lstrip("\n")
    return re.split(r"^#", rest, maxsplit=1, flags=re.MULTILINE)[0].rstrip("\n") + "\n"


def write_members_today(text: str) -> str:
    """`text` with its generated block written afresh."""
    head, tail = text.split(MEMBERS_TODAY, 1)
    parts = re.split(r"^(?=#)", tail.lstrip("\n"), maxsplit=1, flags=re.MULTILINE)
    after = f"\n{parts[1]}" if len(parts) > 1 else ""
    return f"{head}{MEMBERS_TODAY}\n{members_today()}{after}"


def test_the_doc_figures_are_the_codes() -> None:
    assert _block(DOC.read_text(encoding="utf-8")) == members_today(), (
        "docs/architecture.md's members-today block is out of date: "
        "run `python tests/test_architecture_doc.py --write` and commit the doc"
    )


def test_the_figures_check_sees_a_change() -> None:
    """Not vacuous: a module, an export or a file past the limit that the doc lacks is seen."""
    text = DOC.read_text(encoding="utf-8")
    block = _block(text)
    assert write_members_today(text) == text
    stale = text.replace(block, block.replace("| `catm` | ", "| `catm` | 1", 1))
    assert _block(stale) != members_today()
    assert write_members_today(stale) == text


def test_every_test_the_doc_names_exists() -> None:
    """The doc cites the tests that hold its rules; each one it names is in the repository."""
    text = DOC.read_text(encoding="utf-8")
    cited = set(re.findall(r"`((?:[\w-]+/)*tests/[\w/.-]+\.py)`", text))
    assert cited, "the doc names no test"
    missing = sorted(p for p in cited if not (ROOT / p).is_file())
    assert missing == [], f"{DOC.name} names tests that are not there: {missing}"


def test_no_file_cites_a_design_doc_the_repository_lacks() -> None:
    """The architecture is docs/architecture.md and each package's README; a file that points
    to a top-level design document points to nothing (the release tool's test breaks such a
    link on purpose)."""
    design = "DESIGN" + ".md"
    citing = []
    for top in ("apps", "packages", "tests", "docs", "scripts", "infra", ".ci"):
        for path in sorted((ROOT / top).rglob("*")):
            if (
                path.suffix not in {".py", ".md", ".yaml", ".yml", ".sh", ".toml"}
                or ".venv" in path.parts
                or path.name == "test_release_tool.py"
                or not path.is_file()
            ):
                continue
            if design in path.read_text(encoding="utf-8", errors="replace"):
                citing.append(path.relative_to(ROOT).as_posix())
    assert citing == [], f"these name a {design} the repository does not have: {citing}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_architecture_doc.py --write")
    DOC.write_text(write_members_today(DOC.read_text(encoding="utf-8")), encoding="utf-8")
