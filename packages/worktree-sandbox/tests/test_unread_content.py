"""What no tool reads is never loaded: a file over the size limit is not written into the
checkout (yet listed, and reported as too large), a link whose text is no path is neither
written nor read, and a link followed to nothing says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from worktree_sandbox import GlobArgs, GrepArgs, ReadArgs, SandboxLimits, ToolErrorKind, TreePool
from worktree_sandbox.commit_tree import checkout_footprint


@pytest.fixture
def bare(tmp_path: Path, git_kit: Any) -> Path:
    path = tmp_path / "crafted"
    path.mkdir()
    git_kit.run_git(path, "init", "-q", "-b", "main")
    return path


LIMIT = 64 * 1024  # the tools' file size limit in these tests (2 MiB by default)


async def test_a_file_no_tool_reads_is_not_written(
    bare: Path, git_kit: Any, tmp_path: Path
) -> None:
    big = b"x = '" + b"y" * (LIMIT * 16) + b"'\n"  # one line, 16 times the limit
    small = b"def needle():\n    return 1\n"
    tree_sha = git_kit.raw_tree(
        bare,
        [
            ("100644", b"big.py", git_kit.blob(bare, big)),
            ("100644", b"small.py", git_kit.blob(bare, small)),
        ],
    )
    sha = git_kit.commit_tree(bare, tree_sha)
    limits = SandboxLimits(max_file_bytes=LIMIT)
    async with (
        TreePool(limits=limits, workdir=tmp_path / "W", materialize="always") as pool,
        pool.tree_at(bare, sha) as tree,
    ):
        assert tree.checkout is not None
        assert sorted(p.name for p in tree.checkout.iterdir()) == ["small.py"]
        # the budget counts what is written
        assert pool.checkout_bytes == checkout_footprint([len(small)], 1)
        # every tool still sees the file, as it did
        assert (await tree.glob(GlobArgs(pattern="*.py"))).paths == ("big.py", "small.py")
        read = await tree.read(ReadArgs(path="big.py"))
        assert read.error is ToolErrorKind.FILE_TOO_LARGE
        grep = await tree.grep(GrepArgs(pattern="needle|y{10}"))
        assert [m.path for m in grep.matches] == ["small.py"]
        assert grep.skipped_large == ("big.py",)


async def test_a_link_whose_text_is_no_path_is_never_loaded(
    bare: Path, git_kit: Any, tmp_path: Path
) -> None:
    long_text = b"a/" * 50_000 + b"x.py"  # 100 KB: no path is that long (PATH_MAX is 4,096)
    link = git_kit.blob(bare, long_text)
    dangling = git_kit.blob(bare, b"missing.py")
    code = git_kit.blob(bare, b"value = 1\n")
    tree_sha = git_kit.raw_tree(
        bare,
        [
            ("100644", b"code.py", code),
            ("120000", b"link0.py", link),
            ("120000", b"link1.py", dangling),
        ],
    )
    sha = git_kit.commit_tree(bare, tree_sha)
    async with (
        TreePool(workdir=tmp_path / "W", materialize="always") as pool,
        pool.tree_at(bare, sha) as tree,
    ):
        asked: list[str] = []
        real_get = tree._batch.get

        async def get(name: str) -> Any:
            asked.append(name)
            return await real_get(name)

        tree._batch.get = get  # type: ignore[method-assign]
        # the checkout is made (one long link made it fail whole), without that link
        assert tree.checkout is not None
        assert sorted(p.name for p in tree.checkout.iterdir()) == ["code.py", "link1.py"]
        read = await tree.read(ReadArgs(path="link0.py"))
        assert read.error is ToolErrorKind.INVALID_PATH
        assert "symlink" in read.text
        assert "100,004 bytes" in read.text
        assert link not in asked  # its text was never read
        assert (await tree.glob(GlobArgs(pattern="link*"))).paths == ("link0.py", "link1.py")
        # a link followed to nothing says what it is, not "no file" beside its own name
        read = await tree.read(ReadArgs(path="link1.py"))
        assert read.error is ToolErrorKind.NOT_FOUND
        assert "'link1.py' is a symlink to 'missing.py'" in read.text
        assert "Files with that name" not in read.text
