"""Where a repository's data lives: its work tree, git dir, common dir, object store and every
object alternate, each resolved (links followed) without running git.

A folder can borrow data from anywhere: a `.git` that is a link, a `.git` *file* saying
`gitdir: ...`, a `commondir` file (a linked worktree), an `objects` folder that is a link, and
`objects/info/alternates` (git reads objects from each folder it lists, recursively), and any
symbolic link *inside* the git dir, the common dir or an object store (`objects/pack` or a
loose-object folder `objects/ab` linked to another repository's: git follows it). A caller
that may only read below some roots checks every place `repository_locations` lists (a server's
policy of roots stays with the server). The files read here are untrusted: each is read with a
size bound, bad bytes and too many entries are a `RepositoryLayoutError`, never a traceback.
git's own environment cannot add places: `git_env` drops `GIT_ALTERNATE_OBJECT_DIRECTORIES`,
`GIT_OBJECT_DIRECTORY`, `GIT_COMMON_DIR` and `GIT_DIR` for every git child of this package.
A partial clone's promisor remotes (`extensions.partialClone`, `remote.<name>.promisor`) are
read from its config files (`_gitconfig`, includes followed, without git): a local one is a
place too, as an alternate is; no git child of this package fetches from any of them.
Not for: deciding what is allowed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from worktree_sandbox._gitconfig import local_path, promisor_urls
from worktree_sandbox.errors import RepositoryLayoutError

__all__ = ["RepositoryLocations", "git_dir_of", "repository_locations"]

_MAX_POINTER_BYTES = 4096  # a `.git` file or `commondir`: one path
_MAX_ALTERNATES_BYTES = 64 * 1024
_MAX_ALTERNATES = 64
_MAX_ALTERNATE_DEPTH = 5  # git's own limit of nested alternates
# Entries walked inside the git data looking for links: sympy's git dir holds ~2,000; a
# repository with more loose objects than this is refused rather than walked for minutes.
_MAX_GIT_ENTRIES = 500_000


@dataclass(frozen=True)
class RepositoryLocations:
    """Every folder a repository's data is read from, resolved; None where there is none (a
    bare repository has no work tree, a plain folder no git dir)."""

    work_tree: Path | None
    git_dir: Path | None
    common_dir: Path | None
    objects: Path | None
    alternates: tuple[Path, ...] = ()
    #: where each symbolic link inside the git dir, the common dir or an object store leads
    links: tuple[Path, ...] = ()
    #: the urls of the promisor remotes a partial clone fetches missing objects from (its
    #: config's `extensions.partialClone`, `remote.<name>.promisor`; `url.<base>.insteadOf`
    #: applied); git children of this package never fetch from them (see `_git.git_env`)
    promisor_remotes: tuple[str, ...] = ()
    #: the folders of those that name one on this machine, resolved
    promisors: tuple[Path, ...] = ()

    def places(self) -> Iterator[tuple[str, Path]]:
        """(what it is, where) for each place: "work tree", "git dir", "common dir", "object
        store", "object alternate", "link inside the git dir", "promisor remote"."""
        for role, path in (
            ("work tree", self.work_tree),
            ("git dir", self.git_dir),
            ("common dir", self.common_dir),
            ("object store", self.objects),
        ):
            if path is not None:
                yield role, path
        for alt in self.alternates:
            yield "object alternate", alt
        for link in self.links:
            yield "link inside the git dir", link
        for promisor in self.promisors:
            yield "promisor remote", promisor


