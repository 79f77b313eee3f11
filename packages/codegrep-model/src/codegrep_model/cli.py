"""Command line of codegrep-model: `codegrep-model batch` runs a policy over an instances file.

The toolkit's flag convention: `-i/--instances` (or the positional INSTANCES), `-o` and
`--rollouts` (checked writable before any work), `-j/--jobs`, `--limit` (>= 0), `--dry-run`,
`--timeout` (seconds), `--version`. Exit 0 done; 1 the work ran and some rollouts failed (counted
and reported); 2 bad input (usage, an unreadable instances file, an unwritable output, an
endpoint that cannot be reached), said in one `error:` line on stderr. Text from files and
exceptions is never read as rich markup.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from codegrep_cli import fail, version_option
from codegrep_records import why_unwritable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

app = typer.Typer(
    no_args_is_help=True,
    help="The CodeGrep retrieval agent.\n\nExample: codegrep-model batch lite.jsonl -o pred.jsonl "
    "--cache ~/.cache/cg -j 4\n\nExit codes: 0 done; 1 some rollouts failed (counted and "
    "reported); 2 bad input.",
)

DEFAULT_TIMEOUT_S = 120.0


@app.callback()
def _root(
    version: Annotated[bool, version_option("codegrep-model", "codegrep_model")] = False,
) -> None:
    """The CodeGrep retrieval agent."""


@app.command()
def version() -> None:
    """Print the package version.

    Example: codegrep-model version
    """
    from codegrep_model import __version__

    typer.echo(__version__)


def _instances_path(positional: Path | None, option: Path | None) -> Path:
    """INSTANCES or -i/--instances: one of them, or both naming the same file."""
    if positional is None and option is None:
        raise fail("name the instances file: INSTANCES or -i/--instances FILE")
    if positional is None:
        assert option is not None
        return option
    if option is not None and positional.resolve() != option.resolve():
        raise fail(f"two instances files, INSTANCES {positional} and -i {option}; give one")
    return positional


def _timeout(timeout: float | None, old_spelling: float | None) -> float:
    """--timeout, or its old spelling --timeout-s; both only when they agree."""
    if timeout is not None and old_spelling is not None and timeout != old_spelling:
        raise fail(
            f"--timeout {timeout:g} and --timeout-s {old_spelling:g} (its old spelling) "
            "disagree; give --timeout once"
        )
    value = timeout if timeout is not None else old_spelling
    value = DEFAULT_TIMEOUT_S if value is None else value
    if not value > 0:  # also NaN
        raise fail(f"--timeout must be a positive number of seconds, got {value:g}")
    return value


def _progress(console: Console) -> Progress:
    """The progress bar of a run over instances: what, a bar, done of total, time so far."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


def _endpoint_problem(base_url: str, api_key: str | None, timeout: float) -> str | None:
    """Why nothing answers at `base_url`, or None when something does (whatever its status).

    One GET of `{base_url}/models`, the route OpenAI-compatible servers list models on: only a
    refused or impossible connection counts, so a server without that route still passes.
    """
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        httpx.get(f"{base_url.rstrip('/')}/models", headers=headers, timeout=min(timeout, 10.0))
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol) as exc:
        return f"{type(exc).__name__}: {exc}"
    except httpx.InvalidURL as exc:
        return f"not a URL ({exc})"
    except httpx.HTTPError:
        return None  # it answered, or began to: what it says shows up per request
    return None


