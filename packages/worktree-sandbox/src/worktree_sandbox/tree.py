"""The three tools over one tree: a commit of a repository, or a directory as it is.

`Tree` implements grep/glob/read once, over a small storage interface (`files`, `_stat`,
`read_bytes`, `_grep_raw`); `CommitTree` serves it from git objects and, once a read-only checkout
is ready in the background, greps the checkout with ripgrep; `DirectoryTree` serves a directory.
Every call goes through `Runtime`: a global concurrency limit (FIFO, so fair), a deadline that
kills the child, memoized results for immutable trees, and one run for identical calls in flight.
Not for: cloning or pooling (see `BareRepoCache`, `TreePool`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import tempfile
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self, TypeVar

from pydantic import ValidationError

from worktree_sandbox._git import (
    CappedOutput,
    CatFileBatch,
    ChildTimeout,
    TreeEntry,
    find_rg,
    git_env,
    parse_ls_tree,
    run_capped,
    safe_tree_path,
)
from worktree_sandbox._globs import GlobSyntaxError, compile_glob
from worktree_sandbox._liveness import owner_tag
from worktree_sandbox._materialize import materialize
from worktree_sandbox._owned import make_owned_dir, remove_owned
from worktree_sandbox._paths import PathRefused, is_within, normalize_tool_path
from worktree_sandbox._render import cap_line, cap_lines
from worktree_sandbox.errors import SandboxClosedError, SandboxError
from worktree_sandbox.models import (
    TOOL_ARGS,
    GlobArgs,
    GlobResult,
    GrepArgs,
    GrepMatch,
    GrepResult,
    ReadArgs,
    ReadResult,
    SandboxLimits,
    ToolErrorKind,
)

__all__ = ["CommitTree", "DirectoryTree", "Runtime", "Tree"]

AnyResult = GrepResult | GlobResult | ReadResult
_R = TypeVar("_R", GrepResult, GlobResult, ReadResult)
_RAW_CAP = 8 * 1024 * 1024  # bytes of backend output kept per grep; beyond it, "more than N"
_BINARY_PROBE = 8192
_ARGV_BYTES = 512 * 1024  # well under Linux's ARG_MAX (2 MiB incl. environment)
_ARGV_PATHS = 4000
_UNCACHEABLE = {ToolErrorKind.TIMEOUT, ToolErrorKind.INTERNAL}
# (path, line, raw text): the text is decoded only for the lines shown, since a broad pattern
# can match tens of thousands of lines of which a hundred are kept.
_RawMatch = tuple[str, int, bytes]


class Runtime:
    """What the trees of one pool share: limits, the concurrency gate and the result memo."""

    def __init__(self, limits: SandboxLimits | None = None) -> None:
        self.limits = limits or SandboxLimits()
        self.rg = find_rg()
        self._gate: asyncio.Semaphore | None = None
        self._memo: OrderedDict[tuple[str, str, str], AnyResult] = OrderedDict()
        self._inflight: dict[tuple[str, str, str], asyncio.Future[AnyResult | None]] = {}
        self.in_flight = 0
        self.peak_in_flight = 0
        self.memo_hits = 0

    @property
    def gate(self) -> asyncio.Semaphore:
        # Made lazily so that a Runtime can be built outside a running loop.
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.limits.max_concurrency)
        return self._gate

    def _remember(self, key: tuple[str, str, str], result: AnyResult) -> None:
        if self.limits.cache_entries == 0 or result.error in _UNCACHEABLE:
            return
        self._memo[key] = result
        self._memo.move_to_end(key)
        while len(self._memo) > self.limits.cache_entries:
            self._memo.popitem(last=False)

    async def run(
        self,
        key: tuple[str, str, str] | None,
        make: Callable[[float], Awaitable[_R]],
        on_error: Callable[[ToolErrorKind, str], _R],
    ) -> _R:
        """Run one tool call under the gate and the deadline; share it with identical calls."""
        start = time.perf_counter()
        if key is not None:
            hit = self._memo.get(key)
            if hit is not None:
                self._memo.move_to_end(key)
                self.memo_hits += 1
                return hit.model_copy(  # type: ignore[return-value]
                    update={"cached": True, "elapsed_ms": _ms(start)}
                )
            pending = self._inflight.get(key)
            if pending is not None:
                shared = await asyncio.shield(pending)
                if shared is None:  # the call it waited for was cancelled: run it here
                    return await self.run(key, make, on_error)
                self.memo_hits += 1
                return shared.model_copy(  # type: ignore[return-value]
                    update={"cached": True, "elapsed_ms": _ms(start)}
                )
        future: asyncio.Future[AnyResult | None] | None = None
        if key is not None:
            future = asyncio.get_running_loop().create_future()
            self._inflight[key] = future
        timeout = self.limits.timeout_s
        try:
            try:
                async with asyncio.timeout(timeout):
                    async with self.gate:
                        self.in_flight += 1
                        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
                        try:
                            result = await make(start + timeout)
                        finally:
                            self.in_flight -= 1
            except TimeoutError:
                result = on_error(
                    ToolErrorKind.TIMEOUT,
                    f"the call did not finish within {timeout:g} s and was stopped. Narrow it: "
                    "a more specific pattern, a path=, or a glob=",
                )
            except Exception as exc:  # a tool call never ends a rollout
                result = on_error(ToolErrorKind.INTERNAL, f"the sandbox failed: {exc}")
            result = result.model_copy(update={"elapsed_ms": _ms(start)})
            if key is not None:
                self._remember(key, result)
            if future is not None and not future.done():
                future.set_result(result)
            return result
        except BaseException:
            # Cancelled (its rollout was stopped): the calls waiting on this one must not be
            # cancelled with it, so they are told to run it themselves.
            if future is not None and not future.done():
                future.set_result(None)
            raise
        finally:
            if key is not None:
                self._inflight.pop(key, None)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 3)


@dataclass(frozen=True)
class _Stat:
    kind: Literal["file", "symlink", "dir"]
    size: int = 0
    target: str = ""  # symlinks: the link text


def _error(kind: ToolErrorKind, message: str, cls: type[_R], **extra: Any) -> _R:
    return cls(ok=False, error=kind, text=f"Error: {message}", **extra)


class Tree(ABC):
    """grep/glob/read over a tree of files; subclasses provide storage and a grep backend."""

    #: identifies the tree's content in the memo; None disables memoization (mutable trees)
    memo_key: str | None = None

    def __init__(self, runtime: Runtime | None = None) -> None:
        self.runtime = runtime or Runtime()
        self._dirs: frozenset[str] | None = None
        self._closed = False

    # -- storage interface ----------------------------------------------------------------------

    @abstractmethod
    async def files(self) -> tuple[str, ...]:
        """Every file (and symlink) of the tree, repository-relative, sorted."""

    @abstractmethod
    async def _stat(self, path: str) -> _Stat | None: ...

    @abstractmethod
    async def _sizes(self) -> Mapping[str, int]:
        """Bytes of every regular file of `files()` (symlinks left out; -1: content absent)."""

    @abstractmethod
    async def read_bytes(self, path: str) -> bytes:
        """Raw content of a file of the tree (no checks; raises SandboxError when missing)."""

    @abstractmethod
    async def _grep_raw(
        self, args: GrepArgs, targets: list[str] | None, deadline: float
    ) -> tuple[list[_RawMatch], bool, str]:
        """Matches as (path, line, text), whether output overflowed, backend name."""

    async def close(self) -> None:
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- shared structure -----------------------------------------------------------------------

    async def _directories(self) -> frozenset[str]:
        if self._dirs is None:
            dirs: set[str] = {""}
            for f in await self.files():
                parts = f.split("/")[:-1]
                for i in range(1, len(parts) + 1):
                    dirs.add("/".join(parts[:i]))
            self._dirs = frozenset(dirs)
        return self._dirs

    async def listing(self, directory: str = "", limit: int = 200) -> list[str]:
        """Immediate children of a directory, directories first with a trailing '/'."""
        prefix = f"{directory}/" if directory else ""
        subdirs: set[str] = set()
        names: list[str] = []
        for f in await self.files():
            if not f.startswith(prefix):
                continue
            rest = f[len(prefix) :]
            head, sep, _ = rest.partition("/")
            if sep:
                subdirs.add(head + "/")
            else:
                names.append(head)
        return (sorted(subdirs) + sorted(names))[:limit]

    async def _scope(self, path: str | None) -> tuple[str, list[str]]:
        """The search root and the files under it (the root itself when it is a file)."""
        root = normalize_tool_path(path)
        files = await self.files()
        if root == "":
            return root, list(files)
        if root in (await self._directories()):
            prefix = root + "/"
            return root, [f for f in files if f.startswith(prefix)]
        st = await self._stat(root)
        if st is not None and st.kind != "dir":
            return root, [root]
        raise FileNotFoundError(root)

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxClosedError("the tree was closed")

    def _key(self, tool: str, args: GrepArgs | GlobArgs | ReadArgs) -> tuple[str, str, str] | None:
        if self.memo_key is None:
            return None
        return (self.memo_key, tool, args.model_dump_json())

    # -- the tools ------------------------------------------------------------------------------

    async def call(self, name: str, arguments: Mapping[str, Any] | str | None) -> AnyResult:
        """Run a tool by name with raw arguments (a dict or a JSON string), as a model sends them.

        Unknown tools and invalid arguments come back as results with INVALID_ARGUMENTS.
        """
        model = TOOL_ARGS.get(name)
        if model is None:
            known = ", ".join(sorted(TOOL_ARGS))
            return _error(
                ToolErrorKind.INVALID_ARGUMENTS,
                f"unknown tool {name!r}; tools: {known}",
                GrepResult,
            )
        try:
            raw = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
            if not isinstance(raw, dict):
                raise TypeError("arguments must be a JSON object")
            args = model.model_validate(raw)
        except (ValueError, TypeError, ValidationError) as exc:
            message = _explain(name, exc)
            if name == "grep":
                return _error(ToolErrorKind.INVALID_ARGUMENTS, message, GrepResult)
            if name == "glob":
                return _error(ToolErrorKind.INVALID_ARGUMENTS, message, GlobResult)
            return _error(ToolErrorKind.INVALID_ARGUMENTS, message, ReadResult)
        if isinstance(args, GrepArgs):
            return await self.grep(args)
        if isinstance(args, GlobArgs):
            return await self.glob(args)
        return await self.read(args)

    async def glob(self, args: GlobArgs) -> GlobResult:
        self._check_open()
        return await self.runtime.run(
            self._key("glob", args),
            lambda deadline: self._glob(args),
            lambda kind, msg: _error(kind, msg, GlobResult),
        )

    async def read(self, args: ReadArgs) -> ReadResult:
        self._check_open()
        return await self.runtime.run(
            self._key("read", args),
            lambda deadline: self._read(args),
            lambda kind, msg: _error(kind, msg, ReadResult, path=args.path),
        )

    async def grep(self, args: GrepArgs) -> GrepResult:
        self._check_open()
        return await self.runtime.run(
            self._key("grep", args),
            lambda deadline: self._grep(args, deadline),
            lambda kind, msg: _error(kind, msg, GrepResult),
        )

    async def _glob(self, args: GlobArgs) -> GlobResult:
        limits = self.runtime.limits
        try:
            root, scope = await self._scope(args.path)
            regex = compile_glob(args.pattern)
        except PathRefused as exc:
            return _error(ToolErrorKind.INVALID_PATH, str(exc), GlobResult)
        except FileNotFoundError:
            return _error(ToolErrorKind.NOT_FOUND, f"no directory '{args.path}'", GlobResult)
        except GlobSyntaxError as exc:
            return _error(ToolErrorKind.INVALID_PATTERN, str(exc), GlobResult)
        cut = len(root) + 1 if root else 0
        matched = [f for f in scope if regex.match(f[cut:])]
        if not matched:
            where = f" under '{root}'" if root else ""
            return GlobResult(text=f"No files match '{args.pattern}'{where}.", total_paths=0)
        lines, truncated = cap_lines(
            matched, max_lines=limits.max_output_lines, max_bytes=limits.max_output_bytes
        )
        text = "\n".join(lines)
        if truncated:
            text += (
                f"\n[truncated: showing {len(lines)} of {len(matched)} paths. Narrow the call: "
                "a more specific pattern or a path= directory.]"
            )
        return GlobResult(
            text=text, truncated=truncated, paths=tuple(lines), total_paths=len(matched)
        )

    async def _resolve_file(self, path: str) -> tuple[str, _Stat] | ReadResult:
        """Follow symlinks inside the tree; a ReadResult error when the path is not a file."""
        seen = 0
        current = path
        while True:
            st = await self._stat(current)
            if st is None:
                return await self._not_found(path)
            if st.kind == "dir":
                entries = await self.listing(current)
                shown = "\n".join(entries) if entries else "(empty)"
                return _error(
                    ToolErrorKind.IS_DIRECTORY,
                    f"'{path}' is a directory. Its entries:\n{shown}",
                    ReadResult,
                    path=path,
                )
            if st.kind == "file":
                return current, st
            seen += 1
            parent = current.rpartition("/")[0]
            target = is_within(parent, st.target)
            if target is None or seen > 8:
                return _error(
                    ToolErrorKind.INVALID_PATH,
                    f"'{path}' is a symlink that points outside the repository",
                    ReadResult,
                    path=path,
                )
            current = target

    async def _not_found(self, path: str) -> ReadResult:
        base = path.rsplit("/", 1)[-1]
        similar = [f for f in await self.files() if f.rsplit("/", 1)[-1] == base][:5]
        hint = f" Files with that name: {', '.join(similar)}." if similar else ""
        return _error(ToolErrorKind.NOT_FOUND, f"no file '{path}'.{hint}", ReadResult, path=path)

    async def _read(self, args: ReadArgs) -> ReadResult:
        limits = self.runtime.limits
        try:
            path = normalize_tool_path(args.path)
        except PathRefused as exc:
            return _error(ToolErrorKind.INVALID_PATH, str(exc), ReadResult, path=args.path)
        if path == "":
            entries = "\n".join(await self.listing(""))
            return _error(
                ToolErrorKind.IS_DIRECTORY,
                f"the repository root is a directory. Its entries:\n{entries}",
                ReadResult,
                path=args.path,
            )
        resolved = await self._resolve_file(path)
        if isinstance(resolved, ReadResult):
            return resolved
        real, st = resolved
        if st.size < 0:
            return _error(
                ToolErrorKind.NOT_FOUND,
                f"the content of '{path}' is not in this clone (a partial mirror)",
                ReadResult,
                path=path,
            )
        if st.size > limits.max_file_bytes:
            return _error(
                ToolErrorKind.FILE_TOO_LARGE,
                f"'{path}' has {st.size:,} bytes (limit {limits.max_file_bytes:,}). "
                f"Search it instead: grep with path='{path}'.",
                ReadResult,
                path=path,
            )
        data = await self.read_bytes(real)
        if b"\0" in data[:_BINARY_PROBE]:
            return _error(
                ToolErrorKind.BINARY_FILE,
                f"'{path}' is a binary file ({len(data):,} bytes); only text files can be read",
                ReadResult,
                path=path,
            )
        lines = data.decode("utf-8", errors="replace").splitlines()
        total = len(lines)
        if total == 0:
            return ReadResult(text="(empty file)", path=path, total_lines=0)
        start = args.start_line or 1
        if start > total:
            return _error(
                ToolErrorKind.INVALID_ARGUMENTS,
                f"start_line={start} is past the end: '{path}' has {total} lines",
                ReadResult,
                path=path,
                total_lines=total,
            )
        if args.end_line is not None and args.end_line < start:
            return _error(
                ToolErrorKind.INVALID_ARGUMENTS,
                f"end_line={args.end_line} is before start_line={start}",
                ReadResult,
                path=path,
                total_lines=total,
            )
        asked_end = min(args.end_line or total, total)
        end = min(asked_end, start + limits.max_read_lines - 1)
        width = len(str(end))
        rendered = [
            f"{n:>{width}}\t{cap_line(lines[n - 1], limits.max_line_chars)}"
            for n in range(start, end + 1)
        ]
        kept, cut = cap_lines(
            rendered, max_lines=limits.max_output_lines * 4, max_bytes=limits.max_output_bytes
        )
        shown_end = start + len(kept) - 1
        truncated = cut or shown_end < asked_end
        text = "\n".join(kept)
        if truncated:
            text += (
                f"\n[truncated: showed lines {start}-{shown_end} of {total}. Read on with "
                f"start_line={shown_end + 1}, or grep with path='{path}' for the part you need.]"
            )
        return ReadResult(
            text=text,
            truncated=truncated,
            path=path,
            start_line=start,
            end_line=shown_end,
            total_lines=total,
            content="\n".join(lines[start - 1 : shown_end]),
        )

    async def _grep(self, args: GrepArgs, deadline: float) -> GrepResult:
        limits = self.runtime.limits
        targets: list[str] | None = None
        sizes = await self._sizes()
        try:
            if args.path is not None or args.glob is not None:
                root, scope = await self._scope(args.path)
                if args.glob is not None:
                    regex = compile_glob(args.glob)
                    cut = len(root) + 1 if root and root in (await self._directories()) else 0
                    scope = [f for f in scope if regex.match(f[cut:] if cut else f)]
                targets = await self._regular(scope)
                if not targets:
                    return GrepResult(
                        text=f"No files to search: nothing matches path={args.path!r}, "
                        f"glob={args.glob!r}.",
                    )
        except PathRefused as exc:
            return _error(ToolErrorKind.INVALID_PATH, str(exc), GrepResult)
        except FileNotFoundError:
            return _error(
                ToolErrorKind.NOT_FOUND, f"no file or directory '{args.path}'", GrepResult
            )
        except GlobSyntaxError as exc:
            return _error(ToolErrorKind.INVALID_PATTERN, str(exc), GrepResult)
        # One size policy for every backend: files over max_file_bytes are not searched (ripgrep's
        # --max-filesize; git grep is given the other files), and the result says which.
        cap = limits.max_file_bytes
        if targets is None:
            large = sorted(f for f, n in sizes.items() if n > cap)
            if large:
                targets = sorted(f for f, n in sizes.items() if 0 <= n <= cap)
        else:
            large = [f for f in targets if sizes.get(f, 0) > cap]
            if large:
                skip = set(large)
                targets = [f for f in targets if f not in skip]
        note = _large_note(large, cap)
        if targets is not None and not targets:
            return GrepResult(
                text=f"No matches for {args.pattern!r}.{note}", skipped_large=tuple(large)
            )
        try:
            raw, overflowed, backend = await self._grep_raw(args, targets, deadline)
        except _PatternError as exc:
            return _error(ToolErrorKind.INVALID_PATTERN, str(exc), GrepResult)
        except ChildTimeout:
            raise TimeoutError from None
        if large:
            skip = set(large)
            raw = [m for m in raw if m[0] not in skip]
        raw.sort(key=lambda m: (m[0], m[1]))
        total = len(raw)
        if total == 0:
            return GrepResult(
                text=f"No matches for {args.pattern!r}.{note}",
                backend=backend,
                skipped_large=tuple(large),
            )
        # Lines are capped once, here, for the text and the structured matches alike: a
        # backend's raw line may be megabytes long.
        width = limits.max_line_chars
        shown = [
            (p, n, cap_line(t.decode("utf-8", errors="replace").rstrip("\r"), width))
            for p, n, t in raw[: args.max_results]
        ]
        rendered = [f"{p}:{n}: {t}" for p, n, t in shown]
        kept, cut = cap_lines(
            rendered, max_lines=limits.max_output_lines, max_bytes=limits.max_output_bytes
        )
        truncated = cut or total > len(kept) or overflowed
        text = "\n".join(kept) + note
        if truncated:
            files = len({p for p, _, _ in raw})
            count = f"more than {total:,}" if overflowed else f"{total:,}"
            text += (
                f"\n[truncated: showing {len(kept)} of {count} matching lines in {files:,}"
                f"{'+' if overflowed else ''} files. Narrow the search: a more specific pattern, "
                "path='dir/', or glob='*.py'.]"
            )
        matches = tuple(GrepMatch(path=p, line=n, text=t) for p, n, t in shown[: len(kept)])
        return GrepResult(
            text=text,
            truncated=truncated,
            matches=matches,
            total_matches=total,
            backend=backend,
            skipped_large=tuple(large),
        )

    async def _regular(self, paths: list[str]) -> list[str]:
        """Drop symlinks: grep searches files, never what a link points to (as ripgrep does)."""
        out = []
        for p in paths:
            st = await self._stat(p)
            if st is not None and st.kind == "file":
                out.append(p)
        return out


class _PatternError(Exception):
    pass


def _explain(tool: str, exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(x) for x in err['loc']) or 'arguments'}: {err['msg']}"
            for err in exc.errors()
        )
        fields = ", ".join(TOOL_ARGS[tool].model_fields)
        return f"invalid arguments for {tool}: {problems}. Accepted fields: {fields}"
    return f"invalid arguments for {tool}: {exc}"


def _parse_rg(raw: bytes, prefix: str = "") -> list[_RawMatch]:
    """Parse `rg --null --line-number` output: 'path\\0line:text' lines."""
    out: list[_RawMatch] = []
    for line in raw.split(b"\n"):
        path, sep, rest = line.partition(b"\0")
        if not sep:
            continue
        num, sep, text = rest.partition(b":")
        if not sep or not num.isdigit():
            continue
        name = path.decode("utf-8", errors="surrogateescape").removeprefix("./")
        out.append((prefix + name, int(num), text))
    return out


def _parse_git_grep(raw: bytes, rev_prefix: str) -> list[_RawMatch]:
    """Parse `git grep -z -n` output: '[rev:]path\\0line\\0text' lines."""
    out: list[_RawMatch] = []
    cut = len(rev_prefix)
    for line in raw.split(b"\n"):
        parts = line.split(b"\0", 2)
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        name = parts[0][cut:].decode("utf-8", errors="surrogateescape")
        out.append((name, int(parts[1]), parts[2]))
    return out


def _large_note(large: list[str], cap: int) -> str:
    if not large:
        return ""
    names = ", ".join(cap_line(n, 200) for n in large[:3])
    names += f" and {len(large) - 3:,} more" if len(large) > 3 else ""
    return f"\n[not searched: {len(large):,} file(s) over the {cap:,}-byte limit: {names}]"


def _pattern_message(stderr: bytes) -> str:
    msg = stderr.decode(errors="replace").strip()
    msg = msg.replace("rg: ", "").replace("fatal: ", "")
    return f"invalid regular expression: {msg[:400]}" if msg else "invalid regular expression"


def rg_flags(max_file_bytes: int) -> list[str]:
    """ripgrep's flags for a tool call (the benchmark's raw-ripgrep baseline uses them too)."""
    return [
        "--no-config", "--hidden", "--no-messages", "--line-number", "--with-filename",
        "--no-heading", "--color=never", "--null", f"--max-filesize={max_file_bytes}",
    ]  # fmt: skip


async def _git_grep(
    base: list[str],
    rev: str | None,
    args: GrepArgs,
    targets: list[str] | None,
    *,
    cwd: Path | None,
    deadline: float,
    git_dir: Path | None,
) -> tuple[list[_RawMatch], bool]:
    """`git grep` on a commit object (`rev`), or on the folder `cwd` when `rev` is None."""
    if targets is not None and sum(len(t) + 1 for t in targets) > _ARGV_BYTES:
        found: list[_RawMatch] = []
        for i in range(0, len(targets), _ARGV_PATHS):
            part, over = await _git_grep(
                base, rev, args, targets[i : i + _ARGV_PATHS], cwd=cwd, deadline=deadline,
                git_dir=git_dir,
            )  # fmt: skip
            found += part
            if over:
                return found, True
        return found, False
    objects = [rev] if rev else []
    out = await _run_git_grep(base, objects, args, targets or [], cwd, deadline, git_dir)
    matches = _parse_git_grep(out.stdout, f"{rev}:" if rev else "")
    if out.overflowed and matches:
        matches = matches[:-1]  # the last line may be cut
    return matches, out.overflowed


async def _git_grep_blobs(
    base: list[str],
    paths_of: Mapping[str, list[str]],
    args: GrepArgs,
    *,
    deadline: float,
    git_dir: Path,
) -> tuple[list[_RawMatch], bool]:
    """`git grep` on blobs by id (blob -> the paths that hold it), for trees whose paths git
    would resolve otherwise than we serve them (duplicate entries)."""
    oids = sorted(paths_of)
    found: list[_RawMatch] = []
    if not oids:
        return found, False  # nothing to search (without objects, git grep reads the folder)
    for i in range(0, len(oids), _ARGV_PATHS):
        part = oids[i : i + _ARGV_PATHS]
        out = await _run_git_grep(base, part, args, [], None, deadline, git_dir)
        for oid, line, text in _parse_git_grep(out.stdout, ""):
            found += [(path, line, text) for path in paths_of.get(oid, ())]
        if out.overflowed:
            return found[:-1] if found else found, True
    return found, False


async def _run_git_grep(
    base: list[str],
    objects: list[str],
    args: GrepArgs,
    pathspec: list[str],
    cwd: Path | None,
    deadline: float,
    git_dir: Path | None,
) -> CappedOutput:
    flavour = "-P" if await _git_has_pcre() else "-E"
    argv = [*base, "grep", *([] if objects else ["--no-index"]), "-n", "-z", "-I", "--no-color"]
    argv.append(flavour)
    if args.ignore_case:
        argv.append("-i")
    argv += ["-e", args.pattern, *objects, "--", *pathspec]
    out = await run_capped(
        argv,
        cwd=cwd,
        timeout=max(0.05, deadline - time.perf_counter()),
        max_stdout=_RAW_CAP,
        git_dir=git_dir,
    )
    if out.returncode not in (0, 1) and not out.overflowed:
        if b"unable to read" in out.stderr or b"bad object" in out.stderr:
            raise SandboxError(
                "the clone lacks objects git grep needs: "
                f"{out.stderr.decode(errors='replace').strip()[:300]}"
            )
        raise _PatternError(_pattern_message(out.stderr))
    return out


async def _rg(
    rg: str,
    cwd: Path,
    args: GrepArgs,
    targets: list[str] | None,
    deadline: float,
    max_file_bytes: int,
    extra: tuple[str, ...] = (),
) -> tuple[list[_RawMatch], bool]:
    argv = [rg, *rg_flags(max_file_bytes), *extra]
    if args.ignore_case:
        argv.append("--ignore-case")
    argv += ["--regexp", args.pattern]
    if targets is not None and sum(len(t) + 1 for t in targets) > _ARGV_BYTES:
        # Too many paths for one command line: search them in slices, one after the other.
        found: list[_RawMatch] = []
        overflowed = False
        for i in range(0, len(targets), _ARGV_PATHS):
            part, over = await _rg(
                rg, cwd, args, targets[i : i + _ARGV_PATHS], deadline, max_file_bytes, extra
            )
            found += part
            overflowed = overflowed or over
            if overflowed:
                break
        return found, overflowed
    if targets is not None:
        argv += ["--", *targets]
    out = await run_capped(
        argv, cwd=cwd, timeout=max(0.05, deadline - time.perf_counter()), max_stdout=_RAW_CAP
    )
    if out.overflowed:
        # Parallel output was cut at an arbitrary place: again in path order, so the kept
        # prefix (and so the answer) is the same on every run.
        out = await run_capped(
            [*argv[:1], "--sort=path", *argv[1:]],
            cwd=cwd,
            timeout=max(0.05, deadline - time.perf_counter()),
            max_stdout=_RAW_CAP,
        )
        matches = _parse_rg(out.stdout)
        if out.overflowed and matches:
            matches = matches[:-1]  # the last line may be cut
        return matches, True
    if out.returncode == 2 and not out.stdout:
        # ripgrep says 2 for a bad pattern, and also when it had no file to search at all (an
        # empty checkout): only the first is the caller's error.
        await _check_pattern(rg, args.pattern)
    return _parse_rg(out.stdout), False


class CommitTree(Tree):
    """A repository at one commit: reads from git objects, grep on a background checkout.

    Setup costs only a commit check; the file list (`git ls-tree`) and a read-only checkout
    (written from the blobs into `checkout_parent`, tmpfs by default) are made in the background.
    Until the checkout is ready, grep runs `git grep` on the commit object; then ripgrep. Tree
    entries no checkout could hold safely ('..', '.git', duplicates, a path below a file or
    link) are left out of every backend and listed in `refused_entries`.
    """

    def __init__(
        self,
        git_dir: Path,
        commit: str,
        *,
        runtime: Runtime | None = None,
        batch: CatFileBatch | None = None,
        checkout_parent: Path | None = None,
        label: str | None = None,
    ) -> None:
        super().__init__(runtime)
        self.git_dir = git_dir
        self.commit = commit
        self.label = label or f"{git_dir.name}@{commit[:12]}"
        self.memo_key = f"{git_dir}@{commit}"
        self._batch = batch or CatFileBatch(git_dir)
        self._own_batch = batch is None
        self._entries: dict[str, TreeEntry] | None = None
        self._sorted: tuple[str, ...] | None = None
        self._list_task: asyncio.Task[dict[str, TreeEntry]] | None = None
        self._checkout_parent = checkout_parent
        self._checkout_task: asyncio.Task[Path | None] | None = None
        self.checkout: Path | None = None
        self._holder: Path | None = None
        self.checkout_seconds: float | None = None
        self.refused_entries: tuple[str, ...] = ()
        self._sizes_map: dict[str, int] | None = None

    def start(self) -> None:
        """Begin the background work (file list, checkout); called by the pool on setup."""
        loop = asyncio.get_running_loop()
        if self._list_task is None:
            self._list_task = loop.create_task(self._list())
        if self._checkout_parent is not None and self._checkout_task is None:
            self._checkout_task = loop.create_task(self._materialize(self._checkout_parent))

    async def wait_checkout(self) -> Path | None:
        """The checkout folder once ready (None when there is none to wait for)."""
        return await self._checkout_task if self._checkout_task is not None else None

    async def _list(self) -> dict[str, TreeEntry]:
        out = await run_capped(
            ["git", f"--git-dir={self.git_dir}", "ls-tree", "-r", "-z", "-l", "--full-tree",
             self.commit],
            cwd=None, timeout=120.0, max_stdout=1 << 30, git_dir=self.git_dir,
        )  # fmt: skip
        if out.returncode != 0:
            raise SandboxError(f"git ls-tree {self.commit} failed: {out.stderr.decode().strip()}")
        entries, refused = parse_ls_tree(out.stdout)
        self.refused_entries = tuple(refused)
        return entries

    async def _entries_map(self) -> dict[str, TreeEntry]:
        if self._entries is None:
            if self._list_task is None:
                self.start()
            assert self._list_task is not None
            self._entries = await asyncio.shield(self._list_task)
        return self._entries

    async def files(self) -> tuple[str, ...]:
        if self._sorted is None:
            self._sorted = tuple(sorted(await self._entries_map()))
        return self._sorted

    async def _sizes(self) -> Mapping[str, int]:
        if self._sizes_map is None:
            entries = await self._entries_map()
            self._sizes_map = {p: e.size for p, e in entries.items() if not e.is_symlink}
        return self._sizes_map

    async def _stat(self, path: str) -> _Stat | None:
        entries = await self._entries_map()
        entry = entries.get(path)
        if entry is not None:
            if entry.is_symlink:
                got = await self._batch.get(entry.oid)
                target = got[1].decode("utf-8", errors="surrogateescape") if got else ""
                return _Stat("symlink", entry.size, target)
            return _Stat("file", entry.size)
        if path in await self._directories():
            return _Stat("dir")
        return None

    async def read_bytes(self, path: str) -> bytes:
        entry = (await self._entries_map()).get(path)
        got = await self._batch.get(entry.oid) if entry is not None else None
        if got is None:
            raise SandboxError(f"no file {path!r} at {self.label}")
        return got[1]

    async def _materialize(self, parent: Path) -> Path | None:
        """Write the commit read-only into a fresh folder; None when that failed."""
        entries = await self._entries_map()
        start = time.perf_counter()
        # The marked holder is what gets removed; ripgrep searches `tree/` inside it, where
        # nothing but the commit's files is.
        parent.mkdir(parents=True, exist_ok=True)
        holder = make_owned_dir(parent / f"{self.commit[:12]}-{uuid.uuid4().hex[:8]}", owner_tag())
        self._holder = holder
        dest = holder / "tree"
        os.mkdir(dest, 0o700)
        stop = threading.Event()
        work = asyncio.ensure_future(
            asyncio.to_thread(materialize, self.git_dir, sorted(entries.items()), dest, stop)
        )
        try:
            done = await asyncio.shield(work)
        except asyncio.CancelledError:
            stop.set()
            with contextlib.suppress(BaseException):
                await work
            remove_owned(holder)
            raise
        except (OSError, ValueError, IndexError):
            done = False
        if not done:
            remove_owned(holder)
            return None
        self.checkout = dest
        self.checkout_seconds = time.perf_counter() - start
        return dest

    @property
    def checkout_ready(self) -> bool:
        return self.checkout is not None

    async def _grep_raw(
        self, args: GrepArgs, targets: list[str] | None, deadline: float
    ) -> tuple[list[_RawMatch], bool, str]:
        rg = self.runtime.rg
        if self.checkout is not None and rg is not None:
            matches, overflowed = await _rg(
                rg, self.checkout, args, targets, deadline, self.runtime.limits.max_file_bytes,
                extra=("--no-ignore",),
            )  # fmt: skip
            return matches, overflowed, "ripgrep"
        if rg is None:
            return await self._git_grep(args, targets, deadline)
        await _check_pattern(rg, args.pattern)
        # git grep stops at a blob the clone lacks; the checkout simply has no such file.
        partial = any(e.size < 0 for e in (await self._entries_map()).values())
        if partial and await self._checkout_coming():
            return await self._grep_raw(args, targets, deadline)
        try:
            return await self._git_grep(args, targets, deadline)
        except _PatternError as exc:
            # ripgrep accepted the pattern but PCRE2 refused it ('(?u)', 'a{100000}') or gave
            # up on it (its match limit): ripgrep on the checkout answers, as it will for the
            # same call once the checkout is ready, so the answer never depends on timing.
            if await self._checkout_coming():
                return await self._grep_raw(args, targets, deadline)
            raise _PatternError(
                f"{exc} (git grep cannot run this pattern, and this tree has no checkout for "
                "ripgrep: simplify the pattern)"
            ) from None

    async def _checkout_coming(self) -> bool:
        """Wait for the checkout when one is being made; whether there is one now."""
        if self._checkout_task is None:
            return False
        return await asyncio.shield(self._checkout_task) is not None

    async def _git_grep(
        self, args: GrepArgs, targets: list[str] | None, deadline: float
    ) -> tuple[list[_RawMatch], bool, str]:
        base = ["git", f"--git-dir={self.git_dir}"]
        entries = await self._entries_map()
        if self.refused_entries:
            # A crafted tree: git would also search what we left out (the second of duplicate
            # names, what lies below a link), so the blobs we serve are searched by id.
            paths_of: dict[str, list[str]] = {}
            for name in targets if targets is not None else list(entries):
                entry = entries[name]
                if not entry.is_symlink and entry.size >= 0:
                    paths_of.setdefault(entry.oid, []).append(name)
            matches, overflowed = await _git_grep_blobs(
                base, paths_of, args, deadline=deadline, git_dir=self.git_dir
            )
            return matches, overflowed, "git-grep"
        matches, overflowed = await _git_grep(
            base, self.commit, args, targets, cwd=None, deadline=deadline, git_dir=self.git_dir
        )
        # git grep searches symlink blobs (the link text); ripgrep does not. Keep them equal.
        matches = [m for m in matches if not entries[m[0]].is_symlink] if entries else matches
        return matches, overflowed, "git-grep"

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for task in (self._list_task, self._checkout_task):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self._checkout_task is not None and self._checkout_task.done():
            with contextlib.suppress(BaseException):
                self._checkout_task.result()
        if self._holder is not None:
            remove_owned(self._holder)
            self._holder = None
            self.checkout = None
        if self._own_batch:
            await self._batch.close()


_PCRE: bool | None = None


async def _git_has_pcre() -> bool:
    """Whether this git was built with PCRE (`grep -P`); asked once, in an empty folder."""
    global _PCRE
    if _PCRE is None:
        with tempfile.TemporaryDirectory() as empty:
            probe = Path(empty) / "probe"
            probe.write_text("x\n")
            proc = await asyncio.create_subprocess_exec(
                "git", "grep", "--no-index", "-q", "-P", "-e", r"\x78", "--", "probe",
                cwd=empty, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
                env=git_env(),
            )  # fmt: skip
            _PCRE = (await proc.wait()) == 0
    return _PCRE


async def _check_pattern(rg: str, pattern: str) -> None:
    """Refuse what ripgrep would refuse, so a call's answer never depends on which backend ran."""
    out = await run_capped(
        [rg, "--no-config", "--quiet", "--regexp", pattern, "--", os.devnull],
        cwd=None,
        timeout=5.0,
        max_stdout=1 << 16,
    )
    if out.returncode == 2:
        raise _PatternError(_pattern_message(out.stderr))


