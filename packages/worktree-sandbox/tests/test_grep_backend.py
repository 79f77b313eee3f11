"""The folder grep engine is chosen in one place (`folder_backend`): both kinds of tree search
a folder with what it returns, and a commit tree keeps grep on its objects for an engine that
does not search checkouts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from worktree_sandbox import (
    GREP_ENGINES,
    DirectoryTree,
    GrepArgs,
    SandboxError,
    SandboxLimits,
    TreePool,
    _grep_backends,
    check_grep_engine,
    commit_tree,
    directory_tree,
)
from worktree_sandbox._grep_backends import (
    FolderGrep,
    GitGrepFolder,
    GrepEngine,
    RawMatch,
    RipgrepFolder,
    folder_backend,
    register_grep_engine,
)
from worktree_sandbox._runtime import Runtime
from worktree_sandbox.commit_tree import CommitTree


@dataclass
class Recording:
    """The real engine under another name, remembering the folders it searched."""

    inner: FolderGrep
    searches_checkouts: bool = True
    name: str = "recording"
    roots: list[Path] = field(default_factory=list)

    @property
    def applies_ignore_rules(self) -> bool:
        return self.inner.applies_ignore_rules

    async def check_pattern(self, pattern: str) -> None:
        await self.inner.check_pattern(pattern)

    async def search(
        self,
        root: Path,
        args: GrepArgs,
        targets: list[str] | None,
        deadline: float,
        *,
        ignore_rules: bool,
        git_dir: Path | None,
    ) -> tuple[list[RawMatch], bool]:
        self.roots.append(root)
        return await self.inner.search(
            root, args, targets, deadline, ignore_rules=ignore_rules, git_dir=git_dir
        )


def test_ripgrep_when_present_else_git_grep() -> None:
    assert folder_backend("/usr/bin/rg", 10) == RipgrepFolder(rg="/usr/bin/rg", max_file_bytes=10)
    assert isinstance(folder_backend(None, 10), GitGrepFolder)


def test_an_engine_is_chosen_by_its_name_and_a_bad_name_is_said_first() -> None:
    assert isinstance(folder_backend("/usr/bin/rg", 10, "git-grep"), GitGrepFolder)
    with pytest.raises(SandboxError, match="grep engine 'ag': not one of ripgrep, git-grep"):
        check_grep_engine("ag")
    with pytest.raises(SandboxError, match="grep engine 'ag'"):
        Runtime(SandboxLimits(grep_engine="ag"))
    check_grep_engine(None)  # the default always is


async def test_an_engine_registered_from_outside_is_chosen_everywhere(
    repo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new engine is one registry entry: its binary and its maker; no tree names it."""
    real = Runtime()
    engine = Recording(folder_backend(real.rg, real.limits.max_file_bytes), name="outside")
    monkeypatch.setitem(
        GREP_ENGINES,
        "outside",
        GrepEngine("outside", lambda: "/bin/outside", lambda binary, size: engine, "nothing"),
    )
    with pytest.raises(SandboxError, match="already registered"):
        register_grep_engine(GREP_ENGINES["outside"])
    limits = SandboxLimits(grep_engine="outside")
    async with DirectoryTree(repo.path, Runtime(limits)) as folder:
        found = await folder.grep(GrepArgs(pattern=r"def parse_\w+"))
    assert found.backend == "outside"
    assert engine.roots == [Path(repo.path).resolve()]
    missing = GrepEngine("gone", lambda: None, lambda binary, size: engine, "the gone binary")
    monkeypatch.setitem(GREP_ENGINES, "gone", missing)
    with pytest.raises(SandboxError, match="needs the gone binary, not found here"):
        check_grep_engine("gone")


@pytest.mark.parametrize("checkouts", [True, False])
async def test_both_trees_search_with_the_chosen_engine(
    checkouts: bool, repo: Any, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Runtime()
    engine = Recording(folder_backend(real.rg, real.limits.max_file_bytes), checkouts)

    def chosen(rg: str | None, max_file_bytes: int, name: str | None = None) -> FolderGrep:
        return engine

    for module in (_grep_backends, commit_tree, directory_tree):
        monkeypatch.setattr(module, "folder_backend", chosen)
    args = GrepArgs(pattern=r"def parse_\w+")
    async with DirectoryTree(repo.path) as folder:
        plain = await folder.grep(args)
    assert plain.backend == "recording"
    assert engine.roots == [Path(repo.path).resolve()]
    async with (
        TreePool(workdir=workdir, materialize="always") as pool,
        pool.tree_at(repo.path, repo.commits[-1]) as tree,
    ):
        assert isinstance(tree, CommitTree)
        await tree.wait_checkout()
        assert tree.checkout is not None
        at_commit = await tree.grep(args)
        if checkouts:
            assert at_commit.backend == "recording"
            assert engine.roots[-1] == tree.checkout
        else:
            assert at_commit.backend == "git-grep"
            assert len(engine.roots) == 1
    assert [m.path for m in at_commit.matches] == [m.path for m in plain.matches]
