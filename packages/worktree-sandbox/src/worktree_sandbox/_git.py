"""Talking to git and child processes: no shell, bounded time, killed process groups.

Everything that runs a program goes through here, so that no argument is ever interpreted by a
shell and every child can be killed with its whole process group when a call times out.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from worktree_sandbox._gitconfig import check_config
from worktree_sandbox._paths import name_text, safe_tree_path
from worktree_sandbox.errors import RepositoryLayoutError, SandboxError

__all__ = [
    "CappedOutput",
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
# Nor read objects from places the environment adds (see `locations`).
_GIT_ENV_DROP = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
)

# A repository's own config (.git/config, and what it includes) is untrusted: it can name programs
# that git runs. Settings given on the command line (here: GIT_CONFIG_COUNT, which every git child
# inherits) win over every file, so each key that names a program, or that changes the output we
# parse, is pinned to a harmless value for every git call, on every repository.
_PINNED: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),  # hooks would be looked up under /dev/null/: none there
    ("core.sshCommand", "ssh"),  # what git runs when nothing is set
    ("core.gitProxy", "none"),
    ("core.askPass", ""),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("core.alternateRefsCommand", ""),
    ("diff.external", ""),
    # a file git reads for every diff (`log --name-only` included): a FIFO there stalls git
    ("diff.orderFile", os.devnull),
    ("credential.helper", ""),
    ("gpg.program", "false"),
    ("gpg.ssh.program", "false"),
    ("protocol.ext.allow", "never"),
    ("color.ui", "never"),
    ("grep.column", "false"),
    ("grep.fullName", "false"),
    ("grep.lineNumber", "false"),
    ("grep.fallbackToNoIndex", "false"),
    ("core.quotePath", "true"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    # `git grep` follows submodule.recurse into a submodule's repository, whose git dir (a
    # `gitdir:` file, `.git/modules/x`) may lie anywhere
    ("submodule.recurse", "false"),
    ("log.showSignature", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.openpgp.program", "false"),
)
# Every git call on a repository (never the clone cache's own clone and fetch) runs with no
# transport allowed: a repository's config can make git fetch on its own. A partial clone
# (`extensions.partialClone`, a `remote.<name>.promisor` remote) lazily fetches each object it
# lacks from its promisor remote, whatever command asked for it: `rev-parse` of a ref at a
# commit it lacks read another repository outside the allowed roots (a local url) or the
# network (https), and wrote the packs into the repository. The lazy fetch is a `git fetch`
# child, which inherits these pins and is refused ("transport 'file' not allowed"); git 2.44
# and later also read GIT_NO_LAZY_FETCH and do not start it.
_NO_TRANSPORT: tuple[tuple[str, str], ...] = (("protocol.allow", "never"),)
# Keys under a named section (filter.<driver>.clean, diff.<driver>.textconv, ...) that name a
# program: found in the repository's config by `_named_program_keys` and pinned empty.
_PROGRAM_KEY = re.compile(
    r"^(?:filter\..+\.(?:clean|smudge|process)"
    r"|diff\..+\.(?:command|textconv)"
    r"|merge\..+\.driver"
    r"|remote\..+\.(?:uploadpack|receivepack|proxy|vcs)"
    r"|credential\..+\.helper"
    r"|(?:difftool|mergetool|browser|man|guitool)\..+\.(?:cmd|path)"
    r"|interactive\.difffilter|imap\.tunnel|sendemail\..*cmd"
    r"|pager\..+|alias\..+)$",
    re.IGNORECASE,
)
_SAFE_ENV_CACHE: dict[
    tuple[str, tuple[int, ...]], tuple[tuple[str, str], ...] | RepositoryLayoutError
] = {}


# git dir -> the other files its last listing read (the files keys came from, the files its
# includes name, a linked worktree's common config): a change to any lists the keys again.
_CONFIG_FILES: dict[str, tuple[Path, ...]] = {}


def _config_stamp(git_dir: Path) -> tuple[int, ...]:
    """Changes whenever a config file of `git_dir` changes (then its keys are listed again):
    its own, and every file its last listing read or named (`_CONFIG_FILES`). Before, only
    the first three were stamped: a key added later to an included file, or to a linked
    worktree's common config, went unpinned while the stamp held."""
    stamp: list[int] = []
    files = [git_dir / n for n in ("config", "config.worktree", "commondir")]
    for path in (*files, *_CONFIG_FILES.get(str(git_dir), ())):
        try:
            st = path.stat()
        except OSError:
            stamp += [0, 0]
            continue
        stamp += [st.st_mtime_ns, st.st_size]
    return tuple(stamp)


