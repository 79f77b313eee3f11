"""`swe-eval downstream stamp`: record what a run reads as it starts (commands.sh runs it before
the agent), and refuse a runner checkout that is not at the pinned commits."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from codegrep_cli import fail
from codegrep_records.io import dumps_json, write_atomically

from swe_eval._cli_io import say
from swe_eval.downstream._plan_pins import BENCHMARKS_COMMIT, SDK_COMMIT
from swe_eval.downstream.stamp import READ_FILE, StampError, read_run_inputs

__all__ = ["stamp"]


def stamp(
    run_folder: Annotated[Path, typer.Argument(help="The run's folder (its manifest.json).")],
    benchmarks: Annotated[
        Path, typer.Option("--benchmarks", help="The OpenHands/benchmarks checkout it runs.")
    ],
    allow_other_checkout: Annotated[
        bool,
        typer.Option(
            "--allow-other-checkout",
            help="Record a checkout at another commit instead of refusing it (the report then "
            "refuses to compare the run unless told --allow-manifest-diff).",
        ),
    ] = False,
) -> None:
    """Write RUN_FOLDER/read.json: the runner checkout's commit and its SDK's, the hash of the
    runner's template, and the hashes of the run's inputs, as they are now. Exits 2, writing
    nothing, when the checkout is not at the pinned commits.

    Example: swe-eval downstream stamp plans/verified/lexical --benchmarks "$BENCHMARKS"
    """
    if not (run_folder / "manifest.json").is_file():
        raise fail(f"{run_folder}: no manifest.json (not a run folder of a plan)")
    try:
        read = read_run_inputs(run_folder, benchmarks)
    except StampError as exc:
        raise fail(str(exc)) from exc
    wrong = [
        f"{what} is at {got[:12]}, not the pinned {want[:12]}"
        for what, got, want in (
            ("the runner checkout", read.runner_head, BENCHMARKS_COMMIT),
            ("its agent SDK", read.sdk_head, SDK_COMMIT),
        )
        if got != want
    ]
    if wrong and not allow_other_checkout:
        raise fail(
            f"{benchmarks}: " + "; ".join(wrong) + " (check out the pinned commit and run "
            "`git submodule update --init --recursive`, or --allow-other-checkout to record it)"
        )
    record = read.record(allowed_other_checkout=bool(wrong))
    try:
        write_atomically(run_folder / READ_FILE, dumps_json(record) + "\n")
    except OSError as exc:
        raise fail(f"cannot write {run_folder / READ_FILE}: {exc.strerror or exc}") from exc
    say(f"wrote {run_folder / READ_FILE}" + (f" ({'; '.join(wrong)})" if wrong else ""))
