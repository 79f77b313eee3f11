"""Command line of worktree-sandbox: prepare clones, run the agent's tools, clean up, benchmark."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from codegrep_cli import (
    dry_run_option,
    fail,
    grep_engine_option,
    instances_option,
    jobs_option,
    limit_option,
    output_option,
    seed_option,
    timeout_option,
    version_option,
)
from codegrep_records import Instance, RecordError
from codegrep_records.io import load_records, why_unwritable
from pydantic import BaseModel, Field, ValidationError, field_validator
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from worktree_sandbox._git import git
from worktree_sandbox.cache import BareRepoCache, _check_source, _fill_source
from worktree_sandbox.errors import SandboxError
from worktree_sandbox.models import (
    GlobArgs,
    GlobResult,
    GrepArgs,
    GrepResult,
    ReadArgs,
    ReadResult,
    SandboxLimits,
)
from worktree_sandbox.pool import Materialize, TreePool, default_workdir, prune_workdir

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Read-only grep/glob/read over git repositories at a commit, without Docker.",
)
err = Console(stderr=True)

CacheOpt = Annotated[
    Path | None, typer.Option("--cache", help="Cache root of bare clones (for --repo owner/name).")
]
SourceOpt = Annotated[
    str,
    typer.Option(
        "--source", help="Source template: https://github.com/{repo}.git or /mirrors/{owner}+{name}"
    ),
]
RepoOpt = Annotated[
    str,
    typer.Option(
        "--repo",
        help="A local repository or folder (a path), or owner/name from --cache.",
    ),
]
CommitOpt = Annotated[
    str | None,
    typer.Option(
        "--commit", help="Revision to serve (sha, HEAD, a tag). Without it: the folder as it is."
    ),
]
TextOpt = Annotated[bool, typer.Option("--text", help="Print what the model sees, not JSON.")]
TimeoutOpt = Annotated[float, timeout_option("Per-call timeout in seconds.", min=0.01)]

DEFAULT_SOURCE = "https://github.com/{repo}.git"
#: The layouts of `prepare -o` and `bench -o`; a report without `schema_version` is 1.
PREPARE_REPORT_SCHEMA_VERSION = 1
BENCH_REPORT_SCHEMA_VERSION = 1


@app.callback()
def _top(
    version: Annotated[bool, version_option("worktree-sandbox", "worktree_sandbox")] = False,
) -> None:
    """Read-only grep/glob/read over git repositories at a commit, without Docker."""


# -- messages: one line each on stderr, never read as rich markup (paths, repository text and
# exception text keep their square brackets) -------------------------------------------------------


def _tagged(tag: str, color: str, message: str) -> None:
    err.print(f"[{color}]{tag}[/{color}] {escape(message)}", soft_wrap=True, highlight=False)


def _plan(message: str) -> None:
    """A line of a --dry-run plan: the command's output, so on stdout."""
    typer.echo(message)


# -- checks made before any work -------------------------------------------------------------------


def _check_readable(path: Path, name: str) -> None:
    """Exit 2 naming `name` unless `path` is a file that can be opened."""
    target = path.expanduser()
    if target.is_dir():
        raise fail(f"{name} {path}: cannot open (it is a directory)")
    try:
        with target.open("rb"):
            pass
    except OSError as exc:
        raise fail(f"{name} {path}: cannot open ({exc.strerror or exc})") from exc


def _check_output(output: Path | None, flag: str = "-o") -> None:
    """Refuse an output the run could not write at its end, before any work."""
    if output is None:
        return
    target = output.expanduser()
    why = why_unwritable(target)
    if why is not None:
        raise fail(f"{flag} {output}: cannot write a file there ({why})")


def _check_cache_dir(cache_dir: Path, source: str) -> None:
    """What `_open_cache` would refuse, without making anything (for --dry-run)."""
    try:
        _check_source(source)
    except SandboxError as exc:
        raise fail(f"--source: {exc}") from exc
    root = cache_dir.expanduser()
    not_folder = root.exists() and not root.is_dir()
    why = "not a folder" if not_folder else why_unwritable(root, folder=True)
    if why is not None:
        raise fail(f"--cache {cache_dir}: cannot use it as the clone cache ({why})")