@app.command()
def batch(
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Predictions JSONL (appended; not .gz).")
    ],
    cache: Annotated[
        Path, typer.Option("--cache", help="Clone cache (a worktree_sandbox.BareRepoCache folder).")
    ],
    instances: Annotated[
        Path | None,
        typer.Argument(
            help="SWE-bench-style instances: JSON Lines (.gz too), JSON or parquet; or -i.",
            show_default=False,
        ),
    ] = None,
    instances_option: Annotated[
        Path | None,
        typer.Option("-i", "--instances", help="The instances file (the same as INSTANCES)."),
    ] = None,
    source: Annotated[
        str, typer.Option(help="Clone source template, e.g. https://github.com/{repo}.git")
    ] = "https://github.com/{repo}.git",
    rollouts: Annotated[
        Path | None,
        typer.Option(help="Rollouts JSONL (default: beside -o, .rollouts.jsonl); appended."),
    ] = None,
    jobs: Annotated[int, typer.Option("-j", "--jobs", min=1, help="Rollouts at a time.")] = 4,
    limit: Annotated[
        int | None, typer.Option(min=0, help="At most this many new instances.")
    ] = None,
    repo: Annotated[
        list[str] | None,
        typer.Option(
            help="A filter: keep only the instances of this repository (owner/name); repeat "
            "for more. A name no instance has is an error."
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            help="OpenAI-compatible endpoint (checked reachable first); default: LexicalPolicy."
        ),
    ] = None,
    model: Annotated[str, typer.Option(help="Model name at --base-url.")] = "codegrep",
    api_key: Annotated[str | None, typer.Option(envvar="OPENAI_API_KEY")] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout", help="Seconds per model request (default 120).", show_default=False
        ),
    ] = None,
    timeout_s: Annotated[
        float | None, typer.Option("--timeout-s", hidden=True, help="Old spelling of --timeout.")
    ] = None,
    ranker: Annotated[
        Path | None,
        typer.Option(help="LexicalPolicy: a ranker file (default: the shipped one)."),
    ] = None,
    heuristic: Annotated[
        bool,
        typer.Option(
            help="LexicalPolicy without the learned ranker (its hand-weighted order and cut)."
        ),
    ] = False,
    dry_run: Annotated[bool, typer.Option(help="Say what would run, run nothing.")] = False,
) -> None:
    """Run a policy over INSTANCES; write predictions (-o) and full rollouts. Resumable.

    Example:
      codegrep-model batch swebench/lite.jsonl -o bench-out/lite.pred.jsonl --cache ~/.cache/cg \\
        --source "https://github.com/{repo}.git" -j 4 --limit 20
    """
    import codegrep_records as records
    from rich.console import Console
    from rich.markup import escape
    from rich.text import Text
    from worktree_sandbox import BareRepoCache, SandboxError, TreePool

    from codegrep_model.batch import _finished, run_batch
    from codegrep_model.engine import ToolTree
    from codegrep_model.openai_policy import OpenAIPolicy
    from codegrep_model.policy_spec import PolicySpec, policy_from_spec, served_spec
    from codegrep_model.records import Instance, RolloutRecord

    console = Console(stderr=True)
    path = _instances_path(instances, instances_option)
    request_timeout = _timeout(timeout, timeout_s)
    rollouts = rollouts or output.with_name(output.name.removesuffix(".jsonl") + ".rollouts.jsonl")
    for flag, out in (("-o", output), ("--rollouts", rollouts)):
        if out.suffix == ".gz":
            # batch appends as it goes and resumes from what is there: plain JSON Lines only
            raise fail(f"{flag} {out}: batch appends to it; name a .jsonl file")
    if output.resolve() == rollouts.resolve():
        raise fail(f"-o and --rollouts are the same file ({output}); name two files")
    for flag, out in (("-o", output), ("--rollouts", rollouts)):
        problem = why_unwritable(out)
        if problem is not None:
            raise fail(f"cannot write {flag} {out}: {problem}")
    try:
        loaded = records.load_instances(path)
    except records.RecordError as exc:  # missing, a folder, not JSON, parquet without pyarrow
        raise fail(str(exc)) from None
    for bad in loaded.problems:
        console.print(f"skipped bad row {bad}", style="yellow", markup=False)
    if not loaded.records:
        raise fail(f"{path}: no valid instance row ({len(loaded.problems)} bad)")
    known = {r.repo for r in loaded.records}
    for name in repo or []:
        if name not in known:
            raise fail(f"--repo {name}: no instance of this repository in {path}")
    rows = [r for r in loaded.records if not repo or r.repo in repo]
    unparsed: list[str] = []
    done = _finished(output, unparsed)
    for msg in unparsed:
        console.print(
            f"bad prediction row (its instance runs again) {msg}", style="yellow", markup=False
        )
    todo = [r for r in rows if r.instance_id not in done][: limit if limit is not None else None]
    console.print(
        f"{len(rows)} instances, {len(rows) - len([r for r in rows if r.instance_id not in done])}"
        f" already done, {len(todo)} to run -> {output}, {rollouts}",
        markup=False,
        highlight=False,
    )
    if heuristic and ranker is not None:
        raise fail("--heuristic means no ranker; drop --ranker or --heuristic")
    if base_url and (heuristic or ranker is not None):
        raise fail("--ranker and --heuristic are LexicalPolicy's; --base-url runs a model")
    from codegrep_model.ranker import Ranker, RankerError

    try:
        learned = Ranker.load(ranker) if ranker is not None else None
    except RankerError as exc:
        raise fail(str(exc)) from None
    if base_url:
        unreachable = _endpoint_problem(base_url, api_key, request_timeout)
        if unreachable is not None:
            raise fail(f"--base-url {base_url} cannot be reached: {unreachable}")
    if dry_run:
        return
    try:
        repo_cache = BareRepoCache(cache, source=source)
    except (SandboxError, OSError) as exc:  # a --source naming no repository, an unusable --cache
        raise fail(str(exc)) from None
    spec = (
        served_spec(base_url, model)
        if base_url
        else PolicySpec("lexical-heuristic" if heuristic else "lexical")
    )
    policy = policy_from_spec(spec, api_key=api_key, timeout_s=request_timeout, ranker=learned)

    async def go() -> None:
        async with TreePool(repo_cache) as pool:

            @asynccontextmanager
            async def open_tree(inst: Instance) -> AsyncIterator[ToolTree]:
                # A row names a repository, never a folder that happens to be here.
                async with pool.open(inst.repo, inst.base_commit, folders=False) as tree:
                    yield tree

            with _progress(console) as progress:
                task = progress.add_task(escape(policy.name), total=len(todo))

                def tick(_: RolloutRecord) -> None:
                    progress.advance(task)

                summary = await run_batch(
                    policy,
                    rows,
                    open_tree,
                    predictions=output,
                    rollouts=rollouts,
                    jobs=jobs,
                    limit=limit,
                    on_record=tick,
                )
        if isinstance(policy, OpenAIPolicy):
            await policy.aclose()
        console.print(
            f"answered {summary.answered}, fallback {summary.fallback}, errors {summary.errors}, "
            f"skipped {summary.skipped} ({summary.wall_s:.1f} s)",
            highlight=False,
        )
        for msg in summary.error_messages[:20]:
            console.print(Text.assemble(("error", "red"), f" {msg}"), soft_wrap=True)
        if summary.errors:
            raise fail(
                f"{summary.errors} of {summary.total} instance(s) failed; they have no "
                "prediction, and a rerun retries them",
                code=1,
            )

    try:
        asyncio.run(go())
    except (OSError, SandboxError) as exc:  # a full disk, a pool that cannot start
        raise fail(f"the batch stopped: {type(exc).__name__}: {exc}", code=1) from None


