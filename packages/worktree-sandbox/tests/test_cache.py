"""BareRepoCache on real repositories: idempotent, safe across processes, fetches on demand,
consistent after a kill -9, and pools that prune what dead processes left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from worktree_sandbox import (
    BareRepoCache,
    GrepArgs,
    RepositoryNotFoundError,
    SandboxError,
    TreePool,
)
from worktree_sandbox._git import _die_with_parent
from worktree_sandbox.errors import CommitNotFoundError
from worktree_sandbox.pool import prune_workdir


def _source(repo: Any) -> str:
    # A local path pattern, as used for mirrors: {name} is the folder of the test repository.
    return str(repo.path.parent / "{name}")


def test_ensure_is_idempotent(tmp_path: Path, repo: Any) -> None:
    cache = BareRepoCache(tmp_path / "cache", _source(repo))
    first = cache.ensure("someone/proj", repo.commits)
    assert first.cloned
    assert first.commits == tuple(repo.commits)
    assert (first.git_dir / "HEAD").is_file()
    assert not (first.git_dir / "index").exists()  # bare: no work tree, no index
    again = cache.ensure("someone/proj", repo.commits)
    assert not again.cloned
    assert not again.fetched
    assert cache.repos() == ["someone/proj"]
    assert cache.resolve("someone/proj", "main") == repo.commits[-1]


def test_missing_commit_is_fetched_on_demand(tmp_path: Path, repo: Any) -> None:
    cache = BareRepoCache(tmp_path / "cache", _source(repo))
    cache.ensure("someone/proj", [])
    new = repo.commit({"later.py": "x = 1\n"}, "after the clone")
    prepared = cache.ensure("someone/proj", [new])
    assert prepared.fetched
    assert prepared.commits == (new,)


def test_unknown_commit_and_repo_are_clear_errors(tmp_path: Path, repo: Any) -> None:
    cache = BareRepoCache(tmp_path / "cache", _source(repo))
    with pytest.raises(CommitNotFoundError, match="0" * 40):
        cache.ensure("someone/proj", ["0" * 40])
    with pytest.raises(RepositoryNotFoundError, match="nothere"):
        cache.ensure("someone/nothere", [])
    with pytest.raises(SandboxError, match="owner/name"):
        cache.ensure("../../etc", [])
    with pytest.raises(SandboxError, match="names no repository"):
        BareRepoCache(tmp_path / "c2", "https://example.invalid/fixed.git")


_PREPARE = textwrap.dedent(
    """
    import json, sys
    from worktree_sandbox import BareRepoCache
    prepared = BareRepoCache(sys.argv[1], sys.argv[2]).ensure("someone/proj", sys.argv[3:])
    print(json.dumps([prepared.cloned, list(prepared.commits)]))
    """
)


def test_several_processes_prepare_the_same_repo(tmp_path: Path, repo: Any) -> None:
    root = str(tmp_path / "cache")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _PREPARE, root, _source(repo), *repo.commits],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = []
    for p in procs:
        out, _ = p.communicate(timeout=60)
        assert p.returncode == 0
        results.append(json.loads(out))
    assert sum(cloned for cloned, _ in results) == 1  # one clone, three waited and reused it
    assert all(commits == repo.commits for _, commits in results)
    assert os.listdir(Path(root) / "tmp") == []


def test_kill_during_prepare_leaves_a_consistent_cache(tmp_path: Path, repo: Any) -> None:
    # A source big enough that cloning takes a while through the non-local transport.
    blobs = {f"data/{i}.bin": os.urandom(200_000) for i in range(150)}
    repo.commit(blobs, "30 MB of incompressible data")
    instances = tmp_path / "instances.jsonl"
    instances.write_text(
        json.dumps({"instance_id": "x-1", "repo": "someone/proj", "base_commit": repo.commits[-1]})
        + "\n"
    )
    cache_dir = tmp_path / "cache"
    source = "file://" + str(repo.path.parent) + "/{name}"
    argv = [sys.executable, "-m", "worktree_sandbox", "prepare", str(instances),
            "--cache", str(cache_dir), "--source", source]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tmp = cache_dir / "tmp"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not list(tmp.glob("*/repo.git")):
        time.sleep(0.005)
    assert list(tmp.glob("*/repo.git")), "the clone finished before it could be interrupted"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # `git clone` dies with its parent; its helpers (index-pack, upload-pack) notice the dead
    # pipe and exit. Wait for that, as a restart after a crash would come later anyway.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _processes_mentioning(str(cache_dir)):
        time.sleep(0.05)
    assert [_cmdline(pid) for pid in _processes_mentioning(str(cache_dir))] == []
    cache = BareRepoCache(cache_dir, source)  # a restart prunes the dead clone
    assert os.listdir(tmp) == []
    assert not cache.has("someone/proj")
    rerun = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert cache.ensure("someone/proj", [repo.commits[-1]]).commits == (repo.commits[-1],)


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return f"{pid}: " + fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return f"{pid}: (gone)"


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    cmdline = fh.read()
                cwd = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                continue
            if text.encode() in cmdline or cwd.startswith(text):
                found.append(int(pid))
    return found


_HOLDER = textwrap.dedent(
    """
    import asyncio, sys
    from worktree_sandbox import TreePool
    async def main():
        pool = TreePool(workdir=sys.argv[1], materialize="always")
        async with pool.tree_at(sys.argv[2], sys.argv[3]) as tree:
            print(tree.checkout, flush=True)
            await asyncio.sleep(60)
    asyncio.run(main())
    """
)


async def test_checkouts_of_a_killed_process_are_pruned(tmp_path: Path, repo: Any) -> None:
    workdir = tmp_path / "trees"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(workdir), str(repo.path), repo.commits[-1]],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    checkout = Path(holder.stdout.readline().strip())
    assert (checkout / "README.md").is_file()
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert checkout.exists()  # kill -9: nothing could clean up
    async with (
        TreePool(workdir=workdir, materialize="always") as pool,
        pool.tree_at(repo.path, repo.commits[0]) as tree,
    ):
        assert not checkout.exists()  # the next start pruned it
        assert (await tree.grep(GrepArgs(pattern="hello"))).ok
    assert list(workdir.iterdir()) == []
    assert prune_workdir(workdir) == (0, 0, ())


async def test_pool_serves_cached_repos_by_name(tmp_path: Path, repo: Any) -> None:
    cache = BareRepoCache(tmp_path / "cache", _source(repo))
    async with TreePool(cache, workdir=tmp_path / "trees") as pool:
        async with pool.tree("someone/proj", repo.commits[0]) as tree:  # cloned on demand
            assert "README.md" in await tree.files()
        with pytest.raises(CommitNotFoundError):
            async with pool.tree("someone/proj", "f" * 40):
                pass


def test_cache_root_expands_home(
    tmp_path: Path, repo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    cache = BareRepoCache("~/.cache/wts", _source(repo))
    assert cache.root == (tmp_path / "home" / ".cache" / "wts").resolve()


async def test_open_is_the_one_way_to_open_a_tree(tmp_path: Path, repo: Any) -> None:
    cache = BareRepoCache(tmp_path / "cache", _source(repo))
    async with TreePool(cache, workdir=tmp_path / "trees") as pool:
        (repo.path / "uncommitted.py").write_text("draft = 1\n")
        async with pool.open(repo.path) as folder:  # the folder as it is
            assert "uncommitted.py" in await folder.files()
            assert folder.runtime is pool.runtime
        async with pool.open(str(repo.path), repo.commits[0]) as at_commit:
            assert "uncommitted.py" not in await at_commit.files()
            assert "big/huge.txt" not in await at_commit.files()  # the first commit
        async with pool.open("someone/proj", repo.commits[-1]) as named:
            assert "big/huge.txt" in await named.files()
        for bad, message in [
            (("someone/proj", None), "needs a commit"),
            (("not a repo", "HEAD"), "neither a folder nor a repository name"),
        ]:
            with pytest.raises(SandboxError, match=message):
                async with pool.open(*bad):
                    pass
    async with TreePool(workdir=tmp_path / "trees") as bare_pool:
        with pytest.raises(SandboxError, match="no cache"):
            async with bare_pool.open("someone/proj", "HEAD"):
                pass


def test_sync_open(tmp_path: Path, repo: Any) -> None:
    from worktree_sandbox import SyncSandbox

    with SyncSandbox(workdir=tmp_path / "trees") as sb:
        assert sb.open(repo.path, repo.commits[0]).read("README.md").ok
        assert sb.open(repo.path).grep("hello").total_matches == 1


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_a_git_child_whose_parent_died_before_prctl_never_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The hook remembers its parent's pid at fork time; a child that finds another parent (its
    # parent was killed between fork and prctl) exits before exec instead of running unowned.
    monkeypatch.setattr(os, "getpid", lambda: 1)  # the pid the child will not see as its parent
    orphaned = _die_with_parent()
    monkeypatch.undo()
    assert orphaned is not None
    proc = subprocess.run(["echo", "ran"], preexec_fn=orphaned, capture_output=True, check=False)
    assert (proc.returncode, proc.stdout) == (1, b"")
    kept = _die_with_parent()
    proc = subprocess.run(["echo", "ran"], preexec_fn=kept, capture_output=True, check=False)
    assert (proc.returncode, proc.stdout) == (0, b"ran\n")


async def test_pool_opens_a_linked_worktree_whose_git_is_a_file(
    tmp_path: Path, repo: Any, git_kit: Any
) -> None:
    # `git worktree add` (and a submodule) leaves `.git` as a `gitdir:` file, not a folder
    linked = tmp_path / "linked"
    git_kit.run_git(repo.path, "worktree", "add", "-q", "--detach", str(linked), repo.commits[0])
    assert (linked / ".git").is_file()
    async with (
        TreePool(workdir=tmp_path / "trees", materialize="never") as pool,
        pool.tree_at(linked, repo.commits[-1]) as tree,
    ):
        assert "README.md" in await tree.files()
        assert tree.commit == repo.commits[-1]
