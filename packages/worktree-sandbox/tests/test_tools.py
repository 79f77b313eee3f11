"""The three tools on real repositories, on every backend: git objects (git grep), a background
checkout (ripgrep) and a directory as it is. Each backend must give the same answers."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from worktree_sandbox import (
    DirectoryTree,
    GlobArgs,
    GrepArgs,
    ReadArgs,
    SandboxLimits,
    ToolErrorKind,
    Tree,
    TreePool,
)
from worktree_sandbox._runtime import Runtime

BACKENDS = ["objects", "checkout", "directory"]


@pytest.fixture(params=BACKENDS)
async def tree(request: pytest.FixtureRequest, repo: Any, workdir: Path) -> AsyncIterator[Tree]:
    limits = SandboxLimits(max_output_lines=50, max_read_lines=100)
    if request.param == "directory":
        async with DirectoryTree(repo.path, Runtime(limits)) as t:
            yield t
        return
    materialize = "never" if request.param == "objects" else "always"
    async with (
        TreePool(limits=limits, workdir=workdir, materialize=materialize) as pool,
        pool.tree_at(repo.path, repo.commits[-1]) as t,
    ):
        yield t


async def test_grep_sorted_with_line_numbers(tree: Tree) -> None:
    r = await tree.grep(GrepArgs(pattern=r"def parse_\w+", glob="*.py"))
    assert r.ok, r.text
    assert [(m.path, m.line) for m in r.matches] == [
        ("src/app/core.py", 4),
        ("src/app/core.py", 8),
    ]
    assert r.text.splitlines()[0] == "src/app/core.py:4: def parse_config(path):"
    assert not r.truncated


async def test_grep_whole_tree_skips_binary_and_symlinks(tree: Tree) -> None:
    pattern = "parse_config[( ]|# parse_config|binary parse_config"
    r = await tree.grep(GrepArgs(pattern=pattern, max_results=1000))
    assert not r.truncated
    paths = {m.path for m in r.matches}
    assert "data/blob.bin" not in paths
    assert "core_link.py" not in paths  # a symlink: its target is searched once, as itself
    assert {"src/app/core.py", "src/app/cli.py", ".github/workflow.yml", "docs/notes.txt"} <= paths
    assert r.matches == tuple(sorted(r.matches, key=lambda m: (m.path, m.line)))


async def test_grep_truncation_marker(tree: Tree) -> None:
    r = await tree.grep(GrepArgs(pattern="parse_config", path="big", max_results=20))
    assert r.truncated
    assert r.total_matches == 3000
    assert len(r.matches) == 20
    marker = r.text.splitlines()[-1]
    assert marker.startswith("[truncated:")
    assert "3,000" in marker
    assert "glob=" in marker


async def test_grep_output_capped_in_lines(tree: Tree) -> None:
    r = await tree.grep(GrepArgs(pattern="line", path="big/lines.txt", max_results=1000))
    assert r.truncated
    assert len(r.text.splitlines()) == 51  # 50 lines + marker


async def test_grep_path_and_case(tree: Tree) -> None:
    r = await tree.grep(GrepArgs(pattern="SESSION", path="src", ignore_case=True))
    assert [(m.path, m.text) for m in r.matches] == [("src/app/core.py", "class Session:")]
    r = await tree.grep(GrepArgs(pattern="SESSION", path="src"))
    assert r.ok
    assert r.matches == ()
    assert "No matches" in r.text


async def test_grep_bad_regex_is_a_result(tree: Tree) -> None:
    r = await tree.grep(GrepArgs(pattern="(unclosed"))
    assert not r.ok
    assert r.error is ToolErrorKind.INVALID_PATTERN


async def test_grep_missing_path(tree: Tree) -> None:
    r = await tree.grep(GrepArgs(pattern="x", path="nope/"))
    assert r.error is ToolErrorKind.NOT_FOUND


async def test_glob_semantics(tree: Tree) -> None:
    r = await tree.glob(GlobArgs(pattern="*.py"))
    assert r.paths == (
        "core_link.py",
        "src/app/__init__.py",
        "src/app/cli.py",
        "src/app/core.py",
        "tests/test_core.py",
    )
    r = await tree.glob(GlobArgs(pattern="src/**/c*.py"))
    assert r.paths == ("src/app/cli.py", "src/app/core.py")
    r = await tree.glob(GlobArgs(pattern="app/*.py", path="src"))
    assert r.paths == ("src/app/__init__.py", "src/app/cli.py", "src/app/core.py")
    r = await tree.glob(GlobArgs(pattern="*.nothing"))
    assert r.ok
    assert r.paths == ()


async def test_read_numbered_range(tree: Tree) -> None:
    r = await tree.read(ReadArgs(path="./src//app/core.py", start_line=4, end_line=5))
    assert r.ok
    assert r.text == "4\tdef parse_config(path):\n5\t    return open(path).read()"
    assert (r.start_line, r.end_line, r.total_lines) == (4, 5, 14)


async def test_read_is_raw_blob(tree: Tree) -> None:
    # .gitattributes asks for CRLF and export-ignore on docs/notes.txt: the tools see the blob.
    r = await tree.read(ReadArgs(path="docs/notes.txt"))
    assert r.ok, r.text
    assert r.content == "parse_config is documented here"
    assert "\r" not in (await tree.read_bytes("docs/notes.txt")).decode()


async def test_read_window_and_marker(tree: Tree) -> None:
    r = await tree.read(ReadArgs(path="big/lines.txt"))
    assert r.truncated
    assert r.end_line == 100
    assert "start_line=101" in r.text.splitlines()[-1]
    r = await tree.read(ReadArgs(path="big/lines.txt", start_line=2999))
    assert not r.truncated
    assert r.content == "line 2999 parse_config\nline 3000 parse_config"
    r = await tree.read(ReadArgs(path="big/lines.txt", start_line=4000))
    assert r.error is ToolErrorKind.INVALID_ARGUMENTS


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("../outside.txt", ToolErrorKind.INVALID_PATH),
        ("/etc/passwd", ToolErrorKind.INVALID_PATH),
        (".git/config", ToolErrorKind.INVALID_PATH),
        ("src/../../x", ToolErrorKind.INVALID_PATH),
        ("src/escape.txt", ToolErrorKind.INVALID_PATH),
        ("abs_link", ToolErrorKind.INVALID_PATH),
        ("data/blob.bin", ToolErrorKind.BINARY_FILE),
        ("big/huge.txt", ToolErrorKind.FILE_TOO_LARGE),
        ("src/app", ToolErrorKind.IS_DIRECTORY),
        ("app_dir_link", ToolErrorKind.IS_DIRECTORY),
        ("src/app/nothing.py", ToolErrorKind.NOT_FOUND),
    ],
)
async def test_read_refusals(tree: Tree, path: str, kind: ToolErrorKind) -> None:
    r = await tree.read(ReadArgs(path=path))
    assert not r.ok
    assert r.error is kind, r.text
    assert r.text.startswith("Error: ")
    assert "passwd" not in r.content


async def test_symlink_inside_is_followed(tree: Tree) -> None:
    r = await tree.read(ReadArgs(path="core_link.py", end_line=1))
    assert r.ok
    assert r.content == "import os"


async def test_grep_refuses_escaping_paths(tree: Tree) -> None:
    for path in ("..", "/", ".git", "src/../.."):
        r = await tree.grep(GrepArgs(pattern="x", path=path))
        assert r.error is ToolErrorKind.INVALID_PATH, path


async def test_call_with_raw_model_arguments(tree: Tree) -> None:
    r = await tree.call("grep", json.dumps({"pattern": "class Session"}))
    assert r.ok
    assert r.tool == "grep"
    r = await tree.call("read", {"path": "README.md", "bogus": 1})
    assert r.error is ToolErrorKind.INVALID_ARGUMENTS
    assert "bogus" in r.text
    assert r.tool == "read"
    r = await tree.call("read", "{not json")
    assert r.error is ToolErrorKind.INVALID_ARGUMENTS
    # a model's hostile arguments: a clear tool error, never an exception out of the tree
    r = await tree.call("read", "[" * 100_000)
    assert r.error is ToolErrorKind.INVALID_ARGUMENTS
    assert "nested too deeply" in r.text
    r = await tree.call("read", '{"path": "README.md", "start_line": ' + "9" * 5000 + "}")
    assert r.error is ToolErrorKind.INVALID_ARGUMENTS
    r = await tree.call("glob", {"pattern": ""})
    assert r.error is ToolErrorKind.INVALID_ARGUMENTS
    r = await tree.call("write", {"path": "x"})
    assert r.error is ToolErrorKind.INVALID_ARGUMENTS
    assert "glob, grep, read" in r.text


async def test_files_lists_blobs_not_git(tree: Tree) -> None:
    files = await tree.files()
    assert files == tuple(sorted(files))
    assert "src/app/core.py" in files
    assert not any(f.startswith(".git/") for f in files)


CALLS = [
    ("grep", {"pattern": "parse_config"}),
    ("grep", {"pattern": r"def \w+\(", "glob": "*.py"}),
    ("grep", {"pattern": "line 1\\d\\d ", "path": "big", "max_results": 5}),
    ("grep", {"pattern": "hello", "ignore_case": True}),
    ("glob", {"pattern": "**/*.txt"}),
    ("read", {"path": "src/app/core.py"}),
    ("read", {"path": "big/lines.txt", "start_line": 10, "end_line": 12}),
]


async def test_backends_agree(repo: Any, workdir: Path) -> None:
    answers: dict[str, list[str]] = {}
    for mode in BACKENDS:
        out = []
        if mode == "directory":
            async with DirectoryTree(repo.path) as t:
                for name, args in CALLS:
                    out.append((await t.call(name, args)).text)
        else:
            materialize = "never" if mode == "objects" else "always"
            async with (
                TreePool(workdir=workdir, materialize=materialize) as pool,
                pool.tree_at(repo.path, repo.commits[-1]) as ct,
            ):
                for name, args in CALLS:
                    r = await ct.call(name, args)
                    if name == "grep":
                        assert r.backend == ("git-grep" if mode == "objects" else "ripgrep")
                    out.append(r.text)
        answers[mode] = out
    assert answers["objects"] == answers["checkout"] == answers["directory"]


async def test_older_commit_is_served_as_it_was(repo: Any, workdir: Path) -> None:
    async with TreePool(workdir=workdir) as pool, pool.tree_at(repo.path, repo.commits[0]) as t:
        r = await t.grep(GrepArgs(pattern="parse_args"))
        assert r.matches == ()
        assert "big/lines.txt" not in await t.files()


async def test_partial_clone_missing_blob(repo: Any, workdir: Path) -> None:
    # Mirrors that leave large files out have tree entries whose blob is absent.
    sha = repo.commit({"data/large.csv": "a,b\n" + "1,2\n" * 100, "data/small.csv": "needle\n"})
    oid = subprocess.run(
        ["git", "rev-parse", f"{sha}:data/large.csv"],
        cwd=repo.path, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    (repo.path / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    for materialize in ("always", "never"):
        async with (
            TreePool(workdir=workdir, materialize=materialize) as pool,
            pool.tree_at(repo.path, sha) as tree,
        ):
            assert "data/large.csv" in await tree.files()
            r = await tree.read(ReadArgs(path="data/large.csv"))
            assert r.error is ToolErrorKind.NOT_FOUND
            assert "not in this clone" in r.text
            g = await tree.grep(GrepArgs(pattern="needle"))
            assert [m.path for m in g.matches] == ["data/small.csv"]


async def test_directory_without_ripgrep_falls_back_to_git_grep(repo: Any) -> None:
    plain = Runtime()
    plain.rg = None  # a machine without ripgrep
    greps = [args for name, args in CALLS if name == "grep"]
    async with DirectoryTree(repo.path) as with_rg, DirectoryTree(repo.path, plain) as without:
        for args in greps:
            a, b = await with_rg.call("grep", args), await without.call("grep", args)
            assert b.backend == "git-grep"
            assert a.text == b.text
        bad = await without.call("grep", {"pattern": "(unclosed"})
        assert bad.error is ToolErrorKind.INVALID_PATTERN