@app.command("train-ranker")
def train_ranker(
    output: Annotated[Path, typer.Option("-o", "--output", help="The ranker file to write.")],
    examples: Annotated[
        Path,
        typer.Option(
            "--examples",
            help="Examples JSONL: candidates and gold per instance. Instances already in it "
            "are not run again; the fit always reads all of it.",
        ),
    ],
    instances: Annotated[
        list[Path] | None,
        typer.Option(
            "-i", "--instances", help="Training instances (repeat for more); none: fit only."
        ),
    ] = None,
    cache: Annotated[
        Path | None, typer.Option("--cache", help="Clone cache (needed to run rollouts).")
    ] = None,
    source: Annotated[
        str, typer.Option(help="Clone source template, e.g. https://github.com/{repo}.git")
    ] = "https://github.com/{repo}.git",
    exclude_repo: Annotated[
        list[str] | None,
        typer.Option("--exclude-repo", help="Leave this repository's instances out; repeat."),
    ] = None,
    jobs: Annotated[int, typer.Option("-j", "--jobs", min=1, help="Rollouts at a time.")] = 2,
    limit: Annotated[
        int | None, typer.Option(min=0, help="At most this many new instances.")
    ] = None,
    l2: Annotated[
        float, typer.Option(min=0.0, help="L2 penalty of the regression (see the README).")
    ] = 10.0,
    folds: Annotated[
        int, typer.Option(min=2, help="Folds, by repository, for the cut and the report.")
    ] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the fold assignment.")] = 0,
    dry_run: Annotated[bool, typer.Option(help="Say what would run, run nothing.")] = False,
) -> None:
    """Train LexicalPolicy's candidate ranker from real rollouts; write the ranker file.

    Runs the heuristic policy on each instance (real repositories at their base commits),
    keeps the candidates of its answer turn with their features and the instance's gold files
    in --examples, fits a logistic regression and the answer cut on them (the cut on
    out-of-fold probabilities, folds by repository), and writes -o. Never give it instances
    you report held-out figures on.

    Example (reproduces the shipped ranker; see the README):
      codegrep-model train-ranker -i lite.jsonl -i swe_gym_validation.parquet \
        --cache ~/.cache/cg --examples bench-out/ranker.examples.jsonl -o ranker.json -j 2
    """
    from rich.console import Console
    from worktree_sandbox import BareRepoCache, SandboxError

    from codegrep_model.ranker import RankerError
    from codegrep_model.ranker_train import (
        TrainingNote,
        collect_in_cache,
        fit_examples,
        load_training_instances,
        pending_instances,
    )

    console = Console(stderr=True, soft_wrap=True)  # paths stay whole, to copy

    def note(n: TrainingNote) -> None:
        if n.level == "warning":
            console.print(n.text, style="yellow", markup=False)
        else:
            console.print(n.text, markup=False, highlight=False)

    for flag, out in (("-o", output), ("--examples", examples)):
        problem = why_unwritable(out)
        if problem is not None:
            raise fail(f"cannot write {flag} {out}: {problem}")
    if output.resolve() == examples.resolve():
        raise fail(f"-o and --examples are the same file ({output}); name two files")
    try:
        training = load_training_instances(
            instances or [], exclude_repos=exclude_repo or [], on_note=note
        )
        rows = training.rows
        todo = pending_instances(rows, examples, limit)
    except RankerError as exc:
        raise fail(str(exc)) from None
    note(
        TrainingNote(
            f"{len(rows)} training instances, {len(rows) - len(todo)} already in {examples}, "
            f"{len(todo)} to run"
        )
    )
    if todo and cache is None:
        raise fail("rollouts to run need --cache (and --source)")
    if dry_run:
        return
    if todo:
        assert cache is not None
        try:
            repo_cache = BareRepoCache(cache, source=source)
        except (SandboxError, OSError) as exc:
            raise fail(str(exc)) from None
        try:
            with _progress(console) as progress:
                task = progress.add_task("rollouts", total=len(todo))
                written, errors = asyncio.run(
                    collect_in_cache(
                        todo,
                        repo_cache,
                        examples,
                        jobs=jobs,
                        on_done=lambda _i, _e: progress.advance(task),
                    )
                )
        except (OSError, SandboxError) as exc:
            raise fail(f"the rollouts stopped: {type(exc).__name__}: {exc}", code=1) from None
        note(TrainingNote(f"wrote {written} rows to {examples}"))
        for msg in errors[:20]:
            console.print(f"error {msg}", style="red", markup=False)
        if errors:
            raise fail(
                f"{len(errors)} instance(s) failed and are not in {examples}; a rerun retries "
                "them (nothing was fitted)",
                code=1,
            )
    if not examples.exists():
        raise fail(f"--examples {examples} does not exist and no -i instances were given")
    try:
        ranker, report = fit_examples(
            examples,
            instance_ids=[r.instance_id for r in rows],
            l2=l2,
            folds=folds,
            seed=seed,
            trained_on=training.trained_on,
            on_note=note,
        )
    except RankerError as exc:
        raise fail(str(exc)) from None
    ranker.dump(output)
    console.print(
        f"{report.instances} instances, {report.candidates} candidates, {report.folds} folds by "
        f"repository; out-of-fold F0.5 {report.oof_fbeta:.3f} (heuristic top-1 on the same "
        f"candidates {report.heuristic_fbeta:.3f}); cut {ranker.cut}",
        markup=False,
        highlight=False,
    )
    for repo_name, (n, fr, fh) in report.by_repo.items():
        console.print(
            f"  {repo_name}: n {n}, ranker {fr:.3f}, heuristic top-1 {fh:.3f}",
            markup=False,
            highlight=False,
        )
    console.print(f"wrote {output}", markup=False, highlight=False)


def _add_dataset_commands() -> None:
    from codegrep_model.dataset_cli import dataset_app

    app.add_typer(dataset_app, name="dataset")


_add_dataset_commands()


def main() -> None:
    app()
