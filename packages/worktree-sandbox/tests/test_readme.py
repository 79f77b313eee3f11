"""The README's first example runs as written, in a real repository."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs(repo: Any, tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "the README has no python example"
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(repo.path)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(blocks[0], str(README), "exec"), {"__name__": "readme"})
    finally:
        os.chdir(cwd)
    printed = out.getvalue()
    assert "src/app/core.py:4: def parse_config(path):" in printed
    assert "1\t# proj" in printed
    assert "leaves the repository" in printed
    assert "[3, 3, 3, 3, 3, 3, 3, 3]" in printed
