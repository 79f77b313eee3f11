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
from codegrep_records import GoldRule
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from catm._instances import load_instances
from catm._judge import Judge, JudgeResult, NoJudge, OpenAIJudge
from catm._output import (
    label_report,
    plot_histogram,
    read_stats,
    stats_path,
    write_labels,
)
from catm._pipeline import MiningConfig, iter_records, mine_labels
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


@app.command(
    epilog=(
        "Example: catm mine data/openhands_glm46_lite/sessions.jsonl.gz "
        "--instances data/swebench/lite.jsonl -o labels.jsonl --judge none\n\n"
        "With a judge: catm mine trajs.jsonl.gz -i lite.jsonl -o labels.jsonl "
        "--judge Qwen/Qwen3-32B --endpoint http://localhost:8000/v1 -j 32\n\n"
        "Patch files follow the toolkit's gold rule (renames under the old path, no added files, "
        "no test files); --renames, --include-added and --include-tests ask a different question."
    )
)
def mine(
    trajectories: Annotated[
        list[Path], typer.Argument(help="Trajectory files: .json, .jsonl, optionally .gz.")
    ],
    instances: Annotated[
        list[Path],
        typer.Option(
            "--instances",
            "-i",
            help="SWE-bench style instance files (gold patches): .jsonl, .json, .parquet, "
            "optionally .gz.",
        ),
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="Labels JSONL to write.")],
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
    cache: Annotated[
        Path | None,
        typer.Option(help="Judge answer cache (SQLite); default <output>.judge-cache.sqlite."),
    ] = None,
    template: Annotated[
        Path | None, typer.Option(help="Judge prompt template ({path}, {issue}, {reasoning}).")
    ] = None,
    jobs: Annotated[int, typer.Option("-j", "--jobs", help="Concurrent judge requests.")] = 16,
    retries: Annotated[int, typer.Option(help="Retries per judge request.")] = 4,
    timeout: Annotated[float, typer.Option(help="Seconds per judge request.")] = 60.0,
    threshold: Annotated[float, typer.Option(help="Gold threshold on w(f).")] = GOLD_THRESHOLD,
    renames: Annotated[
        Renames, typer.Option(help="Which path of a renamed file is a patch file.")
    ] = Renames.OLD,
    include_added: Annotated[
        bool, typer.Option(help="Count files the patch adds as patch files.")
    ] = False,
    include_tests: Annotated[bool, typer.Option(help="Count test files as patch files.")] = False,
    limit: Annotated[
        int | None, typer.Option(help="Stop after this many trajectory records.")
    ] = None,
    plot: Annotated[Path | None, typer.Option(help="Also write the weight histogram PNG.")] = None,
    keep_reasoning: Annotated[
        bool, typer.Option("--keep-reasoning", help="Write each file's post-reasoning text.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Mine and report, but write nothing.")
    ] = False,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help="List skipped rows.")] = False,
) -> None:
    """Mine relevance labels from agent trajectories (stages 1-3)."""
    rule = GoldRule(
        include_added=include_added, exclude_tests=not include_tests, renames=renames.value
    )
    try:
        table, instance_skips = load_instances(list(instances), rule=rule)
        judge_impl: Judge
        if judge == "none":
            judge_impl = NoJudge()
        else:
            judge_impl = OpenAIJudge(
                endpoint,
                judge,
                api_key=api_key or os.environ.get("OPENAI_API_KEY", ""),
                cache=cache or output.with_name(output.name + ".judge-cache.sqlite"),
                template=_read_template(template) if template else None,
                concurrency=jobs,
                max_retries=retries,
                timeout_s=timeout,
            )
        columns = (
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console, transient=False) as progress:
            reading = progress.add_task("stage 1: trajectories", total=limit)
            judging = progress.add_task("stage 2: judge", total=None, visible=False)

            def judged(_: JudgeResult) -> None:
                progress.advance(judging)

            def judge_start(total: int) -> None:
                progress.update(judging, total=total, visible=True)

            result = mine_labels(
                iter_records(trajectories),
                table,
                judge_impl,
                config=MiningConfig(
                    threshold=threshold,
                    limit=limit,
                    keep_reasoning=keep_reasoning,
                    gold_rule=rule,
                ),
                on_trajectory=lambda: progress.advance(reading),
                on_judge_start=judge_start,
                on_judged=judged,
            )
        if isinstance(judge_impl, OpenAIJudge):
            judge_impl.close()
        result.stats.instance_rows_skipped = len(instance_skips)
        if not dry_run:
            write_labels(output, result.iter_labels(), result.stats)
    except CatmError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    stats = result.stats
    if stats.judge == "none":
        console.print("[yellow]judge: none, every mined file was kept (verdict UNJUDGED)[/yellow]")
    if instance_skips:
        console.print(
            f"[yellow]{len(instance_skips)} --instances rows were not usable"
            f"{'' if verbose else ' (-v lists them)'}[/yellow]"
        )
    if verbose:
        for skip in [*instance_skips, *result.skips]:
            console.print(f"skipped {skip.file}:{skip.line}: {skip.reason}")
    _print_stats_table(stats.model_dump())
    if not dry_run:
        console.print(f"wrote {stats.labels_written} labels to {output} and {stats_path(output)}")
        if plot is not None:
            _plot(output, plot, threshold)


@app.command(
    epilog="Example: catm stats labels.jsonl --png weights.png --examples 5",
)
def stats(
    labels: Annotated[Path, typer.Argument(help="A labels JSONL written by `catm mine`.")],
    png: Annotated[Path | None, typer.Option(help="Write the weight histogram PNG here.")] = None,
    examples: Annotated[int, typer.Option(help="Mined-only gold files to show.")] = 3,
) -> None:
    """Report per-stage counts, retention, the weight histogram and mined-only examples."""
    try:
        run = read_stats(labels)
        threshold = run.threshold if run is not None else GOLD_THRESHOLD
        report = label_report(labels, examples=examples, threshold=threshold)
    except CatmError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    if run is not None:
        _print_stats_table(run.model_dump())
        if run.gold_rule is None:
            console.print(
                "[yellow]written by catm 0.1: patch_files are every file of the diff "
                "(renames under the new name, added and test files included); run catm mine "
                "again for the shared gold rule[/yellow]"
            )
    summary = Table(title=f"labels in {labels.name}")
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
        histogram.add_row(f"[{edges[i]:.2f}, {edges[i + 1]:.2f})", str(count))
    out.print(histogram)
    for example in report.examples:
        out.print(
            f"mined, not in patch: {example.instance_id}: {example.path} "
            f"(l={example.reasoning_tokens}, w={example.weight:.3f}; "
            f"patch: {', '.join(example.patch_files)})"
        )
    if png is not None:
        _plot(labels, png, threshold)


def _read_template(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise JudgeError(f"cannot read judge template {path}: {exc}") from exc


def _plot(labels: Path, png: Path, threshold: float) -> None:
    try:
        plot_histogram(label_report(labels, threshold=threshold), png, threshold)
    except CatmError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    console.print(f"wrote {png}")


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
        table.add_row(key, str(value))
    out.print(table)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