class DirectoryTree(Tree):
    """A directory as it is (a git working tree with its uncommitted changes, or any folder).

    In a git working tree the files are the tracked and untracked-but-not-ignored ones; elsewhere
    every file below the root except `.git`. The file list (and each file's size) is read once,
    when first needed. Results are not memoized: a working tree can change. The repository's own
    git config is untrusted: git runs with every program-running key pinned (see `git_env`).
    """

    def __init__(self, root: str | os.PathLike[str], runtime: Runtime | None = None) -> None:
        super().__init__(runtime)
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise SandboxError(f"{root} is not a directory")
        self._files: tuple[str, ...] | None = None
        self._file_set: frozenset[str] = frozenset()
        self._size_of: dict[str, int] = {}
        self._git_dir = self.root / ".git"
        self._is_git = self._git_dir.exists()

    async def files(self) -> tuple[str, ...]:
        if self._files is None:
            self._files = await asyncio.to_thread(self._scan)
            self._file_set = frozenset(self._files)
        return self._files

    async def _sizes(self) -> Mapping[str, int]:
        await self.files()
        return self._size_of

    def _scan(self) -> tuple[str, ...]:
        names = self._git_names() if self._is_git else None
        if names is None:
            names = []
            for dirpath, dirs, files in os.walk(self.root):
                dirs[:] = [d for d in dirs if d != ".git"]
                rel = os.path.relpath(dirpath, self.root)
                for f in files:
                    names.append(f if rel == "." else f"{rel}/{f}".replace(os.sep, "/"))
        kept: list[str] = []
        for name in sorted(set(names)):
            if not safe_tree_path(name):
                continue  # no tool call could name it (see `safe_tree_path`)
            try:
                st = os.lstat(self.root / name)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                self._size_of[name] = st.st_size
            elif not stat.S_ISLNK(st.st_mode):
                continue
            kept.append(name)
        return tuple(kept)

    def _git_names(self) -> list[str] | None:
        """Tracked and untracked-but-not-ignored files, or None when git cannot say."""
        import subprocess

        proc = subprocess.run(
            ["git", f"--git-dir={self._git_dir}", f"--work-tree={self.root}", "ls-files", "-z",
             "--cached", "--others", "--exclude-standard"],
            capture_output=True, env=git_env(self._git_dir), check=False, timeout=120,
            stdin=subprocess.DEVNULL, cwd=self.root,
        )  # fmt: skip
        if proc.returncode != 0:
            return None
        return [n.decode("utf-8", errors="surrogateescape") for n in proc.stdout.split(b"\0") if n]

    async def _stat(self, path: str) -> _Stat | None:
        full = self.root / path
        try:
            st = os.lstat(full)
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return _Stat("symlink", st.st_size, os.readlink(full))
        if stat.S_ISDIR(st.st_mode):
            return _Stat("dir") if path in await self._directories() or path == "" else None
        await self.files()
        if stat.S_ISREG(st.st_mode) and path in self._file_set:
            return _Stat("file", st.st_size)
        return None

    async def read_bytes(self, path: str) -> bytes:
        full = (self.root / path).resolve()
        if not full.is_relative_to(self.root):
            raise SandboxError(f"{path!r} resolves outside {self.root}")
        cap = self.runtime.limits.max_file_bytes
        try:
            return await asyncio.to_thread(_read_regular, full, cap)
        except OSError as exc:
            raise SandboxError(f"cannot read {path!r}: {exc}") from exc

    async def _grep_raw(
        self, args: GrepArgs, targets: list[str] | None, deadline: float
    ) -> tuple[list[_RawMatch], bool, str]:
        rg = self.runtime.rg
        if rg is not None:
            # The whole tree: ripgrep's own ignore rules (.gitignore, .ignore) stand in for
            # `git ls-files --exclude-standard`; explicit targets are searched as given.
            extra = ("--glob=!.git",) if targets is None else ("--no-ignore",)
            matches, overflowed = await _rg(
                rg, self.root, args, targets, deadline, self.runtime.limits.max_file_bytes, extra
            )
            return matches, overflowed, "ripgrep"
        if targets is None:
            targets = await self._regular(list(await self.files()))
        matches, overflowed = await _git_grep(
            ["git"], None, args, targets, cwd=self.root, deadline=deadline,
            git_dir=self._git_dir if self._is_git else None,
        )  # fmt: skip
        return matches, overflowed, "git-grep"


def _read_regular(path: Path, cap: int) -> bytes:
    """A regular file's bytes, at most `cap` + 1 of them: a link swapped in since it was checked,
    a FIFO or a device is refused, never followed, waited on or read without end."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        chunks: list[bytes] = []
        left = cap + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
