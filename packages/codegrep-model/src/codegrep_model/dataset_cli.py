"""`codegrep-model dataset grpo|sft`: training data files for ms-swift, with a report.

A Typer sub-app (`dataset_app`), mounted on the main CLI as `dataset`. Bad input (a file that
is missing or unreadable, an output that cannot be written, a bad option) exits 2 before any
work, with one `error: ...` line on stderr; work that ran and failed exits 1.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import codegrep_records as records
import typer
from codegrep_cli import (
    EXIT_FAILED,
    dry_run_option,
    fail,
    instances_option,
    jobs_option,
    limit_option,
    output_option,
    seed_option,
)
from codegrep_records.io import load_records, why_unwritable, write_records
from grpo_rewards import UnknownRewardError
from pydantic import BaseModel
from rich.console import Console

from codegrep_model.datasets import (
    Dropped,
    GrpoDataset,
    config_from_row,
    grpo_rows,
    load_rollouts,
    reward_name,
    sft_rows,
)
from codegrep_model.records import Instance

__all__ = ["dataset_app"]

dataset_app = typer.Typer(
    no_args_is_help=True,
    help="Training data for ms-swift: GRPO prompt rows and rejection-sampled agent SFT rows.\n\n"
    "Example: codegrep-model dataset grpo -i lite.jsonl -o data/grpo --cache ~/.cache/cg",
)


def _unwritable(path: Path, *, folder: bool) -> str | None:
    """Why `path` (a file, or with `folder` a folder to write files in) cannot be written."""
    why = why_unwritable(path, folder=folder)
    return None if why is None else f"{path}: cannot write: {why}"


def _instances(path: Path) -> tuple[tuple[Instance, ...], list[str]]:
    try:
        # every row, duplicates included: grpo_rows names them as dropped rows
        loaded = load_records(path, Instance, key=None)
    except records.RecordError as exc:  # missing, a folder, not JSON, parquet without pyarrow
        raise fail(f"instances: {exc}") from None
    return loaded.records, [str(p) for p in loaded.problems]


def _labels(path: Path | None) -> tuple[tuple[records.GoldLabel, ...], list[str]]:
    if path is None:
        return (), []
    try:
        loaded = records.load_labels(path)
    except records.RecordError as exc:
        raise fail(f"labels: {exc}") from exc
    return loaded.records, [str(p) for p in loaded.problems]


def _print_bad_rows(console: Console, bad_rows: Sequence[str]) -> None:
    for msg in bad_rows[:20]:
        console.print(f"skipped bad row {msg}", style="yellow", markup=False)
    if len(bad_rows) > 20:
        console.print(f"... and {len(bad_rows) - 20} more bad rows", style="yellow")


def _print_dropped(console: Console, by_reason: dict[str, int], dropped: Sequence[Dropped]) -> None:
    if not by_reason:
        console.print("dropped: none")
        return
    console.print("dropped: " + ", ".join(f"{k} {v}" for k, v in by_reason.items()), markup=False)
    # The expected, numerous reasons are counted above; the others are worth reading one by one.
    shown = [d for d in dropped if d.reason not in ("repo_filtered", "below_threshold")]
    for d in shown[:20]:
        line = f"  {d.instance_id}: {d.reason} {d.detail}".rstrip()
        console.print(line, markup=False, soft_wrap=True)
    if len(shown) > 20:
        console.print(f"  ... and {len(shown) - 20} more (see the report)")


def _write_report(path: Path, report: dict[str, Any]) -> None:
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _row_json(row: BaseModel) -> str:
    return row.model_dump_json(exclude_none=True)


@dataset_app.command("grpo")
def grpo(
    instances: Annotated[
        Path, instances_option("SWE-bench-style instances (JSONL, .gz, JSON, parquet).")
    ],
    output: Annotated[Path, output_option("Folder for train.jsonl, val.jsonl, report.json.")],
    cache: Annotated[Path, typer.Option(help="BareRepoCache folder.")],
    source: Annotated[
        str, typer.Option(help="Clone source template, e.g. https://github.com/{repo}.git")
    ] = "https://github.com/{repo}.git",
    labels: Annotated[
        Path | None,
        typer.Option(help="Gold labels (`catm mine` output); a label replaces the patch gold."),
    ] = None,
    val_fraction: Annotated[
        float,
        typer.Option(min=0.0, help="Share of instances for validation, in whole repositories."),
    ] = 0.1,
    val_repo: Annotated[
        list[str] | None,
        typer.Option(help="A validation repository (repeatable; replaces --val-fraction)."),
    ] = None,
    seed: Annotated[int, seed_option("Seed of the repository split.")] = 0,
    limit: Annotated[
        int | None, limit_option("At most this many instances (after --repo).")
    ] = None,
    repo: Annotated[
        list[str] | None, typer.Option(help="Only instances of this repository (repeatable).")
    ] = None,
    jobs: Annotated[int, jobs_option("Trees opened at a time.")] = 4,
    dry_run: Annotated[
        bool, dry_run_option("Read and count; open no tree, write nothing.", negatable=True)
    ] = False,
    exploration_turns: Annotated[
        int | None,
        typer.Option(min=0, help="Turns with tools per rollout (default: the paper's 3)."),
    ] = None,
    max_calls: Annotated[
        int | None, typer.Option(min=1, help="Calls per turn (default: the paper's 8).")
    ] = None,
    max_issue_bytes: Annotated[
        int | None, typer.Option(min=1, help="The issue is cut to this many UTF-8 bytes.")
    ] = None,
    shortlist: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Answer-task rows: LexicalPolicy explores each tree and the prompt is the "
            "issue with its best K candidate files (no tools; see "
            "codegrep_model.policies.shortlist).",
        ),
    ] = None,
    ranker: Annotated[
        Path | None,
        typer.Option(help="With --shortlist: the ranker file that orders the candidates."),
    ] = None,
) -> None:
    """GRPO rows: the agent's system and user prompt, the tools, the gold; split by repository.

    With --shortlist K the rows are the answer turn alone: the issue and LexicalPolicy's K best
    candidates, each with its reasons and matched lines (each tree is checked out and explored).

    Writes OUTPUT/train.jsonl, OUTPUT/val.jsonl and OUTPUT/report.json (every dropped
    instance and why). Exits 1 when a tree could not be opened or no row was made.

    Example:
      codegrep-model dataset grpo -i swebench/lite.jsonl --labels labels.jsonl -o data/grpo \\
        --cache ~/.cache/cg --source "https://github.com/{repo}.git" --val-fraction 0.1
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
    from worktree_sandbox import BareRepoCache, SandboxError

    console = Console(stderr=True)
    if val_fraction >= 1.0:
        raise fail(f"--val-fraction must be below 1, got {val_fraction}")
    why = _unwritable(output, folder=True)
    if why is not None:
        raise fail(why)
    shape = {
        k: v
        for k, v in (
            ("exploration_turns", exploration_turns),
            ("max_calls_per_turn", max_calls),
            ("max_issue_bytes", max_issue_bytes),
        )
        if v is not None
    }
    config = config_from_row(json.dumps(shape) if shape else "")
    if ranker is not None and shortlist is None:
        raise fail("--ranker orders a shortlist: give --shortlist K too")
    explorer = None
    if shortlist is not None:
        from codegrep_model.policies.lexical import lexical_explorer
        from codegrep_model.policies.lexical.ranker import RankerError

        try:
            explorer = lexical_explorer(ranker)
        except (RankerError, OSError) as exc:
            raise fail(f"--ranker {ranker}: {exc}") from exc
    rows, bad_rows = _instances(instances)
    gold_labels, label_problems = _labels(labels)
    bad_rows += label_problems
    repo_cache: BareRepoCache | None = None
    if not dry_run:
        try:
            repo_cache = BareRepoCache(cache, source=source)
        except (SandboxError, OSError) as exc:  # a --source naming no repository, a bad --cache
            raise fail(str(exc)) from exc
    _print_bad_rows(console, bad_rows)

    async def go() -> GrpoDataset:
        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=dry_run,
        ) as progress:
            task = progress.add_task("trees", total=None)

            def tick(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            made = await grpo_rows(
                rows,
                repo_cache,
                labels=gold_labels,
                val_fraction=val_fraction,
                val_repos=val_repo or None,
                seed=seed,
                repos=repo or None,
                limit=limit,
                jobs=jobs,
                bad_rows=bad_rows,
                dry_run=dry_run,
                on_tree=tick,
                config=config,
            )
            if explorer is None or shortlist is None or repo_cache is None or dry_run:
                return made
            from codegrep_model._shortlist_rows import shortlist_rows
            from codegrep_model.policies.shortlist import ShortlistConfig

            explored = progress.add_task("explorations", total=None)

            def row_tick(done: int, total: int) -> None:
                progress.update(explored, completed=done, total=total)

            return await shortlist_rows(
                made,
                repo_cache,
                config=ShortlistConfig(size=shortlist),
                explorer=explorer,
                rollout=config,
                jobs=jobs,
                on_row=row_tick,
            )

    dataset = asyncio.run(go())
    report = dataset.report
    if dry_run:
        console.print(
            f"{report.instances} instances: {report.candidates} would become rows, from "
            f"{report.trees} trees; {report.beyond_limit} beyond --limit -> {output}",
            markup=False,
        )
        _print_dropped(console, report.dropped_by_reason, report.dropped)
        return
    output.mkdir(parents=True, exist_ok=True)
    write_records(output / "train.jsonl", dataset.train, dump=_row_json)
    write_records(output / "val.jsonl", dataset.val, dump=_row_json)
    _write_report(output / "report.json", report.to_dict())
    console.print(
        f"train {report.train} rows ({len(report.train_repos)} repos), val {report.val} rows "
        f"({', '.join(report.val_repos) or 'no repo'}) -> {output}",
        markup=False,
    )
    for name, info in report.per_repo.items():
        console.print(
            f"  {name}: {info['split'] or '-'}, {info['rows']} rows, {info['dropped']} dropped",
            markup=False,
        )
    if report.gold_sources:
        console.print("gold: " + ", ".join(f"{k} {v}" for k, v in report.gold_sources.items()))
    if report.unknown_val_repos:
        console.print(
            f"--val-repo without rows: {', '.join(report.unknown_val_repos)}",
            style="yellow",
            markup=False,
        )
    _print_dropped(console, report.dropped_by_reason, report.dropped)
    if report.tree_errors:
        raise fail(
            f"{report.tree_errors} of {report.trees} trees could not be opened", code=EXIT_FAILED
        )
    if not (report.train or report.val):
        raise fail("no row was made", code=EXIT_FAILED)


@dataset_app.command("sft")
def sft(
    rollouts: Annotated[
        list[Path], typer.Argument(help="Rollout files of `codegrep-model batch` (JSONL).")
    ],
    instances: Annotated[Path, instances_option("The instances the rollouts ran on.")],
    output: Annotated[Path, output_option("SFT rows (JSONL); the report beside it.")],
    labels: Annotated[
        Path | None,
        typer.Option(help="Gold labels (`catm mine` output); a label replaces the patch gold."),
    ] = None,
    threshold: Annotated[
        float, typer.Option(help="Keep a rollout whose reward is at least this.")
    ] = 0.5,
    reward: Annotated[
        str, typer.Option(help="v1, v2, v3 (CodeGrep) or a grpo_rewards.REWARDS name.")
    ] = "v3",
    user_after_tools: Annotated[
        str,
        typer.Option(
            help="chat: what follows each reply (tool results, the episode's prompts) is one "
            "user message in the chat template's tokens, as the GRPO scheduler appends it "
            "(ms-swift's template backend needs it); keep: tool_response and user messages as "
            "they are (--template_backend jinja)."
        ),
    ] = "chat",
    loss_scale: Annotated[
        bool, typer.Option(help="Also write the weight as each trained message's loss_scale.")
    ] = False,
    dry_run: Annotated[
        bool, dry_run_option("Count what would be kept; write nothing.", negatable=True)
    ] = False,
) -> None:
    """Agent-format SFT rows from answered rollouts whose reward clears --threshold.

    Each row's `weight` is its reward (rejection-sampling fine-tuning). Writes OUTPUT and
    OUTPUT's name with .report.json (every dropped rollout and why). Exits 1 when no row is
    kept.

    Example:
      codegrep-model dataset sft out/lite.pred.rollouts.jsonl -i swebench/lite.jsonl \\
        -o data/sft.jsonl --threshold 0.5 --reward v3
    """
    console = Console(stderr=True)
    try:
        name = reward_name(reward)
    except UnknownRewardError as exc:  # a KeyError: its message is args[0], unquoted
        raise fail(str(exc.args[0])) from exc
    if not math.isfinite(threshold):
        raise fail(f"--threshold must be a finite number, got {threshold}")
    if user_after_tools not in ("chat", "keep"):
        raise fail(f"--user-after-tools must be chat or keep, not {user_after_tools!r}")
    report_path = output.with_name(output.name.removesuffix(".jsonl") + ".report.json")
    why = _unwritable(output, folder=False) or _unwritable(report_path, folder=False)
    if why is not None:
        raise fail(why)
    rows, bad_rows = _instances(instances)
    gold_labels, label_problems = _labels(labels)
    try:
        loaded = load_rollouts(rollouts)
    except records.RecordError as exc:
        raise fail(f"rollouts: {exc}") from exc
    bad_rows += label_problems + [str(p) for p in loaded.problems]
    _print_bad_rows(console, bad_rows)
    dataset = sft_rows(
        loaded.records,
        rows,
        labels=gold_labels,
        threshold=threshold,
        reward=name,
        user_after_tools="keep" if user_after_tools == "keep" else "chat",
        loss_scale=loss_scale,
        bad_rows=bad_rows,
    )
    report = dataset.report
    mean = f", mean weight {report.mean_weight:.3f}" if report.mean_weight is not None else ""
    console.print(
        f"{report.rollouts} rollouts: kept {report.kept} ({name} >= {threshold}{mean})"
        + ("" if dry_run else f" -> {output}"),
        markup=False,
    )
    if report.kept_per_repo:
        console.print(
            "kept per repo: " + ", ".join(f"{k} {v}" for k, v in report.kept_per_repo.items()),
            markup=False,
        )
    _print_dropped(console, report.dropped_by_reason, report.dropped)
    if dry_run:
        return
    write_records(output, dataset.rows, dump=_row_json)
    _write_report(report_path, report.to_dict())
    if not dataset.rows:
        raise fail("no rollout was kept", code=EXIT_FAILED)
