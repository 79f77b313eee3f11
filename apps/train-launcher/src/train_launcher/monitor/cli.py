"""`codegrep-train monitor RUN_DIR`: the run monitor's command (`register` adds it to the app).

Exit 0: no alarm; 1: an alarm fired; 2: bad input (no run folder, no `logging.jsonl`, an
unreadable file, a bad config or option, an output folder that cannot be written), said in one
`error:` line on stderr. Paths and log text are never read as rich markup.
"""

from __future__ import annotations

import reprlib
from pathlib import Path
from typing import Annotated

import typer
from codegrep_cli import fail, output_option
from rich.console import Console
from rich.text import Text

from train_launcher.monitor import (
    METRICS_FILE,
    BadLine,
    MissingPlotExtraError,
    MonitorInputError,
    MonitorReport,
    MonitorThresholds,
    RunData,
    check,
    follow_run,
    plot,
    read_run,
    require_plot_extra,
)

__all__ = ["register"]

DEFAULT_OUTPUT = "monitor"  # under RUN_DIR
REPORT_FILE = "report.json"
VERDICT_FILE = "verdict.txt"
_MAX_BAD_LINES_SHOWN = 10


def register(app: typer.Typer) -> None:
    """Add the `monitor` command to the launcher's Typer app."""
    app.command(
        "monitor",
        short_help="Watch a GRPO run's logs for KL drift, length blow-up, falling calls per "
        "turn...; plots, a verdict, exit 1 on an alarm.",
    )(monitor)


def monitor(
    run_dir: Annotated[
        Path,
        typer.Argument(
            help="The GRPO run's output folder: ms-swift's --output_dir (with logging.jsonl, or "
            "its v*-* launch folders).",
            show_default=False,
        ),
    ],
    follow: Annotated[
        bool,
        typer.Option(
            "--follow", help="Keep reading as the run grows; stop when it ends, or on Ctrl-C."
        ),
    ] = False,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config", help="The launcher's YAML config: thresholds from its `monitor:` section."
        ),
    ] = None,
    output: Annotated[
        Path | None,
        output_option(
            "Folder for monitor.png, report.json and verdict.txt (default RUN_DIR/monitor)."
        ),
    ] = None,
    no_plot: Annotated[bool, typer.Option("--no-plot", help="Write no PNG.")] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Also write one self-contained HTML report here: curves, alarms and a "
            "rollout browser (opens from disk, makes no request).",
        ),
    ] = None,
    compare: Annotated[
        Path | None,
        typer.Option(
            "--compare",
            help="With --html: another run folder, drawn beside this one (its curves dashed on "
            "the same axes, both runs' group rewards per instance side by side).",
        ),
    ] = None,
    rollout_log: Annotated[
        Path | None,
        typer.Option(
            "--rollout-log",
            help="The plugin's per-rollout log, when $CODEGREP_ROLLOUT_LOG put it outside "
            "RUN_DIR (default: RUN_DIR's codegrep_rollouts.jsonl files).",
        ),
    ] = None,
    interval: Annotated[
        float, typer.Option("--interval", help="Seconds between reads with --follow.")
    ] = 5.0,
    max_polls: Annotated[
        int | None, typer.Option("--max-polls", hidden=True, min=1, help="Tests: stop after N.")
    ] = None,
) -> None:
    """Watch a GRPO run for the failures of the CodeGrep paper's v1 and v2 runs: KL drift,
    completion length and clipping growth, a reward plateau or collapse, calls per turn
    falling toward 0, answer-parse failures, groups with all rewards equal; and, from the first
    step, a NaN or infinite loss or gradient norm and hard limits on KL, clipping and context
    overflow. Prints a verdict, writes PNG plots and a JSON report; exit 0 no alarm, 1 an alarm
    fired, 2 bad input.

    Example:
      codegrep-train monitor runs/paper-8xb200/grpo --config configs/paper-8xb200.yaml
      codegrep-train monitor runs/paper-8xb200/grpo --follow -o /tmp/monitor
    """
    out = Console(highlight=False, soft_wrap=True)  # paths and verdicts stay one line each
    if not interval > 0:  # also NaN
        raise fail(f"--interval must be a positive number of seconds, got {interval:g}")
    if not run_dir.is_dir():
        what = "does not exist" if not run_dir.exists() else "is not a folder"
        raise fail(f"the run folder {run_dir} {what}")
    thresholds = _thresholds(config)
    out_dir = output if output is not None else run_dir / DEFAULT_OUTPUT
    want_plot = not no_plot
    if want_plot:
        try:
            require_plot_extra()
        except MissingPlotExtraError as exc:
            if output is not None:
                raise fail(f"cannot write the plots to -o {output}: {exc}") from exc
            _warn(f"no plots: {exc}")
            want_plot = False
    from codegrep_records.io import why_unwritable

    problem = why_unwritable(out_dir, folder=True)
    if problem is not None:  # said now, not after the reading
        flag = "-o" if output is not None else "the default output folder"
        raise fail(f"cannot write {flag} {out_dir}: {problem}")
    html_problem = why_unwritable(html) if html is not None else None
    if html_problem is not None:
        raise fail(f"cannot write --html {html}: {html_problem}")
    if compare is not None and html is None:
        raise fail("--compare draws a second run in the HTML report: give --html too")
    if compare is not None and not compare.is_dir():
        raise fail(f"--compare {compare}: not a run folder")

    try:
        if follow:
            run, report = _follow(out, run_dir, thresholds, interval, max_polls, rollout_log)
        else:
            run = read_run(run_dir, rollout_log=rollout_log)
            report = check(run, thresholds)
            _print_bad_lines(report.bad_lines)
    except MonitorInputError as exc:
        raise fail(str(exc)) from exc
    if not run.metric_files:
        raise fail(f"no {METRICS_FILE} in {run_dir} or its v*-* subfolders")

    # the default folder sits in the run folder, which the trainer and what it runs also
    # write: a link planted there in place of it is refused; -o is the user's own choice
    written = _write(out_dir, run, report, want_plot, within=run_dir if output is None else None)
    if html is not None:
        other = None
        if compare is not None:
            try:
                other = read_run(compare)
            except MonitorInputError as exc:
                raise fail(f"--compare {compare}: {exc}") from exc
        written.append(_write_html(html, run, report, other))
    _print_report(out, report, written)
    raise typer.Exit(report.exit_code)


