"""The `codegrep` command: `codegrep localize` (the main job).

The toolkit's flag convention: `-o` (checked writable before any work), `--timeout` (seconds),
`--cache DIR` (the clone cache), `--repo` (the repository to act on), `--version`. Exit 0 done;
1 the policy failed (the rollout ran; the JSON says why); 2 bad input, said in one `error:` line
on stderr. Paths, reasons and error text are never read as rich markup.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from codegrep_cli import fail, grep_engine_option, output_option, timeout_option, version_option
from codegrep_model import DEFAULT_MAX_ISSUE_BYTES

from codegrep._cli_options import _ApiKeyOption, _BaseUrlOption, _ModelOption, _PolicyOption
from codegrep.calibrate_cli import calibrate
from codegrep.errors import InjectorError
from codegrep.localize_job import DEFAULT_TIMEOUT_S, LocalizeJob, run_localize_job
from codegrep.serve_cli import serve

if TYPE_CHECKING:
    from codegrep_gate import GateConfig, GateDecision

app = typer.Typer(
    no_args_is_help=True,
    help="CodeGrep: the files an issue needs, for a coding agent.\n\n"
    "Example: codegrep localize --repo . --issue issue.md\n\n"
    "Exit codes: 0 done; 1 the policy failed; 2 bad input.",
)

GATE_DEFAULT = 0.45  # codegrep_gate.GateConfig's default: the paper's neutral precision
_GATE_FLAG = "default"  # what `--gate` with no value stands for


@app.callback()
def _root(version: Annotated[bool, version_option("codegrep", "codegrep")] = False) -> None:
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
    output: Annotated[Path | None, output_option("Also write the JSON here.")] = None,
    rollout: Annotated[
        Path | None, typer.Option(help="Write the full rollout record (JSON) here.")
    ] = None,
    policy: _PolicyOption = None,
    base_url: _BaseUrlOption = None,
    model: _ModelOption = None,
    api_key: _ApiKeyOption = None,
    timeout: Annotated[
        float | None,
        timeout_option("Seconds per model request (default 120).", show_default=False),
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
    gate: Annotated[
        str | None,
        typer.Option(
            "--gate",
            metavar="[THRESHOLD]",
            help="Keep only files whose calibrated precision (95% lower bound) is at least "
            f"THRESHOLD (default {GATE_DEFAULT}: the paper's neutral point); nothing at all "
            "when none is.",
            show_default=False,
        ),
    ] = None,
    calibration: Annotated[
        Path | None,
        typer.Option(
            help="The calibration to gate with (default: the one shipped for the lexical "
            "policy; a served model needs its own, from `codegrep calibrate`)."
        ),
    ] = None,
    gate_bound: Annotated[
        str,
        typer.Option(
            "--gate-bound", help="Compare the interval's `lower` bound or its `point` estimate."
        ),
    ] = "lower",
    inject: Annotated[
        str | None,
        typer.Option(
            "--inject",
            help="Print what to inject into a coding agent's prompt, in this form: "
            "openhands, markdown, agent_context or json (the gate's reasons go to stderr).",
        ),
    ] = None,
    max_files: Annotated[
        int | None, typer.Option(min=0, help="Inject at most this many files.")
    ] = None,
    grep_engine: Annotated[str | None, grep_engine_option()] = None,
) -> None:
    """Find the files ISSUE needs in REPO and print them with a reason each.

    Example:
      codegrep localize --repo . --issue apps/injector/examples/issue.md
      echo "KeyError in Session.get" | codegrep localize --repo ~/src/app --issue - --json
    """
    job = LocalizeJob(
        repo=repo,
        issue=issue,
        commit=commit,
        output=output,
        rollout=rollout,
        policy=policy,
        base_url=base_url,
        model=model,
        api_key=api_key,
        timeout_s=_timeout(timeout, timeout_s),
        cache=cache,
        source=source,
        max_issue_bytes=max_issue_bytes,
        gate=_gate_config(gate, gate_bound, max_files),
        calibration=calibration,
        inject=inject,
        max_files=max_files,
        grep_engine=grep_engine,
    )
    try:
        outcome = run_localize_job(job)
    except InjectorError as exc:
        raise fail(str(exc)) from exc
    result, gated, data = outcome.result, outcome.gated, outcome.response
    if result.record.issue_cut_to is not None:
        typer.echo(
            f"warning: the issue was cut from {result.record.issue_bytes} "
            f"to {result.record.issue_cut_to} bytes (--max-issue-bytes); the rest was not read",
            err=True,
        )
    if as_json:
        typer.echo(json.dumps(data))
    elif inject is not None:
        # stdout is only what to inject (nothing when nothing passed); the why goes to stderr.
        if gated.decision is not None:
            typer.echo(gated.decision.summary, err=True)
        if gated.injection:  # as rendered: the text styles end with a newline, json does not
            typer.echo(gated.injection, nl=not gated.injection.endswith("\n"))
    elif result.status != "error":
        _print_human(result, gated.decision)
    if result.status == "error":
        raise fail(f"the search failed: {result.record.error}", code=1)


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


def _gate_config(gate: str | None, bound: str, max_files: int | None) -> GateConfig | None:
    """`--gate [THRESHOLD]` read: None (not gated), or the gate's settings."""
    if gate is None:
        return None
    from codegrep_gate import GateConfig

    if bound not in ("lower", "point"):
        raise fail(f"--gate-bound {bound}: lower or point")
    try:
        threshold = GATE_DEFAULT if gate == _GATE_FLAG else float(gate)
    except ValueError:
        raise fail(f"--gate {gate}: a threshold between 0 and 1, like 0.45") from None
    if not 0.0 <= threshold <= 1.0:
        raise fail(f"--gate {gate}: a threshold between 0 and 1, like 0.45")
    return GateConfig(threshold=threshold, bound=bound, max_files=max_files)


