"""Whether an output can be written, found out before the work that would write it.

A command that runs for minutes and then cannot write its result has lost the run. Every
command-line tool of the toolkit checks its outputs with `why_unwritable` first.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["why_unwritable"]


def why_unwritable(path: str | Path, *, folder: bool = False) -> str | None:
    """Why no file can be written at `path` (with `folder`: in the folder `path`), or None.

    Tried for real, leaving nothing behind and touching nothing that was there: missing folders
    are made and removed again, and the probe is a new file with a unique name (never an existing
    one), removed at once. An existing file at `path` is not opened; it must be a writable file.
    """
    target = Path(path).expanduser()
    if folder:
        if target.exists() and not target.is_dir():
            return "it exists and is not a folder"
        where = target
    else:
        if target.is_dir():
            return "it is a directory"
        if target.exists() and not os.access(target, os.W_OK):
            return "the file is not writable"
        where = target.parent
    made: list[Path] = []
    try:
        missing: list[Path] = []
        up = where
        while not up.exists() and up != up.parent:
            missing.append(up)
            up = up.parent
        if not up.is_dir():
            return f"{up} is not a directory"
        for new in reversed(missing):
            new.mkdir()
            made.append(new)
        fd, probe = tempfile.mkstemp(dir=where, prefix=".codegrep-write-probe.")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        for new in reversed(made):
            with contextlib.suppress(OSError):
                new.rmdir()
    return None