def _open_cache(cache_dir: Path, source: str) -> BareRepoCache:
    """The clone cache, or exit 2 saying why --cache or --source cannot be used."""
    _check_cache_dir(cache_dir, source)
    try:
        return BareRepoCache(cache_dir, source)
    except SandboxError as exc:
        raise fail(f"--cache {cache_dir}: {exc}") from exc
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        raise fail(
            f"--cache {cache_dir}: cannot use it as the clone cache ({exc.strerror}{where})"
        ) from exc


def _instances_file(positional: Path | None, option: Path | None) -> Path:
    """The instances file, named as INSTANCES or -i/--instances (one of them, or both alike)."""
    if positional is None and option is None:
        raise fail("no instances file: give INSTANCES or -i/--instances FILE")
    if (
        positional is not None
        and option is not None
        and positional.expanduser().resolve() != option.expanduser().resolve()
    ):
        raise fail(f"INSTANCES {positional} and -i/--instances {option} differ: give one")
    path = positional if positional is not None else option
    assert path is not None
    return path


# -- prepare -------------------------------------------------------------------------------------


@dataclass
class _Row:
    instance_id: str
    repo: str
    commit: str


class _PrepareRow(Instance):
    """An instance row as every package reads it, plus what cloning needs: a base commit and a
    repository name the cache accepts. The instance id only names the row in messages."""

    instance_id: str = ""
    base_commit: str = Field(min_length=1)

    @field_validator("instance_id", mode="before")
    @classmethod
    def _unnamed(cls, value: Any) -> Any:
        # A parquet column some rows lack reads as null in those rows.
        return "" if value is None else value

    @field_validator("repo")
    @classmethod
    def _cacheable(cls, repo: str) -> str:
        try:
            BareRepoCache.check_repo_name(repo)
        except SandboxError as exc:
            raise ValueError(str(exc)) from None
        return repo


def _read_instances(path: Path) -> tuple[list[_Row], list[str]]:
    """Rows of an instances file, read by codegrep-records: JSON Lines or a JSON list, either
    gzipped, or parquet; bad rows are returned as `file:line: field: reason`, not raised.

    A file that cannot be read to its end (a truncated or corrupt .gz, an I/O error) raises
    SandboxError naming the file: no run starts on part of a file.
    """
    try:
        # No duplicate check: two rows at one commit are one clone, not a problem.
        loaded = load_records(path, _PrepareRow, key=None)
    except RecordError as exc:
        raise SandboxError(f"{exc}; nothing was prepared") from None
    rows = [
        _Row(r.instance_id or f"{r.repo}@{r.base_commit}", r.repo, r.base_commit)
        for r in loaded.records
    ]
    return rows, [str(problem) for problem in loaded.problems]


