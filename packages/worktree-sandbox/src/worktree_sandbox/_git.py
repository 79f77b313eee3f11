"""Talking to git and child processes: no shell, bounded time, killed process groups.

Everything that runs a program goes through here, so that no argument is ever interpreted by a
shell and every child can be killed with its whole process group when a call times out.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from worktree_sandbox.errors import SandboxError

__all__ = [
    "CatFileBatch",
    "ChildTimeout",
    "TreeEntry",
    "find_rg",
    "git",
    "git_env",
    "kill_group",
    "parse_ls_tree",
    "run_capped",
]

# Git must never prompt, read the user's config or pick up a repository from the environment.
_GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY")


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_LITERAL_PATHSPECS="1",
        LC_ALL="C",
    )
    return env


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """Linux: the child gets SIGKILL when its parent dies, so a killed `prepare` strands no
    `git clone` that keeps writing into the cache after the restart pruned it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def git(
    git_dir: Path, *args: str, timeout: float = 600.0, check: bool = True
) -> subprocess.CompletedProcess[bytes]:
    """Run `git --git-dir=<git_dir> <args>` synchronously (setup work, never a tool call)."""
    proc = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args],
        capture_output=True,
        timeout=timeout,
        env=git_env(),
        check=False,
        preexec_fn=_die_with_parent if sys.platform == "linux" else None,
    )
    if check and proc.returncode != 0:
        msg = proc.stderr.decode(errors="replace").strip()
        raise SandboxError(f"git {' '.join(args[:2])} failed in {git_dir}: {msg}")
    return proc


def find_rg() -> str | None:
    """The ripgrep binary: the one installed beside this interpreter first, then PATH."""
    here = Path(sys.executable).parent / "rg"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which("rg")


def kill_group(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


class ChildTimeout(Exception):
    """A child process ran past its deadline and was killed."""


@dataclass(frozen=True)
class CappedOutput:
    stdout: bytes
    stderr: bytes
    returncode: int
    overflowed: bool  # stdout passed the cap; the child was killed


async def run_capped(
    argv: list[str], *, cwd: Path | None, timeout: float, max_stdout: int
) -> CappedOutput:
    """Run a child in its own process group; kill the group on timeout or when stdout overflows."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=git_env(),
        start_new_session=True,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    chunks: list[bytes] = []
    size = 0
    overflowed = False

    async def pump() -> None:
        nonlocal size, overflowed
        assert proc.stdout is not None
        while True:
            chunk = await proc.stdout.read(1 << 16)
            if not chunk:
                return
            chunks.append(chunk)
            size += len(chunk)
            if size > max_stdout:
                overflowed = True
                kill_group(proc)
                return

    stderr_task = asyncio.ensure_future(proc.stderr.read())
    try:
        await asyncio.wait_for(pump(), timeout)
        await asyncio.wait_for(proc.wait(), max(0.5, timeout))
        stderr = await stderr_task
    except (TimeoutError, asyncio.CancelledError) as exc:
        kill_group(proc)
        stderr_task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), 2.0)
        if isinstance(exc, asyncio.CancelledError):
            raise
        raise ChildTimeout from None
    return CappedOutput(b"".join(chunks), stderr, proc.returncode or 0, overflowed)


@dataclass(frozen=True, slots=True)
class TreeEntry:
    mode: str
    oid: str
    size: int  # -1: the blob is not in this clone (partial mirrors leave large files out)

    @property
    def is_symlink(self) -> bool:
        return self.mode == "120000"


def parse_ls_tree(raw: bytes) -> dict[str, TreeEntry]:
    """Parse `git ls-tree -r -z -l` into path -> entry, keeping blobs (files and symlinks)."""
    entries: dict[str, TreeEntry] = {}
    for record in raw.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        fields = meta.split()
        if len(fields) != 4 or fields[1] != b"blob":
            continue  # submodules ("commit") have no content here
        size = int(fields[3]) if fields[3].isdigit() else -1
        name = path.decode("utf-8", errors="surrogateescape")
        entries[name] = TreeEntry(fields[0].decode(), fields[2].decode(), size)
    return entries


class CatFileBatch:
    """One persistent `git cat-file --batch` per repository, serving blobs by name in ~0.5 ms.

    Requests are serialized on a lock; git answers them in order. If the child dies, it is started
    again on the next request.
    """

    def __init__(self, git_dir: Path) -> None:
        self._git_dir = git_dir
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    async def _ensure(self) -> asyncio.subprocess.Process:
        if self._proc is None or self._proc.returncode is not None:
            self._proc = await asyncio.create_subprocess_exec(
                "git",
                f"--git-dir={self._git_dir}",
                "cat-file",
                "--batch",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                env=git_env(),
                start_new_session=True,
                limit=1 << 20,
            )
        return self._proc

    async def get(self, name: str) -> tuple[str, bytes] | None:
        """Return (type, content) of an object name such as '<sha>' or '<sha>:<path>'."""
        if "\n" in name:
            return None
        async with self._lock:
            proc = await self._ensure()
            assert proc.stdin is not None
            assert proc.stdout is not None
            try:
                proc.stdin.write(name.encode("utf-8", errors="surrogateescape") + b"\n")
                await proc.stdin.drain()
                header = await proc.stdout.readline()
                if not header:
                    raise ConnectionResetError("git cat-file exited")
                parts = header.split()
                if len(parts) < 2 or parts[-1] in (b"missing", b"ambiguous"):
                    return None
                kind, size = parts[1].decode(), int(parts[2])
                body = await proc.stdout.readexactly(size + 1)
            except (ConnectionResetError, BrokenPipeError, asyncio.IncompleteReadError) as exc:
                kill_group(proc)
                self._proc = None
                raise SandboxError(f"git cat-file failed in {self._git_dir}") from exc
            except asyncio.CancelledError:
                # A cancelled read leaves the stream mid-object: the child must not be reused.
                kill_group(proc)
                self._proc = None
                raise
            return kind, body[:-1]

    async def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 2.0)
        except TimeoutError:
            kill_group(proc)
            with contextlib.suppress(Exception):
                await proc.wait()
