"""Path checks for tool arguments: the only way a model-supplied path reaches the filesystem.

A tool path is relative to the repository root, uses '/', and may not leave the root, be absolute,
or touch `.git`; a tree entry's path (`safe_tree_path`) follows the same rules, so every file a
tree serves can be named in a call. Normalization is purely lexical; symlinks are checked where a
path is resolved.
"""

from __future__ import annotations

import posixpath
import re

__all__ = ["PathRefused", "is_within", "name_text", "normalize_tool_path", "safe_tree_path"]

# C0 and C1 controls, DEL, and Unicode's line and paragraph separators: Python's
# `str.splitlines` breaks a line at U+0085, U+2028 and U+2029 as at a newline.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class PathRefused(ValueError):
    """A tool path that is not allowed; the message is written for the model."""


def name_text(raw: bytes) -> str:
    """A path as the tools name it: its bytes as UTF-8, and a component that is not UTF-8 as
    Latin-1 (`src/r\\xe9sum\\xe9.py` is `src/résumé.py`).

    Every name a tree serves is text that any record can carry (JSON, a model's prompt): a name
    decoded with `surrogateescape` held lone surrogates, which no UTF-8 writer accepts, so one
    such file failed every record that named it. Latin-1 is what such names mostly are (old
    repositories written on Latin-1 systems), and it is how codegrep-records reads a patch's
    non-UTF-8 path, so an answer naming the file is scored against the patch's name. Each
    component is read on its own, so a folder has one name whatever its files' names hold. Two
    entries whose names read alike (`r\\xe9` and `r\\xc3\\xa9`) are duplicates: a tree keeps the
    first and leaves the other out, and maps each name it keeps back to its bytes.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "/".join(_component_text(part) for part in raw.split(b"/"))


def _component_text(part: bytes) -> str:
    try:
        return part.decode("utf-8")
    except UnicodeDecodeError:
        return part.decode("latin-1")


def normalize_tool_path(path: str | None) -> str:
    """Return the canonical repository-relative form of `path` ('' is the root).

    Accepts './a//b/', 'a/./b'; refuses absolute paths, '..' anywhere, '.git' components, control
    characters and backslashes (which would mean something else on another platform).
    """
    if path is None:
        return ""
    # Control characters are refused wherever they stand (a trailing newline too), before any
    # stripping; only the spaces a model pads a path with are dropped.
    if _CONTROL.search(path):
        raise PathRefused("paths may not contain control characters")
    raw = path.strip(" ")
    if "\\" in raw:
        raise PathRefused("use '/' as the path separator")
    if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw) or raw.startswith("~"):
        raise PathRefused(f"'{path}' is absolute; give a path relative to the repository root")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise PathRefused(f"'{path}' leaves the repository ('..' is not allowed)")
    if ".git" in parts:
        raise PathRefused("paths under .git are not part of the repository's files")
    return "/".join(parts)


def is_within(root_relative_link_dir: str, target: str) -> str | None:
    """Resolve a symlink `target` found in directory `root_relative_link_dir`.

    Returns the normalized repository-relative path it points to, or None when it points outside
    the repository (absolute targets, or too many '..').
    """
    if target.startswith("/"):
        return None
    joined = posixpath.normpath(posixpath.join(root_relative_link_dir or ".", target))
    if joined == ".":
        return ""
    if joined.startswith("../") or joined == ".." or joined.startswith("/"):
        return None
    parts = joined.split("/")
    if ".git" in parts:
        return None
    return joined


# Linux's limits (NAME_MAX, PATH_MAX) and a depth that keeps one descriptor per level cheap.
_MAX_NAME_BYTES = 255
_MAX_PATH_BYTES = 4000
_MAX_DEPTH = 200


def safe_tree_path(name: str) -> bool:
    """Whether a tree entry's path can be written and named safely under a checkout.

    No empty, '.', '..' or '.git' (any case) component, no absolute path, no control character
    (a tool call could never name it, and a newline would split grep's output), within Linux's
    length limits.
    """
    if not name or name.startswith("/") or _CONTROL.search(name):
        return False
    raw = name.encode("utf-8", errors="surrogateescape")
    if len(raw) > _MAX_PATH_BYTES:
        return False
    parts = name.split("/")
    if len(parts) > _MAX_DEPTH:
        return False
    for part in parts:
        if part in ("", ".", "..") or part.lower() == ".git":
            return False
        if len(part.encode("utf-8", errors="surrogateescape")) > _MAX_NAME_BYTES:
            return False
    return True
