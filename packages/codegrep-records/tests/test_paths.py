"""The one path rule: mount points, roots, separators, dots."""

from __future__ import annotations

import pytest
from codegrep_records import MOUNT_PREFIXES, normalize_path
from codegrep_records._paths import normalize_paths


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("./src/a.py", "src/a.py"),
        ("/src/a.py", "src/a.py"),
        ("/testbed/src/a.py", "src/a.py"),
        ("/workspace/django__django__3.0/django/db/models/base.py", "django/db/models/base.py"),
        ("/workspace/requests/requests/api.py", "requests/api.py"),
        ("/workspace/setup.py", "setup.py"),
        ("/tmp/testbed/4f1c2a/pkg/mod.py", "pkg/mod.py"),
        ("/repo/src/x.py", "src/x.py"),
        ("/app/models.py", "models.py"),
        ("repo/src/x.py", "repo/src/x.py"),  # no leading slash: a folder named repo
        ("app/models.py", "app/models.py"),
        ("/repository/x.py", "repository/x.py"),
        ("src\\pkg\\mod.py", "src/pkg/mod.py"),
        ("  src//pkg/./mod.py ", "src/pkg/mod.py"),
        ("src/pkg/../mod.py", "src/mod.py"),
        (".", ""),
        ("", ""),
    ],
)
def test_normalize_path(raw: str, expected: str) -> None:
    assert normalize_path(raw) == expected


def test_the_table_holds_the_sandbox_roots() -> None:
    assert MOUNT_PREFIXES == (
        r"/tmp/testbed/[^/]+/",
        r"/testbed/",
        r"/workspace/[^/]+/(?=.)",
        r"/workspace/",
        r"/repo/",
        r"/app/",
    )


def test_roots_are_stripped_longest_first() -> None:
    roots = ["/data/repos", "/data/repos/astropy__astropy-12907"]
    got = normalize_path("/data/repos/astropy__astropy-12907/astropy/io.py", roots=roots)
    assert got == "astropy/io.py"


def test_custom_mount_prefixes_replace_the_defaults() -> None:
    assert normalize_path("/mnt/code/a.py", mount_prefixes=[r"/mnt/code/"]) == "a.py"
    assert normalize_path("/testbed/a.py", mount_prefixes=[r"/mnt/code/"]) == "testbed/a.py"


def test_normalize_paths_collapses_duplicates_and_empties() -> None:
    got = normalize_paths(["a.py", "./a.py", "/testbed/a.py", "/repo/a.py", "", "b.py"])
    assert got == frozenset({"a.py", "b.py"})


def test_a_single_string_is_not_a_set_of_paths() -> None:
    with pytest.raises(TypeError, match="single string"):
        normalize_paths("a.py")
