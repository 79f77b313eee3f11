"""Write a commit's files into a folder, byte for byte as the blobs are, without write bits.

Neither `git worktree add` nor `git archive` fits: both apply the tree's .gitattributes
(export-ignore drops files, eol/filters rewrite them), so ripgrep would see other bytes than
`read` serves; and `worktree add` leaves admin files in the repository that a crash strands.
This streams every blob through one `git cat-file --batch` and writes it; it runs in a worker
thread (the work is system calls, which release the GIL) and stops between files when asked.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path

from worktree_sandbox._git import TreeEntry, git_env
from worktree_sandbox._paths import safe_tree_path

__all__ = ["MAX_LINK_BYTES", "materialize", "written"]


# Linux's PATH_MAX less its NUL: a longer link text is no path, and `symlink` refuses it.
MAX_LINK_BYTES = 4095


def written(entry: TreeEntry, max_file_bytes: int | None) -> bool:
    """Whether `materialize` writes the entry: a file no tool reads (over `max_file_bytes`:
    `read` refuses it, grep leaves it out on every backend) and a link whose text is no path
    are not asked of git, so a 200 MiB blob never passes through memory or tmpfs. They stay
    in the tree's file list (`glob` lists them, `read` says how large they are)."""
    if entry.is_symlink:
        return entry.size <= MAX_LINK_BYTES
    return max_file_bytes is None or entry.size <= max_file_bytes


def materialize(
    git_dir: Path,
    entries: Iterable[tuple[str, TreeEntry]],
    dest: Path,
    stop: threading.Event,
    max_file_bytes: int | None = None,
) -> bool:
    """Write `entries` (path, blob) under the existing empty folder `dest`; False when stopped.
    Entries that `written` says no tool reads are left out.

    Every file is created relative to its folder's descriptor, every folder is entered with
    O_NOFOLLOW and every file opened with O_EXCL|O_NOFOLLOW: an entry whose way passes through a
    link, or whose name is already taken (duplicate entries, a link and a folder of one name), is
    skipped, so nothing is ever written outside `dest`. Names that are not plain relative paths
    are skipped too (`parse_ls_tree` leaves them out before; this is the second wall).
    """
    todo = sorted(
        (name, e) for name, e in entries if safe_tree_path(name) and written(e, max_file_bytes)
    )
    proc = subprocess.Popen(
        ["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=git_env(git_dir),
        bufsize=1 << 20,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    stdin = proc.stdin

    def feed() -> None:
        # A separate writer: git's output pipe would fill while we still write requests.
        try:
            stdin.write(b"".join(e.oid.encode() + b"\n" for _, e in todo))
            stdin.close()
        except (BrokenPipeError, ValueError):
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    out = proc.stdout
    folders = _Folders(dest)
    try:
        for name, entry in todo:
            if stop.is_set():
                return False
            header = out.readline().split()
            if header[-1] == b"missing":
                continue  # not in this clone; `read` says so, grep cannot see it
            size = int(header[2])
            data = out.read(size)
            out.read(1)
            parent, _, base = name.rpartition("/")
            dfd = folders.enter(parent)
            if dfd is None:
                continue  # a link or a file stands where a folder should be
            if entry.is_symlink:
                # taken, or a text no link can hold (a NUL): that link is left out
                with contextlib.suppress(OSError, ValueError):
                    os.symlink(data, base, dir_fd=dfd)
                continue
            perm = 0o555 if entry.mode == "100755" else 0o444
            try:
                fd = os.open(base, _FILE_FLAGS, perm, dir_fd=dfd)
            except (FileExistsError, IsADirectoryError):
                continue  # a duplicate entry: the first one stays
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
        folders.close(seal=True)
        return True
    finally:
        folders.close(seal=False)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        writer.join(timeout=5)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class _Folders:
    """The open folders from `dest` down to the one being written, as descriptors.

    Entries come sorted, so all of a folder's entries are consecutive: a folder left is never
    entered again, and it loses its write bits (0555) as it is left, the deepest first.
    """

    def __init__(self, dest: Path) -> None:
        self._stack: list[tuple[str, int]] = [("", os.open(dest, _DIR_FLAGS))]

    def enter(self, folder: str) -> int | None:
        while (
            len(self._stack) > 1
            and not folder.startswith(self._stack[-1][0] + "/")
            and (folder != self._stack[-1][0])
        ):
            self._leave(seal=True)
        here, fd = self._stack[-1]
        rest = folder[len(here) :].lstrip("/") if here else folder
        for part in rest.split("/") if rest else []:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o700, dir_fd=fd)
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                return None  # ELOOP/ENOTDIR: not a real folder of ours; never followed
            here = f"{here}/{part}" if here else part
            self._stack.append((here, child))
            fd = child
        return fd

    def _leave(self, *, seal: bool) -> None:
        _, fd = self._stack.pop()
        try:
            if seal:
                os.fchmod(fd, 0o555)
        finally:
            os.close(fd)

    def close(self, *, seal: bool) -> None:
        while self._stack:
            self._leave(seal=seal)
