"""What a tree's git history says about its files: the commits before the tree's commit, each
with its message and the files it touched.

A repository's past commit messages are evidence of where things live ("Fix pretty printing of
vectors" touched `sympy/printing/pretty/pretty.py`): a localizer can score files by how well the
messages of the commits that changed them match an issue. `commit_log` reads that history for a
`CommitTree` (the commit's ancestors) or a `DirectoryTree` that is a git working tree (HEAD's);
other trees have none and get `()`.

The repository is untrusted: git runs with every program-running key of its config pinned (see
`git_env`), with signatures, external diff and textconv off, in its own process group under a
time and output cap. A history that cannot be read (not a repository, a shallow or broken one, a
timeout) is no evidence, never an error: the log is `()` and the reason is in `HistoryLog.error`.
Not for: blame or diffs; only messages and file names are read.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from worktree_sandbox._git import ChildTimeout, run_capped
from worktree_sandbox.commit_tree import CommitTree
from worktree_sandbox.directory_tree import DirectoryTree

__all__ = ["HistoryLog", "LoggedCommit", "commit_log"]

MAX_COMMITS = 5000
# A commit touching more files than this is a reformat, a rename sweep or a vendoring: its
# message says nothing about any one of them, so it is left out.
MAX_FILES_PER_COMMIT = 100
MAX_MESSAGE_CHARS = 2000
_TIMEOUT_S = 30.0
_MAX_OUTPUT = 64 << 20
_RECORD, _UNIT = "\x1e", "\x1f"


@dataclass(frozen=True, slots=True)
class LoggedCommit:
    """One commit of the history: its message (subject and body, capped) and the files it
    changed (paths relative to the repository root)."""

    message: str
    files: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class HistoryLog:
    """The commits before a tree's commit, newest first (at most `MAX_COMMITS`, merges and
    commits over `MAX_FILES_PER_COMMIT` files left out); `error` says why it is empty when it
    could not be read."""

    commits: tuple[LoggedCommit, ...] = ()
    error: str = ""


def _source(tree: object) -> tuple[Path, str] | None:
    if isinstance(tree, CommitTree):
        return tree.git_dir, tree.commit
    if isinstance(tree, DirectoryTree):
        git_dir = tree.root / ".git"
        # a `.git` file (a linked worktree or submodule) points elsewhere: not followed
        if git_dir.is_dir() and not git_dir.is_symlink():
            return git_dir, "HEAD"
    return None


def parse_log(raw: str) -> tuple[LoggedCommit, ...]:
    """Parse `git log -z --name-only --format=%x1e%B%x1f` output."""
    out: list[LoggedCommit] = []
    for record in raw.split(_RECORD)[1:]:
        message, sep, names = record.partition(_UNIT)
        if not sep:
            continue
        files = tuple(n for n in (x.strip("\n") for x in names.split("\0")) if n)
        if not files or len(files) > MAX_FILES_PER_COMMIT:
            continue
        out.append(LoggedCommit(message=message.strip()[:MAX_MESSAGE_CHARS], files=files))
    return tuple(out)


async def _read(git_dir: Path, rev: str, max_commits: int) -> HistoryLog:
    argv = [
        "git",
        f"--git-dir={git_dir}",
        "log",
        "--no-merges",
        "--no-show-signature",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "-z",
        "--name-only",
        f"--max-count={max_commits}",
        f"--format={_RECORD}%B{_UNIT}",
        rev,
        "--",
    ]
    try:
        done = await run_capped(
            argv, cwd=None, timeout=_TIMEOUT_S, max_stdout=_MAX_OUTPUT, git_dir=git_dir
        )
    except ChildTimeout:
        return HistoryLog(error=f"git log took over {_TIMEOUT_S:.0f} s")
    except OSError as exc:
        return HistoryLog(error=f"git could not run: {exc}")
    if done.returncode != 0 and not done.overflowed:
        msg = done.stderr.decode(errors="replace").strip().splitlines()
        return HistoryLog(error=f"git log failed: {msg[-1] if msg else done.returncode}")
    raw = done.stdout.decode("utf-8", errors="replace")
    if done.overflowed:  # the cut record may be partial: drop it
        raw = raw[: raw.rfind(_RECORD)]
    return HistoryLog(commits=await asyncio.to_thread(parse_log, raw))


_MEMO: OrderedDict[tuple[str, str], asyncio.Future[HistoryLog]] = OrderedDict()
_MEMO_SIZE = 8


async def commit_log(tree: object, *, max_commits: int = MAX_COMMITS) -> HistoryLog:
    """The history before `tree`'s commit; `HistoryLog()` with `error` set when there is none.

    Logs of commit trees are remembered per (repository, commit, max_commits) for the few most
    recent ones, so concurrent rollouts of one instance read it once; a working tree's is read
    each time (its HEAD can move)."""
    if max_commits < 1:
        raise ValueError(f"max_commits must be at least 1, not {max_commits}")
    src = _source(tree)
    if src is None:
        return HistoryLog(error="the tree is not a git repository")
    git_dir, rev = src
    if rev == "HEAD":
        return await _read(git_dir, rev, max_commits)
    key = (str(git_dir), f"{rev}:{max_commits}")
    fut = _MEMO.get(key)
    if fut is None or fut.get_loop() is not asyncio.get_running_loop():
        fut = _MEMO[key] = asyncio.ensure_future(_read(git_dir, rev, max_commits))
        while len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)
    else:
        _MEMO.move_to_end(key)
    try:
        return await asyncio.shield(fut)
    except Exception:
        _MEMO.pop(key, None)
        raise
