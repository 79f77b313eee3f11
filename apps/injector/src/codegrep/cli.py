"""The `codegrep` command: `codegrep localize` (the main job).

The toolkit's flag convention: `-o` (checked writable before any work), `--timeout` (seconds),
`--cache DIR` (the clone cache), `--repo` (the repository to act on), `--version`. Exit 0 done;
1 the policy failed (the rollout ran; the JSON says why); 2 bad input, said in one `error:` line
on stderr. Paths, reasons and error text are never read as rich markup.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from codegrep_cli import fail, grep_engine_option, output_option, timeout_option, version_option

from codegrep._cli_options import _ApiKeyOption, _BaseUrlOption, _ModelOption, _PolicyOption
from codegrep.calibrate_cli import calibrate
from codegrep.serve_cli import serve

if TYPE_CHECKING:
    from codegrep_gate import GateConfig, GateDecision

    from codegrep.localize import Localization

# The search and its dependencies are imported when a command runs, not here: `--version` and
# `--help` import typer and this package's command modules only (tests/test_cli.py times it).
DEFAULT_TIMEOUT_S = 120.0  # codegrep.localize_job.DEFAULT_TIMEOUT_S (a test holds them equal)
DEFAULT_MAX_ISSUE_BYTES = 262_144  # codegrep_model.DEFAULT_MAX_ISSUE_BYTES (likewise)

_RICH = sys.stdout.isatty()  # help through rich on a terminal, click's plain text piped

app = typer.Typer(
    no_args_is_help=True,
    help="CodeGrep: the files an issue needs, for a coding agent.\n\n"
    "Example: codegrep localize --repo . --issue issue.md\n\n"
    "Exit codes: 0 done; 1 the policy failed; 2 bad input.",
    # Piped (not a terminal), help is click's plain text: rich's panels cut long words with
    # "…" at 80 columns, which a reader of `codegrep localize --help | less` cannot undo.
    rich_markup_mode="rich" if _RICH else None,
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


def _help(doc: str | None) -> str | None:
    """A command's help as given; piped (click's plain formatter, which rewraps every paragraph),
    each paragraph with indented lines (the examples) marked with click's `\\b` so that its
    lines stay as written, one command a line."""
    if doc is None or _RICH:
        return doc
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    kept = [
        "\b\n" + p if any(line.startswith(" ") for line in p.splitlines()) else p
        for p in paragraphs
    ]
    return "\n\n".join(kept)


def _whole_summary(doc: str | None) -> str:
    """A command's first paragraph, whole: click cuts a summary it makes itself to the width of
    the command list ("... with a..."), never one given as `short_help`."""
    return " ".join((doc or "").strip().split("\n\n", 1)[0].split())


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
    paths: Annotated[
        bool,
        typer.Option(
            "--paths",
            help="Print one path a line and nothing else: the files to inject (the gate's, "
            "when gated), or the --top N best.",
        ),
    ] = False,
    top: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Also give the policy's N best files with their scores, the answer's first "
            "and beyond it (`top` in --json; a table, or N paths with --paths).",
        ),
    ] = None,
) -> None:
    """Find the files ISSUE needs in REPO and print them with a reason each.

    Example:
      codegrep localize --repo . --issue apps/injector/examples/issue.md
      echo "KeyError in Session.get" | codegrep localize --repo ~/src/app --issue - --json
      codegrep localize --repo . --issue issue.md --paths --top 10
    """
    from codegrep.errors import InjectorError
    from codegrep.localize_job import LocalizeJob, run_localize_job

    if paths and (as_json or inject is not None):
        raise fail(f"--paths and {'--json' if as_json else '--inject'}: choose one output")
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
        top=top,
        progress=lambda line: typer.echo(line, err=True),
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
    elif paths:
        if result.status != "error":
            chosen = [t["path"] for t in data["top"]] if top is not None else gated.injected
            for path in chosen:
                typer.echo(_one_line_path(path))
    elif inject is not None:
        # stdout is only what to inject (nothing when nothing passed); the why goes to stderr.
        typer.echo(gated.decision.summary if gated.decision is not None else _NOT_GATED, err=True)
        if gated.injection:  # as rendered: the text styles end with a newline, json does not
            typer.echo(gated.injection, nl=not gated.injection.endswith("\n"))
    elif result.status != "error":
        _print_human(result, gated.decision, data.get("top"), data["clone_s"])
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


def _one_line_path(path: str) -> str:
    """A path as one line of output: itself, or, when it holds a control character (git allows
    a newline or an escape sequence in a file name, and a repository is untrusted), its JSON
    string in double quotes, as git quotes such names, so each line stays one path and nothing
    reaches the terminal as a command."""
    if any(ord(c) < 32 or ord(c) == 127 for c in path) or path.startswith('"'):
        return json.dumps(path)
    return path


def _one_line(text: str) -> str:
    """Text on one line: whitespace runs as one space, other control characters escaped."""
    text = " ".join(text.split())
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


_NOT_GATED = (
    "not gated: every file found is listed (--gate injects only files of measured precision; "
    "`codegrep serve` gates by default)"
)


def _print_human(
    result: Localization,
    decision: GateDecision | None = None,
    top: list[dict[str, object]] | None = None,
    clone_s: float = 0.0,
) -> None:
    """The answer for a person: a table on a terminal; piped, one line a file (path, score and
    reason separated by tabs, never wrapped), so `cut -f1` or `awk '{print $1}'` reads paths
    first; then the summary lines."""
    by_path = {d.path: d for d in decision.files} if decision is not None else {}
    rows: list[tuple[str, str | None, str]] = []
    for f in result.files:
        reason = f.reason
        d = by_path.get(f.path)
        if d is not None:
            verdict = "inject" if d.kept else "drop"
            reason = f"{verdict}: precision {d.precision.fmt()} ({d.bin}); {f.reason}"
        rows.append((f.path, None if f.score is None else f"{f.score:.2f}", reason))
    note = " (fallback answer)" if result.status == "fallback" else ""
    cloned = f", cloned in {clone_s:.1f} s" if clone_s else ""
    footer = [
        f"{result.policy}: {result.turns} turns, {result.tool_calls} calls, "
        f"{result.latency_s:.2f} s{note}{cloned}",
        decision.summary if decision is not None else _NOT_GATED,
    ]
    answered = {f.path for f in result.files}
    more = [
        (str(t["path"]), "" if t["score"] is None else f"{float(str(t['score'])):.2f}")
        for t in top or []
        if t["path"] not in answered
    ]
    if not sys.stdout.isatty():
        scored = all(score is not None for _, score, _ in rows)
        for path, score, reason in rows:
            cells = [_one_line_path(path)]
            cells += [score or "", _one_line(reason)] if scored else [_one_line(reason)]
            typer.echo("\t".join(cells))
        if not rows:
            typer.echo("no file found")
        for path, score in more:
            shown = _one_line_path(path)
            typer.echo(f"{shown}\t{score}\tnot in the answer: one of the --top {len(top or [])}")
        for text in footer:
            typer.echo(text)
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold cyan", no_wrap=True)
    scored = bool(rows) and all(score is not None for _, score, _ in rows)
    if scored:
        table.add_column(justify="right", style="dim")
    table.add_column()
    for path, score, reason in rows:  # Text: a path like pages/[slug].tsx is not markup
        cell = Text(_one_line_path(path))
        if scored:
            table.add_row(cell, score, Text(_one_line(reason)))
        else:
            table.add_row(cell, Text(_one_line(reason)))
    if rows:
        console.print(table)
    else:
        console.print("no file found")
    if more:
        extra = Table(show_header=False, box=None, pad_edge=False, title_justify="left")
        extra.add_column(style="cyan", no_wrap=True)
        extra.add_column(justify="right", style="dim")
        for path, score in more:
            extra.add_row(Text(_one_line_path(path)), score)
        console.print(Text(f"beyond the answer (--top {len(top or [])}):", style="dim"))
        console.print(extra)
    console.print(Text(footer[0], style="dim"))
    console.print(Text(footer[1]))


# The commands are attached here, in the order `--help` lists them (`version` first); the others
# live in their own modules and import nothing from this one.
for _command in (localize, calibrate, serve):
    app.command(short_help=_whole_summary(_command.__doc__), help=_help(_command.__doc__))(_command)


def main() -> None:
    app(args=with_optional_values(sys.argv[1:]))
