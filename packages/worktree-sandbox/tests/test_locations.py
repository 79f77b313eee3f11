"""`repository_locations` (where a repository's data lives) and the pool's checkout byte
budget, on real repositories made here."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest
from worktree_sandbox import GrepArgs, TreePool, repository_locations
from worktree_sandbox._liveness import dir_bytes, dir_footprint
from worktree_sandbox.errors import RepositoryLayoutError
from worktree_sandbox.locations import RepositoryLocations


@pytest.fixture
def proj(tmp_path: Path, git_kit: Any) -> Any:
    return git_kit.make_repo(tmp_path / "in", "proj")


def test_plain_work_tree_and_bare_repositories(tmp_path: Path, proj: Any, git_kit: Any) -> None:
    here = repository_locations(proj.path)
    git_dir = (proj.path / ".git").resolve()
    assert here == RepositoryLocations(proj.path, git_dir, git_dir, git_dir / "objects", ())
    assert [role for role, _ in here.places()] == [
        "work tree",
        "git dir",
        "common dir",
        "object store",
    ]
    bare = tmp_path / "bare.git"
    git_kit.run_git(tmp_path, "clone", "-q", "--bare", str(proj.path), str(bare))
    got = repository_locations(bare)
    assert (got.work_tree, got.git_dir, got.objects) == (None, bare, bare / "objects")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert repository_locations(plain) == RepositoryLocations(plain, None, None, None)


def test_every_pointer_is_followed(tmp_path: Path, proj: Any, git_kit: Any) -> None:
    outside = git_kit.make_repo(tmp_path / "out", "other")
    out_git = (outside.path / ".git").resolve()
    # a `.git` link
    link = tmp_path / "in" / "link"
    link.mkdir()
    (link / ".git").symlink_to(out_git)
    assert repository_locations(link).git_dir == out_git
    # a `gitdir:` file, relative
    pointer = tmp_path / "in" / "pointer"
    pointer.mkdir()
    (pointer / ".git").write_text(f"gitdir: {os.path.relpath(out_git, pointer)}\n")
    assert repository_locations(pointer).git_dir == out_git
    # a linked worktree: its git dir under the other's, its common dir the other's git dir
    git_kit.run_git(outside.path, "worktree", "add", "-q", str(tmp_path / "in" / "wt"), "-b", "w")
    wt = repository_locations(tmp_path / "in" / "wt")
    assert wt.git_dir == out_git / "worktrees" / "wt"
    assert (wt.common_dir, wt.objects) == (out_git, out_git / "objects")
    # alternates, two levels deep, relative and absolute
    shared = tmp_path / "in" / "shared"
    git_kit.run_git(tmp_path, "clone", "-q", "--shared", str(proj.path), str(shared))
    (proj.path / ".git" / "objects" / "info" / "alternates").write_text(
        f"# a comment\n\n{os.path.relpath(out_git / 'objects', proj.path / '.git' / 'objects')}\n"
    )
    got = repository_locations(shared)
    assert got.alternates == ((proj.path / ".git" / "objects").resolve(), out_git / "objects")
    assert [r for r, _ in got.places()][-2:] == ["object alternate", "object alternate"]


def test_links_inside_the_git_data_are_listed(tmp_path: Path, proj: Any, git_kit: Any) -> None:
    outside = git_kit.make_repo(tmp_path / "out", "other")
    objects = proj.path / ".git" / "objects"
    # a loose-object folder the repository does not have yet: its commit ids follow the clock,
    # so a fixed name ("ab") was already taken about one run in a hundred
    free = next(n for n in (f"{i:02x}" for i in range(256)) if not (objects / n).exists())
    (objects / free).symlink_to(outside.path, target_is_directory=True)
    (proj.path / ".git" / "refs" / "x").symlink_to(outside.path / "README.md")
    got = repository_locations(proj.path)
    assert set(got.links) == {outside.path.resolve(), (outside.path / "README.md").resolve()}
    assert [r for r, _ in got.places()][-2:] == ["link inside the git dir"] * 2
    # and the other files git opens: info/, packed-refs, shallow, a nested folder of refs
    out_git = (outside.path / ".git").resolve()
    for rel, target in (
        ("info/exclude", out_git / "info"),
        ("packed-refs", out_git / "HEAD"),
        ("shallow", out_git / "config"),
        ("refs/tags/deep", out_git / "refs"),
    ):
        here = proj.path / ".git" / rel
        here.parent.mkdir(parents=True, exist_ok=True)
        if here.exists() or here.is_symlink():
            here.unlink()
        here.symlink_to(target)
        assert target.resolve() in repository_locations(proj.path).links, rel


def test_hostile_pointer_files_are_errors_not_tracebacks(tmp_path: Path, proj: Any) -> None:
    objects = proj.path / ".git" / "objects"
    alternates = objects / "info" / "alternates"
    for text, said in (
        (b"\xff\xfe\n", "not UTF-8"),
        (b"x" * 70_000, "over"),
        (b'"/quoted\\npath"\n', "quoted"),
        (b"\n".join(f"/alt{i}".encode() for i in range(80)), "more than 64"),
    ):
        alternates.write_bytes(text)
        with pytest.raises(RepositoryLayoutError, match=said):
            repository_locations(proj.path)
    # a loop of alternates ends; a chain deeper than git's limit is refused
    alternates.write_text(f"{objects}\n")
    assert repository_locations(proj.path).alternates == ()
    chain = [tmp_path / f"s{i}" for i in range(7)]
    for a, b in itertools.pairwise(chain):
        (a / "info").mkdir(parents=True)
        (a / "info" / "alternates").write_text(f"{b}\n")
    alternates.write_text(f"{chain[0]}\n")
    with pytest.raises(RepositoryLayoutError, match="deeper"):
        repository_locations(proj.path)
    alternates.unlink()
    dot = tmp_path / "in" / "bad"
    dot.mkdir()
    (dot / ".git").write_text("not a pointer\n")
    with pytest.raises(RepositoryLayoutError, match="gitdir"):
        repository_locations(dot)


def test_git_children_ignore_alternates_from_the_environment(
    tmp_path: Path, proj: Any, git_kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from worktree_sandbox._git import git

    outside = git_kit.make_repo(tmp_path / "out", "other")
    sha = outside.commit({"only_outside.py": "SECRET = 1\n"}, "outside only")
    monkeypatch.setenv("GIT_ALTERNATE_OBJECT_DIRECTORIES", str(outside.path / ".git" / "objects"))
    proc = git(proj.path / ".git", "cat-file", "-e", f"{sha}^{{commit}}", check=False)
    assert proc.returncode != 0  # the outside commit is not readable through the environment


async def test_the_checkout_budget_closes_idle_trees_and_refuses_past_it(
    tmp_path: Path, proj: Any
) -> None:
    for i in range(5):
        proj.commit({f"src/gen{i}.py": f"VALUES = {list(range(2000 + i))!r}\n"}, f"c{i}")
    work = tmp_path / "work"
    git_dir = proj.path / ".git"
    async with TreePool(None, workdir=work, max_checkout_bytes=0) as none_fit:
        async with none_fit.tree_at(git_dir, proj.commits[-1]) as tree:
            assert await tree.wait_checkout() is None  # served from git objects
            found = await tree.grep(GrepArgs(pattern="parse_config"))
            assert found.ok
            assert found.matches
        assert none_fit.stats.checkouts_refused == 1
    async with TreePool(None, workdir=work) as probe, probe.tree_at(git_dir, proj.commits[-1]) as t:
        assert await t.wait_checkout() is not None
        one = probe.checkout_bytes
        assert one > 0
    budget = 2 * one + one // 2  # two fit, three do not
    async with TreePool(None, workdir=work, max_checkout_bytes=budget) as pool:
        for sha in proj.commits[-5:]:
            async with pool.tree_at(git_dir, sha) as tree:
                await tree.wait_checkout()
                assert pool.checkout_bytes <= budget
                assert dir_bytes(work) <= budget
                assert dir_footprint(work) <= budget  # what the files really take
        assert pool.stats.budget_evictions == 3
        assert pool.stats.checkout_bytes_peak <= budget
        assert pool.open_trees == 2


async def test_the_budget_counts_pages_not_blob_bytes(tmp_path: Path, proj: Any) -> None:
    # many one-byte files: 2,000 bytes of blobs, ~8 MB of pages
    proj.commit({f"tiny/f{i}.txt": "x" for i in range(2000)}, "tiny files")
    work = tmp_path / "work"
    async with (
        TreePool(None, workdir=work) as probe,
        probe.tree_at(proj.path / ".git", proj.commits[-1]) as t,
    ):
        checkout = await t.wait_checkout()
        assert checkout is not None
        counted = probe.checkout_bytes
        assert counted >= 2000 * 4096
        assert dir_footprint(checkout) <= counted * 1.1  # the estimate holds what it takes
    async with TreePool(None, workdir=work, max_checkout_bytes=1 << 20) as small:
        async with small.tree_at(proj.path / ".git", proj.commits[-1]) as tree:
            assert await tree.wait_checkout() is None  # refused: it would not fit in 1 MiB
        assert small.stats.checkouts_refused == 1
