"""Gold files from a unified diff, and the rule that decides which of them count.

A retriever runs at the base commit, so gold is "the files at the base commit that the fix
touches". `GoldRule` answers the four questions a patch leaves open (the README has the table):

- a new file: does not count by default (no retriever can name a file that does not exist yet);
  `GoldRule(include_added=True)` keeps it;
- a test file: does not count by default (SWE-bench keeps test changes in `test_patch`, and a
  localizer for a coding agent is asked for the code to change); `exclude_tests=False` keeps it.
  A path is a test file when a directory in it is named `test` or `tests`, or its file name is
  `conftest.py`, `test_*.py`, `*_test.py` or `*_tests.py`;
- a changelog entry (`CHANGES.rst`, `changelog.d/*`; `is_changelog_path`): counts by default,
  as in every published figure; `exclude_changelogs=True` leaves it out;
- a renamed file: counts under its *old* path by default, the one that exists at the base
  commit; `renames="new"` takes the path after the fix, `renames="both"` takes both.

Modified and deleted files always count (a deleted file exists at the base commit and must be
found to be deleted). The same rule turns a peer's *patch* into its "files edited" prediction, so
gold and prediction are read the same way. This module does not read files or know instances.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from codegrep_records._paths import normalize_path

__all__ = [
    "ChangeKind",
    "GoldRule",
    "PatchFile",
    "files_from_patch",
    "is_changelog_path",
    "is_test_path",
    "parse_patch",
]

_GIT_HEADER = re.compile(r"^diff --git (?P<a>\S+|\"[^\"]+\") (?P<b>\S+|\"[^\"]+\")$")
_TEST_NAME = re.compile(r"^(conftest\.py|test_.*\.py|.*_tests?\.py)$")
_TEST_DIRS = frozenset({"test", "tests"})
_CHANGELOG_NAMES = frozenset(
    {"changes", "changelog", "history", "news", "release_notes", "release-notes"}
)
_CHANGELOG_DIRS = frozenset({"changelog.d", "changes", "newsfragments", "whatsnew"})
_TEXT_EXTENSIONS = frozenset({"rst", "md", "txt", "markdown", "adoc", "feature", "bugfix", "misc"})
# git's C-style quoting of a path with special characters: "a/caf\303\251.py"
_ESCAPE = re.compile(r"\\([0-7]{1,3}|.)")
_SIMPLE_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13}


class ChangeKind(StrEnum):
    MODIFIED = "modified"
    ADDED = "added"
    DELETED = "deleted"
    RENAMED = "renamed"


@dataclass(frozen=True)
class PatchFile:
    """One file a patch touches. `path` is the path at the base commit (new path if added)."""

    path: str
    kind: ChangeKind
    new_path: str | None = None


@dataclass(frozen=True)
class GoldRule:
    """Which touched files count as gold (and as a patch-derived prediction).

    The defaults are the rule every published figure of this toolkit is measured with; change
    them only to ask a different question, and say so next to the figure.
    """

    include_added: bool = False
    exclude_tests: bool = True
    renames: Literal["old", "new", "both"] = "old"
    # Changelog entries (`CHANGES.rst`, `changelog.d/1234.bugfix.rst`, `docs/whatsnew/...`):
    # counted by default, as every published figure was; `True` leaves them out (no localizer
    # is asked to find where the release notes go). See `is_changelog_path`.
    exclude_changelogs: bool = False

    def __post_init__(self) -> None:
        if self.renames not in ("old", "new", "both"):
            raise ValueError(f"renames must be 'old', 'new' or 'both', not {self.renames!r}")

    def describe(self) -> str:
        """The rule in words, for a table's reader: `modified and deleted files (renamed:
        old path); not added files, not tests; changelogs counted`."""
        kinds = (
            "modified, deleted and added files"
            if self.include_added
            else ("modified and deleted files")
        )
        left_out = [x for x, out in (("tests", self.exclude_tests),) if out]
        if not self.include_added:
            left_out.insert(0, "added files")
        said = f"{kinds} (renamed: {self.renames} path)"
        said += f"; not {', not '.join(left_out)}" if left_out else ""
        said += "; changelogs left out" if self.exclude_changelogs else "; changelogs counted"
        return said

    def paths(self, change: PatchFile) -> tuple[str, ...]:
        """The paths `change` contributes under this rule (none, one, or two for a rename)."""
        if change.kind is ChangeKind.ADDED and not self.include_added:
            return ()
        candidates: tuple[str, ...] = (change.path,)
        if change.kind is ChangeKind.RENAMED and change.new_path:
            if self.renames == "new":
                candidates = (change.new_path,)
            elif self.renames == "both":
                candidates = (change.path, change.new_path)
        return tuple(
            p
            for p in candidates
            if p
            and not (self.exclude_tests and is_test_path(p))
            and not (self.exclude_changelogs and is_changelog_path(p))
        )

    def keeps(self, change: PatchFile) -> bool:
        """Whether `change` contributes any path under this rule."""
        return bool(self.paths(change))


def is_changelog_path(path: str) -> bool:
    """Whether `path` is a changelog entry: a text file (no extension, or .rst, .md, .txt, ...)
    named CHANGES, CHANGELOG, HISTORY, NEWS or RELEASE_NOTES in any case, or one under a folder
    named `changelog.d`, `changes`, `newsfragments` or `whatsnew` (towncrier's and Sphinx
    projects' habits). Code is never one."""
    parts = normalize_path(path).lower().split("/")
    stem, dot, ext = parts[-1].partition(".")
    if dot and ext.rsplit(".", 1)[-1] not in _TEXT_EXTENSIONS:
        return False  # code (`src/changes.py`) is never a changelog entry
    return stem in _CHANGELOG_NAMES or bool(_CHANGELOG_DIRS.intersection(parts[:-1]))


def is_test_path(path: str) -> bool:
    parts = normalize_path(path).split("/")
    return bool(_TEST_DIRS.intersection(parts[:-1])) or bool(_TEST_NAME.match(parts[-1]))


def _unquote(raw: str) -> str:
    """A path as git writes it: C-quoted ("a/caf\\303\\251.py") when it has special characters."""
    if len(raw) < 2 or not (raw.startswith('"') and raw.endswith('"')):
        return raw.strip('"')

    def byte(m: re.Match[str]) -> str:
        code = m.group(1)
        if code[0] in "01234567":
            return chr(int(code, 8) & 0xFF)
        return chr(_SIMPLE_ESCAPES.get(code, ord(code)))

    # Octal escapes are the name's bytes: collect them as latin-1 code points, then decode each
    # component as UTF-8, or as Latin-1 when it is not (worktree-sandbox's `name_text` reads a
    # tree's names the same way, so an answer naming the file matches the patch's name).
    text = _ESCAPE.sub(byte, raw[1:-1])
    try:
        data = text.encode("latin-1")
    except UnicodeEncodeError:
        return text
    return "/".join(_utf8_or_latin1(part) for part in data.split(b"/"))


def _utf8_or_latin1(part: bytes) -> str:
    try:
        return part.decode("utf-8")
    except UnicodeDecodeError:
        return part.decode("latin-1")


def _strip_prefix(raw: str) -> str | None:
    raw = raw.strip()
    # Timestamps after a tab in plain (non-git) diffs: "--- a/x.py\t2020-01-01 ..."
    raw = _unquote(raw.split("\t", 1)[0].strip())
    if raw == "/dev/null":
        return None
    if raw.startswith(("a/", "b/")):
        raw = raw[2:]
    return normalize_path(raw)


def parse_patch(patch: str) -> tuple[PatchFile, ...]:
    """Every file a unified diff touches, in order of appearance, each once.

    Reads `diff --git` headers with their `new file` / `deleted file` / `rename from|to` lines,
    and falls back to `---`/`+++` pairs for diffs without git headers.
    """
    found: dict[str, PatchFile] = {}
    lines = patch.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        header = _GIT_HEADER.match(line)
        if header:
            a = _strip_prefix(header["a"])
            b = _strip_prefix(header["b"])
            kind = ChangeKind.MODIFIED
            old, new = a, b
            i += 1
            # Extended header lines until the first hunk or the next file.
            while i < len(lines) and not lines[i].startswith(("diff --git ", "@@")):
                ext = lines[i]
                if ext.startswith("new file mode"):
                    kind = ChangeKind.ADDED
                elif ext.startswith("deleted file mode"):
                    kind = ChangeKind.DELETED
                elif ext.startswith("rename from "):
                    kind = ChangeKind.RENAMED
                    old = normalize_path(_unquote(ext[len("rename from ") :].strip()))
                elif ext.startswith("rename to "):
                    new = normalize_path(_unquote(ext[len("rename to ") :].strip()))
                elif ext.startswith("--- "):
                    minus = _strip_prefix(ext[4:])
                    if minus is None:
                        kind = ChangeKind.ADDED
                elif ext.startswith("+++ "):
                    plus = _strip_prefix(ext[4:])
                    if plus is None:
                        kind = ChangeKind.DELETED
                i += 1
            if kind is ChangeKind.ADDED:
                change = PatchFile(path=new or old or "", kind=kind)
            elif kind is ChangeKind.RENAMED:
                change = PatchFile(path=old or "", kind=kind, new_path=new)
            else:
                change = PatchFile(path=old or new or "", kind=kind)
            if change.path and change.path not in found:
                found[change.path] = change
            continue
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            minus = _strip_prefix(line[4:])
            plus = _strip_prefix(lines[i + 1][4:])
            if minus is None and plus is not None:
                change = PatchFile(path=plus, kind=ChangeKind.ADDED)
            elif plus is None and minus is not None:
                change = PatchFile(path=minus, kind=ChangeKind.DELETED)
            elif minus is not None and plus is not None and minus != plus:
                change = PatchFile(path=minus, kind=ChangeKind.RENAMED, new_path=plus)
            elif minus is not None:
                change = PatchFile(path=minus, kind=ChangeKind.MODIFIED)
            else:
                i += 2
                continue
            if change.path not in found:
                found[change.path] = change
            i += 2
            continue
        i += 1
    return tuple(found.values())


def files_from_patch(patch: str, rule: GoldRule | None = None) -> tuple[str, ...]:
    """The paths of `patch` that `rule` keeps, in order of appearance, each once."""
    rule = rule or GoldRule()
    out: dict[str, None] = {}
    for change in parse_patch(patch):
        for path in rule.paths(change):
            out.setdefault(path, None)
    return tuple(out)
