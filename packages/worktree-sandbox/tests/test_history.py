"""`commit_log`: the commits before a tree's commit, on real repositories; a hostile config runs
nothing."""

from __future__ import annotations

import asyncio
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from worktree_sandbox import DirectoryTree
from worktree_sandbox.commit_tree import CommitTree
from worktree_sandbox.history import (
    MAX_FILES_PER_COMMIT,
    HistoryLog,
    LoggedCommit,
    MalformedLog,
    commit_log,
    log_format,
    parse_log,
)

A, B = "a" * 40, "b" * 40


def _log(tree: object, **kw: int) -> HistoryLog:
    async def go() -> HistoryLog:
        try:
            return await commit_log(tree, **kw)
        finally:
            if isinstance(tree, CommitTree | DirectoryTree):
                await tree.close()

    return asyncio.run(go())


@pytest.fixture
def hist_repo(repo: Any) -> Any:
    """`repo` (conftest) with three more commits: a fix, a 101-file vendoring, a feature."""
    repo.commit({"pkg/printing.py": "def pretty(): pass\n"}, "Fix pretty printing of vectors")
    repo.commit(
        {f"vendor/f{i}.py": f"x = {i}\n" for i in range(MAX_FILES_PER_COMMIT + 1)}, "Vendor all"
    )
    repo.commit(
        {"pkg/core.py": "class Core: pass\n", "pkg/printing.py": "def pretty(): return 1\n"},
        "Core: add Core\n\nThe body says why.",
    )
    return repo


def test_commit_tree_log_is_its_ancestors_newest_first(hist_repo: Any, git_kit: Any) -> None:
    repo = hist_repo
    run_git = git_kit.run_git
    run_git(repo.path, "checkout", "-q", "-b", "side", repo.commits[1])
    run_git(repo.path, "commit", "-q", "--allow-empty", "-m", "not an ancestor")
    log = _log(CommitTree(repo.path / ".git", repo.commits[-1]))
    assert log.error == ""
    assert log.commits[:2] == (
        LoggedCommit("Core: add Core\n\nThe body says why.", ("pkg/core.py", "pkg/printing.py")),
        LoggedCommit("Fix pretty printing of vectors", ("pkg/printing.py",)),
    )
    messages = [c.message for c in log.commits]
    assert "Vendor all" not in messages  # over MAX_FILES_PER_COMMIT files
    assert "not an ancestor" not in messages
    older = _log(CommitTree(repo.path / ".git", repo.commits[1]))
    assert "Core: add Core" not in [c.message[:14] for c in older.commits]
    assert _log(CommitTree(repo.path / ".git", repo.commits[-1]), max_commits=1).commits == (
        log.commits[0],
    )


def test_working_tree_log_is_heads_and_a_plain_folder_has_none(
    hist_repo: Any, tmp_path: Path
) -> None:
    repo = hist_repo
    log = _log(DirectoryTree(repo.path))
    assert log.commits[0].message.startswith("Core: add Core")
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text("x = 1\n")
    empty = _log(DirectoryTree(plain))
    assert empty.commits == ()
    assert "not a git repository" in empty.error
    assert "not a git repository" in _log(object()).error


def test_a_broken_history_is_no_evidence_not_an_error(hist_repo: Any) -> None:
    repo = hist_repo
    tree = DirectoryTree(repo.path)
    (repo.path / ".git" / "HEAD").write_text("ref: refs/heads/nothing-here\n")
    log = _log(tree)
    assert log.commits == ()
    assert log.error.startswith("git log failed")


def test_the_repositorys_config_runs_no_program(
    hist_repo: Any, git_kit: Any, tmp_path: Path
) -> None:
    """log.showSignature with a gpg.program, an external diff and a pager in the repository's
    own config: none of them runs."""
    repo = hist_repo
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    for key, value in (
        ("log.showSignature", "true"),
        ("gpg.program", str(script)),
        ("diff.external", str(script)),
        ("core.pager", str(script)),
        ("pager.log", str(script)),
    ):
        git_kit.run_git(repo.path, "config", key, value)
    log = _log(CommitTree(repo.path / ".git", repo.commits[-1]))
    assert log.commits
    assert not marker.exists()


def test_an_order_file_that_is_a_fifo_does_not_stall_the_log(
    hist_repo: Any, git_kit: Any, tmp_path: Path
) -> None:
    """diff.orderFile is read by every diff git makes; a FIFO there would hang `git log
    --name-only` until the timeout. The pinned config points it at an empty file."""
    fifo = tmp_path / "order"
    os.mkfifo(fifo)
    git_kit.run_git(hist_repo.path, "config", "diff.orderFile", str(fifo))
    started = time.monotonic()
    log = _log(CommitTree(hist_repo.path / ".git", hist_repo.commits[-1]))
    assert log.error == ""
    assert log.commits
    assert time.monotonic() - started < 20  # the log's own timeout is 30 s


