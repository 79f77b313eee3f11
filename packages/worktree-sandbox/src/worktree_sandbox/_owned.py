"""Folders this package made: marked when made, removed only when so marked, never through a link.

Every folder the sandbox makes to hold its own work (a pool's folder of checkouts, one checkout, a
clone in progress) gets a marker file when it is made: `.worktree-sandbox-owner`, holding a fixed
first line and the tag of the process that made it. Whatever removes a folder checks first that it
is a real folder (not a link), belongs to this user and carries the marker; a folder without it
was not made here and is left alone, whatever its name.

Removal works on descriptors: the folder that was checked is the folder that is emptied (opened
once with O_NOFOLLOW), and every folder below it is opened relative to its parent with O_NOFOLLOW,
so a link planted anywhere is unlinked as a link and never followed, and no other file system
(a mount inside) is entered. Not for: deciding whether an owner is alive (see `_liveness`).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from worktree_sandbox._liveness import owner_alive

__all__ = [
    "MARKER",
    "OwnedRemoval",
    "ensure_private_dir",
    "make_owned_dir",
    "owned_tag",
    "remove_empty_of_dead",
    "remove_owned",
]

MARKER = ".worktree-sandbox-owner"
_HEADER = b"worktree-sandbox owned folder v1\n"
_TAG = re.compile(r"^[0-9]+-[0-9]+$")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def make_owned_dir(path: Path, tag: str, *, mode: int = 0o700) -> Path:
    """Make `path` (its parent must exist; `path` must not) and mark it as this package's."""
    if not _TAG.match(tag):
        raise ValueError(f"owner tag {tag!r} is not '<pid>-<start>'")
    os.mkdir(path, mode)
    fd = os.open(path, _DIR_FLAGS)
    try:
        marker = os.open(
            MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o400, dir_fd=fd
        )
        try:
            os.write(marker, _HEADER + tag.encode() + b"\n")
        finally:
            os.close(marker)
    finally:
        os.close(fd)
    return path


def _tag_at(fd: int) -> str | None:
    """The owner tag of the folder open at `fd` when it is this user's and carries our marker."""
    st = os.fstat(fd)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        return None
    try:
        marker = os.open(MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except OSError:
        return None
    try:
        mst = os.fstat(marker)
        if not stat.S_ISREG(mst.st_mode) or mst.st_uid != os.getuid() or mst.st_size > 256:
            return None
        data = os.read(marker, 257)
    finally:
        os.close(marker)
    if not data.startswith(_HEADER):
        return None
    tag = data[len(_HEADER) :].strip().decode("ascii", errors="replace")
    return tag if _TAG.match(tag) else None


def owned_tag(path: Path) -> str | None:
    """The tag in `path`'s marker, or None when `path` is not a folder this package made."""
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError:
        return None  # missing, a link, not a folder, unreadable
    try:
        return _tag_at(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class OwnedRemoval:
    removed: bool  # False: not a folder this package made (or already gone); nothing touched
    freed_bytes: int = 0
    errors: int = 0  # entries that could not be removed (a mount, a race); the folder stays


def remove_owned(path: Path, *, tag: str | None = None) -> OwnedRemoval:
    """Remove `path` and everything in it when it carries our marker (and `tag`, if given).

    A link at `path` or anywhere below is removed as a link (never followed); folders of another
    file system below it are left, and so is the folder itself then.
    """
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError:
        return OwnedRemoval(removed=False)
    try:
        found = _tag_at(fd)
        if found is None or (tag is not None and found != tag):
            return OwnedRemoval(removed=False)
        freed, errors = _empty(fd, keep=MARKER)
        if errors == 0:
            with contextlib.suppress(OSError):
                os.unlink(MARKER, dir_fd=fd)
    finally:
        os.close(fd)
    if errors == 0:
        try:
            os.rmdir(path)  # fails on a link swapped in meanwhile: rmdir never follows one
        except FileNotFoundError:
            pass
        except OSError:
            errors += 1
    return OwnedRemoval(removed=errors == 0, freed_bytes=freed, errors=errors)


def remove_empty_of_dead(path: Path, tag: str) -> bool:
    """Remove `path` if it is an empty folder named for an owner `tag` that is gone.

    A process killed between making a folder and writing its marker leaves it empty and
    unmarked; rmdir removes only an empty real folder (never a link, never anything in it), so
    nothing but that can go.
    """
    if not _TAG.match(tag) or owner_alive(tag):
        return False
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


def _names(fd: int) -> list[str]:
    with os.scandir(fd) as it:
        return [e.name for e in it]


def _empty(top: int, *, keep: str) -> tuple[int, int]:
    """Remove everything inside the folder open at `top` but `keep`; (bytes freed, errors).

    Iterative (a tree may be deeper than Python's recursion limit); holds one descriptor per
    level of the folder being emptied.
    """
    device = os.fstat(top).st_dev
    freed = errors = 0
    os.fchmod(top, stat.S_IRWXU)  # checkouts are read-only: entries can only go with write bits
    stack: list[tuple[int, list[str], str]] = [(top, [n for n in _names(top) if n != keep], "")]
    while stack:
        dfd, todo, _ = stack[-1]
        if not todo:
            _, _, name = stack.pop()
            if stack:
                os.close(dfd)
                try:
                    os.rmdir(name, dir_fd=stack[-1][0])
                except OSError:
                    errors += 1
            continue
        name = todo.pop()
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                if st.st_dev != device:
                    errors += 1  # a mount point: never enter another file system
                    continue
                child = os.open(name, _DIR_FLAGS, dir_fd=dfd)
                if st.st_uid == os.getuid():
                    os.fchmod(child, stat.S_IRWXU)
                stack.append((child, _names(child), name))
            else:
                os.unlink(name, dir_fd=dfd)
                freed += st.st_size if stat.S_ISREG(st.st_mode) else 0
        except FileNotFoundError:
            continue
        except OSError:
            errors += 1
    return freed, errors


def ensure_private_dir(path: Path) -> Path:
    """Make `path` (mode 0700) or check the one there: a real folder of this user that nobody
    else can write to. For folders in shared places such as /dev/shm, where another user could
    have put a link or a folder of theirs under the name we use."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise PermissionError(f"cannot use {path}: {exc}") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise PermissionError(f"{path} is not a folder (a link or a file is in its place)")
    if st.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to another user (uid {st.st_uid})")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PermissionError(f"{path} can be written by other users (mode {st.st_mode:o})")
    return path
