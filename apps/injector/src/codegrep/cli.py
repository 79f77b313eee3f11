"""The `codegrep` command: `codegrep localize` (the main job).

The toolkit's flag convention: `-o` (checked writable before any work), `--timeout` (seconds),
`--cache DIR` (the clone cache), `--repo` (the repository to act on), `--version`. Exit 0 done;
1 the policy failed (the rollout ran; the JSON says why); 2 bad input, said in one `error:` line
on stderr. Paths, reasons and error text are never read as rich markup.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer
from codegrep_model import DEFAULT_MAX_ISSUE_BYTES
from codegrep_records import why_unwritable

app = typer.Typer(
    no_args_is_help=True,
    help="CodeGrep: the files an issue needs, for a coding agent.\n\n"
    "Example: codegrep localize --repo . --issue issue.md\n\n"
    "Exit codes: 0 done; 1 the policy failed; 2 bad input.",
)

DEFAULT_TIMEOUT_S = 120.0


def _print_version(value: bool) -> None:
    if value:
        from codegrep import __version__

        typer.echo(f"codegrep {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_print_version,
            help="Print 'codegrep <version>' and exit.",
        ),
    ] = False,
) -> None:
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
        str,
        typer.Option(
            "--repo",
            help="The repository to search: a local directory (as it is, or at --commit), or "
            "owner/name (cloned into --cache; needs --commit).",
        ),
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
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout", help="Seconds per model request (default 120).", show_default=False
        ),
    ] = None,
    timeout_s: Annotated[
        float | None, typer.Option("--timeout-s", hidden=True, help="Old spelling of --timeout.")
    ] = None,
    cache: Annotated[
        Path | None,
        typer.Option(
            help="Clone cache (a worktree_sandbox.BareRepoCache folder) for owner/name "
            "(default ~/.cache/codegrep/repos)."
        ),
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

    request_timeout = _timeout(timeout, timeout_s)
    if base_url is not None:
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.netloc:
            raise _fail(
                f"--base-url {base_url}: not an http(s) URL (e.g. http://127.0.0.1:8000/v1)"
            )
    if output is not None and rollout is not None and output.resolve() == rollout.resolve():
        raise _fail(f"-o and --rollout are the same file ({output}); name two files")
    for flag, path in (("-o", output), ("--rollout", rollout)):
        problem = None if path is None else why_unwritable(path)
        if problem is not None:  # said now, not after the search
            raise _fail(f"cannot write {flag} {path}: {problem}")
    try:
        text = sys.stdin.read() if issue == "-" else Path(issue).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(str(IssueInputError(f"cannot read --issue {issue}: {exc}"))) from exc
    if not text.strip():
        raise _fail("the issue text is empty")

    async def go() -> object:
        policy: Policy | None = None
        if base_url:
            policy = OpenAIPolicy(base_url, model, api_key=api_key, timeout_s=request_timeout)
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
            f"warning: the issue was cut from {result.record.issue_bytes} "
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
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body + "\n", encoding="utf-8")
        except OSError as exc:
            raise _fail(f"cannot write {flag} {path}: {exc.strerror or exc}") from exc
    if as_json:
        typer.echo(json.dumps(data))
    elif result.status != "error":
        _print_human(result)
    if result.status == "error":
        raise _fail(f"the search failed: {result.record.error}", code=1)


def _fail(message: str, code: int = 2) -> typer.Exit:
    """Say `error: message` on one line of stderr; the caller raises the exit returned."""
    one_line = " ".join(message.splitlines())  # an endpoint's reply text may span lines
    typer.echo(f"{typer.style('error:', fg='red')} {one_line}", err=True)
    return typer.Exit(code)


def _timeout(timeout: float | None, old_spelling: float | None) -> float:
    """--timeout, or its old spelling --timeout-s; both only when they agree."""
    if timeout is not None and old_spelling is not None and timeout != old_spelling:
        raise _fail(
            f"--timeout {timeout:g} and --timeout-s {old_spelling:g} (its old spelling) "
            "disagree; give --timeout once"
        )
    value = timeout if timeout is not None else old_spelling
    value = DEFAULT_TIMEOUT_S if value is None else value
    if not value > 0:  # also NaN
        raise _fail(f"--timeout must be a positive number of seconds, got {value:g}")
    return value


def _print_human(result: object) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from codegrep.localize import Localization

    assert isinstance(result, Localization)
    console = Console()
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold cyan", no_wrap=True)
    scored = bool(result.files) and all(f.score is not None for f in result.files)
    if scored:
        table.add_column(justify="right", style="dim")
    table.add_column()
    for f in result.files:  # Text: a path like pages/[slug].tsx is not markup
        if scored:
            table.add_row(Text(f.path), f"{f.score:.2f}", Text(f.reason))
        else:
            table.add_row(Text(f.path), Text(f.reason))
    if result.files:
        console.print(table)
    else:
        console.print("no file found")
    note = " (fallback answer)" if result.status == "fallback" else ""
    console.print(
        Text(
            f"{result.policy}: {result.turns} turns, {result.tool_calls} calls, "
            f"{result.latency_s:.2f} s{note}",
            style="dim",
        )
    )


def main() -> None:
    app()
