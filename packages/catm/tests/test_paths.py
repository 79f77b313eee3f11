"""Path normalisation (the shared mount table) and the stage 1 filters."""

from __future__ import annotations

import pytest
from catm._paths import DropReason, classify, guess_root, to_repo_relative
from codegrep_records import normalize_path

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
    ("raw", "root"),
    [
        ("/repo/src/x.py", "/repo"),
        ("/app/src/x.py", "/app"),
        ("/testbed/src/x.py", "/testbed"),
        ("/workspace/o__p__1.0/src/x.py", "/workspace/o__p__1.0"),
        ("/tmp/testbed/abc123/src/x.py", "/tmp/testbed/abc123"),
    ],
)
def test_every_mount_of_the_shared_table_maps_like_normalize_path(raw: str, root: str) -> None:
    assert guess_root(raw) == root
    assert to_repo_relative(raw, "") == normalize_path(raw) == "src/x.py"
    # A relative path in a shell that cd-ed into the mount resolves the same way.
    assert to_repo_relative("x.py", "", f"{root}/src") == "src/x.py"


def test_a_file_directly_under_workspace_is_what_normalize_path_says() -> None:
    assert to_repo_relative("/workspace/reproduce.py", "") == normalize_path(
        "/workspace/reproduce.py"
    )
    assert guess_root("/usr/lib/x.py") == ""
    assert to_repo_relative("/usr/lib/x.py", "") is None  # outside any root: not a repo file


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
