"""Writing outputs: whether one can be written, found out before the work that would write it,
and writing one without following a link planted where it goes.

A command that runs for minutes and then cannot write its result has lost the run. Every
command-line tool of the toolkit checks its outputs with `why_unwritable` first.

An output folder may hold what others wrote (a training run's folder, written by the trainer
and whatever it runs): a link planted at an output's name would make a plain `open(path, "w")`
overwrite the file it points to, anywhere the user can write. `write_atomically` writes a new
file beside the output (opened with O_CREAT|O_EXCL|O_NOFOLLOW, so never through a link) and
renames it over the output, which replaces a link itself rather than its target;
`open_replacing` does the same for a writer that streams; `open_appending` appends to a log
without following a link. All three refuse a destination that is not a regular file (a folder,
a FIFO, a device) and, given `within`, a folder that resolves outside `within`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["open_appending", "open_replacing", "why_unwritable", "write_atomically"]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC


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


def _open_folder(path: Path, within: str | Path | None) -> int:
    """A descriptor of `path`'s folder, resolved (links in the path the caller gave are the
    caller's); refused when it resolves outside `within`."""
    folder = Path(os.path.realpath(path.parent))
    if within is not None:
        root = Path(os.path.realpath(within))
        if folder != root and root not in folder.parents:
            raise OSError(
                errno.EXDEV, f"the folder resolves to {folder}, outside {root}", str(path.parent)
            )
    # O_NOFOLLOW: a link swapped in for the resolved folder since is not followed
    return os.open(folder, _DIR_FLAGS)


def _refuse_odd(name: str, fd: int, path: Path) -> None:
    """Refuse a destination that is a folder, a FIFO, a device: neither a regular file nor a
    link (which the rename replaces)."""
    try:
        st = os.lstat(name, dir_fd=fd)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
        return
    raise OSError(errno.EEXIST, "it exists and is not a regular file", str(path))


def write_atomically(
    path: str | Path,
    data: bytes | str,
    *,
    within: str | Path | None = None,
    mode: int | None = None,
) -> Path:
    """Replace `path` with `data` (text is written as UTF-8) in one step: a reader sees the old
    file or the new one, never half of one, and a link at `path` is replaced, not followed.

    The folder must exist. Raises `OSError` when it cannot write, when `path` is a folder or
    another file that is not a regular one, and (with `within`) when the folder resolves
    outside `within`. `mode` sets the new file's permission bits (`0o755` for a script).
    Returns `path`."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with open_replacing(path, within=within, mode=mode, binary=True) as fh:
        fh.write(payload)
    return Path(path)


@contextlib.contextmanager
def open_replacing(
    path: str | Path,
    *,
    within: str | Path | None = None,
    mode: int | None = None,
    binary: bool = False,
) -> Iterator[IO[Any]]:
    """`write_atomically` for a writer that streams: a new file beside `path` (O_CREAT|O_EXCL|
    O_NOFOLLOW, a random name, so never through a link) to write in the block; it replaces
    `path` when the block ends, and is removed when the block raises. Text is UTF-8; the same
    refusals and errors as `write_atomically`."""
    target = Path(path)
    fd = _open_folder(target, within)
    try:
        _refuse_odd(target.name, fd, target)
        tmp = f".{target.name}.{secrets.token_hex(6)}.tmp"
        out = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC, 0o666, dir_fd=fd
        )
        try:
            if mode is not None:
                os.fchmod(out, mode)
            with os.fdopen(out, "wb") if binary else os.fdopen(out, "w", encoding="utf-8") as fh:
                yield fh
            os.replace(tmp, target.name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
            raise
    finally:
        os.close(fd)


def open_appending(path: str | Path, *, within: str | Path | None = None) -> IO[str]:
    """`path` opened to append text (created when missing), never through a link: a link at
    `path` is refused, as are a folder or any other file that is not a regular one, and (with
    `within`) a folder that resolves outside `within`. Raises `OSError`."""
    target = Path(path)
    fd = _open_folder(target, within)
    try:
        _refuse_odd(target.name, fd, target)
        # O_NONBLOCK: a FIFO swapped in since is not waited on (the fstat below refuses it)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
        try:
            out = os.open(target.name, flags, 0o666, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise OSError(errno.ELOOP, "it is a link; not followed", str(target)) from None
            if exc.errno == errno.EISDIR:
                raise OSError(
                    errno.EISDIR, "it exists and is not a regular file", str(target)
                ) from None
            raise
    finally:
        os.close(fd)
    try:
        if not stat.S_ISREG(os.fstat(out).st_mode):
            raise OSError(errno.EEXIST, "it exists and is not a regular file", str(target))
        os.set_blocking(out, True)
        return os.fdopen(out, "a", encoding="utf-8")
    except BaseException:
        os.close(out)
        raise