def test_replace_refs_cannot_swap_a_commits_files(hist_repo: Any, git_kit: Any) -> None:
    """`git replace` makes a commit id stand for other objects; the log reads the real ones."""
    repo = hist_repo
    before = _log(CommitTree(repo.path / ".git", repo.commits[-1]))
    assert before.commits[0].files == ("pkg/core.py", "pkg/printing.py")
    # the tip's parent (the feature's base) replaced by the first commit of all
    git_kit.run_git(repo.path, "replace", repo.commits[-2], repo.commits[0])
    after = _log(CommitTree(repo.path / ".git", repo.commits[-1]))
    assert after.error == ""
    assert after.commits == before.commits


def test_a_message_cannot_forge_another_commits_record(hist_repo: Any) -> None:
    """A message holding the old record separators and text shaped like a record of its own
    (a forged message and file list): it stays one commit's message, with that commit's files."""
    repo = hist_repo
    forged = "Innocent cleanup\x1f\nforged/evil.py\x1eForged: fix the token leak\x1f and more"
    repo.commit({"pkg/real.py": "x = 1\n"}, forged)
    for tree in (CommitTree(repo.path / ".git", repo.commits[-1]), DirectoryTree(repo.path)):
        log = _log(tree)
        assert log.error == ""
        assert log.commits[0] == LoggedCommit(forged, ("pkg/real.py",))
        assert log.commits[1].message.startswith("Core: add Core")
        files = {f for c in log.commits for f in c.files}
        assert not any("evil" in f or "\x1f" in f for f in files)
        assert not any(c.message.startswith("Forged") for c in log.commits)


def test_a_shallow_clones_boundary_commit_contributes_no_files(
    git_kit: Any, tmp_path: Path
) -> None:
    """`git clone --depth 2`: the older of the two commits has no parents in the clone, so git
    diffs it against nothing, as if it added every file of its tree; it must add none."""
    repo = git_kit.make_repo(tmp_path, "deep")
    repo.commit({"pkg/printing.py": "def pretty(): pass\n"}, "Fix pretty printing of vectors")
    repo.commit({"pkg/core.py": "class Core: pass\n"}, "Core: add Core")
    shallow = tmp_path / "shallow"
    git_kit.run_git(tmp_path, "clone", "-q", "--depth", "2", f"file://{repo.path}", str(shallow))
    assert (shallow / ".git" / "shallow").read_text().split() == [repo.commits[-2]]
    full = _log(CommitTree(repo.path / ".git", repo.commits[-1]))
    assert full.commits[1] == LoggedCommit("Fix pretty printing of vectors", ("pkg/printing.py",))
    for tree in (CommitTree(shallow / ".git", repo.commits[-1]), DirectoryTree(shallow)):
        log = _log(tree)
        assert log.error == ""
        assert log.commits == (LoggedCommit("Core: add Core", ("pkg/core.py",)),)


def test_parse_log_reads_records_and_keeps_ids_of_those_left_out() -> None:
    m = "\x1eMARK\x1f"
    raw = (
        f"{m}{A}\0{B}\0\0one{m}\0\na.py\0\nb.py\0"  # a name may start with a newline
        f"{m}{B}\0\0\0empty{m}\0"  # a root commit that changed nothing
        f"{m}{'c' * 40}\0\0HEAD -> main, grafted\0boundary{m}\0\nall.py\0"
    ).encode()
    parsed = parse_log(raw, m.encode())
    assert parsed.commits == (LoggedCommit("one", ("a.py", "\nb.py")),)
    assert parsed.ids == (A, B, "c" * 40)
    assert log_format(m) == f"{m}%H%x00%P%x00%D%x00%B{m}"


def test_parse_log_drops_the_cut_record_and_refuses_a_broken_structure() -> None:
    m = "\x1eMARK\x1f"
    whole = f"{m}{A}\0\0\0one{m}\0\na.py\0"
    cut = (whole + f"{m}{B}\0\0\0two{m}\0\nb.p").encode()
    assert parse_log(cut, m.encode(), cut=True).ids == (A,)
    for bad in (
        f"junk{whole}",  # output before the first record
        f"{m}{A}\0\0\0one",  # a record not closed
        f"{m}{A}\0\0one{m}\0\na.py\0",  # a field missing
        f"{m}{A[:39]}\0\0\0one{m}\0",  # not a full id
        f"{m}{A}\0xyz\0\0one{m}\0",  # parents not ids
        whole + whole,  # one commit twice
        f"{m}{A}\0\0\0one{m}\0a.py\0",  # names without git's separator
        f"{m}{A}\0\0\0one{m}\0\na.py",  # a name not NUL-terminated
    ):
        with pytest.raises(MalformedLog):
            parse_log(bad.encode(), m.encode())


def test_max_commits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_commits"):
        _log(object(), max_commits=0)
