"""Where things are defined: the classes, functions, methods, types and macros of a tree's files.

`parse_definitions` parses one file's bytes with tree-sitter and returns its definitions with
qualified names and line spans; `enclosing` says which of them contain a line (a grep hit's
function); `SymbolIndex` serves both for a `Tree`'s files, each distinct content parsed once
(a memory LRU by content hash, and optionally one SQLite file on disk shared by processes).

Needs the `symbols` extra (tree-sitter and a bundle of grammars): `import worktree_sandbox` never
imports it; the first parse does, and without it raises `SymbolsUnavailable`, which names the
extra. The files are untrusted: a file over `MAX_PARSE_BYTES`, a binary file, a link out of the
tree or a path the tools refuse yields no definitions; a syntax error yields what the
error-tolerant parser still recognises; nothing here raises on a file's content. Not for: type
or reference resolution (who calls what); definitions are syntactic, per file.
"""

from __future__ import annotations

import asyncio
import hashlib
import posixpath
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

from worktree_sandbox._definition import DEFINITION_KINDS, Definition
from worktree_sandbox._paths import PathRefused, normalize_tool_path
from worktree_sandbox.errors import SandboxError, SymbolsUnavailable
from worktree_sandbox.models import ReadResult

if TYPE_CHECKING:
    from worktree_sandbox._symbol_cache import DefinitionStore
    from worktree_sandbox.tree import Tree

__all__ = [
    "DEFINITION_KINDS",
    "LANGUAGES",
    "MAX_PARSE_BYTES",
    "PARSE_TIMEOUT_S",
    "Definition",
    "SymbolIndex",
    "SymbolIndexStats",
    "enclosing",
    "language_of",
    "parse_definitions",
    "symbols_available",
]

LANGUAGES = ("python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp")
# Parsing holds the interpreter's lock (py-tree-sitter does not release it) at ~3-10 MB/s, so the
# cap bounds how long one file can stall a process; it matches the tools' `max_file_bytes`.
MAX_PARSE_BYTES = 2 * 1024 * 1024
# A crafted file can keep tree-sitter busy far longer than its size suggests (2 MB of `[{(`
# took 20-40 s): parse and walk stop at this many seconds; real code of 2 MB takes about one.
PARSE_TIMEOUT_S = 5.0
_BINARY_PROBE = 8192  # as `read`: a NUL in the first 8 KiB is a binary file
INSTALL_HINT = "pip install 'worktree-sandbox[symbols]'"

# `.h` goes to the C++ grammar: it reads C headers as well (what C++ adds are keywords C code
# rarely uses as names), while the C grammar breaks on every class or namespace in a C++ header.
_EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "cpp",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
}


def language_of(path: str) -> str | None:
    """The grammar for a file, by its extension (case-insensitive); None when there is none."""
    _, ext = posixpath.splitext(path.rsplit("/", 1)[-1])
    return _EXTENSIONS.get(ext.lower())


def symbols_available() -> bool:
    """Whether the `symbols` extra is installed (tree-sitter and its grammars import)."""
    try:
        _extractor()
    except SymbolsUnavailable:
        return False
    return True


def _extractor() -> Callable[..., tuple[Definition, ...]]:
    """The extraction rules, imported on first use: they import tree-sitter."""
    try:
        from worktree_sandbox._symbol_rules import extract_definitions
    except ImportError as exc:
        raise SymbolsUnavailable(
            f"definitions need the 'symbols' extra (tree-sitter and its grammars): {INSTALL_HINT}"
            f" ({exc})"
        ) from exc
    return extract_definitions


def grammar_version() -> str:
    """What the disk cache keys on: the grammar pack's and tree-sitter's versions, and ours."""
    _extractor()
    from worktree_sandbox._symbol_rules import GRAMMAR_VERSION

    return GRAMMAR_VERSION


def _parse(source: bytes, language: str, max_bytes: int, timeout: float) -> tuple[Definition, ...]:
    """Definitions, () for a file too large or binary. Raises `_symbol_rules.ParseTimeout`, and
    anything else only on a bug in a rule."""
    extract = _extractor()
    if len(source) > max_bytes or b"\0" in source[:_BINARY_PROBE]:
        return ()
    return extract(bytes(source), language, timeout=timeout)


def parse_definitions(
    source: bytes,
    language: str,
    *,
    max_bytes: int = MAX_PARSE_BYTES,
    timeout: float = PARSE_TIMEOUT_S,
) -> tuple[Definition, ...]:
    """The definitions of one file's content, in document order (an outer one before its members).

    `language` is one of LANGUAGES (see `language_of`); ValueError for another. Content over
    `max_bytes`, binary content, a parse that takes over `timeout` seconds, or anything the
    rules fail on yields (): never an exception from a file's content. SymbolsUnavailable when
    the extra is missing.
    """
    _extractor()
    if language not in LANGUAGES:
        raise ValueError(f"no grammar for {language!r}; languages: {', '.join(LANGUAGES)}")
    try:
        return _parse(source, language, max_bytes, timeout)
    except Exception:
        return ()


