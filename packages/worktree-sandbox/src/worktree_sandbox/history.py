"""What a tree's git history says about its files: the commits before the tree's commit, each
with its message and the files it touched.

A repository's past commit messages are evidence of where things live ("Fix pretty printing of
vectors" touched `sympy/printing/pretty/pretty.py`): a localizer can score files by how well the
messages of the commits that changed them match an issue. `commit_log` reads that history for a
`CommitTree` (the commit's ancestors) or a `DirectoryTree` that is a git working tree (HEAD's);
other trees have none and get `()`.

The repository is untrusted: git runs with every program-running key of its config pinned (see
`git_env`), with signatures, external diff and textconv off, in its own process group under a
time and output cap. Its messages and file names are untrusted too: git's output is cut into
records on a random marker drawn for each call, which no message or name written before the call
can hold, each record must have exactly the expected fields and a commit id, and the ids must be
the ones `git rev-list` lists for the same walk; anything else is no log at all. A history that
cannot be read (not a repository, a broken one, a timeout, output that does not parse) is no
evidence, never an error: the log is `()` and the reason is in `HistoryLog.error`. Shallow
history is no evidence either: a shallow clone's boundary commits (git reports them as grafted,
with no parents) would otherwise count as adding every file of the tree, so they contribute
nothing. Not for: blame or diffs; only messages and file names are read.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from worktree_sandbox._git import CappedOutput, ChildTimeout, run_capped
from worktree_sandbox._paths import name_text
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
# One record: the marker, then the commit id, its parents as the walk sees them (a shallow
# boundary has none) and its decorations ("grafted" marks a boundary), NUL-separated (none of
# them can hold a NUL), then the message; the marker again, then git's own "\0" and the
# NUL-terminated names.
_OID = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")


class MalformedLog(ValueError):
    """git's output does not have the structure the format asks for."""


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


@dataclass(frozen=True, slots=True)
class ParsedLog:
    """`parse_log`'s answer: the id of every record read (kept or not), newest first, and the
    commits kept."""

    ids: tuple[str, ...]
    commits: tuple[LoggedCommit, ...]


def _source(tree: object) -> tuple[Path, str] | None:
    if isinstance(tree, CommitTree):
        return tree.git_dir, tree.commit
    if not isinstance(tree, DirectoryTree) or tree.git_dir is None:
        return None
    # a folder's git dir, a `.git` file (a linked worktree, a submodule) followed as git
    # follows it; a `.git` that is a link is not
    if (tree.root / ".git").is_symlink():
        return None
    return tree.git_dir, "HEAD"


def log_format(marker: str) -> str:
    """The `--format` whose records `parse_log` reads."""
    return f"{marker}%H%x00%P%x00%D%x00%B{marker}"


def _names(tail: bytes) -> tuple[str, ...]:
    # `-z --name-only`: "\0" ends the formatted part; then "\n" and NUL-terminated names, or
    # nothing for a commit that changed no file.
    if tail in (b"", b"\0"):
        return ()
    if not tail.startswith(b"\0\n") or not tail.endswith(b"\0"):
        raise MalformedLog("a file list is not NUL-terminated names")
    # The tree's own reading of a name (`name_text`), so a commit's files are the tree's files.
    return tuple(name_text(n) for n in tail[2:-1].split(b"\0"))


