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
from dataclasses import MISSING, fields
from typing import TYPE_CHECKING, Annotated, Any

import codegrep_cli
import typer
from codegrep_cli import fail, version_option

from codegrep.calibrate_cli import calibrate
from codegrep.localize_options import (
    DEFAULT_MAX_ISSUE_BYTES as DEFAULT_MAX_ISSUE_BYTES,
)
from codegrep.localize_options import (
    DEFAULT_TIMEOUT_S,
    GATE_DEFAULT,
    LocalizeJob,
    cli_options,
)
from codegrep.serve_cli import serve

if TYPE_CHECKING:
    from codegrep_gate import GateConfig, GateDecision

    from codegrep.localize import Localization

# The search and its dependencies are imported when a command runs, not here: `--version` and
# `--help` import typer and this package's command modules only (tests/test_cli.py times it).

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


def localize(**options: Any) -> None:
    """Find the files ISSUE needs in REPO and print them with a reason each.

    Example:
      codegrep localize --repo . --issue apps/injector/examples/issue.md
      echo "KeyError in Session.get" | codegrep localize --repo ~/src/app --issue - --json
      codegrep localize --repo . --issue issue.md --paths --top 10
    """
    from codegrep.errors import InjectorError
    from codegrep.localize_job import run_localize_job

    as_json, paths, inject, top = (options[k] for k in ("as_json", "paths", "inject", "top"))
    if paths and (as_json or inject is not None):
        raise fail(f"--paths and {'--json' if as_json else '--inject'}: choose one output")
    job = LocalizeJob(
        **{
            f.name: options[f.name]
            for f in fields(LocalizeJob)
            if f.name in options and f.name not in ("timeout_s", "gate")
        },
        timeout_s=_timeout(options["timeout"], options["timeout_s"]),
        gate=_gate_config(options["gate"], options["gate_bound"], options["max_files"]),
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


def _signature() -> inspect.Signature:
    """`localize`'s parameters, built from the one declaration of its options
    (`codegrep.localize_options`): the kit's option where the flag convention has one."""
    params = []
    for name, kind, default, flag in cli_options():
        given = dict(flag.options)
        if flag.kit is not None:
            make = getattr(codegrep_cli, flag.kit)
            info = make(flag.help, **given) if flag.help else make(**given)
        else:
            info = typer.Option(*flag.flags, help=flag.help, **given)
        params.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if default is MISSING else default,
                annotation=Annotated[kind, info],
            )
        )
    return inspect.Signature(params, return_annotation=None)


localize.__signature__ = _signature()  # type: ignore[attr-defined]


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
