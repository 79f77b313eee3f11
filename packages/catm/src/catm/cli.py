"""`catm` command line: `catm mine` (trajectories -> labels) and `catm stats` (a label report).

Thin: it parses flags, builds a judge, shows progress and prints tables; the work is in the
library. This is the only module that prints.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from codegrep_cli import (
    dry_run_option,
    fail,
    instances_option,
    jobs_option,
    limit_option,
    output_option,
    timeout_option,
    version_option,
)
from codegrep_records import GoldRule
from codegrep_records.io import why_unwritable
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from catm._judge import Judge, OpenAIJudge
from catm._output import (
    label_report,
    plot_histogram,
    read_labels,
    read_stats,
    stats_path,
)
from catm._pipeline import (
    JudgeSpec,
    MiningConfig,
    MiningProgress,
    mine_to_file,
    prepare_mining,
)
from catm._records import Skip
from catm._weights import GOLD_THRESHOLD
from catm.errors import CatmError, JudgeError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="CATM: mine file-relevance labels from coding-agent trajectories.",
)
console = Console(stderr=True)
out = Console()


class Renames(StrEnum):
    """Which path of a renamed file counts (`GoldRule.renames`)."""

    OLD = "old"
    NEW = "new"
    BOTH = "both"


@app.callback()
def _top(version: Annotated[bool, version_option("catm", "catm")] = False) -> None:
    """CATM: mine file-relevance labels from coding-agent trajectories."""


@app.command(
    epilog=(
        "Example: catm mine data/openhands_glm46_lite/sessions.jsonl.gz "
        "--instances data/swebench/lite.jsonl -o labels.jsonl --judge none\n\n"
        "With a judge: catm mine trajs.jsonl.gz -i lite.jsonl -o labels.jsonl "
        "--judge Qwen/Qwen3-32B --endpoint http://localhost:8000/v1 -j 32\n\n"
        "Patch files follow the toolkit's gold rule (renames under the old path, no added files, "
        "no test files); --renames, --include-added and --include-tests ask a different question."
        "\n\nExit codes: 0 done; 1 judge requests failed (labels written, those files kept as "
        "JUDGE_FAILED; --keep-going accepts that); 2 bad input, unwritable output or an "
        "unreachable judge endpoint, found before any work."
    )
)
def mine(
    trajectories: Annotated[
        list[Path], typer.Argument(help="Trajectory files: .json, .jsonl, optionally .gz.")
    ],
    instances: Annotated[
        list[Path],
        instances_option(
            "SWE-bench style instance files (gold patches): .jsonl, .json, .parquet, "
            "optionally .gz."
        ),
    ],
    output: Annotated[Path, output_option("Labels JSONL to write.")],
    judge: Annotated[
        str, typer.Option(help="Judge model name at --endpoint, or 'none' to keep every file.")
    ] = "none",
    endpoint: Annotated[
        str,
        typer.Option(envvar="CATM_JUDGE_URL", help="OpenAI-compatible API root, e.g. .../v1."),
    ] = "http://127.0.0.1:8000/v1",
    api_key: Annotated[
        str, typer.Option(envvar="CATM_JUDGE_API_KEY", help="Bearer token for the endpoint.")
    ] = "",
    judge_cache: Annotated[
        Path | None,
        typer.Option(
            "--judge-cache",
            help="Judge answer cache (SQLite file); default <output>.judge-cache.sqlite.",
        ),
    ] = None,
    old_cache: Annotated[
        Path | None,
        typer.Option("--cache", hidden=True, help="Deprecated spelling of --judge-cache."),
    ] = None,
    template: Annotated[
        Path | None, typer.Option(help="Judge prompt template ({path}, {issue}, {reasoning}).")
    ] = None,
    jobs: Annotated[int, jobs_option("Concurrent judge requests.")] = 16,
    retries: Annotated[int, typer.Option(min=0, help="Retries per judge request.")] = 4,
    timeout: Annotated[float, timeout_option("Seconds per judge request.", min=0.01)] = 60.0,
    keep_going: Annotated[
        bool,
        typer.Option(
            "--keep-going",
            help="Skip the endpoint check before mining, and exit 0 even if judge requests "
            "failed (those files are kept, verdict JUDGE_FAILED).",
        ),
    ] = False,
    threshold: Annotated[float, typer.Option(help="Gold threshold on w(f).")] = GOLD_THRESHOLD,
    renames: Annotated[
        Renames, typer.Option(help="Which path of a renamed file is a patch file.")
    ] = Renames.OLD,
    include_added: Annotated[
        bool, typer.Option(help="Count files the patch adds as patch files.")
    ] = False,
    include_tests: Annotated[bool, typer.Option(help="Count test files as patch files.")] = False,
    limit: Annotated[int | None, limit_option("Stop after this many trajectory records.")] = None,
    plot: Annotated[Path | None, typer.Option(help="Also write the weight histogram PNG.")] = None,
    keep_reasoning: Annotated[
        bool, typer.Option("--keep-reasoning", help="Write each file's post-reasoning text.")
    ] = False,
    dry_run: Annotated[
        bool,
        dry_run_option(
            "Check the inputs, the outputs and the endpoint, say what would run, and run nothing."
        ),
    ] = False,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help="List skipped rows.")] = False,
) -> None:
    """Mine relevance labels from agent trajectories (stages 1-3)."""
    if old_cache is not None:
        if judge_cache is not None and judge_cache != old_cache:
            raise fail(f"--cache {old_cache} and --judge-cache {judge_cache} differ: give one")
        _warn("--cache is deprecated here (it names the judge's SQLite file): use --judge-cache")
        judge_cache = judge_cache or old_cache
    rule = GoldRule(
        include_added=include_added, exclude_tests=not include_tests, renames=renames.value
    )
    cache_file = judge_cache or output.with_name(output.name + ".judge-cache.sqlite")
    # Everything that can be wrong with the command is found here, before any work starts.
    _check_writable(output, "-o")
    if plot is not None:
        _check_writable(plot, "--plot")
    if judge != "none":
        _check_writable(cache_file, "--judge-cache")
    for path in trajectories:
        _check_readable(path, "TRAJECTORIES")
    spec = JudgeSpec(
        model=judge,
        endpoint=endpoint,
        api_key=api_key or os.environ.get("OPENAI_API_KEY", ""),
        cache=None if dry_run else cache_file,
        template=template,
        concurrency=jobs,
        retries=retries,
        timeout_s=timeout,
    )
    try:
        inputs = prepare_mining(instances, spec, rule)
    except CatmError as exc:
        raise fail(str(exc)) from exc
    judge_impl, instance_skips, checked = inputs.judge, inputs.instance_skips, ""
    if isinstance(judge_impl, OpenAIJudge) and not keep_going:
        try:
            checked = judge_impl.preflight(timeout_s=min(timeout, _PREFLIGHT_S))
        except JudgeError as exc:
            inputs.close()
            raise fail(f"{exc} (--keep-going skips this check)") from exc
    if dry_run:
        _say_plan(
            trajectories,
            instances,
            len(inputs.instances),
            judge_impl,
            checked,
            cache_file,
            output,
            limit,
            plot,
        )
        return
    config = MiningConfig(
        threshold=threshold, limit=limit, keep_reasoning=keep_reasoning, gold_rule=rule
    )
    try:
        with _progress() as progress:
            reading = progress.add_task("stage 1: trajectories", total=limit)
            judging = progress.add_task("stage 2: judge", total=None, visible=False)
            result = mine_to_file(
                trajectories,
                inputs,
                output,
                config=config,
                progress=MiningProgress(
                    on_trajectory=lambda: progress.advance(reading),
                    on_judge_start=lambda n: progress.update(judging, total=n, visible=True),
                    on_judged=lambda _: progress.advance(judging),
                ),
            )
    except CatmError as exc:
        raise fail(str(exc)) from exc
    except OSError as exc:
        raise fail(f"-o {output}: cannot write ({exc.strerror or exc})") from exc
    finally:
        inputs.close()
    stats = result.stats
    if stats.judge == "none":
        _warn("judge: none, every mined file was kept (verdict UNJUDGED)")
    if instance_skips:
        _warn(
            f"{len(instance_skips)} --instances rows were not usable"
            f"{'' if verbose else ' (-v lists them)'}"
        )
    if verbose:
        for skip in [*instance_skips, *result.skips]:
            _note(f"skipped {skip.path}:{skip.line}: {skip.message}")
    _print_stats_table(stats.model_dump())
    _note(f"wrote {stats.labels_written} labels to {output} and {stats_path(output)}")
    if plot is not None:
        _plot(output, plot, threshold)
    if stats.judge_failed:
        asked = stats.judged_relevant + stats.judged_not_relevant + stats.judge_failed
        failed = (
            f"{stats.judge_failed} of {asked} judge requests failed; those files were kept "
            "(verdict JUDGE_FAILED) and are not cached, so a rerun asks them again"
        )
        if keep_going:
            _warn(failed)
        else:
            raise fail(f"{failed} (--keep-going exits 0 on this)", code=1)


_PREFLIGHT_S = 10.0  # the endpoint check's timeout: fail fast, not after minutes of retries


def _say_plan(
    trajectories: list[Path],
    instances: list[Path],
    usable: int,
    judge: Judge,
    checked: str,
    cache_file: Path,
    output: Path,
    limit: int | None,
    plot: Path | None,
) -> None:
    _plan("dry run: nothing was mined, judged or written; without --dry-run catm mine would:")
    names = ", ".join(str(p) for p in trajectories)
    _plan(f"  read {len(trajectories)} trajectory file(s): {names}")
    _plan(f"  with {usable} usable instance(s) from {', '.join(str(p) for p in instances)}")
    if isinstance(judge, OpenAIJudge):
        _plan(f"  ask judge {judge.name} at {judge.endpoint}, caching answers in {cache_file}")
        _plan(f"  (endpoint check: {checked or 'skipped, --keep-going'})")
    else:
        _plan("  keep every mined file (--judge none)")
    _plan(f"  write {output} and {stats_path(output)}")
    if limit is not None:
        _plan(f"  stop after {limit} trajectory record(s) (--limit)")
    if plot is not None:
        _plan(f"  write the weight histogram to {plot}")


@app.command(
    epilog="Example: catm stats labels.jsonl --png weights.png --examples 5\n\n"
    "Exit codes: 0 done; 2 the file cannot be read or holds no labels, or --png cannot be "
    "written.",
)
def stats(
    labels: Annotated[Path, typer.Argument(help="A labels JSONL written by `catm mine`.")],
    png: Annotated[Path | None, typer.Option(help="Write the weight histogram PNG here.")] = None,
    examples: Annotated[int, typer.Option(min=0, help="Mined-only gold files to show.")] = 3,
) -> None:
    """Report per-stage counts, retention, the weight histogram and mined-only examples."""
    _check_readable(labels, "LABELS")
    if png is not None:
        _check_writable(png, "--png")
    try:
        run = read_stats(labels)
        threshold = run.threshold if run is not None else GOLD_THRESHOLD
        report = label_report(labels, examples=examples, threshold=threshold)
        if report.labels == 0 and (report.skipped_rows or run is None):
            raise fail(f"{labels}: not a catm labels file ({_first_problem(labels)})")
    except CatmError as exc:
        raise fail(str(exc)) from exc
    if run is not None:
        _print_stats_table(run.model_dump())
        if run.gold_rule is None:
            _warn(
                "written by catm 0.1: patch_files are every file of the diff "
                "(renames under the new name, added and test files included); run catm mine "
                "again for the shared gold rule"
            )
    summary = Table(title=escape(f"labels in {labels.name}"))
    summary.add_column("figure")
    summary.add_column("value", justify="right")
    for name in (
        "labels",
        "skipped_rows",
        "patch_files",
        "mined_files",
        "patch_files_mined",
        "weighted",
        "above_threshold",
        "gold_files",
        "mined_not_in_patch",
        "instances_with_mined_only_gold",
    ):
        summary.add_row(name, str(getattr(report, name)))
    summary.add_row("verdicts", ", ".join(f"{k}={v}" for k, v in sorted(report.verdicts.items())))
    summary.add_row("mean w", f"{report.weight_mean:.4f}")
    out.print(summary)
    histogram = Table(title="w(f) histogram")
    histogram.add_column("bin")
    histogram.add_column("pairs", justify="right")
    edges = report.histogram_edges
    for i, count in enumerate(report.histogram_counts):
        histogram.add_row(escape(f"[{edges[i]:.2f}, {edges[i + 1]:.2f})"), str(count))
    out.print(histogram)
    for example in report.examples:
        out.print(
            f"mined, not in patch: {example.instance_id}: {example.path} "
            f"(l={example.reasoning_tokens}, w={example.weight:.3f}; "
            f"patch: {', '.join(example.patch_files)})",
            markup=False,
            highlight=False,
        )
    if report.skipped_rows:
        _warn(f"{report.skipped_rows} row(s) of {labels} are not labels and were not counted")
    if png is not None:
        _plot(labels, png, threshold)


def _first_problem(labels: Path) -> str:
    for row in read_labels(labels):
        if isinstance(row, Skip):
            return f"line {row.line}: {row.message}"
    return "no rows, and no stats file beside it"


def _progress() -> Progress:
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    return Progress(*columns, console=console, transient=False)


def _plot(labels: Path, png: Path, threshold: float) -> None:
    try:
        plot_histogram(label_report(labels, threshold=threshold), png, threshold)
    except CatmError as exc:
        raise fail(str(exc)) from exc
    except OSError as exc:
        raise fail(f"{png}: cannot write ({exc.strerror or exc})") from exc
    _note(f"wrote {png}")


def _print_stats_table(values: dict[str, object]) -> None:
    table = Table(title="catm run")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for key, value in values.items():
        if key == "gold_rule" and value is None:
            value = "catm 0.1 (every file of the diff)"
        elif isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in sorted(value.items())) or "-"
        elif isinstance(value, float):
            value = f"{value:.4f}"
        table.add_row(key, escape(str(value)))
    out.print(table)


# -- messages: one line each on stderr, never read as rich markup (paths, exception text and
# extras hints like `catm[plot]` keep their square brackets) --------------------------------------


def _warn(message: str) -> None:
    console.print(f"[yellow]warning:[/yellow] {escape(message)}", soft_wrap=True, highlight=False)


def _note(message: str) -> None:
    console.print(message, markup=False, soft_wrap=True, highlight=False)


def _plan(message: str) -> None:
    """A line of the --dry-run plan: the run's main output, so on stdout."""
    out.print(message, markup=False, soft_wrap=True, highlight=False)


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


def _check_writable(path: Path, flag: str) -> None:
    """Exit 2 naming `flag` unless a file can be written at `path` (leaves nothing behind)."""
    why = why_unwritable(path)
    if why is not None:
        raise fail(f"{flag} {path}: cannot write a file there ({why})")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