@app.command(
    epilog="Example: worktree-sandbox prepare lite.jsonl --cache ~/.cache/wts "
    "--source 'https://github.com/{repo}.git'\n\n"
    "Exit codes: 0 every instance prepared; 1 some could not be (a commit or repository not "
    "found) or rows were skipped, each named; 2 bad input (no or unreadable instances file, "
    "unusable --cache or --source, unwritable -o), found before anything is cloned."
)
def prepare(
    cache_dir: Annotated[Path, typer.Option("--cache", help="Cache root.")],
    instances: Annotated[
        Path | None,
        typer.Argument(
            metavar="INSTANCES",
            show_default=False,
            help="SWE-bench-style rows (repo, base_commit): JSONL/JSON(.gz)/parquet.",
        ),
    ] = None,
    instances_opt: Annotated[
        Path | None, instances_option("The instances file, as an option.")
    ] = None,
    source: SourceOpt = DEFAULT_SOURCE,
    limit: Annotated[int | None, limit_option("First N instances only.")] = None,
    output: Annotated[Path | None, output_option("Write the per-repo report as JSON.")] = None,
    dry_run: Annotated[
        bool, dry_run_option("Check the inputs, say what would be cloned, clone nothing.")
    ] = False,
) -> None:
    """One bare clone per repository and every base commit present, with a disk report."""
    path = _instances_file(instances, instances_opt)
    _check_readable(path, "INSTANCES")
    _check_output(output)
    _check_cache_dir(cache_dir, source)
    try:
        rows, bad = _read_instances(path)
    except SandboxError as exc:
        raise fail(str(exc)) from exc
    rows = rows[:limit] if limit is not None else rows
    for b in bad:
        _tagged("skipped", "yellow", b)
    by_repo: dict[str, list[_Row]] = defaultdict(list)
    for r in rows:
        by_repo[r.repo].append(r)
    if dry_run:
        _plan(f"dry run: nothing was cloned; without --dry-run prepare would, in {cache_dir}:")
        for repo, items in sorted(by_repo.items()):
            n_commits = len({r.commit for r in items})
            _plan(
                f"  {repo}: clone or update from {_fill_source(source, repo)}, "
                f"{n_commits} commit(s) for {len(items)} instance(s)"
            )
        _plan(
            f"  {len(rows)} instance(s) in {len(by_repo)} repositories; {len(bad)} row(s) skipped"
        )
        if output is not None:
            _plan(f"  write the report to {output}")
        return
    cache = _open_cache(cache_dir, source)
    failures: list[str] = []
    report: list[dict[str, Any]] = []
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
    ) as progress:
        task = progress.add_task("preparing", total=len(rows))
        for repo, items in sorted(by_repo.items()):
            progress.update(task, description=f"{repo}")
            commits = sorted({r.commit for r in items})
            try:
                prepared = cache.ensure(repo, [])
            except SandboxError as exc:
                failures += [f"{r.instance_id}: {exc}" for r in items]
                progress.advance(task, len(items))
                continue
            ok: set[str] = set()
            for c in commits:
                try:
                    cache.ensure(repo, [c])
                    ok.add(c)
                except SandboxError as exc:
                    failures += [f"{r.instance_id}: {exc}" for r in items if r.commit == c]
                progress.advance(task, sum(1 for r in items if r.commit == c))
            tree_bytes = [_tree_bytes(prepared.git_dir, c) for c in sorted(ok)[:3]]
            report.append(
                {
                    "repo": repo,
                    "instances": len(items),
                    "commits": len(commits),
                    "commits_ok": len(ok),
                    "bare_bytes": cache.disk_bytes(repo),
                    "tree_bytes_mean": int(sum(tree_bytes) / len(tree_bytes)) if tree_bytes else 0,
                    "cloned": prepared.cloned,
                    "seconds": round(prepared.seconds, 3),
                }
            )
    table = Table(title=f"prepared {len(rows) - len(failures)}/{len(rows)} instances")
    for col in ("repo", "instances", "commits", "bare clone", "one tree", "N trees as copies"):
        table.add_column(col, justify="right" if col != "repo" else "left")
    for entry in report:
        table.add_row(
            entry["repo"],
            str(entry["instances"]),
            f"{entry['commits_ok']}/{entry['commits']}",
            _mib(entry["bare_bytes"]),
            _mib(entry["tree_bytes_mean"]),
            _mib(entry["tree_bytes_mean"] * entry["commits_ok"]),
        )
    err.print(table)
    for f in failures:
        _tagged("failed", "red", f)
    if output is not None:
        _write(
            output,
            {
                "schema_version": PREPARE_REPORT_SCHEMA_VERSION,
                "repos": report,
                "failures": failures,
                "skipped_rows": bad,
            },
        )
    if failures or bad:
        raise fail(f"{len(failures)} instance(s) failed, {len(bad)} row(s) skipped", code=1)


def _write(output: Path, data: object) -> None:
    target = output.expanduser()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(data, indent=2))
    except OSError as exc:
        raise fail(f"-o {output}: {exc.strerror or exc}") from exc


