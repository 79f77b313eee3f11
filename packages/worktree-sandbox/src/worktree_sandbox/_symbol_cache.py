"""The definition index's disk cache: one SQLite file in a folder this package made and marked.

`<cache_dir>/symbols/` is made with the package's owner marker (see `_owned`), renamed into
place so that it never exists unmarked; a `symbols/` that lacks the marker is refused, never
written to. In it, `definitions.sqlite3` maps (sha256 of a file's content, language, grammar
version) to that content's definitions. Several processes share it: WAL journal, a busy timeout,
inserts that ignore a row another process wrote first. A file SQLite calls corrupt (or not a
database) is removed and made anew, under a lock so that two processes do not rebuild at once;
only the database's own files in our marked folder are ever removed. Not for: deciding what to
parse (see `symbols`). Standard library only: it is imported with the package.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import sqlite3
import stat
import threading
import uuid
from collections.abc import Callable, Iterator
from itertools import accumulate
from pathlib import Path

from worktree_sandbox._definition import Definition
from worktree_sandbox._liveness import owner_tag
from worktree_sandbox._owned import MARKER, make_owned_dir, owned_tag, remove_owned
from worktree_sandbox.errors import SymbolCacheError

__all__ = ["DefinitionStore", "StoreError"]

FOLDER = "symbols"
DATABASE = "definitions.sqlite3"
_LOCK = "rebuild.lock"
# SQLite's primary result codes for "this is not a usable database" (extended codes share them
# in their low byte).
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26
_BUSY_TIMEOUT_S = 30.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS definitions (
    digest BLOB NOT NULL,
    language TEXT NOT NULL,
    grammar TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (digest, language, grammar)
) WITHOUT ROWID
"""

Key = tuple[bytes, str]  # (sha256 of the content, language)


class StoreError(Exception):
    """A read or write that failed for a reason other than corruption (locked too long, full
    disk, read-only file system): the caller parses instead and counts it."""


