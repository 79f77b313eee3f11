"""One file list for a folder and its commit: ignore rules never hide a tracked file from grep.

A folder tree's grep let ripgrep walk the folder with its own ignore rules (`.gitignore`,
`.ignore`, `.rgignore`), while glob and read served git's list (tracked files plus untracked,
not ignored ones): a committed `.ignore` holding `src/`, or a tracked file under a `.gitignore`
rule, was invisible to grep in the folder and found at `--commit HEAD`. Now grep searches the
tree's own list on every backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from worktree_sandbox import DirectoryTree, GrepArgs, SandboxLimits, TreePool
from worktree_sandbox._runtime import Runtime
from worktree_sandbox.errors import RepositoryLayoutError
from worktree_sandbox.history import commit_log


@pytest.fixture
def ignoring(tmp_path: Path, git_kit: Any) -> Path:
    """A clean work tree (no file over the size limit: that made grep take the list already)."""
    root = tmp_path / "ignoring"
    files = {
        ".ignore": "src/\n",  # ripgrep's own ignore file; git knows nothing of it
        ".gitignore": "build/\n*.log\n",
        "src/app.py": "import os\n\n\nclass Session:\n    pass\n",
        "build/gen.py": "class Session:  # generated, tracked\n",
        "notes.log": "Session notes, tracked\n",
        "README.md": "# ignoring\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git_kit.run_git(root, "init", "-q", "-b", "main")
    git_kit.run_git(root, "add", "-A")
    git_kit.run_git(root, "add", "-f", "build/gen.py", "notes.log")
    git_kit.run_git(root, "commit", "-q", "-m", "tracked under ignore rules")
    # untracked and ignored: in no list
    (root / "build" / "scratch.py").write_text("class Session:  # scratch\n")
    return root


WANTED = [("build/gen.py", 1), ("notes.log", 1), ("src/app.py", 4)]


@pytest.mark.parametrize("engine", [None, "git-grep"])
async def test_a_clean_folder_greps_as_its_commit(
    ignoring: Path, workdir: Path, engine: str | None
) -> None:
    limits = SandboxLimits(cache_entries=0, grep_engine=engine)
    args = GrepArgs(pattern="Session")
    async with DirectoryTree(ignoring, Runtime(limits)) as folder:
        files = await folder.files()
        got = await folder.grep(args)
    assert "build/scratch.py" not in files
    assert [(m.path, m.line) for m in got.matches] == WANTED
    async with (
        TreePool(workdir=workdir, limits=limits) as pool,
        pool.tree_at(ignoring, "HEAD") as tree,
    ):
        assert await tree.files() == files
        assert [(m.path, m.line) for m in (await tree.grep(args)).matches] == WANTED
        await tree.wait_checkout()
        assert [(m.path, m.line) for m in (await tree.grep(args)).matches] == WANTED


async def test_a_plain_folder_greps_every_file(tmp_path: Path) -> None:
    """Outside git, the list is every file but `.git`: an `.ignore` hides nothing from grep."""
    root = tmp_path / "plain"
    (root / "src").mkdir(parents=True)
    (root / ".ignore").write_text("src/\n")
    (root / ".rgignore").write_text("*.txt\n")
    (root / "src" / "a.py").write_text("needle\n")
    (root / "b.txt").write_text("needle\n")
    async with DirectoryTree(root) as tree:
        got = await tree.grep(GrepArgs(pattern="needle"))
        assert [m.path for m in got.matches] == ["b.txt", "src/a.py"]
        assert await tree.files() == (".ignore", ".rgignore", "b.txt", "src/a.py")


async def test_an_empty_folder_greps_nothing(tmp_path: Path) -> None:
    """No file to search is no search: given no path, an engine would walk the folder."""
    root = tmp_path / "empty"
    root.mkdir()
    async with DirectoryTree(root) as tree:
        got = await tree.grep(GrepArgs(pattern="x"))
    assert got.ok
    assert got.matches == ()


@pytest.mark.parametrize("engine", [None, "git-grep"])
async def test_a_linked_worktree_is_a_git_folder(
    ignoring: Path, tmp_path: Path, git_kit: Any, engine: str | None
) -> None:
    """A linked worktree's `.git` is a file (`gitdir: .../worktrees/NAME`): git is told the
    dir it names. Given the file itself, every git child and the config listing failed with
    "Not a directory", so `codegrep localize --repo` refused a linked worktree outright."""
    linked = tmp_path / "linked"
    git_kit.run_git(ignoring, "worktree", "add", "-q", "-b", "side", str(linked))
    assert (linked / ".git").is_file()
    (linked / "src" / "new.py").write_text("class Session:  # untracked, not ignored\n")
    (linked / "build" / "scratch.py").write_text("class Session:  # ignored\n")
    async with DirectoryTree(linked, Runtime(SandboxLimits(grep_engine=engine))) as folder:
        assert folder.git_dir == (ignoring / ".git" / "worktrees" / "linked").resolve()
        files = await folder.files()
        got = await folder.grep(GrepArgs(pattern="Session"))
        log = await commit_log(folder)
    assert "build/scratch.py" not in files
    assert "src/new.py" in files
    assert [(m.path, m.line) for m in got.matches] == [*WANTED, ("src/new.py", 1)]
    assert log.error == ""
    assert [c.message for c in log.commits] == ["tracked under ignore rules"]


def test_a_git_file_that_names_nothing_is_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "pointer"
    folder.mkdir()
    (folder / ".git").write_bytes(b"not a pointer\n")
    with pytest.raises(RepositoryLayoutError, match="does not start with `gitdir:`"):
        DirectoryTree(folder)
    (folder / ".git").write_bytes(b"gitdir: \xff\n")
    with pytest.raises(RepositoryLayoutError, match="not UTF-8"):
        DirectoryTree(folder)