def parse_log(raw: bytes, marker: bytes, *, cut: bool = False) -> ParsedLog:
    """Parse `git log -z --name-only --format=<log_format(marker)>` output.

    `cut`: the output stopped at the size cap, so its last record may be partial and is dropped.
    Raises `MalformedLog` when a record lacks a field or has one too many, or its commit id is
    not a full hex id seen once. Boundary commits of a shallow history keep no files; commits
    with no files or over `MAX_FILES_PER_COMMIT` are left out of `commits` (not of `ids`)."""
    pieces = raw.split(marker)
    if pieces[0]:
        raise MalformedLog("output before the first record")
    pieces = pieces[1:]
    if cut:
        pieces = pieces[: (len(pieces) - 1) // 2 * 2]
    elif len(pieces) % 2:
        raise MalformedLog("a record is not closed")
    ids: list[str] = []
    seen: set[bytes] = set()
    out: list[LoggedCommit] = []
    for at in range(0, len(pieces), 2):
        head = pieces[at].split(b"\0", 3)
        if len(head) != 4:
            raise MalformedLog("a record lacks a field")
        oid, parents, decorations, message = head
        if not _OID.fullmatch(oid) or oid in seen:
            raise MalformedLog("a record's commit id is not a full hex id seen once")
        if parents and not all(_OID.fullmatch(p) for p in parents.split(b" ")):
            raise MalformedLog("a record's parents are not hex ids")
        seen.add(oid)
        ids.append(oid.decode())
        files = _names(pieces[at + 1])
        if not parents and b"grafted" in decorations.split(b", "):
            files = ()  # a shallow boundary: git diffs it against nothing
        if not files or len(files) > MAX_FILES_PER_COMMIT:
            continue
        text = message.decode("utf-8", errors="replace").strip()[:MAX_MESSAGE_CHARS]
        out.append(LoggedCommit(message=text, files=files))
    return ParsedLog(ids=tuple(ids), commits=tuple(out))


def _failed(what: str, done: CappedOutput) -> str | None:
    if done.returncode == 0 or done.overflowed:
        return None
    msg = done.stderr.decode(errors="replace").strip().splitlines()
    return f"git {what} failed: {msg[-1] if msg else done.returncode}"


async def _read(git_dir: Path, rev: str, max_commits: int) -> HistoryLog:
    marker = f"\x1e{secrets.token_hex(16)}\x1f"
    walk = ["--no-merges", f"--max-count={max_commits}"]
    log_argv = [
        "git",
        f"--git-dir={git_dir}",
        "log",
        *walk,
        "--no-show-signature",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "--encoding=UTF-8",
        "-z",
        "--name-only",
        f"--format={log_format(marker)}",
        rev,
        "--",
    ]
    ids_argv = ["git", f"--git-dir={git_dir}", "rev-list", *walk, rev, "--"]
    jobs = [
        asyncio.ensure_future(
            run_capped(argv, cwd=None, timeout=_TIMEOUT_S, max_stdout=_MAX_OUTPUT, git_dir=git_dir)
        )
        for argv in (log_argv, ids_argv)
    ]
    try:
        done, listed = await asyncio.gather(*jobs)
    except (ChildTimeout, OSError) as exc:
        for job in jobs:  # the other child is killed with its process group
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        if isinstance(exc, ChildTimeout):
            return HistoryLog(error=f"git log took over {_TIMEOUT_S:.0f} s")
        return HistoryLog(error=f"git could not run: {exc}")
    why = _failed("log", done) or _failed("rev-list", listed)
    if why:
        return HistoryLog(error=why)
    try:
        parsed = await asyncio.to_thread(
            parse_log, done.stdout, marker.encode(), cut=done.overflowed
        )
    except MalformedLog as exc:
        return HistoryLog(error=f"git log output did not parse: {exc}")
    walked = listed.stdout.decode("ascii", errors="replace").split()
    if (
        listed.overflowed
        or list(parsed.ids) != walked[: len(parsed.ids)]
        or (not done.overflowed and len(parsed.ids) != len(walked))
    ):
        return HistoryLog(error="git log's commits are not the ones git rev-list walks")
    return HistoryLog(commits=parsed.commits)


_MEMO: OrderedDict[tuple[str, str], asyncio.Future[HistoryLog]] = OrderedDict()
# 16: a server answering at a dozen commits of one repository (as `codegrep serve`'s benchmark
# does, 12 SWE-bench base commits of sympy) read every log again with 8 (least recently used,
# cycled); a sympy log is a few MB.
_MEMO_SIZE = 16


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