def _read_files(listing: list[str]) -> tuple[Path, ...]:
    """The files a `config --show-origin --list` read, and those its includes name (one that
    is empty or missing now holds no key, but may later)."""
    files: dict[Path, None] = {}
    for origin, entry in zip(listing[::2], listing[1::2], strict=False):
        if not origin.startswith("file:"):
            continue  # "command line:": the pins
        here = Path(origin.removeprefix("file:"))
        files[here] = None
        name, _, value = entry.partition("\n")
        if name.endswith(".path") and name.startswith(("include.", "includeif.")) and value:
            target = Path(os.path.expanduser(value))
            files[target if target.is_absolute() else here.parent / target] = None
    return tuple(files)


def _pins_env(pins: tuple[tuple[str, str], ...]) -> dict[str, str]:
    env = {"GIT_CONFIG_COUNT": str(len(pins))}
    for i, (key, value) in enumerate(pins):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


_CONFIG_LIST_TIMEOUT_S = 10.0


def _named_program_keys(git_dir: Path, base: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """Keys of `git_dir`'s effective config (includes followed) that name a program.

    Raises `RepositoryLayoutError` when the config cannot be listed: a config file that is not
    a regular file (a FIFO would hold git, and this thread, until someone writes to it), or a
    listing that fails or takes over 10 s (an include naming a FIFO). git is then not run on
    the repository at all: a config nobody could read may not go unpinned. The refusal is
    remembered like an answer, so later calls are refused at once."""
    key = (str(git_dir), _config_stamp(git_dir))
    hit = _SAFE_ENV_CACHE.get(key)
    if isinstance(hit, RepositoryLayoutError):
        raise hit
    if hit is not None:
        return hit
    try:
        for name in ("config", "config.worktree"):
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                if not stat.S_ISREG(os.stat(git_dir / name).st_mode):
                    raise RepositoryLayoutError(
                        f"{git_dir / name} is not a regular file; git would wait on it"
                    )
        # and the files they include, read as git reads them: a FIFO there is refused now,
        # not after the listing's timeout
        check_config(git_dir)
        try:
            proc = subprocess.run(
                ["git", f"--git-dir={git_dir}", "config", "--null", "--show-origin", "--list"],
                capture_output=True, env=base, timeout=_CONFIG_LIST_TIMEOUT_S, check=False,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise RepositoryLayoutError(
                f"listing the config of {git_dir} took over {_CONFIG_LIST_TIMEOUT_S:g} s "
                "(an include naming a FIFO?)"
            ) from None
        except (OSError, subprocess.SubprocessError) as exc:
            raise RepositoryLayoutError(f"cannot list the config of {git_dir}: {exc}") from None
        # 128: git found no repository there (it never ran with this config); its own error
        # comes from the command that follows
        if proc.returncode not in (0, 1, 128):
            said = proc.stderr.decode("utf-8", errors="replace").strip()[:300]
            raise RepositoryLayoutError(f"cannot list the config of {git_dir}: {said}")
    except RepositoryLayoutError as exc:
        found: tuple[tuple[str, str], ...] | RepositoryLayoutError = exc
    else:
        listing = proc.stdout.decode("utf-8", errors="replace").split("\0")
        names = [entry.partition("\n")[0] for entry in listing[1::2]]
        found = tuple(sorted({(n, "") for n in names if n and _PROGRAM_KEY.match(n)}))
        _CONFIG_FILES[str(git_dir)] = _read_files(listing)
        key = (str(git_dir), _config_stamp(git_dir))  # over the files it read
    if len(_SAFE_ENV_CACHE) > 256:
        _SAFE_ENV_CACHE.clear()
    if len(_CONFIG_FILES) > 256:
        kept = _CONFIG_FILES.pop(str(git_dir), ())
        _CONFIG_FILES.clear()
        _CONFIG_FILES[str(git_dir)] = kept
    _SAFE_ENV_CACHE[key] = found
    if isinstance(found, RepositoryLayoutError):
        raise found
    return found


def git_env(git_dir: Path | None = None, *, network: bool = False) -> dict[str, str]:
    """The environment of every git child: no prompts, no user or system config, and the
    program-running settings of the repository at `git_dir` (when given) pinned harmless.

    No transport is allowed and no lazy fetch made (see `_NO_TRANSPORT`) unless `network`:
    only the clone cache's own `clone` and `fetch` from its source template ask for it."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    for k in list(env):
        if k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")) or k == "GIT_CONFIG_PARAMETERS":
            del env[k]
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_LITERAL_PATHSPECS="1",
        # refs/replace/* would let a repository answer a commit's id with other objects
        GIT_NO_REPLACE_OBJECTS="1",
        LC_ALL="C",
    )
    pinned = _PINNED
    if not network:
        env.update(GIT_NO_LAZY_FETCH="1", GIT_PROTOCOL_FROM_USER="0")
        pinned += _NO_TRANSPORT
    env.update(_pins_env(pinned))
    if git_dir is not None and str(git_dir) != os.devnull:
        env.update(_pins_env(pinned + _named_program_keys(git_dir, env)))
    return env


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc's prctl, loaded once in the parent: a forked child must not import or load."""
    if sys.platform != "linux":
        return None
    try:
        import ctypes

        return cast(Callable[..., int], ctypes.CDLL(None, use_errno=True).prctl)
    except (OSError, AttributeError):
        return None


def _die_with_parent() -> Callable[[], None] | None:
    """Linux: a preexec hook giving the child SIGKILL when its parent dies, so a killed `prepare`
    strands no `git clone` that keeps writing into the cache after the restart pruned it.

    A parent killed between fork and prctl would be missed by prctl alone (the child is already
    an orphan); the hook then sees a different parent pid and exits before git starts."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def hook() -> None:  # pragma: no cover - runs in the child
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(1)

    return hook


def git(
    git_dir: Path, *args: str, timeout: float = 600.0, check: bool = True, network: bool = False
) -> subprocess.CompletedProcess[bytes]:
    """Run `git --git-dir=<git_dir> <args>` synchronously (setup work, never a tool call);
    `network`: a clone or fetch of the clone cache, from its source (see `git_env`)."""
    proc = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args],
        capture_output=True,
        timeout=timeout,
        env=git_env(git_dir, network=network),
        stdin=subprocess.DEVNULL,
        check=False,
        preexec_fn=_die_with_parent(),
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


def kill_group(proc: Child) -> None:
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


class ChildTimeout(Exception):
    """A child process ran past its deadline and was killed."""


class Child:
    """A child process started by `start_child`, with the parts of `asyncio.subprocess.Process`
    the sandbox uses: `pid`, `returncode`, `wait()`, `kill()`, and `stdin`, `stdout`, `stderr`
    streams (None where the stream is not a pipe)."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdin: asyncio.StreamWriter | None,
        stdout: asyncio.StreamReader | None,
        stderr: asyncio.StreamReader | None,
    ) -> None:
        self._popen = popen
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        """The exit status once the child has exited (asked of the system each time)."""
        return self._popen.poll()

    async def wait(self) -> int:
        """The exit status, once the child exits. Polled (from 0.5 ms, doubling up to 50 ms):
        the sandbox waits after reading a child's output to its end, when it has all but
        exited, and a poll is cancelled like any sleep."""
        delay = 0.0005
        while (code := self._popen.poll()) is None:
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
        return code

    def kill(self) -> None:
        self._popen.kill()


async def start_child(
    *argv: str,
    stdin: int | None = None,
    stdout: int | None = None,
    stderr: int | None = None,
    limit: int = 1 << 16,
    **kwargs: Any,
) -> Child:
    """Start `argv` as `asyncio.create_subprocess_exec` would, in a way no cancellation can
    leave hanging.

    asyncio's subprocess transport (CPython 3.11) finishes its start in a task of its own; when
    that task is cancelled, as `asyncio.run` cancels every task at its end (which a tree left
    open meets) or as a cancelled caller's can be, the transport's exit callbacks stay queued
    forever and whoever waits for the child hangs: `asyncio.run` never returned. So the child
    is started with `subprocess.Popen` (what the transport runs too) and its pipes are
    connected to streams here, in the caller's task; when that task is cancelled meanwhile, the
    pipes are closed, the child is killed (its process group when it has one) and reaped, and
    the cancellation goes on.
    """
    loop = asyncio.get_running_loop()
    popen = subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=stderr, **kwargs)
    transports: list[asyncio.BaseTransport] = []
    try:
        writer = None
        if popen.stdin is not None:
            w_transport, protocol = await loop.connect_write_pipe(
                lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), popen.stdin
            )
            transports.append(w_transport)
            writer = asyncio.StreamWriter(w_transport, protocol, None, loop)
        readers: list[asyncio.StreamReader | None] = []
        for pipe in (popen.stdout, popen.stderr):
            if pipe is None:
                readers.append(None)
                continue
            reader = asyncio.StreamReader(limit=limit)
            r_transport, _ = await loop.connect_read_pipe(
                functools.partial(asyncio.StreamReaderProtocol, reader), pipe
            )
            transports.append(r_transport)
            readers.append(reader)
    except BaseException:
        for transport in transports:
            transport.close()
        for pipe in (popen.stdin, popen.stdout, popen.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        child = Child(popen, None, None, None)
        kill_group(child)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(child.wait()), 2.0)
        raise
    return Child(popen, writer, readers[0], readers[1])