def _thresholds(config: Path | None) -> MonitorThresholds:
    """The thresholds of the config's `monitor:` section (defaults without --config)."""
    import yaml  # type: ignore[import-untyped, unused-ignore]
    from codegrep_records import RecordError
    from codegrep_records.io import read_text_file
    from pydantic import ValidationError

    from train_launcher._yaml import MAX_YAML_BYTES, load_yaml

    if config is None:
        return MonitorThresholds()
    try:
        data = load_yaml(read_text_file(config, max_bytes=MAX_YAML_BYTES))[0]
    except RecordError as exc:  # missing, a folder, not UTF-8, too large; names the file
        raise fail(f"cannot read --config {exc}") from None
    except yaml.YAMLError as exc:  # not YAML, or past a bound (aliases, depth, expanded size)
        mark = getattr(exc, "problem_mark", None)
        where = f"{config}:{mark.line + 1}" if mark is not None else str(config)
        raise fail(f"{where}: not YAML: {getattr(exc, 'problem', None) or exc}") from None
    if data is not None and not isinstance(data, dict):
        raise fail(f"{config}: the config must be a mapping of sections")
    section = (data or {}).get("monitor")
    if section is not None and not isinstance(section, dict):
        raise fail(f"{config}: monitor: must be a mapping of thresholds, got {_short(section)}")
    try:
        return MonitorThresholds.from_config(data)
    except ValidationError as exc:
        problems = [
            f"monitor.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            + (f" (got {_short(e['input'])})" if e["type"] != "missing" and "input" in e else "")
            for e in exc.errors()
        ]
        raise fail(f"{config}: " + "; ".join(problems)) from exc