def _tree_bytes(git_dir: Path, commit: str) -> int:
    out = git(git_dir, "ls-tree", "-r", "-l", "-z", commit).stdout
    total = 0
    for rec in out.split(b"\0"):
        fields = rec.split(b"\t", 1)[0].split()
        if len(fields) == 4 and fields[3].isdigit():
            total += int(fields[3])
    return total


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


# -- the tools -----------------------------------------------------------------------------------


def _run_tool(
    repo: str,
    commit: str | None,
    cache_dir: Path | None,
    source: str,
    timeout: float,
    name: str,
    args: GrepArgs | GlobArgs | ReadArgs,
    grep_engine: str | None = None,
) -> GrepResult | GlobResult | ReadResult:
    limits = SandboxLimits(timeout_s=timeout, grep_engine=grep_engine)
    # glob and read are served from git objects alone; grep may need the checkout (ripgrep
    # answers the patterns git grep's PCRE2 cannot run), so it gets one, as a pool's default does.
    materialize: Materialize = "auto" if name == "grep" else "never"

    local = Path(repo).expanduser().is_dir()
    if not local and cache_dir is None:
        raise fail(f"--repo {repo!r} is no local folder; give --cache DIR for owner/name")
    cache = None if local or cache_dir is None else _open_cache(cache_dir, source)

    async def go() -> GrepResult | GlobResult | ReadResult:
        async with (
            TreePool(cache, limits=limits, materialize=materialize) as pool,
            pool.open(repo, commit if local else commit or "HEAD") as tree,
        ):
            return await tree.call(name, args.model_dump())

    try:
        return asyncio.run(go())
    except SandboxError as exc:
        raise fail(str(exc)) from exc


_A = TypeVar("_A", bound=BaseModel)
# Tool argument fields as the command line names them.
_OPTION = {
    "pattern": "PATTERN",
    "path": "--path",
    "glob": "--glob",
    "max_results": "--max-results",
    "start_line": "--start-line",
    "end_line": "--end-line",
}


