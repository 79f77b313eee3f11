"""infra/ci/readme_examples.py: which blocks run, in what namespace, and what counts as failing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

RUNNER = Path(__file__).resolve().parents[1] / "infra" / "ci" / "readme_examples.py"

GOOD = textwrap.dedent(
    """\
    # pkg

    ```python
    >>> x = 20
    >>> x + 1
    21

    ```

    Text in between; a shell block is not run:

    ```bash
    exit 1
    ```

    ```python
    import asyncio

    async def twice(v):
        return 2 * v

    y = await twice(x)  # top-level await, and `x` from the doctest above
    assert y == 40, y
    ```

    <!-- no-run: needs a served model -->
    ```python
    raise SystemExit("never run")
    ```

    ````markdown
    ```python
    raise SystemExit("inside another fence: not a python block")
    ```
    ````
    """
)


def run(tmp_path: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    readme = tmp_path / "README.md"
    readme.write_text(text)
    return subprocess.run(
        [sys.executable, str(RUNNER), str(readme), "--workdir", str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_blocks_share_a_namespace_and_marked_blocks_are_skipped(tmp_path: Path) -> None:
    out = run(tmp_path, GOOD)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 block(s) ran, 0 failed, 1 skipped" in out.stdout
    assert "SKIP" in out.stdout
    assert "needs a served model" in out.stdout


def test_a_wrong_doctest_output_and_an_exception_fail(tmp_path: Path) -> None:
    text = GOOD.replace("21\n", "22\n") + "\n```python\nimport no_such_module_here\n```\n"
    out = run(tmp_path, text)
    assert out.returncode == 1
    assert "3 block(s) ran, 2 failed, 1 skipped" in out.stdout
    assert "ModuleNotFoundError" in out.stdout
    assert "Expected:" in out.stdout


def test_list_shows_each_block_and_its_mark(tmp_path: Path) -> None:
    out = run(tmp_path, GOOD, "--list")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [ln.split(" ", 1)[1] for ln in lines] == [
        "doctest",
        "script",
        "script no-run: needs a served model",
    ]


def test_a_block_that_hangs_is_stopped(tmp_path: Path) -> None:
    out = run(tmp_path, "```python\nimport time\ntime.sleep(30)\n```\n", "--timeout", "1")
    assert out.returncode == 1
    assert "timed out after 1 s" in out.stdout
