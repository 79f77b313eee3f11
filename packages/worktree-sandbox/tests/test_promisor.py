"""A repository's config cannot make git fetch: promisor remotes (partial clones), submodule
recursion, and the layout lists the promisor remotes a caller must check.

A bare repository with `extensions.partialClone = origin`, `remote.origin.promisor = true`, a
`remote.origin.url` outside the allowed roots and a ref at a commit of that outside repository:
git lazily fetched the commit on `rev-parse` and served the outside files, writing the packs
into the repository (with an https url it would fetch from the network)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from worktree_sandbox import DirectoryTree, GrepArgs, SandboxError, TreePool, repository_locations
from worktree_sandbox._gitconfig import _entries, local_path, promisor_urls
from worktree_sandbox.errors import CommitNotFoundError


def _promisor_repo(tmp_path: Path, git_kit: Any, url: str, extra: str = "") -> tuple[Path, Path]:
    """(the partial clone inside, the outside repository its promisor remote serves)."""
    outside = git_kit.make_repo(tmp_path / "outside", "secret")
    outside.commit({"secret/keys.py": "SECRET_TOKEN = 'outside'\n"})
    inside = tmp_path / "root" / "repo.git"
    git_kit.run_git(tmp_path, "init", "-q", "--bare", str(inside))
    url = url.replace("OUTSIDE", str(outside.path))
    with open(inside / "config", "a") as cfg:
        cfg.write(
            "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tpartialClone = origin\n"
            f'[remote "origin"]\n\turl = {url}\n\tpromisor = true\n'
            f"\tpartialclonefilter = blob:none\n{extra}"
        )
    (inside / "refs" / "heads" / "main").write_text(outside.commits[-1] + "\n")
    (inside / "HEAD").write_text("ref: refs/heads/main\n")
    return inside, outside.path


def _packs(repo: Path) -> list[Path]:
    return sorted((repo / "objects").rglob("*.pack"))


URLS = {
    "a local path": ("OUTSIDE", ""),
    "a file:// url": ("file://OUTSIDE", ""),
    # an https url that a url.<base>.insteadOf in an included file turns into the outside
    # folder: the network case, kept hermetic
    "https, rewritten": ("https://promisor.invalid/repo.git", "[include]\n\tpath = ../inc.cfg\n"),
}


@pytest.mark.parametrize("case", list(URLS))
async def test_a_promisor_remote_is_never_fetched(
    tmp_path: Path, git_kit: Any, workdir: Path, case: str
) -> None:
    url, extra = URLS[case]
    inside, outside = _promisor_repo(tmp_path, git_kit, url, extra)
    rewrite = f'[url "{outside}"]\n\tinsteadOf = https://promisor.invalid/repo.git\n'
    (inside.parent / "inc.cfg").write_text(rewrite)
    plain = subprocess.run(  # the trap is live: plain git would fetch (checked, then undone)
        ["git", f"--git-dir={inside}", "cat-file", "-e", "HEAD^{commit}"],
        env=git_kit.env, capture_output=True, check=False,
    )  # fmt: skip
    assert plain.returncode == 0
    assert _packs(inside)
    for pack in _packs(inside):
        for twin in pack.parent.glob(pack.stem + ".*"):
            twin.unlink()
    async with TreePool(workdir=workdir) as pool:
        with pytest.raises((CommitNotFoundError, SandboxError)):
            async with pool.tree_at(inside, "HEAD") as tree:
                await tree.grep(GrepArgs(pattern="SECRET_TOKEN"))
    assert _packs(inside) == []
    places = {str(p): role for role, p in repository_locations(inside).places()}
    assert places.get(str(outside)) == "promisor remote"


def test_a_network_promisor_is_listed_not_placed(tmp_path: Path, git_kit: Any) -> None:
    inside, _ = _promisor_repo(tmp_path, git_kit, "https://example.invalid/r.git")
    found = repository_locations(inside)
    assert found.promisor_remotes == ("https://example.invalid/r.git",)
    assert found.promisors == ()
    assert [local_path(u) for u in ("git@host:r.git", "ssh://h/r", "file:///x", "../x")] == [
        None, None, "/x", "../x",
    ]  # fmt: skip


CONFIGS = [
    '[remote "origin"]\n\turl = /a\n\tpromisor\n[extensions]\n\tpartialClone = origin\n',
    '[Remote "Up Stream"] URL = "/with space" ; a comment\n\tPromisor = yes # on\n',
    "[remote.old]\n\turl = /b\\\n/continued\n\tpromisor = true\n",
    '[remote "q"]\n\turl = "/x\\ty" \n\tfetch = +refs/*:refs/*\n\tpromisor = false\r\n',
    '[includeIf "gitdir:/nowhere/"]\n\tpath = inc.cfg\n[remote "r"]\n\turl = https://h/r\n',
]


@pytest.mark.parametrize("text", CONFIGS)
def test_the_config_reader_reads_as_git_does(tmp_path: Path, text: str) -> None:
    cfg = tmp_path / "config"
    cfg.write_text(text)
    (tmp_path / "inc.cfg").write_text('[remote "r"]\n\tpromisor = true\n')
    listed = subprocess.run(
        ["git", "config", "--file", str(cfg), "--includes", "--null", "--list"],
        capture_output=True, check=True, env={"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)},
    ).stdout.decode()  # fmt: skip
    git_says = []
    for item in filter(None, listed.split("\0")):
        key, newline, value = item.partition("\n")
        git_says.append((key, value if newline else "true"))  # a name alone is true
    ours = [(key, value) for key, value, _ in _entries(cfg, 0, [])]
    if "includeIf" in text:
        # git leaves out an include whose condition fails; the reader takes every one: it may
        # list more remotes, never fewer
        rest = iter(ours)
        assert all(entry in rest for entry in git_says)
        assert ("remote.r.promisor", "true") in ours
    else:
        assert ours == git_says


def test_the_config_reader_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    from worktree_sandbox.errors import RepositoryLayoutError

    for bad in ('[remote "x"\n', '[s]\n\tk = "open\n', "[s]\n\tk = \\q\n", "[s]\n\t1k = v\n"):
        (tmp_path / "config").write_text(bad)
        with pytest.raises(RepositoryLayoutError):
            promisor_urls(tmp_path, tmp_path)
    (tmp_path / "config").write_text("[include]\n\tpath = config\n")  # includes itself
    with pytest.raises(RepositoryLayoutError, match="deeper"):
        promisor_urls(tmp_path, tmp_path)


async def test_submodule_recursion_reads_no_other_repository(
    tmp_path: Path, git_kit: Any, workdir: Path
) -> None:
    """`submodule.recurse = true` made git grep on a commit read the submodule's repository
    (its git dir may lie anywhere); the answer had a path the tree does not hold (an internal
    error on the objects backend)."""
    sub = git_kit.make_repo(tmp_path / "sub", "lib")
    sub.commit({"s.txt": "SUBSECRET here\n"})
    main = tmp_path / "main"  # small: no file over the size limit (grep takes every path)
    main.mkdir()
    (main / "a.py").write_text("x = 1\n")
    git_kit.run_git(main, "init", "-q", "-b", "main")
    git_kit.run_git(main, "-c", "protocol.file.allow=always", "submodule", "add", "-q",
                    str(sub.path), "lib")  # fmt: skip
    git_kit.run_git(main, "add", "-A")
    git_kit.run_git(main, "commit", "-q", "-m", "submodule")
    git_kit.run_git(main, "config", "submodule.recurse", "true")
    async with DirectoryTree(main) as folder:
        got = await folder.grep(GrepArgs(pattern="SUBSECRET"))
        assert got.ok
        assert got.matches == ()
    async with (
        TreePool(workdir=workdir, materialize="never") as pool,
        pool.tree_at(main, "HEAD") as tree,
    ):
        got = await tree.grep(GrepArgs(pattern="SUBSECRET"))
        assert got.ok, got.text
        assert got.matches == ()


def _pinned(env: dict[str, str]) -> dict[str, str]:
    count = int(env["GIT_CONFIG_COUNT"])
    return {env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"] for i in range(count)}


def test_a_key_added_later_where_config_is_read_is_pinned(tmp_path: Path, git_kit: Any) -> None:
    """The keys a repository's config names are listed again when any file the listing read
    (or an include names) changes: a key added to an included file, or to a linked
    worktree's common config, went unpinned while the git dir's own files were unchanged."""
    from worktree_sandbox._git import git_env

    repo = git_kit.make_repo(tmp_path, "late")
    git_dir = repo.path / ".git"
    extra = git_dir / "extra.cfg"
    extra.write_text("")
    git_kit.run_git(repo.path, "config", "include.path", "extra.cfg")
    git_kit.run_git(repo.path, "worktree", "add", "-q", str(tmp_path / "wt"))
    linked = Path((tmp_path / "wt" / ".git").read_text().split(":", 1)[1].strip())
    assert "diff.late.textconv" not in _pinned(git_env(git_dir))
    assert "filter.late.clean" not in _pinned(git_env(linked))
    extra.write_text('[diff "late"]\n\ttextconv = /bin/false\n')  # the git dir's files as they were
    assert _pinned(git_env(git_dir))["diff.late.textconv"] == ""
    with open(git_dir / "config", "a") as cfg:
        cfg.write('[filter "late"]\n\tclean = /bin/false\n')
    assert _pinned(git_env(linked))["filter.late.clean"] == ""
