"""File names as the tools name them: bytes-safe text on every backend.

A name that is not UTF-8 (`src/r\\xe9sum\\xe9_token.py`, Latin-1, common in old repositories)
was decoded with `surrogateescape`, whose lone surrogates no UTF-8 writer takes: every record
naming the file failed (`codegrep localize` exited 1 with a PydanticSerializationError). Names
are now `name_text`'s: UTF-8, else each component read as Latin-1, mapped back to the bytes on
disk and in git wherever the tree reads.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from worktree_sandbox import DirectoryTree, GlobArgs, GrepArgs, ReadArgs, SandboxLimits, TreePool
from worktree_sandbox._paths import name_text, safe_tree_path
from worktree_sandbox._runtime import Runtime
from worktree_sandbox.history import commit_log

LATIN1 = b"src/r\xe9sum\xe9_token.py"  # Latin-1: not UTF-8
MIXED = b"d\xe9/caf\xc3\xa9.py"  # a Latin-1 folder, a UTF-8 file name
ALIKE_UTF8 = b"x/r\xc3\xa9.py"  # "x/ré.py" in UTF-8 ...
ALIKE_LATIN1 = b"x/r\xe9.py"  # ... and in Latin-1: the same name; the first (by bytes) stays
NAMES = {
    "src/résumé_token.py": "class TokenRefresher:\n    def refresh(self):\n        return 1\n",
    "dé/café.py": "def brew():\n    return TokenRefresher\n",
    "x/ré.py": "first = 'utf-8'\n",
}


@pytest.fixture
def names_repo(tmp_path: Path, git_kit: Any) -> Any:
    repo = git_kit.make_repo(tmp_path, "names")
    root = os.fsencode(repo.path)
    for raw, text in (
        (LATIN1, NAMES["src/résumé_token.py"]),
        (MIXED, NAMES["dé/café.py"]),
        (ALIKE_UTF8, NAMES["x/ré.py"]),
        (ALIKE_LATIN1, "second = 'latin-1'\n"),
    ):
        path = root + b"/" + raw
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text)
    repo.commit({}, "names that are not UTF-8")
    return repo


def test_name_text() -> None:
    assert name_text(LATIN1) == "src/résumé_token.py"
    assert name_text(MIXED) == "dé/café.py"  # each component on its own
    assert name_text(ALIKE_UTF8) == name_text(ALIKE_LATIN1) == "x/ré.py"
    assert name_text(b"plain/ascii.py") == "plain/ascii.py"
    # Latin-1's C1 controls (0x80-0x9f) and Unicode's line separators are control characters:
    # such a name is left out, as one with a newline is.
    assert not safe_tree_path(name_text(b"a\x85b.py"))
    assert not safe_tree_path("a\u2028b.py")


async def _backends(repo: Any, workdir: Path) -> list[Any]:
    """The answers of the folder, the commit's objects and its checkout to the same calls."""
    answers = []
    no_memo = SandboxLimits(cache_entries=0)

    async def calls(tree: Any) -> dict[str, Any]:
        got = {
            "files": [f for f in await tree.files() if f in NAMES],
            "glob": await tree.glob(GlobArgs(pattern="*.py", path="dé")),
            "glob_all": await tree.glob(GlobArgs(pattern="résumé_*.py")),
            "grep": await tree.grep(GrepArgs(pattern="TokenRefresher")),
            "grep_scoped": await tree.grep(GrepArgs(pattern="TokenRefresher", glob="résumé*")),
            "grep_path": await tree.grep(GrepArgs(pattern=".", path="x/ré.py")),
        }
        for name, text in NAMES.items():
            got[name] = await tree.read(ReadArgs(path=name))
            assert got[name].content == text.rstrip("\n"), name
        return got

    async with DirectoryTree(repo.path, Runtime(no_memo)) as folder:
        answers.append(await calls(folder))
    async with (
        TreePool(workdir=workdir, limits=no_memo, materialize="never") as pool,
        pool.tree_at(repo.path, "HEAD") as objects,
    ):
        answers.append(await calls(objects))
    async with (
        TreePool(workdir=workdir, limits=no_memo) as pool,
        pool.tree_at(repo.path, "HEAD") as tree,
    ):
        await tree.wait_checkout()
        assert tree.checkout_ready
        answers.append(await calls(tree))
    return answers


async def test_non_utf8_names_are_text_on_every_backend(names_repo: Any, workdir: Path) -> None:
    answers = await _backends(names_repo, workdir)
    for got in answers:
        assert got["files"] == sorted(NAMES)
        assert got["glob"].paths == ("dé/café.py",)
        assert got["glob_all"].paths == ("src/résumé_token.py",)
        assert [(m.path, m.line) for m in got["grep"].matches] == [
            ("dé/café.py", 2),
            ("src/résumé_token.py", 1),
        ]
        assert [m.path for m in got["grep_scoped"].matches] == ["src/résumé_token.py"]
        assert [m.text for m in got["grep_path"].matches] == ["first = 'utf-8'"]
        for result in got.values():
            if not isinstance(result, list):
                assert result.ok, result.text
                json.loads(result.model_dump_json())  # any record can carry it
    shown = [
        {k: v if isinstance(v, list) else v.model_dump(exclude={"backend", "elapsed_ms"})
         for k, v in got.items()}
        for got in answers
    ]  # fmt: skip
    assert shown[0] == shown[1] == shown[2]


