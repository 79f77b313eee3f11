"""Gold line ranges read from a patch's hunk headers (old-file coordinates)."""

from __future__ import annotations

from grpo_rewards import LineRange, gold_line_ranges_from_patch


def test_hunks_modified_inserted_deleted_renamed_and_new_files() -> None:
    patch = (
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n"
        "@@ -3,2 +3,2 @@\n x\n-y\n+z\n"  # lines 3-4
        "@@ -0,0 +1 @@\n+top\n"  # insertion at the top of the file: [1, 1]
        "@@ -20 +21 @@\n--- a/not_a_header.py\n+++ b/still_body.py\n"  # length 1; body lines
        "diff --git a/old.py b/new.py\nrename from old.py\nrename to new.py\n"
        "--- a/old.py\n+++ b/new.py\n@@ -7,0 +8,1 @@\n+added\n"  # after line 7 of the old name
        "diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/n.py\n"
        "@@ -0,0 +1,2 @@\n+a\n+b\n"  # a new file has no old lines
        "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\n--- a/gone.py\n+++ /dev/null\n"
        "@@ -1,2 +0,0 @@\n-a\n\\ No newline at end of file\n-b\n"
    )
    assert gold_line_ranges_from_patch(patch) == {
        "m.py": (LineRange(1, 1), LineRange(3, 4), LineRange(20, 20)),
        "old.py": (LineRange(7, 7),),
        "gone.py": (LineRange(1, 2),),
    }


def test_broken_or_hostile_headers_give_nothing_not_a_traceback() -> None:
    assert gold_line_ranges_from_patch("") == {}
    assert gold_line_ranges_from_patch("--- a/x.py\n+++ b/x.py\n@@ garbage @@\n") == {}
    huge = "--- a/x.py\n+++ b/x.py\n@@ -99999999999,3 +1,3 @@\n"
    assert gold_line_ranges_from_patch(huge) == {}
