"""Who owns a folder (a tag naming a live process), so a restart can prune what the dead left;
and how much such a folder holds.

A tag is '<pid>-<start>' where <start> is the process start time from /proc (Linux), which makes
a recycled pid look dead, as it should. Elsewhere the start part is 0 and only the pid is checked.
"""

from __future__ import annotations

import os
from functools import cache

__all__ = ["dir_bytes", "dir_footprint", "owner_alive", "owner_tag"]


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except FileNotFoundError:
        return None
    except OSError:
        return "0"
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = stat.rsplit(b")", 1)[-1].split()
    return fields[19].decode() if len(fields) > 19 else "0"


@cache
def _own_tag(pid: int) -> str:
    return f"{pid}-{_start_time(pid) or '0'}"


def owner_tag() -> str:
    """This process's tag (computed again after a fork, since the pid changes)."""
    return _own_tag(os.getpid())


def owner_alive(tag: str) -> bool:
    pid_s, _, start = tag.partition("-")
    if not pid_s.isdigit():
        return False
    pid = int(pid_s)
    if os.path.exists("/proc/self/stat"):
        now = _start_time(pid)
        return now is not None and (start in ("", "0") or now == start)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def dir_footprint(path: str | os.PathLike[str]) -> int:
    """Bytes the files and folders below `path` really take (their allocated blocks), links
    not followed: on tmpfs, the memory they hold."""
    total = 0
    for root, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue
    return total


def dir_bytes(path: str | os.PathLike[str]) -> int:
    """Bytes of the files below `path` (links not followed; vanishing files ignored)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                continue
    return total