def _kind(mode: int) -> str | None:
    """What a file that is neither a regular file, a folder nor a link is; None for those."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device file"


def _regular(mode: int, what: str) -> None:
    if not stat.S_ISREG(mode):
        kind = _kind(mode) or "a folder"
        raise RepositoryLayoutError(f"the {what} is {kind}, not a regular file")


def _read_small(path: Path, limit: int, what: str) -> str:
    """A small regular file's text. A FIFO would block `open` until someone writes to it (on
    a server's event loop), a device could never end: anything but a regular file is refused
    before it is opened (and checked again on the open descriptor, never waited on)."""
    try:
        _regular(os.stat(path).st_mode, what)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            _regular(os.fstat(fd).st_mode, what)
            data = os.read(fd, limit + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        raise RepositoryLayoutError(f"cannot read the {what}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise RepositoryLayoutError(f"the {what} is over {limit} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise RepositoryLayoutError(f"the {what} is not UTF-8") from None


def _resolve(base: Path, text: str, what: str) -> Path:
    if not text or "\0" in text:
        raise RepositoryLayoutError(f"the {what} names no usable path")
    try:
        return (base / text).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise RepositoryLayoutError(
            f"the {what} cannot be resolved ({type(exc).__name__})"
        ) from None


def git_dir_of(folder: Path) -> tuple[Path | None, Path | None]:
    """(work tree, git dir) of `folder`, as git would find them when told `--git-dir`."""
    dot = folder / ".git"
    if dot.is_symlink() or dot.is_dir():
        return folder, _resolve(folder, ".git", "`.git` link")
    if dot.is_file():
        text = _read_small(dot, _MAX_POINTER_BYTES, "`.git` file").strip()
        if not text.startswith("gitdir:"):
            raise RepositoryLayoutError("the `.git` file does not start with `gitdir:`")
        return folder, _resolve(folder, text.removeprefix("gitdir:").strip(), "`.git` file")
    head = folder / "HEAD"
    # a bare repository (a git dir given as itself too); HEAD of any kind, so that a FIFO there
    # is found by the walk rather than met by git
    if (head.is_symlink() or (head.exists() and not head.is_dir())) and (
        folder / "objects"
    ).is_dir():
        return None, folder
    return folder, None


def _alternates(objects: Path) -> tuple[Path, ...]:
    found: list[Path] = []
    todo = [(objects, 0)]
    seen = {objects}
    while todo:
        store, depth = todo.pop()
        listing = store / "info" / "alternates"
        if not listing.exists():
            continue
        if depth >= _MAX_ALTERNATE_DEPTH:
            raise RepositoryLayoutError(
                f"object alternates nest deeper than {_MAX_ALTERNATE_DEPTH} levels"
            )
        text = _read_small(listing, _MAX_ALTERNATES_BYTES, "alternates file")
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith('"'):  # git's C-quoted form: refuse rather than guess
                raise RepositoryLayoutError("an object alternate is quoted; not supported")
            alt = _resolve(store, line, "alternates file")
            if alt in seen:
                continue
            seen.add(alt)
            found.append(alt)
            if len(found) > _MAX_ALTERNATES:
                raise RepositoryLayoutError(f"more than {_MAX_ALTERNATES} object alternates")
            todo.append((alt, depth + 1))
    return tuple(found)


def _links_inside(folders: list[Path]) -> tuple[Path, ...]:
    """The resolved targets of every symbolic link below `folders` (not followed while walking:
    a linked folder is one entry, its target listed).

    Raises `RepositoryLayoutError` for a FIFO, socket or device file there, or a link to one:
    git opens its files (`config`, `HEAD`, `packed-refs`, `info/grafts`, `shallow`, packs,
    loose objects, ...) with a plain blocking `open`, and a FIFO would hold it (and whatever
    waits for it) until someone writes; the walk only lists, it opens nothing."""
    found: dict[Path, None] = {}
    seen = 0
    todo = list(dict.fromkeys(folders))
    while todo:
        folder = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # unreadable here is unreadable for git too
        for entry in entries:
            seen += 1
            if seen > _MAX_GIT_ENTRIES:
                raise RepositoryLayoutError(
                    f"the git dir holds more than {_MAX_GIT_ENTRIES:,} entries to check for links"
                )
            if entry.is_symlink():
                target = _resolve(folder, entry.name, "link inside the git dir")
                try:
                    special = _kind(os.stat(target).st_mode)
                except OSError:
                    special = None  # nothing there: git finds nothing either
                if special is not None:
                    raise RepositoryLayoutError(
                        f"a link inside the git dir ({entry.name!r}) leads to {special}"
                    )
                found[target] = None
            elif entry.is_dir(follow_symlinks=False):
                todo.append(Path(entry.path))
            elif not entry.is_file(follow_symlinks=False):
                try:
                    special = _kind(entry.stat(follow_symlinks=False).st_mode)
                except OSError:
                    continue
                if special is not None:
                    raise RepositoryLayoutError(
                        f"the git dir holds {special} ({entry.name!r}); git would wait on it"
                    )
    return tuple(found)


def repository_locations(folder: str | os.PathLike[str]) -> RepositoryLocations:
    """The places `folder` (a work tree, a bare repository or a plain folder) reads data from.

    Raises `RepositoryLayoutError` for a pointer file that cannot be read or makes no sense;
    a folder that is no repository has only its work tree.
    """
    try:
        root = Path(folder).resolve(strict=True)
    except (OSError, RuntimeError, ValueError) as exc:
        raise RepositoryLayoutError(
            f"the folder cannot be resolved ({type(exc).__name__})"
        ) from None
    work_tree, git_dir = git_dir_of(root)
    if git_dir is None:
        return RepositoryLocations(work_tree, None, None, None)
    common_dir = git_dir
    if (git_dir / "commondir").is_file():
        text = _read_small(git_dir / "commondir", _MAX_POINTER_BYTES, "`commondir` file")
        common_dir = _resolve(git_dir, text.strip(), "`commondir` file")
    objects = _resolve(common_dir, "objects", "object store")
    alternates = _alternates(objects)
    links = _links_inside([git_dir, common_dir, objects, *alternates])
    remotes = promisor_urls(common_dir, git_dir)
    promisors: dict[Path, None] = {}
    for url in remotes:
        local = local_path(url)
        if local is not None:  # relative: from wherever git runs, the work tree or git dir
            for base in dict.fromkeys(b for b in (work_tree, git_dir) if b is not None):
                promisors[_resolve(base, local, "promisor remote's url")] = None
    return RepositoryLocations(
        work_tree=work_tree,
        git_dir=git_dir,
        common_dir=common_dir,
        objects=objects,
        alternates=alternates,
        links=links,
        promisor_remotes=remotes,
        promisors=tuple(promisors),
    )
