"""`commit_log`: the commits before a tree's commit, on real repositories; a hostile config runs
nothing."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path
from typing import Any

import pytest
from worktree_sandbox import CommitTree, DirectoryTree
from worktree_sandbox.history import (
    MAX_FILES_PER_COMMIT,
    HistoryLog,
    LoggedCommit,
    commit_log,
    parse_log,
)


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


def test_parse_log_skips_records_without_files_and_cut_records() -> None:
    raw = "\x1eone\x1f\n\x00a.py\x00b.py\x00\x1etwo\x1f\n\x1ethree"
    assert parse_log(raw) == (LoggedCommit("one", ("a.py", "b.py")),)


def test_max_commits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_commits"):
        _log(object(), max_commits=0)
