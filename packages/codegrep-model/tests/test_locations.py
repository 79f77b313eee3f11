"""Gold files, modules and entities of a real patch on a real repository (tree-sitter)."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from codegrep_model.locations import changed_lines, patch_targets
from grpo_rewards import CodeLocation, MultiLevelTargets, multilevel_f1
from worktree_sandbox import DirectoryTree, SymbolIndex

SHAPES = (
    "import math\n"  # 1
    "\n"  # 2
    "class Circle:\n"  # 3
    "    def __init__(self, r):\n"  # 4
    "        self.r = r\n"  # 5
    "\n"  # 6
    "    def area(self):\n"  # 7
    "        return math.pi * self.r ** 2\n"  # 8
    "\n"  # 9
    "def unit():\n"  # 10
    "    return Circle(1)\n"  # 11
)
FIXED = SHAPES.replace("math.pi * self.r ** 2", "math.tau * self.r ** 2 / 2").replace(
    "return Circle(1)", "return Circle(1.0)"
)
FILES = {
    "geo/shapes.py": SHAPES,
    "geo/__init__.py": "from geo.shapes import Circle\n",
    "tests/test_shapes.py": "def test_area():\n    pass\n",
    "README.md": "# geo\n",
}


def _patch(repo: Path) -> str:
    (repo / "geo/shapes.py").write_text(FIXED)
    (repo / "tests/test_shapes.py").write_text("def test_area():\n    assert True\n")
    (repo / "README.md").write_text("# geo\nCircles.\n")
    diff = subprocess.run(
        ["git", "-C", str(repo), "diff"], capture_output=True, text=True, check=True
    ).stdout
    subprocess.run(["git", "-C", str(repo), "checkout", "--", "."], check=True)
    return diff


def test_changed_lines_of_a_unified_diff() -> None:
    patch = (
        "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n"
        "@@ -3,4 +3,5 @@ def f():\n"
        " a\n-b\n+B\n+C\n c\n d\n"
        "@@ -20,2 +21,3 @@\n x\n+y\n z\n"
        "\\ No newline at end of file\n"
        "diff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n"
        "@@ -0,0 +1 @@\n+print(1)\n"
    )
    assert changed_lines(patch) == {"x.py": {4, 20}}


def test_patch_targets_name_the_enclosing_class_and_functions(
    tmp_path: Path, repo_factory: Callable[[Path, dict[str, str]], tuple[Path, str]]
) -> None:
    pytest.importorskip("tree_sitter_language_pack", reason="needs worktree-sandbox[symbols]")
    repo = repo_factory(tmp_path / "geo", FILES)[0]
    patch = _patch(repo)

    async def go() -> MultiLevelTargets:
        async with DirectoryTree(repo) as tree:
            return await patch_targets(patch, tree, SymbolIndex())

    targets = asyncio.run(go())
    # the gold rule: no test file; README.md is a modified file, so it is gold, with no symbol
    assert targets.files == frozenset({"geo/shapes.py", "README.md"})
    assert targets.modules == frozenset({"geo/shapes.py:Circle", "geo/shapes.py:unit"})
    assert targets.entities == frozenset({"geo/shapes.py:Circle.area", "geo/shapes.py:unit"})
    # what CodeScout's reward reads: a perfect answer scores 1 at every level
    answer = [
        CodeLocation("geo/shapes.py", "Circle", "area"),
        CodeLocation("geo/shapes.py", None, "unit"),
        CodeLocation("README.md"),
    ]
    scores = multilevel_f1(answer, targets)
    assert (scores.file_f1, scores.module_f1, scores.entity_f1) == (1.0, 1.0, 1.0)
    # the method next door is another entity: it costs precision at that level only
    near = [CodeLocation("geo/shapes.py", "Circle", "__init__"), CodeLocation("README.md")]
    partial = multilevel_f1(near, targets)
    assert partial.file_f1 == 1.0
    assert partial.entity_f1 == 0.0
    assert 0 < partial.module_f1 < 1


def test_a_plain_diff_of_two_files_ends_each_hunk_by_its_counts() -> None:
    # without git headers the next file's `---` line must not be read as a removed line
    patch = (
        "--- a/one.py\n+++ b/one.py\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n y = 3\n"
        "--- a/two.sql\n+++ b/two.sql\n@@ -5 +5 @@\n--- a comment\n+-- a note\n"
    )
    assert changed_lines(patch) == {"one.py": {1}, "two.sql": {5}}
