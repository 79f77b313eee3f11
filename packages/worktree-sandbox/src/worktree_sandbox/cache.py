"""One bare clone per repository, shared by every commit and every process on the machine.

Layout under the cache root::

    repos/<owner>__<name>.git   the bare clones (never a work tree)
    locks/<owner>__<name>.lock  flock files: one process clones or fetches a repository at a time
    tmp/                        clones in progress; renamed into repos/ only when complete

A clone is made in a folder of tmp/ marked with the tag of its process (see `_owned`) and lands by
an atomic rename, so a process killed mid-clone leaves only that folder, which the next start
removes; nothing in tmp/ without our marker is ever removed. Not for: trees or tool calls (see
`TreePool`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from worktree_sandbox._git import git
from worktree_sandbox._liveness import dir_bytes, owner_alive, owner_tag
from worktree_sandbox._owned import make_owned_dir, owned_tag, remove_empty_of_dead, remove_owned
from worktree_sandbox.errors import CommitNotFoundError, RepositoryNotFoundError, SandboxError

__all__ = ["BareRepoCache", "PreparedRepo"]

_REPO_NAME = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHA = re.compile(r"^[0-9a-f]{40}$")

# Raw blob bytes in `git archive` output: in-tree .gitattributes must not drop files
# (export-ignore), rewrite them (export-subst, filters) or convert line endings.
_ATTRIBUTES = "* -export-ignore -export-subst -text -eol -filter -ident -working-tree-encoding\n"


def _check_source(source: str) -> None:
    """Raise SandboxError unless `source` names the repository and can be filled in: a
    placeholder other than {repo}, {owner}, {name} fails here, not at the first clone."""
    if not any(k in source for k in ("{repo}", "{owner}", "{name}")):
        raise SandboxError(
            f"source template {source!r} names no repository: use {{repo}}, {{owner}} "
            "or {name}, e.g. https://github.com/{repo}.git"
        )
    _fill_source(source, "owner/name")


def _fill_source(source: str, repo: str) -> str:
    owner, name = repo.split("/")
    try:
        return source.format(repo=repo, owner=owner, name=name)
    except (KeyError, IndexError, ValueError) as exc:
        raise SandboxError(
            f"source template {source!r} cannot be filled in ({type(exc).__name__}: {exc}): "
            "use only {repo}, {owner} and {name}, e.g. https://github.com/{repo}.git"
        ) from None


@dataclass(frozen=True)
class PreparedRepo:
    repo: str
    git_dir: Path
    commits: tuple[str, ...]  # resolved full shas, in the order asked
    cloned: bool  # False when the clone already existed
    fetched: bool  # a missing commit was fetched from the source
    seconds: float


class BareRepoCache:
    """Bare clones made from a source template and kept under `root`.

    `source` is a template with `{repo}` (owner/name), `{owner}` and `{name}`, e.g.
    ``https://github.com/{repo}.git`` or ``/mirrors/{owner}+{name}.git``.
    """

    def __init__(self, root: str | os.PathLike[str], source: str) -> None:
        _check_source(source)
        self.root = Path(root).expanduser().resolve()
        self.source = source
        for sub in ("repos", "locks", "tmp"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self.prune_incomplete()

    # -- naming -------------------------------------------------------------------------------

    @staticmethod
    def check_repo_name(repo: str) -> str:
        if not _REPO_NAME.match(repo) or ".." in repo:
            raise SandboxError(f"repository name {repo!r} is not of the form owner/name")
        return repo

    def source_for(self, repo: str) -> str:
        return _fill_source(self.source, self.check_repo_name(repo))

    def git_dir(self, repo: str) -> Path:
        return self.root / "repos" / (self.check_repo_name(repo).replace("/", "__") + ".git")

    def has(self, repo: str) -> bool:
        return (self.git_dir(repo) / "HEAD").is_file()

    def repos(self) -> list[str]:
        out = []
        for p in sorted((self.root / "repos").glob("*.git")):
            owner, _, name = p.name.removesuffix(".git").partition("__")
            out.append(f"{owner}/{name}")
        return out

    @contextlib.contextmanager
    def _locked(self, repo: str) -> Iterator[None]:
        lock = self.root / "locks" / (repo.replace("/", "__") + ".lock")
        with open(lock, "a+") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    # -- crash recovery ------------------------------------------------------------------------

    def prune_incomplete(self) -> list[Path]:
        """Remove clones in progress whose process is gone (killed mid-clone).

        Only folders this package made and marked are candidates; anything else is left alone.
        """
        removed = []
        for p in sorted((self.root / "tmp").iterdir()):
            tag = owned_tag(p)
            if tag is not None and not owner_alive(tag) and remove_owned(p, tag=tag).removed:
                removed.append(p)
            elif tag is None and remove_empty_of_dead(p, p.name.rpartition(".")[2]):
                removed.append(p)  # killed between making the folder and marking it
        return removed

    # -- preparing ------------------------------------------------------------------------------

    def ensure(self, repo: str, commits: Iterable[str] = ()) -> PreparedRepo:
        """Clone `repo` if needed and make sure every commit is present; idempotent.

        Commits may be any revision git understands; they come back resolved to full shas.
        Raises RepositoryNotFoundError when the source has no such repository and
        CommitNotFoundError when a commit is neither in the clone nor in its source.
        """
        start = time.perf_counter()
        wanted = list(commits)
        with self._locked(repo):
            cloned = False
            if not self.has(repo):
                self._clone(repo)
                cloned = True
            git_dir = self.git_dir(repo)
            resolved: list[str | None] = [self._resolve(git_dir, c) for c in wanted]
            fetched = False
            missing = [c for c, r in zip(wanted, resolved, strict=True) if r is None]
            if missing:
                self._fetch(repo, missing)
                fetched = True
                resolved = [
                    r or self._resolve(git_dir, c) for c, r in zip(wanted, resolved, strict=True)
                ]
            still = [c for c, r in zip(wanted, resolved, strict=True) if r is None]
            if still:
                raise CommitNotFoundError(
                    f"{repo}: commit(s) {', '.join(still)} not found in the clone or in "
                    f"{self.source_for(repo)}"
                )
        return PreparedRepo(
            repo=repo,
            git_dir=git_dir,
            commits=tuple(r for r in resolved if r is not None),
            cloned=cloned,
            fetched=fetched,
            seconds=time.perf_counter() - start,
        )

    def resolve(self, repo: str, commit: str) -> str:
        """Full sha of `commit` in the clone, fetching it if missing (see `ensure`)."""
        if self.has(repo):
            sha = self._resolve(self.git_dir(repo), commit)
            if sha is not None:
                return sha
        return self.ensure(repo, [commit]).commits[0]

    def lookup(self, repo: str, commit: str) -> str | None:
        """Full sha of `commit` in the clone, or None (not cloned, or not in it); never fetches:
        what a server asks before it lets a client's request cause network traffic."""
        if not self.has(repo):
            return None
        return self._resolve(self.git_dir(repo), commit)

    def disk_bytes(self, repo: str) -> int:
        return dir_bytes(self.git_dir(repo))

    def _clone(self, repo: str) -> None:
        source = self.source_for(repo)
        local = Path(source)
        if "://" not in source and not local.exists():
            raise RepositoryNotFoundError(f"{repo}: no repository at {source}")
        tag = owner_tag()
        holder = self.root / "tmp" / f"{repo.replace('/', '__')}.{tag}"
        remove_owned(holder, tag=tag)  # our own leftover of an earlier failed try, if any
        make_owned_dir(holder, tag)
        try:
            tmp = holder / "repo.git"
            proc = git(
                Path(os.devnull), "clone", "--bare", "--quiet", "--", source, str(tmp),
                check=False, network=True,
            )  # fmt: skip
            if proc.returncode != 0:
                msg = proc.stderr.decode(errors="replace").strip()
                raise RepositoryNotFoundError(f"{repo}: cannot clone {source}: {msg}")
            (tmp / "info").mkdir(exist_ok=True)
            (tmp / "info" / "attributes").write_text(_ATTRIBUTES)
            git(tmp, "config", "gc.auto", "0")  # a tool call must never trigger a repack
            git(tmp, "config", "core.bare", "true")
            os.rename(tmp, self.git_dir(repo))
        finally:
            remove_owned(holder, tag=tag)

    @staticmethod
    def _resolve(git_dir: Path, commit: str) -> str | None:
        if not commit or commit.startswith("-") or "\n" in commit:
            return None
        proc = git(git_dir, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}", check=False)
        if proc.returncode != 0:
            return None
        return proc.stdout.decode().strip()

    def _fetch(self, repo: str, commits: list[str]) -> None:
        git_dir = self.git_dir(repo)
        shas = [c for c in commits if _SHA.match(c)]
        if shas:  # servers that allow fetching by sha (GitHub does) need nothing else
            git(git_dir, "fetch", "--quiet", "origin", *shas, check=False, network=True)
            if all(self._resolve(git_dir, c) for c in shas) and len(shas) == len(commits):
                return
        git(git_dir, "fetch", "--quiet", "--tags", "origin", "+refs/heads/*:refs/heads/*",
            check=False, network=True)  # fmt: skip