async def test_history_names_are_the_trees_names(names_repo: Any, workdir: Path) -> None:
    async with DirectoryTree(names_repo.path) as folder:
        log = await commit_log(folder)
    assert not log.error
    assert set(NAMES) <= set(log.commits[0].files)


# -- names with newlines: no forged match ------------------------------------------------------


@pytest.fixture
def torn_names(tmp_path: Path, git_kit: Any) -> Path:
    """Untracked folders whose names hold a newline, each holding what a torn name would read
    as a match in a file of the tree (or outside it)."""
    root = tmp_path / "torn"
    for name, text in {
        "src/util.py": "def helper():\n    return 1\n",
        "src/app/core.py": "def parse_config(path):\n    return path\n",
        "src/app/cli.py": "def main():\n    pass\n",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git_kit.run_git(root, "init", "-q", "-b", "main")
    git_kit.run_git(root, "add", "-A")
    git_kit.run_git(root, "commit", "-q", "-m", "first")
    for folder, inner, text in (
        ("zz\n", "src/util.py", "class TokenRefresher:\n"),
        ("yy\n", "etc/passwd", "root:x:0:0:TokenRefresher:/root:/bin/sh\n"),
        ("xx\n\n", "src/app/core.py", "TokenRefresher = 1\n"),
        ('ww\nsrc/app/cli.py: binary file matches (found "\\0" byte around offset 1)\n',
         "src/app/cli.py", "TokenRefresher = 2\n"),
    ):  # fmt: skip
        target = root / folder / inner
        target.parent.mkdir(parents=True)
        target.write_text(text)
    return root


@pytest.mark.parametrize("engine", [None, "git-grep"])
async def test_a_newline_in_a_name_forges_no_match(torn_names: Path, engine: str | None) -> None:
    async with DirectoryTree(torn_names, Runtime(SandboxLimits(grep_engine=engine))) as tree:
        assert not [f for f in await tree.files() if "\n" in f]
        grep = await tree.grep(GrepArgs(pattern="TokenRefresher"))
        assert grep.ok, grep.text
        assert grep.matches == ()
        assert "No matches" in grep.text
        for pattern in ("**", "*.py", "passwd"):
            glob = await tree.glob(GlobArgs(pattern=pattern))
            assert not any("\n" in p or p.startswith("/") for p in glob.paths)
            assert "etc/passwd" not in glob.paths


def test_the_parsers_drop_a_torn_name() -> None:
    from worktree_sandbox._grep_backends import _parse_git_grep, _parse_rg

    note = b'src/a.py: binary file matches (found "\\0" byte around offset 3)'
    rg = b"\n".join([
        b"src/ok.py\x001:fine",
        b"./zz", b"src/util.py\x001:class TokenRefresher:",  # a folder 'zz\n'
        b"yy", b"", b"/etc/passwd\x001:root",  # 'yy\n\n'
        note, b"src/b.py\x002:kept",  # ripgrep's own note on a binary file it was given
        b"ww", note, b"src/c.py\x003:forged",  # a torn name that mimics the note
        b"",
    ])  # fmt: skip
    assert _parse_rg(rg) == [("src/ok.py", 1, b"fine"), ("src/b.py", 2, b"kept")]
    git = b"\n".join([
        b"HEAD:src/ok.py\x001\x00fine", b"HEAD:zz", b"src/util.py\x001\x00forged", b"",
    ])  # fmt: skip
    assert _parse_git_grep(git, "HEAD:") == [("src/ok.py", 1, b"fine")]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("grep", '{"pattern": "x", "path": "\\udce9"}'),
        ("grep", '{"pattern": "x", "glob": "\\udce9*"}'),
        ("glob", '{"pattern": "*", "path": "src/\\udce9"}'),
        ("read", '{"path": "src/\\udce9.py"}'),
        ("grep", '{"pattern": "\\ud800"}'),
    ],
)
async def test_a_lone_surrogate_in_a_call_is_refused(
    names_repo: Any, tool: str, arguments: str
) -> None:
    """JSON's `\\udce9` decodes to a lone surrogate, which no record can carry: echoed in an
    error ('no file or directory ...') it failed the rollout record of the call (pydantic let
    it through the optional `path` and `glob`)."""
    async with DirectoryTree(names_repo.path) as tree:
        result = await tree.call(tool, arguments)
    assert not result.ok
    assert result.error == "invalid_arguments"
    json.loads(result.model_dump_json())
