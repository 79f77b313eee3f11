"""Write a commit's files into a folder, byte for byte as the blobs are, without write bits.

Neither `git worktree add` nor `git archive` fits: both apply the tree's .gitattributes
(export-ignore drops files, eol/filters rewrite them), so ripgrep would see other bytes than
`read` serves; and `worktree add` leaves admin files in the repository that a crash strands.
This streams every blob through one `git cat-file --batch` and writes it; it runs in a worker
thread (the work is system calls, which release the GIL) and stops between files when asked.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path

from worktree_sandbox._git import TreeEntry, git_env

__all__ = ["materialize"]


def materialize(
    git_dir: Path, entries: Iterable[tuple[str, TreeEntry]], dest: Path, stop: threading.Event
) -> bool:
    """Write `entries` (path, blob) under the existing folder `dest`; False when stopped."""
    todo = list(entries)
    proc = subprocess.Popen(
        ["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=git_env(),
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
    made: set[str] = set()
    out = proc.stdout
    root = str(dest)
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
            full = os.path.join(root, name)
            parent = os.path.dirname(full)
            if parent not in made:
                os.makedirs(parent, exist_ok=True)
                made.add(parent)
            if entry.is_symlink:
                os.symlink(data, full)
                continue
            perm = 0o555 if entry.mode == "100755" else 0o444
            fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL, perm)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        writer.join(timeout=5)
    # Folders lose their write bits last, deepest first, so that nothing can be added.
    folders = {os.path.dirname(name) for name, _ in todo}
    for folder in list(folders):
        while folder:
            folder = os.path.dirname(folder)
            folders.add(folder)
    folders.discard("")
    for d in sorted(folders, key=len, reverse=True):
        os.chmod(os.path.join(root, d), 0o555)
    os.chmod(root, 0o555)
    return True
