"""LexicalPolicy through the real engine on small real git repositories made here."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from codegrep_model import Instance, LexicalPolicy, RolloutRecord, run_rollout
from worktree_sandbox import DirectoryTree, TreePool

LIB = {
    "README.md": "# geo\nA geometry library.\n",
    "setup.py": "from setuptools import setup\nsetup(name='geo')\n",
    "geo/__init__.py": "from geo.shapes import Polygon, Circle\nfrom geo.io import load_wkt\n",
    "geo/shapes.py": (
        "import math\n\n"
        "class Polygon:\n"
        "    def __init__(self, points):\n"
        "        self.points = list(points)\n\n"
        "    def area(self):\n"
        "        pts = self.points\n"
        "        return sum(a[0] * b[1] - b[0] * a[1] for a, b in zip(pts, pts[1:])) / 2\n\n"
        "class Circle:\n"
        "    def __init__(self, r):\n"
        "        self.r = r\n\n"
        "    def area(self):\n"
        "        return math.pi * self.r ** 2\n"
    ),
    "geo/io.py": (
        "from geo.shapes import Polygon\n\n"
        "def load_wkt(text):\n"
        "    if not text.startswith('POLYGON'):\n"
        "        raise ValueError('only POLYGON geometries can be parsed from WKT')\n"
        "    return Polygon([])\n"
    ),
    "geo/plot/render.py": "def render_svg(shape):\n    return '<svg/>'\n",
    "tests/test_shapes.py": (
        "from geo.shapes import Polygon\n\n"
        "def test_area():\n    assert Polygon([(0, 0), (1, 0), (1, 1)]).area() >= 0\n"
    ),
    "docs/usage.rst": "Use ``Polygon.area`` and ``load_wkt``.\n",
}


def localize(repo: Path, issue: str) -> RolloutRecord:
    inst = Instance(instance_id="t", repo="acme/geo", base_commit="HEAD", problem_statement=issue)

    async def go() -> RolloutRecord:
        async with DirectoryTree(repo) as tree:
            return await run_rollout(LexicalPolicy(), tree, inst)

    return asyncio.run(go())


@pytest.fixture(scope="module")
def geo(
    tmp_path_factory: pytest.TempPathFactory,
    repo_factory: Callable[[Path, dict[str, str]], tuple[Path, str]],
) -> Path:
    return repo_factory(tmp_path_factory.mktemp("geo") / "geo", LIB)[0]


def test_identifier_in_the_title_finds_its_definition(geo: Path) -> None:
    rec = localize(
        geo,
        "`Polygon.area` is wrong for unclosed rings\n\n"
        "```python\nfrom geo import Polygon\nPolygon([(0, 0), (2, 0), (2, 2)]).area()\n```\n"
        "returns 2.0 but the ring is not closed.",
    )
    assert rec.status == "answered"
    assert rec.answer is not None
    assert rec.answer.files[0] == "geo/shapes.py"
    assert "tests/test_shapes.py" not in rec.answer.files
    assert "defines `Polygon`" in rec.answer.reasons["geo/shapes.py"]


def test_error_message_finds_where_it_is_raised(geo: Path) -> None:
    rec = localize(
        geo,
        'Loading fails\n\nTraceback (most recent call last):\n  File "app.py", line 3\n'
        "ValueError: only POLYGON geometries can be parsed from WKT\n\nI passed a MULTIPOLYGON.",
    )
    assert rec.answer is not None
    assert rec.answer.files[0] == "geo/io.py"


def test_traceback_frames_and_paths(geo: Path) -> None:
    rec = localize(
        geo,
        "Crash when rendering\n\n"
        '  File "/usr/lib/python3/site-packages/geo/plot/render.py", line 2, in render_svg\n'
        "TypeError: bad shape",
    )
    assert rec.answer is not None
    assert rec.answer.files == ("geo/plot/render.py",)


def test_turn_plan_uses_the_tools(geo: Path) -> None:
    rec = localize(geo, "`load_wkt` should accept `Circle` input")
    kinds = [t.kind for t in rec.turns]
    assert kinds == ["explore", "explore", "explore"]  # searches, confirms, answers on turn 3
    names = [[c.call.name for c in t.calls] for t in rec.turns]
    assert set(names[0]) == {"grep"}
    assert "read" in names[1]
    assert all(c.status == "ok" for t in rec.turns for c in t.calls)
    assert rec.stats.tool_calls == sum(len(n) for n in names) <= 16
    assert rec.answer is not None
    assert rec.answer.files[0] in {"geo/io.py", "geo/shapes.py"}


def test_nothing_to_go_on_gives_an_empty_answer_not_a_crash(geo: Path) -> None:
    rec = localize(geo, "it is slow")
    assert rec.status == "answered"
    assert rec.answer is not None
    assert len(rec.answer.files) <= 2


def test_deterministic_and_at_a_commit(geo: Path) -> None:
    issue = "`Circle.area` should use `math.tau`"
    first = localize(geo, issue)
    assert localize(geo, issue).answer == first.answer
    inst = Instance(instance_id="t", repo="acme/geo", base_commit="HEAD", problem_statement=issue)

    async def at_commit() -> RolloutRecord:
        async with TreePool(materialize="never") as pool, pool.tree_at(geo, "HEAD") as tree:
            return await run_rollout(LexicalPolicy(), tree, inst)

    assert asyncio.run(at_commit()).answer == first.answer
    assert first.answer is not None
    assert first.answer.files[0] == "geo/shapes.py"
