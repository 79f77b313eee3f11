"""The `codegrep` command: `codegrep localize` (the main job)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from codegrep_model import DEFAULT_MAX_ISSUE_BYTES

app = typer.Typer(
    no_args_is_help=True,
    help="CodeGrep: the files an issue needs, for a coding agent.\n\n"
    "Example: codegrep localize --repo . --issue issue.md",
)


@app.callback()
def _root() -> None:
    """CodeGrep: the files an issue needs, for a coding agent.

    Example: codegrep localize --repo . --issue issue.md
    """


@app.command()
def version() -> None:
    """Print the version.

    Example: codegrep version
    """
    from codegrep import __version__

    typer.echo(__version__)


@app.command()
def localize(
    repo: Annotated[
        str, typer.Option("--repo", help="A local directory (searched as it is), or owner/name.")
    ],
    issue: Annotated[str, typer.Option("--issue", help="Issue text file, or - for stdin.")],
    commit: Annotated[
        str | None, typer.Option(help="Search the repository at this commit, not the work tree.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Also write the JSON here.")
    ] = None,
    rollout: Annotated[
        Path | None, typer.Option(help="Write the full rollout record (JSON) here.")
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(help="OpenAI-compatible endpoint of a served model; default: lexical."),
    ] = None,
    model: Annotated[str, typer.Option(help="Model name at --base-url.")] = "codegrep",
    api_key: Annotated[str | None, typer.Option(envvar="OPENAI_API_KEY")] = None,
    timeout_s: Annotated[float, typer.Option(help="Per model request.")] = 120.0,
    cache: Annotated[
        Path | None,
        typer.Option(help="Clone cache for owner/name (default ~/.cache/codegrep/repos)."),
    ] = None,
    source: Annotated[
        str, typer.Option(help="Clone source template for owner/name.")
    ] = "https://github.com/{repo}.git",
    max_issue_bytes: Annotated[
        int,
        typer.Option(
            min=1, help="Cut a longer issue (UTF-8 bytes) to this before searching; warns."
        ),
    ] = DEFAULT_MAX_ISSUE_BYTES,
) -> None:
    """Find the files ISSUE needs in REPO and print them with a reason each.

    Example:
      codegrep localize --repo . --issue apps/injector/examples/issue.md
      echo "KeyError in Session.get" | codegrep localize --repo ~/src/app --issue - --json
    """
    from codegrep_model import OpenAIPolicy, Policy, RolloutConfig

    from codegrep.errors import InjectorError, IssueInputError
    from codegrep.localize import localize as run_localize

    try:
        text = sys.stdin.read() if issue == "-" else Path(issue).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(str(IssueInputError(f"cannot read --issue {issue}: {exc}"))) from exc
    if not text.strip():
        raise _fail("the issue text is empty")

    async def go() -> object:
        policy: Policy | None = None
        if base_url:
            policy = OpenAIPolicy(base_url, model, api_key=api_key, timeout_s=timeout_s)
        try:
            return await run_localize(
                repo,
                text,
                commit=commit,
                policy=policy,
                config=RolloutConfig(max_issue_bytes=max_issue_bytes),
                cache_dir=cache,
                source=source,
            )
        finally:
            if isinstance(policy, OpenAIPolicy):
                await policy.aclose()

    try:
        result = asyncio.run(go())
    except InjectorError as exc:
        raise _fail(str(exc)) from exc
    from codegrep.localize import Localization

    assert isinstance(result, Localization)
    if result.record.issue_cut_to is not None:
        typer.echo(
            f"codegrep localize: warning: the issue was cut from {result.record.issue_bytes} "
            f"to {result.record.issue_cut_to} bytes (--max-issue-bytes); the rest was not read",
            err=True,
        )
    data = result.to_json()
    for flag, path, body in (
        ("-o", output, json.dumps(data, indent=2)),
        ("--rollout", rollout, result.record.model_dump_json(indent=2)),
    ):
        if path is None:
            continue
        try:
            path.write_text(body + "\n", encoding="utf-8")
        except OSError as exc:
            raise _fail(f"cannot write {flag} {path}: {exc}") from exc
    if as_json:
        typer.echo(json.dumps(data))
    else:
        _print_human(result)
    if result.status == "error":
        raise typer.Exit(1)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"codegrep localize: {message}", err=True)
    return typer.Exit(2)


def _print_human(result: object) -> None:
    from rich.console import Console
    from rich.table import Table

    from codegrep.localize import Localization

    assert isinstance(result, Localization)
    console = Console()
    if result.status == "error":
        console.print(f"[red]error[/]: {result.record.error}")
        return
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold cyan", no_wrap=True)
    scored = bool(result.files) and all(f.score is not None for f in result.files)
    if scored:
        table.add_column(justify="right", style="dim")
    table.add_column()
    for f in result.files:
        if scored:
            table.add_row(f.path, f"{f.score:.2f}", f.reason)
        else:
            table.add_row(f.path, f.reason)
    if result.files:
        console.print(table)
    else:
        console.print("no file found")
    note = " (fallback answer)" if result.status == "fallback" else ""
    console.print(
        f"[dim]{result.policy}: {result.turns} turns, {result.tool_calls} calls, "
        f"{result.latency_s:.2f} s{note}[/]"
    )


def main() -> None:
    app()
