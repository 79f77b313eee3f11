"""The sandbox against an attacker: hostile workdirs, hostile commits, hostile repository config,
files and calls that hit limits. Whatever happens, nothing outside the checkout or the sandbox's
own folders changes (checked against a manifest of the temp root), no program named by the
repository runs, and every backend gives the same answer.

Hostile git trees are built object by object (`git hash-object --literally`), as an attacker
would, since `git add` never makes them.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner
from worktree_sandbox import (
    DirectoryTree,
    GlobArgs,
    GrepArgs,
    ReadArgs,
    SandboxLimits,
    ToolErrorKind,
    TreePool,
)
from worktree_sandbox._owned import MARKER, make_owned_dir
from worktree_sandbox._runtime import Runtime
from worktree_sandbox.cli import app
from worktree_sandbox.commit_tree import CommitTree
from worktree_sandbox.pool import prune_workdir

runner = CliRunner()


def manifest(root: Path, *, skip: tuple[Path, ...] = ()) -> dict[str, tuple[Any, ...]]:
    """Every entry below `root` (links not followed): kind, mode, size, mtime, link target."""
    out: dict[str, tuple[Any, ...]] = {}
    skipped = {str(p) for p in skip}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if os.path.join(dirpath, d) not in skipped]
        for name in [*dirs, *files]:
            full = os.path.join(dirpath, name)
            if full in skipped:
                continue
            st_ = os.lstat(full)
            target = os.readlink(full) if stat.S_ISLNK(st_.st_mode) else ""
            size = st_.st_size if stat.S_ISREG(st_.st_mode) else 0
            out[os.path.relpath(full, root)] = (
                stat.S_IFMT(st_.st_mode),
                stat.S_IMODE(st_.st_mode),
                size,
                st_.st_mtime_ns if not stat.S_ISDIR(st_.st_mode) else 0,
                target,
            )
    return out


def outside_dir(root: Path) -> Path:
    victim = root / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "keep.txt").write_text("keep\n")
    (victim / "sub" / "deep.txt").write_text("deep\n")
    os.chmod(victim, 0o755)
    return victim


@pytest.fixture
def bare(tmp_path: Path, git_kit: Any) -> Path:
    path = tmp_path / "crafted"
    path.mkdir()
    git_kit.run_git(path, "init", "-q", "-b", "main")
    return path


# -- 1, 2: gc and pools touch only folders they made ---------------------------------------------


def test_gc_leaves_folders_it_never_made(tmp_path: Path, repo: Any) -> None:
    work = tmp_path / "W"
    (work / "important_project" / "src").mkdir(parents=True)
    (work / "important_project" / "src" / "main.py").write_text("print('mine')\n")
    (work / "4194304-2").mkdir()  # named like a dead owner's tag, but not made here
    (work / "4194304-2" / "notes.txt").write_text("mine too\n")
    (work / "loose.txt").write_text("x\n")
    before = manifest(tmp_path)
    out = runner.invoke(app, ["gc", "--workdir", str(work)])
    assert out.exit_code == 0, out.output
    assert "removed 0 folder(s)" in out.stdout
    assert "left 3 entry(ies) not made here" in out.stdout
    assert manifest(tmp_path) == before
    report = prune_workdir(work)
    assert report.folders == 0
    assert set(report.not_ours) == {"important_project", "4194304-2", "loose.txt"}
    assert manifest(tmp_path) == before


async def test_a_pool_on_a_shared_workdir_leaves_the_rest(tmp_path: Path, repo: Any) -> None:
    work = tmp_path / "W"
    (work / "important_project").mkdir(parents=True)
    (work / "important_project" / "main.py").write_text("print('mine')\n")
    before = manifest(tmp_path, skip=(work,))
    before_work = manifest(work)
    async with (
        TreePool(workdir=work, materialize="always") as pool,
        pool.tree_at(repo.path, repo.commits[-1]) as tree,
    ):
        assert tree.checkout is not None
        assert tree.checkout.is_relative_to(work)
        assert (await tree.grep(GrepArgs(pattern="hello"))).ok
    assert manifest(tmp_path, skip=(work,)) == before
    assert manifest(work) == before_work


def test_gc_never_follows_a_planted_link(tmp_path: Path) -> None:
    victim = outside_dir(tmp_path)
    work = tmp_path / "W"
    work.mkdir()
    os.symlink(victim, work / "4194304-2")
    # A marked folder of a dead owner, holding links out: removed, the links as links.
    dead = make_owned_dir(work / "4194304-3.abcd", "4194304-3")
    os.symlink(victim, dead / "to-victim")
    os.symlink(victim / "keep.txt", dead / "to-file")
    (dead / "own").mkdir()
    os.chmod(dead / "own", 0o555)
    before = manifest(victim)
    out = runner.invoke(app, ["gc", "--workdir", str(work)])
    assert out.exit_code == 0, out.output
    assert "removed 1 folder(s)" in out.stdout
    assert manifest(victim) == before
    assert stat.S_IMODE(os.stat(victim).st_mode) == 0o755
    assert os.path.islink(work / "4194304-2")  # not ours: left, and said so
    assert "4194304-2" in out.stdout
    assert not dead.exists()


def test_a_marker_of_a_live_owner_or_another_shape_is_kept(tmp_path: Path) -> None:
    work = tmp_path / "W"
    work.mkdir()
    live = make_owned_dir(work / "live", f"{os.getpid()}-0")
    fake = work / "fake"
    fake.mkdir()
    (fake / MARKER).write_text("something else\n4194304-2\n")
    link_marker = work / "linked"
    link_marker.mkdir()
    os.symlink(live / MARKER, link_marker / MARKER)  # a marker must be a file, not a link
    report = prune_workdir(work)
    assert report.folders == 0
    assert live.exists()
    assert fake.exists()
    assert link_marker.exists()


def test_the_default_workdir_refuses_a_planted_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from worktree_sandbox import SandboxError, pool

    victim = outside_dir(tmp_path)
    planted = tmp_path / "shm" / "worktree-sandbox-0"
    planted.parent.mkdir()
    os.symlink(victim, planted)
    monkeypatch.setattr(pool, "default_workdir", lambda: planted)
    sandbox = pool.TreePool()
    sandbox.workdir = planted
    with pytest.raises(SandboxError, match="link or a file"):
        sandbox._checkout_parent()
    assert sorted(p.name for p in victim.iterdir()) == ["keep.txt", "sub"]


# -- 3: crafted commits ----------------------------------------------------------------------------


async def test_a_link_and_a_folder_of_one_name_write_nothing_outside(
    tmp_path: Path, bare: Path, git_kit: Any
) -> None:
    victim = outside_dir(tmp_path)
    evil = git_kit.blob(bare, b"evil = True\n")
    link = git_kit.blob(bare, str(victim).encode())
    sub = git_kit.raw_tree(bare, [("100644", b"evil.py", evil)])
    top = git_kit.raw_tree(bare, [("120000", b"d", link), ("40000", b"d", sub)])
    sha = git_kit.commit_tree(bare, top)
    before = manifest(victim)
    work = tmp_path / "W"
    async with (
        TreePool(workdir=work, materialize="always") as pool,
        pool.tree_at(bare, sha) as tree,
    ):
        assert await tree.files() == ("d",)
        assert tree.refused_entries == ("d/evil.py",)
        read = await tree.read(ReadArgs(path="d/evil.py"))
        assert read.error in (ToolErrorKind.INVALID_PATH, ToolErrorKind.NOT_FOUND)
        assert (await tree.grep(GrepArgs(pattern="evil"))).total_matches == 0
    assert manifest(victim) == before
    assert stat.S_IMODE(os.stat(victim).st_mode) == 0o755
    assert not (victim / "evil.py").exists()


async def test_dot_dot_entries_write_nothing_above_the_checkout(
    tmp_path: Path, bare: Path, git_kit: Any
) -> None:
    evil = git_kit.blob(bare, b"evil2\n")
    fine = git_kit.blob(bare, b"fine\n")
    victim = git_kit.raw_tree(bare, [("100644", b"evil2.py", evil)])
    level = git_kit.raw_tree(bare, [("40000", b"victim", victim)])
    for _ in range(4):
        level = git_kit.raw_tree(bare, [("40000", b"..", level)])
    gitdir = git_kit.raw_tree(bare, [("100644", b"config", evil)])
    top = git_kit.raw_tree(
        bare,
        [("40000", b"..", level), ("40000", b".git", gitdir), ("100644", b"ok.py", fine)],
    )
    sha = git_kit.commit_tree(bare, top)
    before = manifest(tmp_path, skip=(tmp_path / "W",))
    async with (
        TreePool(workdir=tmp_path / "W", materialize="always") as pool,
        pool.tree_at(bare, sha) as tree,
    ):
        listed = await tree.glob(GlobArgs(pattern="**"))
        assert listed.paths == ("ok.py",)
        assert sorted(tree.refused_entries) == ["../../../../../victim/evil2.py", ".git/config"]
        assert tree.checkout is not None
        assert sorted(os.listdir(tree.checkout)) == ["ok.py"]
    assert manifest(tmp_path, skip=(tmp_path / "W",)) == before
    assert not list(tmp_path.rglob("evil2.py"))


async def test_duplicate_entries_serve_the_first_on_every_backend(
    tmp_path: Path, bare: Path, git_kit: Any
) -> None:
    first = git_kit.blob(bare, b"first needle\n")
    second = git_kit.blob(bare, b"second needle\n")
    top = git_kit.raw_tree(bare, [("100644", b"x.py", first), ("100644", b"x.py", second)])
    sha = git_kit.commit_tree(bare, top)
    for materialize in ("never", "always"):
        async with (
            TreePool(workdir=tmp_path / "W", materialize=materialize) as pool,
            pool.tree_at(bare, sha) as tree,
        ):
            assert (await tree.read(ReadArgs(path="x.py"))).content == "first needle"
            grep = await tree.grep(GrepArgs(pattern="needle"))
            assert [m.text for m in grep.matches] == ["first needle"]


_NAMES = [b"a", b"A", b"b.py", b"..", b".", b".git", b".GIT", b"d", b"x\ny", b"sub"]
_LINK_TARGETS = ["/etc", "../../..", "a", "../x", "d/b.py", "sub", "."]


@st.composite
def hostile_trees(draw: st.DrawFn, depth: int = 0) -> list[tuple[str, bytes, Any]]:
    """Entries of a tree: files, executables, links in and out, subtrees, duplicates."""
    entries: list[tuple[str, bytes, Any]] = []
    for _ in range(draw(st.integers(1, 4 if depth < 2 else 2))):
        name = draw(st.sampled_from(_NAMES))
        kind = draw(st.sampled_from(["file", "exec", "link"] + (["tree"] if depth < 2 else [])))
        if kind == "tree":
            entries.append(("40000", name, draw(hostile_trees(depth + 1))))
        elif kind == "link":
            entries.append(("120000", name, draw(st.sampled_from(_LINK_TARGETS))))
        else:
            mode = "100755" if kind == "exec" else "100644"
            entries.append((mode, name, draw(st.sampled_from(["needle\n", "other\n"]))))
    return entries


def _write_tree(git_kit: Any, repo: Path, entries: list[tuple[str, bytes, Any]]) -> str:
    made = []
    for mode, name, content in entries:
        if mode == "40000":
            made.append((mode, name, _write_tree(git_kit, repo, content)))
        else:
            made.append((mode, name, git_kit.blob(repo, content.encode())))
    return git_kit.raw_tree(repo, made)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(entries=hostile_trees())
async def test_hostile_trees_change_nothing_outside(
    tmp_path_factory: pytest.TempPathFactory, git_kit: Any, entries: list[tuple[str, bytes, Any]]
) -> None:
    root = tmp_path_factory.mktemp("hostile")
    outside_dir(root)
    repo = root / "repo"
    repo.mkdir()
    git_kit.run_git(repo, "init", "-q", "-b", "main")
    sha = git_kit.commit_tree(repo, _write_tree(git_kit, repo, entries))
    work = root / "W"
    before = manifest(root, skip=(work,))
    answers = {}
    for materialize in ("never", "always"):
        async with (
            TreePool(workdir=work, materialize=materialize) as pool,
            pool.tree_at(repo, sha) as tree,
        ):
            files = await tree.files()
            for f in files:
                parts = f.split("/")
                assert ".." not in parts
                assert "." not in parts
                assert "" not in parts
                assert ".git" not in [p.lower() for p in parts]
                assert "\n" not in f
            grep = await tree.grep(GrepArgs(pattern="needle"))
            reads = [(await tree.read(ReadArgs(path=f))).text for f in files]
            answers[materialize] = (files, grep.text, reads)
            if materialize == "always":
                assert tree.checkout is not None
                on_disk = sorted(
                    os.path.relpath(os.path.join(d, n), tree.checkout)
                    for d, dirs, names in os.walk(tree.checkout)
                    for n in [*names, *(x for x in dirs if os.path.islink(os.path.join(d, x)))]
                )
                assert on_disk == sorted(files)
        assert manifest(root, skip=(work,)) == before
    assert answers["never"] == answers["always"]
    assert not work.exists() or os.listdir(work) == []


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    planted=st.lists(
        st.tuples(
            st.sampled_from(["4194304-2", "1-1", "important", "4194304-3.ab", "x"]),
            st.sampled_from(["dir", "file", "link-out", "marked-dead", "marked-fake"]),
        ),
        max_size=5,
        unique_by=lambda t: t[0],
    )
)
async def test_hostile_workdirs_lose_nothing(
    tmp_path_factory: pytest.TempPathFactory, git_kit: Any, planted: list[tuple[str, str]]
) -> None:
    root = tmp_path_factory.mktemp("workdir")
    victim = outside_dir(root)
    src = git_kit.make_repo(root / "src")
    work = root / "W"
    work.mkdir()
    dead = set()
    for name, kind in planted:
        path = work / name
        if kind == "dir":
            path.mkdir()
            (path / "data.txt").write_text("precious\n")
        elif kind == "file":
            path.write_text("precious\n")
        elif kind == "link-out":
            os.symlink(victim, path)
        elif kind == "marked-dead":
            make_owned_dir(path, "4194304-9")
            os.symlink(victim, path / "out")
            dead.add(name)
        else:
            path.mkdir()
            (path / MARKER).write_text("not ours\n4194304-9\n")
    outside = manifest(root, skip=(work,))
    kept = {k: v for k, v in manifest(work).items() if k.split("/")[0] not in dead}
    async with (
        TreePool(workdir=work, materialize="always") as pool,
        pool.tree_at(src.path, src.commits[-1]) as tree,
    ):
        assert (await tree.read(ReadArgs(path="README.md"))).ok
    assert manifest(root, skip=(work,)) == outside
    assert manifest(work) == kept
    assert not any((work / d).exists() for d in dead)


# -- 4: the repository's own config never runs a program ------------------------------------------


@pytest.fixture
def booby_trapped(tmp_path: Path, git_kit: Any) -> tuple[Any, Path]:
    repo = git_kit.make_repo(tmp_path / "trap")
    proof = tmp_path / "ran"
    script = tmp_path / "payload.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {proof}\ncat\n')
    script.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("post-checkout", "pre-commit", "fsmonitor-watchman", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\necho hook {hook} >> {proof}\n")
        (hooks / hook).chmod(0o755)
    included = tmp_path / "included.cfg"
    included.write_text(f'[filter "inc"]\n\tprocess = {script}\n\tsmudge = {script}\n')
    (repo.path / ".gitattributes").write_text("* filter=trap diff=trap\n")
    with open(repo.path / ".git" / "config", "a") as cfg:
        cfg.write(
            f"[core]\n\tfsmonitor = {script}\n\thooksPath = {hooks}\n"
            f"\tsshCommand = {script}\n\tpager = {script}\n"
            f'[filter "trap"]\n\tclean = {script}\n\tsmudge = {script}\n'
            f"\tprocess = {script}\n\trequired = true\n"
            f'[diff "trap"]\n\ttextconv = {script}\n\tcommand = {script}\n'
            f"[diff]\n\texternal = {script}\n"
            f"[grep]\n\tcolumn = true\n\tfullName = true\n"
            f"[include]\n\tpath = {included}\n"
        )
    return repo, proof


def test_the_trap_is_live_for_plain_git(booby_trapped: tuple[Any, Path], git_kit: Any) -> None:
    """The config above does run a program under plain git: the tests below are not vacuous."""
    repo, proof = booby_trapped
    git_kit.run_git(repo.path, "ls-files")
    assert proof.exists()


async def test_folder_mode_runs_nothing_the_repository_names(
    booby_trapped: tuple[Any, Path], tmp_path: Path
) -> None:
    repo, proof = booby_trapped
    async with DirectoryTree(repo.path) as tree:
        assert "src/app/core.py" in await tree.files()
        grep = await tree.grep(GrepArgs(pattern="def parse_config"))
        assert [(m.path, m.line) for m in grep.matches] == [("src/app/core.py", 4)]
        assert (await tree.read(ReadArgs(path="README.md"))).ok
    async with (
        TreePool(workdir=tmp_path / "W") as pool,
        pool.tree_at(repo.path, "HEAD") as ctree,
    ):
        for _ in range(2):  # before and after the checkout is ready
            grep = await ctree.grep(GrepArgs(pattern="def parse_config"))
            assert [(m.path, m.line) for m in grep.matches] == [("src/app/core.py", 4)]
            await ctree.wait_checkout()
        assert (await ctree.read(ReadArgs(path="README.md"))).ok
    assert not proof.exists(), proof.read_text()


def test_the_command_line_runs_nothing_the_repository_names(
    booby_trapped: tuple[Any, Path],
) -> None:
    repo, proof = booby_trapped
    for argv in (["grep", "parse_config"], ["glob", "*.py"], ["read", "README.md"]):
        for commit in ([], ["--commit", "HEAD"]):
            out = runner.invoke(app, [*argv, "--repo", str(repo.path), *commit])
            assert out.exit_code == 0, out.output
    assert not proof.exists(), proof.read_text()


# -- 5, 7: one answer on every backend for limits -------------------------------------------------


@pytest.fixture
def limits_repo(tmp_path: Path, git_kit: Any) -> Any:
    repo = git_kit.make_repo(tmp_path / "limits")
    repo.commit(
        {
            "huge_line.txt": "a" * 5_000_000 + "b needle\n",
            "long_line.txt": "needle " + "x" * 1_000_000 + "\n",
            "aaa.txt": "a" * 50_000 + "b\n",
            "unicode.txt": "héllo wörld\n",
        }
    )
    # Enough files that the checkout is still being written when the first grep runs.
    repo.commit({f"pad/f{i:04d}.py": f"value = {i}\n" for i in range(1500)})
    return repo


async def _three_backends(repo: Any, workdir: Path, args: GrepArgs) -> list[Any]:
    answers = []
    no_memo = SandboxLimits(cache_entries=0)
    async with (
        TreePool(workdir=workdir, limits=no_memo) as pool,
        pool.tree_at(repo.path, "HEAD") as tree,
    ):
        answers.append(await tree.grep(args))  # first call: the checkout is being written
        await tree.wait_checkout()
        assert tree.checkout_ready
        answers.append(await tree.grep(args))
    async with DirectoryTree(repo.path, Runtime(no_memo)) as folder:
        answers.append(await folder.grep(args))
    # No checkout ahead of need: what git grep cannot run makes one on demand.
    async with (
        TreePool(workdir=workdir, limits=no_memo, materialize="never") as pool,
        pool.tree_at(repo.path, "HEAD") as tree,
    ):
        answers.append(await tree.grep(args))
    return answers


def _same(result: Any) -> tuple[Any, ...]:
    text = "\n".join(result.text.splitlines()[: len(result.matches)])
    note = [line for line in result.text.splitlines() if line.startswith("[not searched")]
    return (result.ok, result.error, result.matches, result.skipped_large, text, note)


@pytest.mark.parametrize("pattern", [r"(a+)+$", "a{100000}", r"(?u)\w+", "needle", "b$"])
async def test_regex_limits_answer_alike_on_every_backend(
    limits_repo: Any, workdir: Path, pattern: str
) -> None:
    answers = await _three_backends(limits_repo, workdir, GrepArgs(pattern=pattern))
    first = _same(answers[0])
    assert first[0], answers[0].text  # ripgrep runs what PCRE2 cannot: never invalid_pattern
    assert all(_same(a) == first for a in answers[1:]), [a.text[:300] for a in answers]


# A definition search of LexicalPolicy's shape: `\s+` crosses lines in git grep's PCRE2, whose JIT
# stack runs out on a long run of short lines (as in sympy's test tables); ripgrep runs it.
_DEFINITION = r"^\s*(?:[\w<>\[\],*&:.]+\s+)+[*&]?(?:\w+::)*(?:ccode|sinc)\s*\("


@pytest.fixture
def jit_repo(tmp_path: Path, git_kit: Any) -> Any:
    repo = git_kit.make_repo(tmp_path / "jit")
    table = "".join(f"    a{i} b c d, e.f [g]\n" for i in range(20_000))
    repo.commit({"table.py": table, "printing/ccode.py": "def ccode(expr):\n    pass\n"})
    return repo


async def test_a_pattern_past_git_greps_jit_stack_gets_ripgreps_answer(
    jit_repo: Any, workdir: Path
) -> None:
    proc = subprocess.run(
        ["git", "grep", "-P", "-e", _DEFINITION, "HEAD"],
        cwd=jit_repo.path, capture_output=True, check=False,
    )  # fmt: skip
    if not (proc.returncode > 1 and b"JIT stack limit" in proc.stderr):
        pytest.skip("this git's PCRE2 runs the pattern (no JIT, or a larger JIT stack)")
    answers = await _three_backends(jit_repo, workdir, GrepArgs(pattern=_DEFINITION))
    for answer in answers:
        assert answer.ok, answer.text
        assert [m.path for m in answer.matches] == ["printing/ccode.py"]
    assert all(_same(a) == _same(answers[0]) for a in answers)


async def test_large_files_are_a_limit_said_alike_everywhere(
    limits_repo: Any, workdir: Path
) -> None:
    for args in (GrepArgs(pattern="needle"), GrepArgs(pattern="needle", glob="*.txt")):
        answers = await _three_backends(limits_repo, workdir, args)
        for a in answers:
            assert a.skipped_large == ("big/huge.txt", "huge_line.txt")
            assert "huge_line.txt" not in {m.path for m in a.matches}
            assert (
                "[not searched: 2 file(s) over the 2,097,152-byte limit: big/huge.txt, "
                "huge_line.txt]" in a.text
            )
        assert all(_same(a) == _same(answers[0]) for a in answers)
    async with (
        TreePool(workdir=workdir, materialize="never") as pool,
        pool.tree_at(limits_repo.path, "HEAD") as tree,
    ):
        direct = await tree.grep(GrepArgs(pattern="needle", path="huge_line.txt"))
    assert direct.ok
    assert direct.total_matches == 0
    assert direct.skipped_large == ("huge_line.txt",)


async def test_structured_lines_are_capped_and_counted_right(
    limits_repo: Any, workdir: Path
) -> None:
    answers = await _three_backends(limits_repo, workdir, GrepArgs(pattern="needle x"))
    full = len("needle " + "x" * 1_000_000)
    for a in answers:
        (match,) = a.matches
        assert match.path == "long_line.txt"
        assert len(match.text) < 400
        assert match.text.endswith(f"… [+{full - 300:,} chars]".replace(",", ""))
        assert len(a.text.encode()) <= 16_384


# -- 6: the command line refuses bad values with exit 2 -------------------------------------------


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["read", "README.md", "--start-line", "-1"], "--start-line"),
        (["read", "README.md", "--start-line", "0"], "--start-line"),
        (["read", "README.md", "--end-line", "-5"], "--end-line"),
        (["grep", ""], "PATTERN"),
        (["grep", "x", "--max-results", "0"], "--max-results"),
        (["grep", "a" * 1001], "PATTERN"),
        (["glob", ""], "PATTERN"),
        (["read", ""], "FILE"),
    ],
)
def test_cli_refuses_bad_values_with_exit_2(repo: Any, argv: list[str], option: str) -> None:
    out = runner.invoke(app, [*argv, "--repo", str(repo.path)])
    assert out.exit_code == 2, out.output
    assert out.exception is None or isinstance(out.exception, SystemExit)
    assert option in out.output


def test_cli_prepare_refuses_a_negative_limit(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"repo": "a/b", "base_commit": "HEAD"}) + "\n")
    out = runner.invoke(
        app, ["prepare", str(rows), "--cache", str(tmp_path / "c"), "--limit", "-1"]
    )
    assert out.exit_code == 2
    assert not (tmp_path / "c").exists()


# -- 11: control characters in paths -----------------------------------------------------------


@pytest.mark.parametrize("path", ["README.md\n", "README.md\r", "\tREADME.md", "READ\x00ME.md"])
async def test_control_characters_are_refused_not_stripped(repo: Any, path: str) -> None:
    async with DirectoryTree(repo.path, Runtime(SandboxLimits())) as tree:
        result = await tree.read(ReadArgs(path=path))
        assert result.error == ToolErrorKind.INVALID_PATH
        assert "control characters" in result.text
        grep = await tree.grep(GrepArgs(pattern="hello", path=path))
        assert grep.error == ToolErrorKind.INVALID_PATH


async def test_padding_spaces_are_still_accepted(repo: Any) -> None:
    async with DirectoryTree(repo.path) as tree:
        assert (await tree.read(ReadArgs(path=" README.md "))).ok


def test_commit_tree_lists_refused_entries(tmp_path: Path, bare: Path, git_kit: Any) -> None:
    """`refused_entries` is public: a program can tell a user what a commit held."""
    fine = git_kit.blob(bare, b"x\n")
    sha = git_kit.commit_tree(
        bare, git_kit.raw_tree(bare, [("100644", b".git", fine), ("100644", b"a", fine)])
    )
    import asyncio

    async def go() -> tuple[tuple[str, ...], tuple[str, ...]]:
        tree = CommitTree(bare / ".git", sha)
        try:
            return await tree.files(), tree.refused_entries
        finally:
            await tree.close()

    assert asyncio.run(go()) == (("a",), (".git",))


# -- the sandbox's own reader (prepare's instances file) -------------------------------------------


@pytest.fixture
def rows_text() -> str:
    rows = [
        json.dumps({"repo": "a/b", "base_commit": "HEAD", "instance_id": str(i)}) for i in (0, 1)
    ]
    return "\n".join(rows) + "\n"


def test_prepare_counts_deep_and_undecodable_rows(tmp_path: Path, rows_text: str) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(
        rows_text.encode()
        + b"[" * 1100 + b"]" * 1100 + b"\n"
        + b'{"a":' * 1100 + b"1" + b"}" * 1100 + b"\n"
        + b"\xff\xfe not utf-8\n"
        + b"[1, 2]\n"
    )  # fmt: skip
    out = runner.invoke(
        app, ["prepare", str(path), "--cache", str(tmp_path / "c"), "--source", "/no/{name}"]
    )
    assert out.exception is None or isinstance(out.exception, SystemExit), out.output
    assert out.exit_code == 1
    assert "4 row(s) skipped" in out.output
    assert "nested too deeply" in out.output


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_prepare_on_a_damaged_gzip_exits_2(tmp_path: Path, rows_text: str, damage: str) -> None:
    import gzip

    data = gzip.compress((rows_text * 300).encode())
    if damage == "truncated":
        data = data[: len(data) // 2]
    else:
        data = data[:40] + b"\0" * 2000 + data[2040:]
    path = tmp_path / "rows.jsonl.gz"
    path.write_bytes(data)
    out = runner.invoke(app, ["prepare", str(path), "--cache", str(tmp_path / "c")])
    assert out.exit_code == 2, out.output
    assert out.exception is None or isinstance(out.exception, SystemExit)
    said = " ".join(out.output.split())
    # codegrep-records reads the file and says what is wrong with it, by name.
    assert f"rows.jsonl.gz: {damage} gzip" in said
    assert "nothing was prepared" in said
    assert not (tmp_path / "c").exists()  # nothing started on part of a file


def test_prepare_refuses_an_unwritable_output_before_any_work(
    tmp_path: Path, rows_text: str
) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(rows_text)
    out = runner.invoke(
        app, ["prepare", str(path), "--cache", str(tmp_path / "c"), "-o", str(tmp_path)]
    )
    assert out.exit_code == 2
    assert "cannot write a file there" in " ".join(out.output.split())
    assert not (tmp_path / "c").exists()


def test_a_kill_between_making_and_marking_leaves_nothing(tmp_path: Path) -> None:
    """Only an empty folder named for a dead owner goes; rmdir touches nothing else."""
    from worktree_sandbox import BareRepoCache

    tmp = tmp_path / "cache" / "tmp"
    tmp.mkdir(parents=True)
    (tmp / "a__b.4194304-2").mkdir()  # empty, dead owner: a kill before the marker
    (tmp / f"a__c.{os.getpid()}-0").mkdir()  # empty, live owner: its clone is starting
    (tmp / "a__d.4194304-2").mkdir()
    (tmp / "a__d.4194304-2" / "keep.txt").write_text("not empty: not ours to judge\n")
    work = tmp_path / "W"
    work.mkdir()
    (work / "4194304-2.ab12").mkdir()
    (work / "mine").mkdir()
    BareRepoCache(tmp_path / "cache", "{repo}")
    assert sorted(os.listdir(tmp)) == [f"a__c.{os.getpid()}-0", "a__d.4194304-2"]
    report = prune_workdir(work)
    assert report.folders == 1
    assert sorted(os.listdir(work)) == ["mine"]
