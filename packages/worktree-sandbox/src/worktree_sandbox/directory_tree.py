"""A folder as it is: a git working tree with its uncommitted changes, or any folder.
Not for: commits (see `CommitTree`).
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Container, Mapping
from pathlib import Path

from worktree_sandbox._git import ChildTimeout, git_env, run_capped
from worktree_sandbox._grep_backends import RawMatch, folder_backend
from worktree_sandbox._paths import name_text, safe_tree_path
from worktree_sandbox._runtime import Runtime
from worktree_sandbox.errors import SandboxError
from worktree_sandbox.locations import git_dir_of
from worktree_sandbox.models import (
    GrepArgs,
)
from worktree_sandbox.tree import Tree, _Stat

__all__ = ["DirectoryTree"]

_LIST_TIMEOUT_S = 60.0  # listing a folder's files with git (a large monorepo: seconds)


class DirectoryTree(Tree):
    """A directory as it is (a git working tree with its uncommitted changes, or any folder).

    In a git working tree the files are the tracked and untracked-but-not-ignored ones; elsewhere
    every file below the root except `.git`. The file list (and each file's size) is read once,
    when first needed. Results are not memoized: a working tree can change. The repository's own
    git config is untrusted: git runs with every program-running key pinned (see `git_env`).

    That one list is what every tool sees, grep included: grep is given the list's files rather
    than letting its engine walk the folder with ignore rules of its own (a committed `.ignore`
    with `src/`, or a tracked file under a `.gitignore` rule, hid tracked files from ripgrep's
    walk, so the folder and `--commit HEAD` of a clean tree answered differently; a walk also
    met names no tool can name, a newline in a folder's name among them). Names are
    `name_text`'s; `_disk` maps a name (file or folder) back to its bytes where they differ.
    """

    def __init__(self, root: str | os.PathLike[str], runtime: Runtime | None = None) -> None:
        super().__init__(runtime)
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise SandboxError(f"{root} is not a directory")
        self._files: tuple[str, ...] | None = None
        self._file_set: frozenset[str] = frozenset()
        self._size_of: dict[str, int] = {}
        # a file's or folder's name -> its path on disk (surrogateescape), where they differ
        self._disk: dict[str, str] = {}
        # a linked worktree's or a submodule's `.git` is a file naming its git dir: git is told
        # that dir (read as `repository_locations` reads it: small, regular, UTF-8), never the
        # file itself, which every git child and the config listing met as "Not a directory"
        dot = self.root / ".git"
        pointed = git_dir_of(self.root)[1] if dot.is_file() else None
        self._git_dir = pointed or dot
        self._is_git = self._git_dir.exists()

    @property
    def git_dir(self) -> Path | None:
        """The git dir git is told for this folder (a `.git` file followed), or None when the
        folder is not a git working tree."""
        return self._git_dir if self._is_git else None

    async def files(self) -> tuple[str, ...]:
        if self._files is None:
            raw_names = await self._git_names() if self._is_git else None
            self._files = await asyncio.to_thread(self._scan, raw_names)
            self._file_set = frozenset(self._files)
        return self._files

    async def _sizes(self) -> Mapping[str, int]:
        await self.files()
        return self._size_of

    async def _names(self) -> Container[str]:
        await self.files()
        return self._file_set

    def _scan(self, raw_names: list[bytes] | None) -> tuple[str, ...]:
        if raw_names is None:
            raw_names = []
            for dirpath, dirs, files in os.walk(os.fsencode(self.root)):
                dirs[:] = [d for d in dirs if d != b".git"]
                rel = os.path.relpath(dirpath, os.fsencode(self.root))
                for f in files:
                    raw_names.append(f if rel == b"." else rel + b"/" + f)
        kept: list[str] = []
        seen: set[str] = set()
        for raw in sorted(set(raw_names)):
            name = name_text(raw)
            if name in seen or not safe_tree_path(name):
                continue  # no tool call could name it (see `safe_tree_path`), or names read alike
            disk = os.fsdecode(raw)
            try:
                st = os.lstat(self.root / disk)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                self._size_of[name] = st.st_size
            elif not stat.S_ISLNK(st.st_mode):
                continue
            if disk != name:
                self._map_to_disk(name, disk)
            seen.add(name)
            kept.append(name)
        return tuple(sorted(kept))

    def _map_to_disk(self, name: str, disk: str) -> None:
        """Remember `disk` for `name`, and for each of its folders from the first whose name
        differs from its bytes."""
        names, disks = name.split("/"), disk.split("/")
        first = next(i for i in range(len(names)) if names[i] != disks[i])
        for i in range(first, len(names)):
            self._disk.setdefault("/".join(names[: i + 1]), "/".join(disks[: i + 1]))

    def _on_disk(self, path: str) -> Path:
        return self.root / self._disk.get(path, path) if self._disk else self.root / path

    async def _git_names(self) -> list[bytes] | None:
        """Tracked (git's index: whatever an ignore rule says) and untracked-but-not-ignored
        files, as their bytes, or None when git cannot say.

        git opens every `.gitignore` of the folders it walks, and `core.excludesFile`, with a
        blocking `open`: a FIFO there (the work tree is the user's folder, anything can be in
        it) held git, and the worker thread that waited for it, for up to 120 s; enough such
        requests took every thread of asyncio's pool. git is now a child of the loop, killed at
        the call's deadline or after `_LIST_TIMEOUT_S`, and no thread waits for it."""
        # the config listing behind git_env, in a thread (the loop never waits on git)
        await asyncio.to_thread(git_env, self._git_dir)
        try:
            out = await run_capped(
                ["git", f"--git-dir={self._git_dir}", f"--work-tree={self.root}", "ls-files",
                 "-z", "--cached", "--others", "--exclude-standard"],
                cwd=self.root, timeout=_LIST_TIMEOUT_S, max_stdout=1 << 30, git_dir=self._git_dir,
            )  # fmt: skip
        except ChildTimeout:
            raise SandboxError(
                f"git took over {_LIST_TIMEOUT_S:g} s to list the files of {self.root} (a FIFO "
                "where it reads ignore rules, such as a .gitignore?)"
            ) from None
        if out.returncode != 0 or out.overflowed:
            return None
        return [n for n in out.stdout.split(b"\0") if n]

    async def _stat(self, path: str) -> _Stat | None:
        await self.files()
        full = self._on_disk(path)
        try:
            st = os.lstat(full)
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return _Stat("symlink", st.st_size, name_text(os.readlink(os.fsencode(full))))
        if stat.S_ISDIR(st.st_mode):
            return _Stat("dir") if path in await self._directories() or path == "" else None
        await self.files()
        if stat.S_ISREG(st.st_mode) and path in self._file_set:
            return _Stat("file", st.st_size)
        return None

    async def read_bytes(self, path: str) -> bytes:
        await self.files()
        full = self._on_disk(path).resolve()
        if not full.is_relative_to(self.root):
            raise SandboxError(f"{path!r} resolves outside {self.root}")
        cap = self.runtime.limits.max_file_bytes
        try:
            return await asyncio.to_thread(_read_regular, full, cap)
        except OSError as exc:
            raise SandboxError(f"cannot read {path!r}: {exc}") from exc

    async def _grep_raw(
        self, args: GrepArgs, targets: list[str] | None, deadline: float
    ) -> tuple[list[RawMatch], bool, str]:
        backend = folder_backend(
            self.runtime.rg, self.runtime.limits.max_file_bytes, self.runtime.limits.grep_engine
        )
        if targets is None:  # the tree's own list, never the engine's walk (see the class)
            await self.files()
            targets = list(self._size_of)
        if not targets:
            return [], False, backend.name  # no file: given no path, an engine would walk
        if self._disk:
            targets = [self._disk.get(t, t) for t in targets]
        matches, overflowed = await backend.search(
            self.root, args, targets, deadline, ignore_rules=False,
            git_dir=self._git_dir if self._is_git else None,
        )  # fmt: skip
        return matches, overflowed, backend.name


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
