"""Repository-relative path normalisation and the stage 1 path filters.

Agents write paths every way there is: absolute inside the sandbox
(`/workspace/<repo>__<ver>/a/b.py`), relative to a working directory they `cd`-ed into, with `./`
and `..`. Labels must be relative to the repository root so they compare with the gold patch's
`diff --git` paths.

The sandbox mount points come from the one table of the toolkit, `codegrep_records.MOUNT_PREFIXES`,
so a bare absolute path maps to what `codegrep_records.normalize_path` gives. What catm adds: the
shell's working directory for relative paths, and None for a path outside the repository root
(the shared normalizer keeps every path; a read of `/usr/lib/x.py` is not a repository file).

This module decides what a path *is*; which calls count as reads is `_shell` and `_mining`.
"""

from __future__ import annotations

import posixpath
import re
from enum import StrEnum

from codegrep_records import MOUNT_PREFIXES

# Plain-text documentation; the paper drops it. `.txt` also covers requirements files and Django's
# reStructuredText docs, which are documentation or configuration, not code to retrieve.
DOC_EXTENSIONS = frozenset({".md", ".rst", ".txt", ".adoc", ".markdown", ".rdoc", ".asciidoc"})
DOC_DIRS = frozenset({"doc", "docs", "documentation"})
# Compiled or generated files an agent may `cat` by accident; never a retrieval target.
BINARY_EXTENSIONS = frozenset({".pyc", ".pyo", ".so", ".o", ".a", ".dll", ".dylib", ".class"})
ARTIFACT_PARTS = frozenset({".git", "__pycache__", "node_modules", ".tox", ".venv"})
# The shared mount-point table as one anchored pattern; alternatives are tried in table order,
# as `normalize_path` tries them.
_MOUNT = re.compile("^(?:" + "|".join(f"(?:{p})" for p in MOUNT_PREFIXES) + ")")


class DropReason(StrEnum):
    """Why stage 1 did not keep a read."""

    OUTSIDE = "outside_repository"
    ROOT = "repository_root"
    DIRECTORY = "directory"
    DOCUMENTATION = "documentation"
    EXTENSIONLESS = "extensionless"
    ARTIFACT = "build_artifact"
    CREATED = "created_by_agent"
    FAILED = "read_failed"  # the editor answered with an error (the path does not exist)
    EMPTY = "empty_path"


def guess_root(path: str) -> str:
    """The sandbox mount a bare absolute path sits under (`MOUNT_PREFIXES`), or "" if none.

    `/workspace/o__p__1.0/src/x.py` -> `/workspace/o__p__1.0`; `/tmp/testbed/abc/src/x.py` ->
    `/tmp/testbed/abc`; `/testbed/src/x.py` -> `/testbed`.
    """
    match = _MOUNT.match(path)
    return match.group(0).rstrip("/") if match else ""


def to_repo_relative(path: str, root: str, cwd: str = "") -> str | None:
    """Map a path as the agent wrote it to a repository-relative one; None if outside the root.

    Returns "" for the root itself. `cwd` is the shell's directory for relative paths; without it a
    relative path is taken as relative to the root (what the agents are told).
    """
    path = path.strip()
    if not path:
        return None
    if path.startswith("~"):
        return None
    if not path.startswith("/"):
        base = cwd or root or "/"
        path = posixpath.join(base, path)
    path = posixpath.normpath(path)
    if not root:
        root = guess_root(path)
        if not root:
            return None
    root = posixpath.normpath(root)
    if path == root:
        return ""
    if path.startswith(root + "/"):
        return path[len(root) + 1 :]
    return None


# How the OpenHands editor answers a `view` that did not show a file's text.
_VIEW_FAILED = ("ERROR:", "Error:", "The path ", "Invalid `path`")
_DIRECTORY_LISTING = "Here's the files and directories"


def view_failed(observation: str) -> bool:
    """Whether an editor `view` answered with an error (no such path, outside the workspace)."""
    return observation.startswith(_VIEW_FAILED)


def is_directory_listing(observation: str) -> bool:
    """Whether an editor `view` listed a directory instead of showing a file."""
    return observation.startswith(_DIRECTORY_LISTING)


def classify(relative: str, observation: str = "") -> DropReason | None:
    """Why a repository-relative path is not a file to label, or None if it is one."""
    if relative == "":
        return DropReason.ROOT
    if is_directory_listing(observation) or relative.endswith("/"):
        return DropReason.DIRECTORY
    parts = relative.split("/")
    name = parts[-1]
    # A top-level build/ holds copies of the sources (setup.py build); nested ones are real code.
    if parts[0] == "build" or any(
        part in ARTIFACT_PARTS or part.endswith(".egg-info") for part in parts[:-1]
    ):
        return DropReason.ARTIFACT
    dot = name.rfind(".")
    if dot <= 0 or dot == len(name) - 1:
        # `Makefile`, `LICENSE`, dotfiles and (mostly) directories: the paper drops them all.
        return DropReason.EXTENSIONLESS
    extension = name[dot:].lower()
    if extension in BINARY_EXTENSIONS:
        return DropReason.ARTIFACT
    if extension in DOC_EXTENSIONS or parts[0].lower() in DOC_DIRS:
        return DropReason.DOCUMENTATION
    return None


_NOT_A_FILE = frozenset({DropReason.ROOT, DropReason.DIRECTORY, DropReason.EXTENSIONLESS})


def looks_like_directory(relative: str) -> bool:
    """Whether a path names a folder rather than a file, as far as its name tells.

    The root, a trailing `/`, or no extension (`src`, `tests`; a `Makefile` too): what stage 1
    drops as not a file when a shell line names it (`grep -r x src/`), and what swe-eval's case
    view does not count as opened.
    """
    return classify(relative) in _NOT_A_FILE
