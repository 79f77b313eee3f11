from __future__ import annotations

import pytest
from swe_eval import ChangeKind, GoldRule, files_from_patch, is_test_path, parse_patch


def diff(path: str, body: str = "-old\n+new\n", header: str = "") -> str:
    """A minimal git diff for one file."""
    return (
        f"diff --git a/{path} b/{path}\n{header}index 111..222 100644\n"
        f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n{body}"
    )


ADDED = (
    "diff --git a/pkg/new.py b/pkg/new.py\nnew file mode 100644\nindex 0000000..1111111\n"
    "--- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1 @@\n+x = 1\n"
)
DELETED = (
    "diff --git a/pkg/old.py b/pkg/old.py\ndeleted file mode 100644\nindex 1111111..0000000\n"
    "--- a/pkg/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n"
)
RENAMED = (
    "diff --git a/pkg/a.py b/pkg/b.py\nsimilarity index 90%\nrename from pkg/a.py\n"
    "rename to pkg/b.py\nindex 1..2 100644\n--- a/pkg/a.py\n+++ b/pkg/b.py\n@@ -1 +1 @@\n-a\n+b\n"
)


def test_kinds_and_paths_at_base_commit() -> None:
    patch = diff("pkg/mod.py") + ADDED + DELETED + RENAMED
    changes = {c.path: c for c in parse_patch(patch)}
    assert changes["pkg/mod.py"].kind is ChangeKind.MODIFIED
    assert changes["pkg/new.py"].kind is ChangeKind.ADDED
    assert changes["pkg/old.py"].kind is ChangeKind.DELETED
    # A renamed file counts under the path that exists at the base commit.
    assert changes["pkg/a.py"].kind is ChangeKind.RENAMED
    assert changes["pkg/a.py"].new_path == "pkg/b.py"
    assert files_from_patch(patch) == ("pkg/mod.py", "pkg/old.py", "pkg/a.py")
    assert "pkg/new.py" in files_from_patch(patch, GoldRule(include_added=True))


def test_test_files_are_left_out_unless_asked() -> None:
    patch = diff("src/app.py") + diff("tests/test_app.py") + diff("src/conftest.py")
    assert files_from_patch(patch) == ("src/app.py",)
    assert len(files_from_patch(patch, GoldRule(exclude_tests=False))) == 3


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("sympy/core/tests/test_basic.py", True),
        ("tests/i18n/sampleproject/manage.py", True),
        ("testing/test_x.py", True),
        ("src/_pytest/python.py", False),
        ("pkg/foo_test.py", True),
        ("pkg/testing.py", False),
        ("pkg/contest.py", False),
        ("lib/test/x.c", True),
    ],
)
def test_is_test_path(path: str, expected: bool) -> None:
    assert is_test_path(path) is expected


def test_plain_unified_diff_without_git_headers() -> None:
    patch = "--- a/x.py\t2020-01-01\n+++ b/x.py\t2020-01-02\n@@ -1 +1 @@\n-a\n+b\n"
    assert files_from_patch(patch) == ("x.py",)
    added = "--- /dev/null\n+++ b/y.py\n@@ -0,0 +1 @@\n+a\n"
    assert files_from_patch(added) == ()


def test_each_file_once_in_order() -> None:
    patch = diff("b.py") + diff("a.py") + diff("b.py")
    assert files_from_patch(patch) == ("b.py", "a.py")


def test_lite_gold_matches_the_published_gold_files(shared_data) -> None:  # type: ignore[no-untyped-def]
    from swe_eval import gold_from_instances, load_instances

    inst = load_instances(shared_data / "swebench" / "lite.jsonl").records
    gold = gold_from_instances(inst)
    import json

    published = {
        row["instance_id"]: set(row["gold_files"])
        for row in map(json.loads, (shared_data / "swebench" / "lite.jsonl").open())
    }
    assert len(gold) == 300
    assert all(set(gold[i].files) == published[i] for i in published)
