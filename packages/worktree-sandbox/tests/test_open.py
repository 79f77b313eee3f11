"""`TreePool.open`, the one opener: every case the callers had, errors, and one pool serving many
concurrent requests (a server's pool) on real repositories made here."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from worktree_sandbox import (
    BareRepoCache,
    DirectoryTree,
    GrepArgs,
    SandboxError,
    SyncSandbox,
    TreePool,
)
from worktree_sandbox.commit_tree import CommitTree
from worktree_sandbox.errors import CommitNotFoundError, CommitRequiredError


@pytest.fixture
def proj(tmp_path: Path, git_kit: Any) -> Any:
    """A repository with two commits (see conftest) and an uncommitted file."""
    repo = git_kit.make_repo(tmp_path / "mirrors", "proj")
    (repo.path / "draft.py").write_text("def draft_only():\n    pass\n")
    return repo


def _cache(tmp_path: Path, repo: Any) -> BareRepoCache:
    # a local mirror pattern: {name} is the folder of the test repository
    return BareRepoCache(tmp_path / "cache", str(repo.path.parent / "{name}"))


async def test_every_case_of_what_a_user_names(tmp_path: Path, proj: Any, git_kit: Any) -> None:
    first, last = proj.commits
    bare = tmp_path / "bare" / "proj.git"
    git_kit.run_git(tmp_path, "clone", "-q", "--bare", str(proj.path), str(bare))
    async with TreePool(_cache(tmp_path, proj), workdir=tmp_path / "trees") as pool:
        # a folder as it is: the working files, uncommitted ones included
        async with pool.open(proj.path) as folder:
            assert isinstance(folder, DirectoryTree)
            assert "draft.py" in await folder.files()
        async with pool.open(str(proj.path)) as same:  # a str is a path too
            assert isinstance(same, DirectoryTree)
        # a folder at a commit: the repository's objects, not the files on disk
        async with pool.open(proj.path, first) as at_first:
            assert isinstance(at_first, CommitTree)
            assert at_first.commit == first
            assert "draft.py" not in await at_first.files()
            assert "big/huge.txt" not in await at_first.files()
        async with pool.open(proj.path / ".git", "HEAD") as at_head:
            assert isinstance(at_head, CommitTree)
            assert at_head.commit == last
        # a bare repository and a commit
        async with pool.open(bare, "main~1") as in_bare:
            assert isinstance(in_bare, CommitTree)
            assert in_bare.commit == first
        # owner/name at a commit: cloned into the cache from the source template
        async with pool.open("someone/proj", last) as named:
            assert isinstance(named, CommitTree)
            assert "big/huge.txt" in await named.files()
            assert (await named.grep(GrepArgs(pattern="def parse_args"))).total_matches == 1
        assert pool.cache is not None
        assert pool.cache.has("someone/proj")


async def test_what_names_no_tree_is_refused_saying_why(tmp_path: Path, proj: Any) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    async with TreePool(_cache(tmp_path, proj), workdir=tmp_path / "trees") as pool:
        cases: list[tuple[tuple[Any, ...], dict[str, Any], type[Exception], str]] = [
            (("someone/proj", None), {}, CommitRequiredError, "not a folder here"),
            (("someone/proj", None), {"folders": False}, CommitRequiredError, "needs a commit"),
            (("not a repo", "HEAD"), {}, SandboxError, "neither a folder nor a repository name"),
            (("a/b/c", "HEAD"), {}, SandboxError, "neither a folder nor a repository name"),
            (("a/b/c", "HEAD"), {"folders": False}, SandboxError, "not of the form owner/name"),
            (("../proj", "HEAD"), {"folders": False}, SandboxError, "not of the form owner/name"),
            ((plain, "HEAD"), {}, SandboxError, "is not a git repository"),
            ((proj.path, "no-such-branch"), {}, CommitNotFoundError, "no commit"),
            (("someone/proj", "f" * 40), {}, CommitNotFoundError, "not found"),
        ]
        for args, kwargs, error, message in cases:
            with pytest.raises(error, match=message):
                async with pool.open(*args, **kwargs):
                    pass
    async with TreePool(workdir=tmp_path / "trees") as no_cache:
        with pytest.raises(SandboxError, match="no cache"):
            async with no_cache.open("someone/proj", "HEAD"):
                pass
        async with no_cache.open(proj.path, "HEAD") as tree:  # folders need no cache
            assert "README.md" in await tree.files()


async def test_a_cache_given_as_a_callable_is_made_only_for_a_name(
    tmp_path: Path, proj: Any
) -> None:
    made: list[BareRepoCache] = []

    def make() -> BareRepoCache:
        made.append(_cache(tmp_path, proj))
        return made[-1]

    async with TreePool(make, workdir=tmp_path / "trees", materialize="never") as pool:
        assert pool.has_cache
        async with pool.open(proj.path) as folder, pool.open(proj.path, "HEAD") as at_head:
            assert await folder.files()
            assert await at_head.files()
        assert made == []
        assert not (tmp_path / "cache").exists()
        async with pool.open("someone/proj", "HEAD") as a, pool.open("someone/proj", "HEAD") as b:
            assert a is b
        assert len(made) == 1
        assert pool.cache is made[0]


async def test_folders_false_reads_a_row_as_a_name_never_as_a_path(
    tmp_path: Path, proj: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A folder here that is spelled like the row's repository must not be what is opened.
    here = tmp_path / "here"
    (here / "someone" / "proj").mkdir(parents=True)
    (here / "someone" / "proj" / "local_only.py").write_text("x = 1\n")
    monkeypatch.chdir(here)
    async with TreePool(_cache(tmp_path, proj), workdir=tmp_path / "trees") as pool:
        async with pool.open("someone/proj") as as_typed:  # what a user types: the folder
            assert list(await as_typed.files()) == ["local_only.py"]
        async with pool.open("someone/proj", "HEAD", folders=False) as row:
            assert isinstance(row, CommitTree)
            assert "local_only.py" not in await row.files()
            assert "README.md" in await row.files()


async def test_one_pool_serves_concurrent_requests_one_tree_per_commit(
    tmp_path: Path, proj: Any, git_kit: Any
) -> None:
    first, last = proj.commits
    other = git_kit.make_repo(tmp_path / "mirrors", "other")
    pool = TreePool(_cache(tmp_path, proj), workdir=tmp_path / "trees", max_idle_trees=8)
    seen: list[tuple[str, CommitTree]] = []
    inside = 0
    most_inside = 0

    async def request(repo: Any, commit: str, pattern: str) -> int:
        nonlocal inside, most_inside
        async with pool.open(repo, commit) as tree:
            assert isinstance(tree, CommitTree)
            inside += 1
            most_inside = max(most_inside, inside)
            seen.append((f"{tree.git_dir}@{tree.commit}", tree))
            await asyncio.sleep(0.01)  # hold the tree while the other requests open theirs
            result = await tree.grep(GrepArgs(pattern=pattern))
            inside -= 1
            return result.total_matches

    # Neither repository is cloned yet: the first requests clone and fetch concurrently.
    requests = [
        *(request("someone/proj", c, "parse_config") for c in (first, last, "HEAD", last[:10])),
        *(request("someone/other", c, "def parse_args") for c in (other.commits[-1], "main")),
        *(request(proj.path, c, "Session") for c in (first, "HEAD~1", last, "main")),
    ] * 4
    async with pool:
        counts = await asyncio.gather(*requests)
        assert all(n >= 1 for n in counts)
        assert most_inside > 1  # the requests did overlap
        trees: dict[str, set[int]] = {}
        for key, tree in seen:
            trees.setdefault(key, set()).add(id(tree))
        # one tree per (repository, commit), however the commit was spelled
        assert all(len(ids) == 1 for ids in trees.values())
        assert len(trees) == 5  # proj in the cache x2, other x1, the proj folder's repo x2
        assert pool.stats.trees_opened == 5
        assert pool.cache is not None
        assert pool.cache.repos() == ["someone/other", "someone/proj"]
        assert pool.open_trees == 5  # nobody holds them; kept warm for the next requests
        async with pool.open("someone/proj", last) as again:
            assert any(again is tree for _, tree in seen)
        assert pool.stats.trees_opened == 5
    assert pool.open_trees == 0


async def test_a_cancelled_request_leaves_the_others_and_the_pool_as_they_were(
    tmp_path: Path, proj: Any
) -> None:
    first, last = proj.commits
    async with TreePool(
        _cache(tmp_path, proj), workdir=tmp_path / "trees", max_idle_trees=1
    ) as pool:
        holding = asyncio.Event()
        release = asyncio.Event()

        async def hold(commit: str) -> str:
            async with pool.open("someone/proj", commit) as tree:
                holding.set()
                await release.wait()
                return "\n".join(await tree.files())

        survivors = [asyncio.create_task(hold(c)) for c in (first, last, last)]
        doomed = [asyncio.create_task(hold(c)) for c in (first, last, "HEAD")]
        await holding.wait()
        for task in doomed:  # some still opening, some holding their tree
            task.cancel()
        await asyncio.sleep(0.05)
        release.set()
        texts = await asyncio.gather(*survivors)
        assert "big/huge.txt" not in texts[0]
        assert "big/huge.txt" in texts[1]
        assert texts[1] == texts[2]
        for task in doomed:
            with pytest.raises(asyncio.CancelledError):
                await task
        # nothing is held any more, and only max_idle_trees stay open
        assert pool.open_trees == 1
        assert pool.stats.trees_opened - pool.stats.trees_closed == 1
        async with pool.open("someone/proj", first) as tree:
            assert "README.md" in await tree.files()


def test_sync_open_covers_the_same_cases(tmp_path: Path, proj: Any) -> None:
    with SyncSandbox(_cache(tmp_path, proj), workdir=tmp_path / "trees") as sb:
        assert "draft.py" in sb.open(proj.path).files()
        assert "draft.py" not in sb.open(proj.path, "HEAD").files()
        named = sb.open("someone/proj", proj.commits[0], folders=False)
        assert named.read("README.md").ok
        with pytest.raises(CommitRequiredError):
            sb.open("someone/proj", None, folders=False)


def test_a_tree_left_open_does_not_keep_asyncio_run_from_returning(proj: Any) -> None:
    """A caller that forgets to close: `asyncio.run` cancels every task at its end, the tree's
    listing among them while git is being started, and asyncio's subprocess transport (Python
    3.11) then waited forever (about one run in ten). The child is now started with Popen and
    its pipes connected in the caller's task; 30 runs in a row, so that a return of the hang
    is all but certain to be seen."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        f"""
        import asyncio
        from worktree_sandbox import TreePool

        async def main():
            for _ in range(5):  # five trees left open, the last cancelled mid-start
                await TreePool().open({str(proj.path)!r}, "HEAD").__aenter__()

        for _ in range(30):
            asyncio.run(main())
        print("returned")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "returned"