def _follow(
    out: Console,
    run_dir: Path,
    thresholds: MonitorThresholds,
    interval: float,
    max_polls: int | None,
    rollout_log: Path | None,
) -> tuple[RunData, MonitorReport]:
    out.print(Text(f"following {run_dir} every {interval:g} s (Ctrl-C to stop)", style="dim"))
    run: RunData | None = None
    report: MonitorReport | None = None
    waiting_said = False
    shown: set[BadLine] = set()
    updates = follow_run(
        run_dir, thresholds, interval_s=interval, max_polls=max_polls, rollout_log=rollout_log
    )
    try:
        for update in updates:
            run, report = update.run, update.report
            if not run.metric_files and not waiting_said:
                out.print(Text(f"waiting for {METRICS_FILE} in {run_dir}", style="dim"))
                waiting_said = True
            _print_bad_lines(list(update.new_bad_lines))
            shown.update(update.new_bad_lines)
            for alarm in update.new_alarms:
                out.print(Text(f"ALARM step {alarm.step}: {alarm.message}", style="bold red"))
    except KeyboardInterrupt:
        out.print(Text("stopped (Ctrl-C)", style="dim"))
    finally:
        updates.close()
    if run is None or report is None:  # Ctrl-C before the first read: read once now
        run = read_run(run_dir, rollout_log=rollout_log)
        report = check(run, thresholds)
    _print_bad_lines([b for b in report.bad_lines if b not in shown])
    return run, report


def _write(
    out_dir: Path, run: RunData, report: MonitorReport, want_plot: bool, *, within: Path | None
) -> list[Path]:
    """Each output replaced in one step, never through a link planted at its name."""
    from codegrep_records.io import dumps_json, write_atomically

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        write_atomically(
            out_dir / REPORT_FILE,
            dumps_json(report.model_dump(mode="json"), indent=2) + "\n",
            within=within,
        )
        write_atomically(out_dir / VERDICT_FILE, report.verdict + "\n", within=within)
        written = [out_dir / VERDICT_FILE, out_dir / REPORT_FILE]
        if want_plot:
            written.insert(0, plot(run, report, out_dir, within=within))
    except OSError as exc:
        raise fail(f"cannot write to {out_dir}: {exc.strerror or exc}") from exc
    return written


def _write_html(
    path: Path, run: RunData, report: MonitorReport, other: RunData | None = None
) -> Path:
    """The HTML report (codegrep-report draws it; the monitor gives its series and alarms),
    with `other` drawn beside it when given."""
    from codegrep_report import CodegrepReportError, ComparedRun, write_training_report

    compared = (
        ComparedRun(
            title=f"GRPO run {other.run_dir}",
            curves=other.metrics,
            record_files=other.record_files,
        )
        if other is not None
        else None
    )
    try:
        return write_training_report(
            path,
            curves=run.metrics,
            alarms=report.alarms,
            record_files=run.record_files,
            verdict=report.verdict,
            title=f"GRPO run {run.run_dir}",
            compare=compared,
        ).path
    except CodegrepReportError as exc:
        raise fail(f"cannot write --html {path}: {exc}") from exc


def _print_report(out: Console, report: MonitorReport, written: list[Path]) -> None:
    first, *rest = report.verdict.splitlines()
    out.print(Text(first, style="bold green" if report.ok else "bold red"))
    for line in rest:
        out.print(Text(line))
    for note in report.notes:
        out.print(Text(f"note: {note}", style="dim"))
    for path in written:
        out.print(Text(f"wrote {path}", style="dim"))


def _print_bad_lines(bad: list[BadLine]) -> None:
    if not bad:
        return
    _warn(f"{len(bad)} bad line(s) skipped:")
    for line in bad[:_MAX_BAD_LINES_SHOWN]:
        typer.echo(f"  {line}", err=True)
    if len(bad) > _MAX_BAD_LINES_SHOWN:
        typer.echo(f"  ... {len(bad) - _MAX_BAD_LINES_SHOWN} more in {REPORT_FILE}", err=True)


def _warn(message: str) -> None:
    typer.echo(f"{typer.style('warning:', fg='yellow')} {message}", err=True)


def _short(value: object) -> str:
    """A repr that looks at a bounded part of `value`: an error message never walks a whole
    structure a config built (however many values it holds)."""
    return _REPR.repr(value)


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 80, 80
