"""The user turn's repository listing on a real-looking tree (training and inference share it)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from codegrep_model.prompts import render_top_levels

MakeRepo = Callable[[Path, dict[str, str]], tuple[Path, str]]


def test_the_listing_counts_left_out_entries_and_never_hides_root_files(
    tmp_path: Path, repo_factory: MakeRepo
) -> None:
    # 40 top-level packages, each with 3 files in 2 nested folders, and 4 root files
    files = {"setup.py": "", "setup.cfg": "", "README.rst": "", "tox.ini": ""}
    for i in range(40):
        for rel in ("__init__.py", "core/base.py", "core/deep/leaf.py"):
            files[f"pkg{i:02d}/{rel}"] = f"X = {i}\n"
    repo, _ = repo_factory(tmp_path / "proj", files)
    listed = subprocess.run(
        ["git", "-C", str(repo), "ls-files"], check=True, capture_output=True, text=True
    ).stdout.split()

    lines = render_top_levels(listed, max_entries=60).splitlines()

    # root files first, all of them
    assert lines[:4] == ["README.rst", "setup.cfg", "setup.py", "tox.ini"]
    # each directory takes 3 lines (itself, __init__.py, core/): 60 lines hold 20 of the 40
    shown = [line for line in lines if re.fullmatch(r"pkg\d\d/  \(3 files\)", line)]
    assert len(shown) == 20
    assert lines[-1] == "... (20 more entries)"  # entries not shown, not lines rendered
    assert len(shown) + 20 == 40


def test_the_count_is_never_negative_and_absent_when_all_fit() -> None:
    paths = [f"d{i}/a/b.py" for i in range(5)] + ["setup.py"]
    text = render_top_levels(paths, max_entries=60)
    assert "more entries" not in text
    assert text.splitlines()[0] == "setup.py"
    tight = render_top_levels(paths, max_entries=1).splitlines()
    # the budget is spent by the first directory's 2 lines: the other 4 are counted
    assert tight == ["setup.py", "d0/  (1 files)", "  a/", "... (4 more entries)"]