def _is_corruption(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return (code & 0xFF) in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    return type(exc) is sqlite3.DatabaseError  # before 3.11: corruption is the plain class


def own_folder(cache_dir: Path) -> Path:
    """`<cache_dir>/symbols`, made and marked by this package (now, or by an earlier run)."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SymbolCacheError(f"cannot make the cache folder {cache_dir}: {exc}") from exc
    target = cache_dir / FOLDER
    if owned_tag(target) is not None:
        return target
    if os.path.lexists(target):
        raise SymbolCacheError(
            f"{target} exists but was not made by worktree-sandbox (it has no {MARKER} of this "
            "user); it is left alone: remove it or give another cache_dir"
        )
    # Made under a private name and renamed into place, so `symbols/` never exists unmarked;
    # when another process's rename wins, ours is removed and theirs used.
    holder = cache_dir / f".{FOLDER}-{uuid.uuid4().hex[:12]}"
    try:
        make_owned_dir(holder, owner_tag())
        try:
            os.rename(holder, target)
        except OSError:
            remove_owned(holder)
    except OSError as exc:
        raise SymbolCacheError(f"cannot make {target}: {exc}") from exc
    if owned_tag(target) is None:
        raise SymbolCacheError(f"{target} was not made by worktree-sandbox; it is left alone")
    return target


class DefinitionStore:
    """Definitions by content, on disk; thread-safe (one connection behind a lock)."""

    def __init__(self, cache_dir: Path, grammar: str) -> None:
        self.folder = own_folder(cache_dir)
        self.path = self.folder / DATABASE
        self.grammar = grammar
        self.rebuilt = 0  # corrupted files replaced by this store
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        with self._lock:
            self._conn = self._open_or_rebuild()

    # -- opening --------------------------------------------------------------------------------

    def _check_file(self) -> None:
        """The database may be missing or a regular file of this user; never anything else."""
        for name in (DATABASE, f"{DATABASE}-wal", f"{DATABASE}-shm"):
            try:
                st = os.lstat(self.folder / name)
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                raise SymbolCacheError(
                    f"{self.folder / name} is not a regular file of this user; not opening it"
                )

    def _connect(self) -> sqlite3.Connection:
        self._check_file()
        conn = sqlite3.connect(
            self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            conn.execute("PRAGMA quick_check(1)").fetchone()
        except BaseException:
            conn.close()
            raise
        with contextlib.suppress(OSError):
            os.chmod(self.path, 0o600)
        return conn

    def _open_or_rebuild(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except sqlite3.Error as exc:
            if not _is_corruption(exc):
                raise SymbolCacheError(f"cannot open the cache {self.path}: {exc}") from exc
        return self._rebuild()

    @contextlib.contextmanager
    def _rebuild_lock(self) -> Iterator[None]:
        fd = os.open(
            self.folder / _LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _rebuild(self) -> sqlite3.Connection:
        """Replace a corrupted database: ours to remove, in our marked folder."""
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
        try:
            with self._rebuild_lock():
                try:  # another process may have rebuilt it while we waited for the lock
                    return self._connect()
                except sqlite3.Error as exc:
                    if not _is_corruption(exc):
                        raise SymbolCacheError(f"cannot open the cache {self.path}: {exc}") from exc
                if owned_tag(self.folder) is None:
                    raise SymbolCacheError(f"{self.folder} is no longer ours; not removing in it")
                for name in (DATABASE, f"{DATABASE}-wal", f"{DATABASE}-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self.folder / name)  # unlink never follows a link
                self.rebuilt += 1
                return self._connect()
        except (OSError, sqlite3.Error) as exc:
            raise SymbolCacheError(
                f"cannot rebuild the corrupted cache {self.path}: {exc}"
            ) from exc

    # -- use ------------------------------------------------------------------------------------

    def _run(self, op: str, fn: Callable[[sqlite3.Connection], object]) -> object:
        """Run `fn` on the connection; rebuild once on corruption; StoreError on other failures."""
        with self._lock:
            for attempt in (0, 1):
                if self._conn is None:
                    raise StoreError("the cache is closed")
                try:
                    return fn(self._conn)
                except sqlite3.Error as exc:
                    if attempt == 0 and _is_corruption(exc):
                        try:
                            self._conn = self._rebuild()
                        except SymbolCacheError as again:
                            raise StoreError(str(again)) from again
                        continue
                    raise StoreError(f"cache {op} failed: {exc}") from exc
        raise StoreError(f"cache {op} failed")  # unreachable: the loop returns or raises

    def get(self, key: Key) -> tuple[Definition, ...] | None:
        def read(conn: sqlite3.Connection) -> object:
            return conn.execute(
                "SELECT data FROM definitions WHERE digest = ? AND language = ? AND grammar = ?",
                (key[0], key[1], self.grammar),
            ).fetchone()

        row = self._run("read", read)
        if not isinstance(row, tuple) or not row or not isinstance(row[0], str):
            return None
        return _decode(row[0])

    def put(self, key: Key, definitions: tuple[Definition, ...]) -> None:
        data = _encode(definitions)

        def write(conn: sqlite3.Connection) -> object:
            return conn.execute(
                "INSERT OR IGNORE INTO definitions (digest, language, grammar, data) "
                "VALUES (?, ?, ?, ?)",
                (key[0], key[1], self.grammar, data),
            )

        self._run("write", write)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
                self._conn = None


_FIELDS = 6
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _encode(definitions: tuple[Definition, ...]) -> str:
    rows = [[d.name, d.qualname, d.kind, d.line, d.end_line, d.name_line] for d in definitions]
    return json.dumps(rows, separators=(",", ":"), ensure_ascii=False)


def _nests_deeper_than(text: str, limit: int) -> bool:
    """Whether the brackets of `text` outside JSON strings nest deeper than `limit` (summed in
    C, not a Python loop per character)."""
    skeleton = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, skeleton)), default=0) > limit


def _decode(data: str) -> tuple[Definition, ...] | None:
    """The stored definitions, or None for a row that is not what `_encode` writes (a miss).

    The file is shared and may have been written by anyone who can write the folder: a row
    nested deeper than the two levels `_encode` writes is refused before decoding (the decoder
    would raise `RecursionError`, which is no `ValueError`), and so is a bool where a line
    number belongs (`True` is an int to `isinstance`).
    """
    if _nests_deeper_than(data, 2):
        return None
    try:
        rows = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(rows, list):
        return None
    out = []
    for row in rows:
        if not isinstance(row, list) or len(row) != _FIELDS:
            return None
        name, qualname, kind, line, end_line, name_line = row
        if not (isinstance(name, str) and isinstance(qualname, str) and isinstance(kind, str)):
            return None
        if not all(type(n) is int for n in (line, end_line, name_line)):  # not a bool
            return None
        out.append(Definition(name, qualname, kind, line, end_line, name_line))
    return tuple(out)
