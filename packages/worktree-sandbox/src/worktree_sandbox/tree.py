"""The three tools over one tree of files, written once over a small storage interface.

`Tree` implements grep/glob/read and renders their results (capped, with the narrowing markers)
over `files`, `_stat`, `_sizes`, `read_bytes` and `_grep_raw`; `CommitTree` (a commit of a
repository) and `DirectoryTree` (a folder as it is) provide them. Every call goes through the
pool's `Runtime`. Not for: storage or grep engines (see `commit_tree`, `directory_tree`,
`_grep_backends`), cloning or pooling (see `BareRepoCache`, `TreePool`).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Container, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Self

from pydantic import ValidationError

from worktree_sandbox._git import (
    ChildTimeout,
)
from worktree_sandbox._globs import GlobSyntaxError, compile_glob
from worktree_sandbox._grep_backends import PatternError, RawMatch
from worktree_sandbox._materialize import MAX_LINK_BYTES
from worktree_sandbox._paths import PathRefused, is_within, normalize_tool_path
from worktree_sandbox._render import cap_line, cap_lines
from worktree_sandbox._runtime import _R, AnyResult, Runtime
from worktree_sandbox.errors import SandboxClosedError
from worktree_sandbox.models import (
    TOOL_ARGS,
    GlobArgs,
    GlobResult,
    GrepArgs,
    GrepMatch,
    GrepResult,
    ReadArgs,
    ReadResult,
    ToolErrorKind,
)

__all__ = ["Tree"]

_BINARY_PROBE = 8192


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
        self._name_set: frozenset[str] | None = None
        self._closed = False

    # -- storage interface ----------------------------------------------------------------------

    @abstractmethod
    async def files(self) -> tuple[str, ...]:
        """Every file (and symlink) of the tree, repository-relative, sorted."""

    @abstractmethod
    async def _stat(self, path: str) -> _Stat | None: ...

    async def _names(self) -> Container[str]:
        """`files()` for membership tests (a tree that has a set or map of them returns it)."""
        if self._name_set is None:
            self._name_set = frozenset(await self.files())
        return self._name_set

    @abstractmethod
    async def _sizes(self) -> Mapping[str, int]:
        """Bytes of every regular file of `files()` (symlinks left out; -1: content absent)."""

    @abstractmethod
    async def read_bytes(self, path: str) -> bytes:
        """Raw content of a file of the tree (no checks; raises SandboxError when missing)."""

    @abstractmethod
    async def _grep_raw(
        self, args: GrepArgs, targets: list[str] | None, deadline: float
    ) -> tuple[list[RawMatch], bool, str]:
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
        # RecursionError: arguments nested past Python's limit (a model's hostile call)
        except (ValueError, TypeError, ValidationError, RecursionError) as exc:
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
            lambda deadline: self._glob(args, deadline),
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

    async def _glob(self, args: GlobArgs, deadline: float) -> GlobResult:
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
        matched = await _glob_filter(regex, scope, cut, deadline)
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
            if st is None and current != path:  # a link was followed to nothing
                return _error(
                    ToolErrorKind.NOT_FOUND,
                    f"'{path}' is a symlink to '{cap_line(current, 300)}', which is no file of "
                    "the repository",
                    ReadResult,
                    path=path,
                )
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
            if st.size > MAX_LINK_BYTES:  # over PATH_MAX: no path; its text was never loaded
                return _error(
                    ToolErrorKind.INVALID_PATH,
                    f"'{path}' is a symlink whose target is {st.size:,} bytes long: no path is",
                    ReadResult,
                    path=path,
                )
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
                    scope = await _glob_filter(regex, scope, cut, deadline)
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
        except PatternError as exc:
            return _error(ToolErrorKind.INVALID_PATTERN, str(exc), GrepResult)
        except ChildTimeout:
            raise TimeoutError from None
        # Only the tree's own files, whatever an engine reported (a name it tore apart, a
        # path it was never given): no backend's output can name another file.
        known = await self._names()
        skip = set(large)
        raw = [m for m in raw if m[0] in known and m[0] not in skip]
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


_GLOB_SLICE_S = 0.005  # the longest the event loop is kept before others get a turn


async def _glob_filter(
    regex: re.Pattern[str], paths: list[str], cut: int, deadline: float
) -> list[str]:
    """The `paths` whose part after `cut` characters `regex` (a compiled glob) matches.

    One match is linear in the path (see `_globs`; a hostile 500-character pattern on a
    4,000-character path takes up to ~20 ms), yet a long list still adds up: the loop is given
    back every few milliseconds, so that other calls and a server's `/health` keep being
    answered, and the call stops at its deadline (TimeoutError, which `Runtime.run` answers as a
    timeout). Paths are matched in runs between two looks at the clock, doubled while fast (up
    to 256) and halved when a run passed the slice.
    """
    if len(paths) <= 8:
        return [f for f in paths if regex.match(f, cut)]
    out: list[str] = []
    mark = time.perf_counter()
    i, step = 0, 8
    while i < len(paths):
        out += [f for f in paths[i : i + step] if regex.match(f, cut)]
        i += step
        now = time.perf_counter()
        if now > deadline:
            raise TimeoutError
        if now - mark > _GLOB_SLICE_S:
            await asyncio.sleep(0)
            mark = time.perf_counter()
            step = max(1, step // 2)
        else:
            step = min(256, step * 2)
    return out


def _explain(tool: str, exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(x) for x in err['loc']) or 'arguments'}: {err['msg']}"
            for err in exc.errors()
        )
        fields = ", ".join(TOOL_ARGS[tool].model_fields)
        return f"invalid arguments for {tool}: {problems}. Accepted fields: {fields}"
    if isinstance(exc, RecursionError):
        return f"invalid arguments for {tool}: nested too deeply to read"
    return f"invalid arguments for {tool}: {exc}"


def _large_note(large: list[str], cap: int) -> str:
    if not large:
        return ""
    names = ", ".join(cap_line(n, 200) for n in large[:3])
    names += f" and {len(large) - 3:,} more" if len(large) > 3 else ""
    return f"\n[not searched: {len(large):,} file(s) over the {cap:,}-byte limit: {names}]"