@dataclass(frozen=True)
class CappedOutput:
    stdout: bytes
    stderr: bytes
    returncode: int
    overflowed: bool  # stdout passed the cap; the child was killed


async def run_capped(
    argv: list[str],
    *,
    cwd: Path | None,
    timeout: float,
    max_stdout: int,
    git_dir: Path | None = None,
) -> CappedOutput:
    """Run a child in its own process group; kill the group on timeout or when stdout overflows.

    `git_dir`: the repository a git child works on, whose program-running config is pinned.
    """
    proc = await start_child(
        *argv,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=git_env(git_dir),
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
    #: the path's bytes in the commit, when they are not UTF-8 (the entry's key is `name_text`'s
    #: reading of them; git is given these)
    raw_path: bytes | None = None

    @property
    def is_symlink(self) -> bool:
        return self.mode == "120000"


def parse_ls_tree(raw: bytes) -> tuple[dict[str, TreeEntry], list[str]]:
    """Parse `git ls-tree -r -z -l` into path -> entry (blobs: files and symlinks), and the
    names left out.

    A crafted commit can hold what git itself would refuse to check out: '..' or '.git'
    components, duplicate names, a file or link and a folder of the same name. Those entries are
    left out here, once, so that every backend (git objects, the checkout, `glob`) serves the
    same files: the first of duplicates stays, and nothing below a name that is a file or link.
    Names are `name_text`'s (a non-UTF-8 component read as Latin-1), so two entries whose names
    read alike are duplicates too.
    """
    entries: dict[str, TreeEntry] = {}
    refused: list[str] = []
    folders: set[str] = set()
    for record in raw.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        fields = meta.split()
        if len(fields) != 4 or fields[1] != b"blob":
            continue  # submodules ("commit") have no content here
        size = int(fields[3]) if fields[3].isdigit() else -1
        raw_path: bytes | None = None
        try:
            name = path.decode("utf-8")
        except UnicodeDecodeError:
            name, raw_path = name_text(path), path
        parents = _parents(name)
        if (
            not safe_tree_path(name)
            or name in entries
            or name in folders
            or any(p in entries for p in parents)
        ):
            refused.append(name)
            continue
        entries[name] = TreeEntry(fields[0].decode(), fields[2].decode(), size, raw_path)
        folders.update(parents)
    return entries, refused


def _parents(name: str) -> list[str]:
    parts = name.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


class CatFileBatch:
    """One persistent `git cat-file --batch` per repository, serving blobs by name in ~0.5 ms.

    Requests are serialized on a lock; git answers them in order. If the child dies, it is started
    again on the next request.
    """

    def __init__(self, git_dir: Path) -> None:
        self._git_dir = git_dir
        self._proc: Child | None = None
        self._lock = asyncio.Lock()

    async def _ensure(self) -> Child:
        if self._proc is None or self._proc.returncode is not None:
            self._proc = await start_child(
                "git",
                f"--git-dir={self._git_dir}",
                "cat-file",
                "--batch",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                env=git_env(self._git_dir),
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
