"""The patch parser and the gold rule: swe-eval's behaviour kept, the rename choice added."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from codegrep_records import (
    ChangeKind,
    GoldRule,
    PatchFile,
    files_from_patch,
    gold_from_instances,
    is_test_path,
    load_instances,
    parse_patch,
)


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
PURE_RENAME = (
    "diff --git a/src/x.py b/lib/x.py\nsimilarity index 100%\nrename from src/x.py\n"
    "rename to lib/x.py\n"
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


def test_the_default_rule_is_swe_evals() -> None:
    rule = GoldRule()
    assert (rule.include_added, rule.exclude_tests, rule.renames) == (False, True, "old")
    assert files_from_patch(RENAMED) == files_from_patch(RENAMED, rule) == ("pkg/a.py",)


@pytest.mark.parametrize(
    ("renames", "expected"),
    [
        ("old", ("pkg/a.py", "src/x.py")),
        ("new", ("pkg/b.py", "lib/x.py")),
        ("both", ("pkg/a.py", "pkg/b.py", "src/x.py", "lib/x.py")),
    ],
)
def test_rename_rule_variants(renames: str, expected: tuple[str, ...]) -> None:
    rule = GoldRule(renames=renames)  # type: ignore[arg-type]
    assert files_from_patch(RENAMED + PURE_RENAME, rule) == expected


def test_a_rename_into_or_out_of_tests_is_judged_by_the_path_it_contributes() -> None:
    into_tests = (
        "diff --git a/pkg/helper.py b/tests/helper.py\nsimilarity index 100%\n"
        "rename from pkg/helper.py\nrename to tests/helper.py\n"
    )
    assert files_from_patch(into_tests) == ("pkg/helper.py",)
    assert files_from_patch(into_tests, GoldRule(renames="new")) == ()
    assert files_from_patch(into_tests, GoldRule(renames="both")) == ("pkg/helper.py",)
    both = GoldRule(renames="both", exclude_tests=False)
    assert files_from_patch(into_tests, both) == ("pkg/helper.py", "tests/helper.py")


def test_an_unknown_rename_choice_is_refused() -> None:
    with pytest.raises(ValueError, match="renames"):
        GoldRule(renames="newest")  # type: ignore[arg-type]


def test_rule_paths_and_keeps() -> None:
    rule = GoldRule()
    assert rule.paths(PatchFile("a.py", ChangeKind.ADDED)) == ()
    assert not rule.keeps(PatchFile("a.py", ChangeKind.ADDED))
    assert rule.keeps(PatchFile("a.py", ChangeKind.DELETED))
    assert GoldRule(include_added=True).paths(PatchFile("a.py", ChangeKind.ADDED)) == ("a.py",)


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
        ("pkg/foo_tests.py", True),
        ("pkg/testing.py", False),
        ("pkg/contest.py", False),
        ("lib/test/x.c", True),
        ("/testbed/tests/x.py", True),
    ],
)
def test_is_test_path(path: str, expected: bool) -> None:
    assert is_test_path(path) is expected


def test_plain_unified_diff_without_git_headers() -> None:
    patch = "--- a/x.py\t2020-01-01\n+++ b/x.py\t2020-01-02\n@@ -1 +1 @@\n-a\n+b\n"
    assert files_from_patch(patch) == ("x.py",)
    added = "--- /dev/null\n+++ b/y.py\n@@ -0,0 +1 @@\n+a\n"
    assert files_from_patch(added) == ()


def test_a_timestamped_dev_null_is_an_added_file() -> None:
    # `diff -u /dev/null y.py` writes a timestamp after the tab; it is not a file named dev/null.
    added = "--- /dev/null\t1970-01-01 00:00:00\n+++ y.py\t2024-01-01 00:00:00\n@@ -0,0 +1 @@\n+a\n"
    (change,) = parse_patch(added)
    assert change == PatchFile("y.py", ChangeKind.ADDED)
    gone = "--- x.py\t2024-01-01\n+++ /dev/null\t1970-01-01\n@@ -1 +0,0 @@\n-a\n"
    assert parse_patch(gone) == (PatchFile("x.py", ChangeKind.DELETED),)


def test_quoted_git_paths_are_decoded() -> None:
    patch = (
        'diff --git "a/pkg/caf\\303\\251.py" "b/pkg/caf\\303\\251.py"\nindex 1..2 100644\n'
        '--- "a/pkg/caf\\303\\251.py"\n+++ "b/pkg/caf\\303\\251.py"\n@@ -1 +1 @@\n-a\n+b\n'
        'diff --git "a/with\\"quote.py" "b/with\\"quote.py"\n--- "a/with\\"quote.py"\n'
        '+++ "b/with\\"quote.py"\n@@ -1 +1 @@\n-a\n+b\n'
    )
    assert files_from_patch(patch) == ("pkg/café.py", 'with"quote.py')


def test_each_file_once_in_order() -> None:
    patch = diff("b.py") + diff("a.py") + diff("b.py")
    assert files_from_patch(patch) == ("b.py", "a.py")


def test_paths_are_normalized_like_every_other_path() -> None:
    assert files_from_patch(diff("./pkg//m.py")) == ("pkg/m.py",)


def test_lite_gold_matches_the_published_gold_files(shared_data: Path) -> None:
    lite = shared_data / "swebench" / "lite.jsonl"
    loaded = load_instances(lite)
    assert loaded.problems == ()
    gold = gold_from_instances(loaded.records)
    published = {row["instance_id"]: set(row["gold_files"]) for row in map(json.loads, lite.open())}
    assert len(gold) == 300
    assert all(set(gold[i].files) == published[i] for i in published)
    # Each instance also carries the published list; without its patch it gives the same gold.
    for inst in loaded.records:
        bare = inst.model_copy(update={"patch": ""})
        assert set(bare.gold_files_for()) == published[inst.instance_id]


def test_changelog_entries_count_unless_left_out() -> None:
    from codegrep_records._gold import is_changelog_path

    entries = ["CHANGES.rst", "CHANGELOG.md", "HISTORY", "docs/whatsnew/v2.rst"]
    entries += ["changelog.d/1234.bugfix.rst", "newsfragments/12.feature", "changes/9.misc"]
    code = ["src/changes.py", "pkg/history.py", "news/feed.py", "src/a.py", "README.rst"]
    assert [p for p in entries + code if is_changelog_path(p)] == entries
    patch = "".join(
        f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-a\n+b\n"
        for p in ["src/a.py", "CHANGES.rst", "changelog.d/1.bugfix.rst"]
    )
    assert files_from_patch(patch) == ("src/a.py", "CHANGES.rst", "changelog.d/1.bugfix.rst")
    assert files_from_patch(patch, GoldRule(exclude_changelogs=True)) == ("src/a.py",)
    assert GoldRule().describe().endswith("changelogs counted")
    assert GoldRule(exclude_changelogs=True).describe().endswith("changelogs left out")