def enclosing(definitions: Sequence[Definition], line: int) -> tuple[Definition, ...]:
    """The definitions whose span contains `line`, outermost first."""
    inside = [d for d in definitions if d.line <= line <= d.end_line]
    inside.sort(key=lambda d: (d.line, -d.end_line))
    return tuple(inside)


@dataclass(frozen=True)
class SymbolIndexStats:
    """What a `SymbolIndex` did since it was made."""

    parsed: int = 0  # contents parsed: neither cache had them
    memory_hits: int = 0
    disk_hits: int = 0
    skipped: int = 0  # no grammar, unreadable, a link out, binary, over the size cap
    timeouts: int = 0  # parses stopped at `parse_timeout` (yield (), not cached)
    failed: int = 0  # parses a rule failed on (a bug; the file yields (), not cached)
    disk_errors: int = 0  # cache reads or writes that failed (locked too long, disk full)
    rebuilt: int = 0  # corrupted cache files replaced


_Key = tuple[bytes, str]  # (sha256 of the content, language)


class SymbolIndex:
    """Definitions of a tree's files, each distinct file content parsed once.

    `cache_dir`: keep results on disk too, in `<cache_dir>/symbols/definitions.sqlite3` (a folder
    this package makes and marks; several processes may share it). `max_memory_files`: contents
    kept in memory (LRU). `max_file_bytes`: larger files yield (). `parse_timeout`: seconds one
    file may take (a crafted file yields () after it). `jobs`: files read and parsed at once by
    `defining` (parsing holds the interpreter's lock, so more jobs overlap reads with parses but
    do not parse in parallel).
    """

    def __init__(
        self,
        cache_dir: str | Path | None = None,
        *,
        max_memory_files: int = 4096,
        max_file_bytes: int = MAX_PARSE_BYTES,
        parse_timeout: float = PARSE_TIMEOUT_S,
        jobs: int = 4,
    ) -> None:
        if max_memory_files < 0 or max_file_bytes < 0 or parse_timeout <= 0 or jobs < 1:
            raise ValueError(
                "max_memory_files and max_file_bytes must be >= 0, parse_timeout > 0, jobs >= 1"
            )
        self.grammar = grammar_version()  # SymbolsUnavailable now, not at the first file
        self.max_memory_files = max_memory_files
        self.max_file_bytes = max_file_bytes
        self.parse_timeout = parse_timeout
        self.jobs = jobs
        self._lock = threading.Lock()  # the LRUs and counts: touched from worker threads too
        self._memory: OrderedDict[_Key, tuple[Definition, ...]] = OrderedDict()
        self._paths: OrderedDict[tuple[str, str], _Key] = OrderedDict()  # CommitTree files
        self._inflight: dict[_Key, asyncio.Future[tuple[Definition, ...]]] = {}
        self._counts: dict[str, int] = {}
        self._rebuilt_before_close = 0
        self._store: DefinitionStore | None = None
        if cache_dir is not None:
            from worktree_sandbox._symbol_cache import DefinitionStore

            self._store = DefinitionStore(Path(cache_dir).expanduser(), self.grammar)

    @property
    def cache_file(self) -> Path | None:
        """The SQLite file of the disk cache, if there is one."""
        return self._store.path if self._store is not None else None

    @property
    def stats(self) -> SymbolIndexStats:
        with self._lock:
            counts = dict(self._counts)
        store = self._store
        rebuilt = self._rebuilt_before_close + (store.rebuilt if store is not None else 0)
        return SymbolIndexStats(**counts, rebuilt=rebuilt)

    def close(self) -> None:
        """Close the disk cache (the memory cache stays usable)."""
        store, self._store = self._store, None
        if store is not None:
            self._rebuilt_before_close += store.rebuilt
            store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- the API --------------------------------------------------------------------------------

    async def definitions(self, tree: Tree, path: str) -> tuple[Definition, ...]:
        """The definitions of `path` in `tree`; () for a file with no grammar or that cannot be
        read (missing, a directory, a link out of the tree, too large, binary, a refused path).
        A link inside the tree is followed, as `read` follows it."""
        return await self._definitions(tree, path, follow_links=True)

    async def _definitions(
        self, tree: Tree, path: str, *, follow_links: bool
    ) -> tuple[Definition, ...]:
        language = language_of(path)
        if language is None or (not follow_links and not await self._is_file(tree, path)):
            self._count("skipped")
            return ()
        memo = (tree.memo_key, path) if tree.memo_key is not None else None
        if memo is not None:
            got = self._memory_by_path(memo)
            if got is not None:
                return got
        data = await self._read(tree, path)
        if data is None:
            self._count("skipped")
            return ()
        key = (hashlib.sha256(data).digest(), language)
        if memo is not None:
            self._remember_path(memo, key)
        got = self._memory_get(key)
        if got is not None:
            return got
        loop = asyncio.get_running_loop()
        task = self._inflight.get(key)
        if task is None or task.get_loop() is not loop:
            task = loop.create_task(asyncio.to_thread(self._load_or_parse, key, data))
            self._inflight[key] = task
            task.add_done_callback(lambda done: self._forget(key, done))
        # Shielded: a caller cancelled mid-parse leaves the result to the others and the cache.
        return await asyncio.shield(task)

    async def defining(
        self, tree: Tree, names: Iterable[str], paths: Iterable[str]
    ) -> dict[str, list[tuple[str, Definition]]]:
        """name -> [(path, definition)] for the definitions among `paths` with that bare name.

        Every name asked for is a key (an empty list when nothing defines it); each list is in
        the order of `paths`, then of lines. Links are skipped, as grep skips them (the file they
        point to is listed under its own path). Files are read and parsed `jobs` at a time.
        """
        out: dict[str, list[tuple[str, Definition]]] = {n: [] for n in names}
        targets = list(dict.fromkeys(paths))
        gate = asyncio.Semaphore(self.jobs)

        async def one(path: str) -> tuple[Definition, ...]:
            async with gate:
                return await self._definitions(tree, path, follow_links=False)

        found = await asyncio.gather(*(one(p) for p in targets))
        for path, definitions in zip(targets, found, strict=True):
            for d in definitions:
                hits = out.get(d.name)
                if hits is not None:
                    hits.append((path, d))
        return out

    # -- inside ---------------------------------------------------------------------------------

    def _forget(self, key: _Key, task: asyncio.Future[tuple[Definition, ...]]) -> None:
        if self._inflight.get(key) is task:
            del self._inflight[key]

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] = self._counts.get(name, 0) + n

    @staticmethod
    async def _is_file(tree: Tree, path: str) -> bool:
        try:
            clean = normalize_tool_path(path)
        except PathRefused:
            return False
        st = await tree._stat(clean) if clean else None
        return st is not None and st.kind == "file"

    async def _read(self, tree: Tree, path: str) -> bytes | None:
        """The file's bytes under the tools' rules: a refused path, a link out of the tree, a
        directory, a file over the cap or a binary one is None."""
        try:
            clean = normalize_tool_path(path)
        except PathRefused:
            return None
        if not clean:
            return None
        resolved = await tree._resolve_file(clean)  # links followed only inside the tree
        if isinstance(resolved, ReadResult):
            return None
        real, st = resolved
        if st.size < 0 or st.size > self.max_file_bytes:
            return None
        try:
            data = await tree.read_bytes(real)
        except (SandboxError, OSError):
            return None
        if len(data) > self.max_file_bytes or b"\0" in data[:_BINARY_PROBE]:
            return None
        return data

    def _memory_get(self, key: _Key) -> tuple[Definition, ...] | None:
        with self._lock:
            got = self._memory.get(key)
            if got is not None:
                self._memory.move_to_end(key)
                self._counts["memory_hits"] = self._counts.get("memory_hits", 0) + 1
            return got

    def _memory_put(self, key: _Key, definitions: tuple[Definition, ...]) -> None:
        if self.max_memory_files == 0:
            return
        with self._lock:
            self._memory[key] = definitions
            self._memory.move_to_end(key)
            while len(self._memory) > self.max_memory_files:
                self._memory.popitem(last=False)

    def _memory_by_path(self, memo: tuple[str, str]) -> tuple[Definition, ...] | None:
        """A CommitTree's file is immutable: its content key is remembered, skipping the read."""
        with self._lock:
            key = self._paths.get(memo)
        return self._memory_get(key) if key is not None else None

    def _remember_path(self, memo: tuple[str, str], key: _Key) -> None:
        with self._lock:
            self._paths[memo] = key
            self._paths.move_to_end(memo)
            while len(self._paths) > 4 * self.max_memory_files:
                self._paths.popitem(last=False)

    def _load_or_parse(self, key: _Key, data: bytes) -> tuple[Definition, ...]:
        """In a worker thread: the disk cache, else a parse (stored in both caches)."""
        from worktree_sandbox._symbol_cache import StoreError
        from worktree_sandbox._symbol_rules import ParseTimeout

        got = self._memory_get(key)
        if got is not None:
            return got
        store = self._store
        if store is not None:
            try:
                got = store.get(key)
            except StoreError:
                self._count("disk_errors")
            if got is not None:
                self._count("disk_hits")
                self._memory_put(key, got)
                return got
        try:
            definitions = _parse(data, key[1], self.max_file_bytes, self.parse_timeout)
        except ParseTimeout:
            self._count("timeouts")
            return ()  # not cached: a loaded machine may have been the cause
        except Exception:
            self._count("failed")
            return ()  # not cached: a fixed rule gets another chance
        self._count("parsed")
        self._memory_put(key, definitions)
        if store is not None:
            try:
                store.put(key, definitions)
            except StoreError:
                self._count("disk_errors")
        return definitions