def with_optional_values(argv: list[str]) -> list[str]:
    """`localize --gate` takes an optional value: `--gate` alone (last, or before another
    option) means the default threshold. Click options cannot say that, so the arguments are
    read first.

    Only `localize`'s arguments are rewritten (`serve --gate` is a plain on/off flag). A word
    after `--gate` that is not an option is its value, even when it is not a number, so that
    `--gate abc` is reported as a bad threshold (localize takes no positional arguments).
    """
    command = next((i for i, arg in enumerate(argv) if not arg.startswith("-")), None)
    if command is None or argv[command] != "localize":
        return list(argv)
    out = list(argv[: command + 1])
    rest = argv[command + 1 :]
    for i, arg in enumerate(rest):
        if arg == "--":  # what follows is not an option
            out += rest[i:]
            break
        out.append(arg)
        if arg == "--gate":
            after = rest[i + 1] if i + 1 < len(rest) else None
            if after is None or (after.startswith("-") and not _is_number(after)):
                out.append(_GATE_FLAG)
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _print_human(result: object, decision: GateDecision | None = None) -> None:
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
    by_path = {d.path: d for d in decision.files} if decision is not None else {}
    for f in result.files:  # Text: a path like pages/[slug].tsx is not markup
        reason = f.reason
        d = by_path.get(f.path)
        if d is not None:
            verdict = "inject" if d.kept else "drop"
            reason = f"{verdict}: precision {d.precision.fmt()} ({d.bin}); {f.reason}"
        if scored:
            table.add_row(Text(f.path), f"{f.score:.2f}", Text(reason))
        else:
            table.add_row(Text(f.path), Text(reason))
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
    if decision is not None:
        console.print(Text(decision.summary))


# The other commands live in their own modules; they are attached here, in the order `--help`
# lists them, and import nothing from this module.
app.command()(calibrate)
app.command()(serve)


def main() -> None:
    app(args=with_optional_values(sys.argv[1:]))
