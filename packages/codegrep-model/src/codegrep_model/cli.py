"""Command line of codegrep-model: `codegrep-model batch` runs a policy over an instances file."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    no_args_is_help=True,
    help="The CodeGrep retrieval agent.\n\nExample: codegrep-model batch lite.jsonl -o pred.jsonl "
    "--cache ~/.cache/cg -j 4",
)


@app.command()
def version() -> None:
    """Print the package version.

    Example: codegrep-model version
    """
    from codegrep_model import __version__

    typer.echo(__version__)


@app.command()
def batch(
    instances: Annotated[
        Path,
        typer.Argument(help="SWE-bench-style instances: JSON Lines (.gz too), JSON or parquet."),
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="Predictions JSONL (appended).")],
    cache: Annotated[Path, typer.Option(help="BareRepoCache folder.")],
    source: Annotated[
        str, typer.Option(help="Clone source template, e.g. https://github.com/{repo}.git")
    ] = "https://github.com/{repo}.git",
    rollouts: Annotated[
        Path | None, typer.Option(help="Rollouts JSONL (default: beside -o, .rollouts.jsonl)")
    ] = None,
    jobs: Annotated[int, typer.Option("-j", "--jobs", min=1, help="Rollouts at a time.")] = 4,
    limit: Annotated[
        int | None, typer.Option(min=0, help="At most this many new instances.")
    ] = None,
    repo: Annotated[
        list[str] | None, typer.Option(help="Only instances of this repository (repeatable).")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint; default: LexicalPolicy.")
    ] = None,
    model: Annotated[str, typer.Option(help="Model name at --base-url.")] = "codegrep",
    api_key: Annotated[str | None, typer.Option(envvar="OPENAI_API_KEY")] = None,
    timeout_s: Annotated[float, typer.Option(help="Per model request.")] = 120.0,
    dry_run: Annotated[bool, typer.Option(help="Say what would run, run nothing.")] = False,
) -> None:
    """Run a policy over INSTANCES; write predictions (-o) and full rollouts. Resumable.

    Example:
      codegrep-model batch swebench/lite.jsonl -o bench-out/lite.pred.jsonl --cache ~/.cache/cg \\
        --source "https://github.com/{repo}.git" -j 4 --limit 20
    """
    import codegrep_records as records
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
    from worktree_sandbox import BareRepoCache, SandboxError, TreePool

    from codegrep_model.batch import _finished, run_batch
    from codegrep_model.engine import ToolTree
    from codegrep_model.lexical import LexicalPolicy
    from codegrep_model.openai_policy import OpenAIPolicy
    from codegrep_model.policy import Policy
    from codegrep_model.records import Instance, RolloutRecord

    console = Console(stderr=True)
    for path in (output, rollouts):
        if path is not None and path.suffix == ".gz":
            # batch appends as it goes and resumes from what is there: plain JSON Lines only
            console.print(f"[red]error:[/] {path}: batch appends to it; name a .jsonl file")
            raise typer.Exit(2)
    try:
        loaded = records.load_instances(instances)
    except records.RecordError as exc:  # missing, a folder, not JSON, parquet without pyarrow
        console.print(f"error: {exc}", style="red", markup=False)
        raise typer.Exit(2) from None
    for problem in loaded.problems:
        console.print(f"skipped bad row {problem}", style="yellow", markup=False)
    rows = [r for r in loaded.records if not repo or r.repo in repo]
    rollouts = rollouts or output.with_name(output.name.removesuffix(".jsonl") + ".rollouts.jsonl")
    unparsed: list[str] = []
    done = _finished(output, unparsed)
    for msg in unparsed:
        console.print(
            f"bad prediction row (its instance runs again) {msg}", style="yellow", markup=False
        )
    todo = [r for r in rows if r.instance_id not in done][: limit if limit is not None else None]
    console.print(
        f"{len(rows)} instances, {len(rows) - len([r for r in rows if r.instance_id not in done])}"
        f" already done, {len(todo)} to run -> {output}, {rollouts}"
    )
    if dry_run:
        return
    try:
        repo_cache = BareRepoCache(cache, source=source)
    except (SandboxError, OSError) as exc:  # a --source naming no repository, an unusable --cache
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    policy: Policy = (
        OpenAIPolicy(base_url, model, api_key=api_key, timeout_s=timeout_s)
        if base_url
        else LexicalPolicy()
    )

    async def go() -> None:
        async with TreePool(repo_cache) as pool:

            @asynccontextmanager
            async def open_tree(inst: Instance) -> AsyncIterator[ToolTree]:
                # A row names a repository, never a folder that happens to be here.
                async with pool.open(inst.repo, inst.base_commit, folders=False) as tree:
                    yield tree

            with Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
            ) as progress:
                task = progress.add_task(policy.name, total=len(todo))

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
            f"skipped {summary.skipped} ({summary.wall_s:.1f} s)"
        )
        for msg in summary.error_messages[:20]:
            console.print(f"[red]error[/] {msg}")
        if summary.errors:
            raise typer.Exit(1)

    asyncio.run(go())


def main() -> None:
    app()
