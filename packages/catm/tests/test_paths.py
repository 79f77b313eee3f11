"""Path normalisation, the stage 1 filters, and patch parsing."""

from __future__ import annotations

import pytest
from catm import DropReason, patch_files, to_repo_relative
from catm._paths import classify

ROOT = "/workspace/astropy__astropy__4.3"


@pytest.mark.parametrize(
    ("path", "cwd", "expected"),
    [
        (f"{ROOT}/astropy/modeling/core.py", "", "astropy/modeling/core.py"),
        ("astropy/io/fits/card.py", "", "astropy/io/fits/card.py"),
        ("./card.py", f"{ROOT}/astropy/io/fits", "astropy/io/fits/card.py"),
        (f"{ROOT}/astropy/../setup.py", "", "setup.py"),
        (ROOT, "", ""),
        (f"{ROOT}/", "", ""),
        ("/workspace/reproduce.py", "", None),
        ("/usr/lib/python3.9/json/__init__.py", "", None),
        ("../../etc/passwd", ROOT, None),
        ("~/x.py", "", None),
        ("", "", None),
    ],
)
def test_to_repo_relative(path: str, cwd: str, expected: str | None) -> None:
    assert to_repo_relative(path, ROOT, cwd) == expected


def test_root_is_guessed_from_the_sandbox_layout() -> None:
    assert to_repo_relative("/workspace/django__django__3.0/django/db/x.py", "") == "django/db/x.py"
    assert to_repo_relative("/testbed/src/a.c", "") == "src/a.c"
    assert to_repo_relative("/opt/other/a.py", "") is None


@pytest.mark.parametrize(
    ("relative", "observation", "reason"),
    [
        ("astropy/modeling/core.py", "", None),
        ("src/libponyc/ast/parser.c", "", None),
        ("", "", DropReason.ROOT),
        (
            "astropy/modeling",
            "Here's the files and directories up to 2 levels deep",
            DropReason.DIRECTORY,
        ),
        ("astropy/modeling", "", DropReason.EXTENSIONLESS),
        ("Makefile", "", DropReason.EXTENSIONLESS),
        (".gitignore", "", DropReason.EXTENSIONLESS),
        ("README.rst", "", DropReason.DOCUMENTATION),
        ("CHANGES.md", "", DropReason.DOCUMENTATION),
        ("docs/conf.py", "", DropReason.DOCUMENTATION),
        ("requirements.txt", "", DropReason.DOCUMENTATION),
        ("pkg/__pycache__/m.cpython-39.pyc", "", DropReason.ARTIFACT),
        ("build/lib/pkg/m.py", "", DropReason.ARTIFACT),
        ("astropy.egg-info/top_level.py", "", DropReason.ARTIFACT),
    ],
)
def test_classify(relative: str, observation: str, reason: DropReason | None) -> None:
    assert classify(relative, observation) == reason


def test_patch_files_from_diff_headers() -> None:
    patch = (
        "diff --git a/pkg/a.py b/pkg/a.py\n--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1 +1 @@\n-x\n+y\n"
        "diff --git a/old.py b/new.py\nsimilarity index 90%\n"
        "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\n"
        "diff --git a/pkg/a.py b/pkg/a.py\n"
    )
    assert patch_files(patch) == ["pkg/a.py", "new.py", "gone.py"]
    assert patch_files("not a diff") == []
