"""A repository's promisor remotes, read from its config files without running git.

A partial clone (`extensions.partialClone = <remote>`, or any `remote.<name>.promisor = true`)
fetches each object it lacks from its promisor remote's `url` (rewritten by `url.<base>.
insteadOf`), whatever command asked for it. Every git child of this package runs with no
transport allowed (`_git.git_env`), so none is ever fetched; this reader lets a caller that may
only read below some roots see the remote a layout points to (`repository_locations` lists a
local one as a place, as it lists an object alternate).

The reader takes git's config syntax (sections, `[section "sub"]` and `[section.sub]`, quoted
values with escapes, comments, continued lines) and follows `include.path` and every
`includeIf.<condition>.path` (each as if its condition held: more remotes, never fewer), up to
git's depth of 10. The files are untrusted: each must be a regular file (a FIFO is refused, not
waited on), read with a size bound; what cannot be read or parsed is a `RepositoryLayoutError`.
Not for: reading other settings (git itself reads them, with the pins of `git_env`).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from worktree_sandbox.errors import RepositoryLayoutError

__all__ = ["check_config", "local_path", "promisor_urls"]

_MAX_FILE_BYTES = 1 << 20
_MAX_DEPTH = 10  # git's own limit of nested includes
_MAX_FILES = 64
_SECTION = re.compile(r'\[([A-Za-z0-9.-]+)(?:[ \t]+"((?:[^"\\\n]|\\.)*)")?\]')
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]*")
_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}
_TRUE = {"true", "yes", "on", "1", ""}

# (section.subsection.name, section and name lowercased; value; the file it is in)
Entry = tuple[str, str, Path]


def _read(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise RepositoryLayoutError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RepositoryLayoutError(f"{path} is not a regular file; git would wait on it")
        data = os.read(fd, _MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > _MAX_FILE_BYTES:
        raise RepositoryLayoutError(f"{path} is over {_MAX_FILE_BYTES} bytes")
    return data.decode("utf-8", errors="replace")


def _unescape(sub: str) -> str:
    return re.sub(r"\\(.)", r"\1", sub)


def _value(text: str, i: int) -> tuple[str, int]:
    """The value that starts at `text[i]`, and where it ends (after its line)."""
    out: list[str] = []
    quoted = False
    pending_space = ""
    while i < len(text):
        c = text[i]
        if c == "\n":
            if quoted:
                raise RepositoryLayoutError("a quoted config value runs past its line")
            return "".join(out), i + 1
        if c in " \t\r" and not quoted:
            if out:
                pending_space += " "  # git writes each blank inside a value as a space
            i += 1
            continue
        if c in "#;" and not quoted:
            end = text.find("\n", i)
            return "".join(out), len(text) if end < 0 else end + 1
        out.append(pending_space)
        pending_space = ""
        if c == '"':
            quoted = not quoted
        elif c == "\\":
            nxt = text[i + 1 : i + 2]
            if nxt == "\n":  # a continued line
                i += 2
                continue
            if nxt not in _ESCAPES:
                raise RepositoryLayoutError(f"a config value has a bad escape: \\{nxt}")
            out.append(_ESCAPES[nxt])
            i += 1
        else:
            out.append(c)
        i += 1
    if quoted:
        raise RepositoryLayoutError("a quoted config value is not closed")
    return "".join(out), i


def _entries(path: Path, depth: int, seen: list[Path]) -> list[Entry]:
    if depth > _MAX_DEPTH:
        raise RepositoryLayoutError(f"config includes nest deeper than {_MAX_DEPTH}")
    if len(seen) >= _MAX_FILES:
        raise RepositoryLayoutError(f"config includes name more than {_MAX_FILES} files")
    seen.append(path)
    text = _read(path)
    out: list[Entry] = []
    section = ""
    i = 0
    while i < len(text):
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        if i >= len(text):
            break
        c = text[i]
        if c in "#;":
            end = text.find("\n", i)
            i = len(text) if end < 0 else end + 1
            continue
        if c == "[":
            m = _SECTION.match(text, i)
            if m is None:
                raise RepositoryLayoutError(f"{path}: a config section header does not parse")
            name, sub = m.group(1), m.group(2)
            # [section "sub"] keeps the subsection's case; [section.sub] (the old form) not
            section = name.lower() if sub is None else f"{name.lower()}.{_unescape(sub)}"
            i = m.end()
            continue
        m = _NAME.match(text, i)
        if m is None:
            raise RepositoryLayoutError(f"{path}: a config line does not parse")
        key = f"{section}.{m.group().lower()}" if section else m.group().lower()
        i = m.end()
        while i < len(text) and text[i] in " \t":
            i += 1
        if i < len(text) and text[i] == "=":
            value, i = _value(text, i + 1)
        else:  # `name` alone is true
            value, i = _value(text, i)
            if value:
                raise RepositoryLayoutError(f"{path}: a config line does not parse")
            value = "true"
        out.append((key, value, path))
        head, _, last = key.rpartition(".")
        if last == "path" and (head == "include" or head.startswith("includeif.")):
            target = Path(os.path.expanduser(value)) if value.startswith("~") else Path(value)
            if not target.is_absolute():
                target = path.parent / target
            out += _entries(target, depth + 1, seen)
    return out


def _rewrite(url: str, entries: list[Entry]) -> str:
    """`url` after `url.<base>.insteadOf` (the longest match wins, as in git)."""
    best = ("", "")
    for key, value, _ in entries:
        rewrites = key.startswith("url.") and key.endswith(".insteadof")
        if rewrites and value and url.startswith(value) and len(value) > len(best[1]):
            best = (key[len("url.") : -len(".insteadof")], value)
    return best[0] + url[len(best[1]) :] if best[1] else url


def check_config(git_dir: Path) -> None:
    """Read `git_dir`'s config files and every file they include, as git would before it
    runs: `RepositoryLayoutError` at once for a FIFO, socket or device there (git would wait
    on it), a file over 1 MiB or one that does not parse."""
    seen: list[Path] = []
    for name in ("config", "config.worktree"):
        _entries(git_dir / name, 0, seen)


def promisor_urls(common_dir: Path, git_dir: Path) -> tuple[str, ...]:
    """The urls git would fetch a missing object from: each promisor remote's, rewritten."""
    files = [common_dir / "config"]
    if (git_dir / "config.worktree").exists() and git_dir != common_dir:
        files.append(git_dir / "config.worktree")
    seen: list[Path] = []
    entries = [e for f in files for e in _entries(f, 0, seen)]
    names: set[str] = set()
    for key, value, _ in entries:
        if key == "extensions.partialclone" and value:
            names.add(value)
        elif key.startswith("remote.") and key.endswith(".promisor"):
            remote = key[len("remote.") : -len(".promisor")]
            if value.lower() in _TRUE:
                names.add(remote)
            else:
                names.discard(remote)
    urls: list[str] = []
    for key, value, _ in entries:
        remote = key[len("remote.") : -len(".url")]
        if key.startswith("remote.") and key.endswith(".url") and remote in names and value:
            urls.append(_rewrite(value, entries))
    return tuple(dict.fromkeys(urls))


def local_path(url: str) -> str | None:
    """The folder a remote `url` names on this machine (git's rules), or None for a network
    url (`https://`, `ssh://`, `host:path`)."""
    if url.startswith("file://"):
        return url[len("file://") :]
    if "://" in url:
        return None
    colon, slash = url.find(":"), url.find("/")
    if colon > 0 and (slash < 0 or colon < slash):
        return None  # scp-like host:path
    return url
