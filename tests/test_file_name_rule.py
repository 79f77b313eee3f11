"""One reading of a file name that is not UTF-8, in the tree and in the gold.

worktree-sandbox names such a file by `name_text` (UTF-8, else each component as Latin-1), and
codegrep-records reads a patch's C-quoted path the same way, so an answer that names the file
is scored against the patch's own name: here the patch git writes for the commit that added
the files, read by `files_from_patch`, against the tree of that commit.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from codegrep_records import files_from_patch
from worktree_sandbox import DirectoryTree, TreePool

NAMES = (b"src/r\xe9sum\xe9_token.py", b"d\xe9/caf\xc3\xa9.py", b"plain.py", b"caf\xc3\xa9/x.py")
ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@e.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@e.com",
}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env=ENV, check=True, capture_output=True
    ).stdout.decode("utf-8", errors="surrogateescape")


def test_a_patch_names_a_non_utf8_file_as_the_tree_does(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    for raw in NAMES:
        path = os.fsencode(repo) + b"/" + raw
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write("x = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "add")
    for raw in NAMES:  # a change to each (the gold rule leaves added files out)
        with open(os.fsencode(repo) + b"/" + raw, "a") as fh:
            fh.write("y = 2\n")
    _git(repo, "commit", "-q", "-a", "-m", "change")
    patch = _git(repo, "show", "--format=", "HEAD")
    assert '"b/src/r\\351sum\\351_token.py"' in patch  # git C-quotes the bytes

    async def trees() -> tuple[tuple[str, ...], tuple[str, ...]]:
        async with DirectoryTree(repo) as folder:
            here = await folder.files()
        async with TreePool(workdir=tmp_path / "w") as pool, pool.tree_at(repo, "HEAD") as tree:
            return here, await tree.files()

    folder, commit = asyncio.run(trees())
    gold = files_from_patch(patch)
    assert sorted(gold) == list(folder) == list(commit)
    assert "src/résumé_token.py" in gold
    assert "dé/café.py" in gold  # a Latin-1 folder, a UTF-8 file: each read on its own