def _tool_args(model: type[_A], **values: Any) -> _A:
    """The tool's arguments from the command line, or exit 2 naming the option that is wrong
    (the same checks a model's call gets, said in the command line's words)."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        for problem in exc.errors():
            field = str(problem["loc"][0]) if problem["loc"] else "arguments"
            name = "FILE" if model is ReadArgs and field == "path" else _OPTION.get(field, field)
            _tagged("error:", "red", f"{name}: {problem['msg']}")
        raise typer.Exit(2) from None


def _emit(result: GrepResult | GlobResult | ReadResult, text: bool) -> None:
    if text:
        sys.stdout.write(result.text + "\n")
    else:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
    if not result.ok:
        raise typer.Exit(1)


@app.command(
    epilog="Example: worktree-sandbox grep 'def get\\b' --repo . --commit HEAD --glob '*.py'"
)
def grep(
    pattern: Annotated[str, typer.Argument(help="Regular expression.")],
    repo: RepoOpt = ".",
    commit: CommitOpt = None,
    path: Annotated[str | None, typer.Option("--path", help="Directory or file.")] = None,
    glob: Annotated[str | None, typer.Option("--glob", help="Only files matching.")] = None,
    ignore_case: Annotated[bool, typer.Option("-i", "--ignore-case")] = False,
    max_results: Annotated[int, typer.Option("--max-results")] = 100,
    cache_dir: CacheOpt = None,
    source: SourceOpt = DEFAULT_SOURCE,
    timeout: TimeoutOpt = 10.0,
    text: TextOpt = False,
    grep_engine: Annotated[str | None, grep_engine_option()] = None,
) -> None:
    """Search file contents (the agent's grep tool); JSON out."""
    args = _tool_args(
        GrepArgs,
        pattern=pattern, path=path, glob=glob, ignore_case=ignore_case, max_results=max_results,
    )  # fmt: skip
    _emit(_run_tool(repo, commit, cache_dir, source, timeout, "grep", args, grep_engine), text)


@app.command("glob", epilog="Example: worktree-sandbox glob 'test_*.py' --repo . --commit HEAD")
def glob_cmd(
    pattern: Annotated[str, typer.Argument(help="Glob over paths ('**' across folders).")],
    repo: RepoOpt = ".",
    commit: CommitOpt = None,
    path: Annotated[str | None, typer.Option("--path", help="Directory to search in.")] = None,
    cache_dir: CacheOpt = None,
    source: SourceOpt = DEFAULT_SOURCE,
    timeout: TimeoutOpt = 10.0,
    text: TextOpt = False,
) -> None:
    """Find files by path pattern (the agent's glob tool); JSON out."""
    args = _tool_args(GlobArgs, pattern=pattern, path=path)
    _emit(_run_tool(repo, commit, cache_dir, source, timeout, "glob", args), text)


@app.command(epilog="Example: worktree-sandbox read README.md --repo . --commit HEAD --end-line 20")
def read(
    file: Annotated[str, typer.Argument(help="File path relative to the repository root.")],
    repo: RepoOpt = ".",
    commit: CommitOpt = None,
    start_line: Annotated[int | None, typer.Option("--start-line")] = None,
    end_line: Annotated[int | None, typer.Option("--end-line")] = None,
    cache_dir: CacheOpt = None,
    source: SourceOpt = DEFAULT_SOURCE,
    timeout: TimeoutOpt = 10.0,
    text: TextOpt = False,
) -> None:
    """Read a file or a range of its lines (the agent's read tool); JSON out."""
    args = _tool_args(ReadArgs, path=file, start_line=start_line, end_line=end_line)
    _emit(_run_tool(repo, commit, cache_dir, source, timeout, "read", args), text)


# -- gc ------------------------------------------------------------------------------------------


@app.command(
    epilog="Example: worktree-sandbox gc --cache ~/.cache/wts\n\n"
    "Exit codes: 0 done; 1 a folder could not be read or removed; 2 --workdir or --cache is "
    "not a folder."
)
def gc(
    cache_dir: CacheOpt = None,
    workdir: Annotated[
        Path | None, typer.Option("--workdir", help="Checkout root (default: tmpfs).")
    ] = None,
) -> None:
    """Remove what dead processes left: checkouts, clones in progress.

    Only folders this tool made (they carry its marker file) are removed; anything else in the
    workdir or the cache is listed and left alone.
    """
    wd = workdir.expanduser() if workdir is not None else default_workdir()
    if wd.exists() and not wd.is_dir():
        raise fail(f"--workdir {workdir}: not a folder")
    cache_root = cache_dir.expanduser() if cache_dir is not None else None
    if cache_root is not None and cache_root.exists() and not cache_root.is_dir():
        raise fail(f"--cache {cache_dir}: not a folder")
    try:
        report = prune_workdir(wd)
    except OSError as exc:
        raise fail(f"--workdir {wd}: {exc.strerror or exc}", code=1) from exc
    typer.echo(
        f"checkouts: removed {report.folders} folder(s) of dead processes, "
        f"{_mib(report.freed_bytes)} ({wd})"
    )
    if report.not_ours:
        shown = ", ".join(report.not_ours[:10]) + (" ..." if len(report.not_ours) > 10 else "")
        typer.echo(f"checkouts: left {len(report.not_ours)} entry(ies) not made here: {shown}")
    if cache_dir is not None and cache_root is not None and not cache_root.exists():
        typer.echo(f"cache: nothing at {cache_dir}")  # and none is made
    elif cache_dir is not None:
        cache = _open_cache(cache_dir, "{repo}")  # prunes dead clones in progress on start
        typer.echo(f"cache: {len(cache.repos())} repositories in {cache.root}")


# -- bench ---------------------------------------------------------------------------------------


@app.command(
    epilog="Example: worktree-sandbox bench --cache ~/.cache/wts --source '/m/{owner}+{name}' "
    "-i lite.jsonl --repo psf/requests --repo sympy/sympy -o bench.json\n\n"
    "Exit codes: 0 done; 1 a repository or commit could not be prepared or benched; 2 bad "
    "input (a bad --repo name, an unreadable -i file, unusable --cache or --source, unwritable "
    "-o), found before any work."
)
def bench(
    cache_dir: Annotated[Path, typer.Option("--cache", help="Cache root.")],
    source: SourceOpt = DEFAULT_SOURCE,
    repos: Annotated[
        list[str] | None, typer.Option("--repo", help="owner/name (repeat); default: all cached.")
    ] = None,
    instances: Annotated[
        Path | None,
        instances_option("Take commits per repo from these rows (JSONL/JSON(.gz)/parquet)."),
    ] = None,
    commits: Annotated[int, typer.Option("--commits", min=1, help="Commits per repository.")] = 5,
    jobs: Annotated[
        int | None,
        jobs_option("Concurrent grep calls in the load test (default 64)."),
    ] = None,
    old_jobs: Annotated[
        int | None,
        typer.Option("--concurrency", min=1, hidden=True, help="Old spelling of --jobs."),
    ] = None,
    output: Annotated[Path | None, output_option("JSON figures.")] = None,
    seed: Annotated[int, seed_option("Seed of the pattern sampling.")] = 0,
    dry_run: Annotated[
        bool, dry_run_option("Check the inputs, say what would run, run nothing.")
    ] = False,
) -> None:
    """Measure setup, tool latency, throughput under load, disk; print a table."""
    from worktree_sandbox._bench import run_bench

    if jobs is not None and old_jobs is not None and jobs != old_jobs:
        raise fail(f"--jobs {jobs} and --concurrency {old_jobs} differ: give one (--jobs)")
    concurrency = jobs or old_jobs or 64
    for name in repos or ():
        try:
            BareRepoCache.check_repo_name(name)
        except SandboxError as exc:
            raise fail(f"--repo: {exc}") from exc
    _check_output(output)
    _check_cache_dir(cache_dir, source)
    wanted: dict[str, list[str]] | None = None
    if instances is not None:
        _check_readable(instances, "-i/--instances")
        try:
            rows, bad = _read_instances(instances)
        except SandboxError as exc:
            raise fail(str(exc)) from exc
        for b in bad:
            _tagged("skipped", "yellow", b)
        wanted = {}
        for r in rows:
            if r.commit not in wanted.setdefault(r.repo, []):
                wanted[r.repo].append(r.commit)
    # A dry run makes no cache; a run without --repo needs one with clones in it.
    exists = cache_dir.expanduser().is_dir()
    cache = _open_cache(cache_dir, source) if exists or (repos and not dry_run) else None
    names = repos or (cache.repos() if cache is not None else [])
    if not names:
        raise fail(f"no repositories in {cache_dir}: pass --repo owner/name")
    if dry_run:
        _plan(
            f"dry run: nothing was run; without --dry-run bench would use the clones in "
            f"{cache_dir}:"
        )
        for name in names:
            at = (wanted or {}).get(name)
            where = f"{len(at)} base commit(s) from -i" if at else "commits spread over HEAD"
            _plan(
                f"  {name}: up to {commits} commit(s) ({where}), from {_fill_source(source, name)}"
            )
        _plan(f"  load test at {concurrency} concurrent calls, seed {seed}")
        if output is not None:
            _plan(f"  write the figures to {output}")
        return
    assert cache is not None
    try:
        figures = run_bench(
            cache,
            names,
            wanted=wanted,
            commits_per_repo=commits,
            concurrency=concurrency,
            seed=seed,
            console=err,
        )
    except SandboxError as exc:
        raise fail(str(exc), code=1) from exc
    if output is not None:
        _write(output, {"schema_version": BENCH_REPORT_SCHEMA_VERSION, **figures})
        err.print(f"figures written to {output}", markup=False, highlight=False, soft_wrap=True)


def main() -> None:
    os.environ.setdefault("COLUMNS", "120")
    app()
