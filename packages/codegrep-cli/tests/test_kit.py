"""The kit's three promises: `--version` prints `<prog> <version>`, `fail` says one line and
exits with its code, the convention's options carry the convention's flag names."""

from __future__ import annotations

from typing import Annotated

import codegrep_cli
import typer
from codegrep_cli import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    dry_run_option,
    fail,
    jobs_option,
    limit_option,
    output_option,
    version_option,
)
from typer.testing import CliRunner

runner = CliRunner()


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root(version: Annotated[bool, version_option("kit", "codegrep_cli")] = False) -> None:
        """A tool."""

    @app.command()
    def run(
        output: Annotated[str, output_option("Where.")] = "-",
        jobs: Annotated[int, jobs_option("How many.")] = 1,
        limit: Annotated[int | None, limit_option("At most.")] = None,
        broken: bool = False,
    ) -> None:
        if broken:
            raise fail("it broke\nacross lines", code=EXIT_FAILED)
        if output == "":
            raise fail("-o: give a file")
        typer.echo(f"{output} {jobs} {limit}")

    return app


def test_version_prints_prog_and_the_installed_version() -> None:
    result = runner.invoke(_app(), ["--version"])
    assert result.exit_code == 0
    assert result.output == f"kit {codegrep_cli.__version__}\n"
    assert codegrep_cli.__version__ not in ("", "0+unknown")


def test_fail_says_one_line_and_exits_with_its_code() -> None:
    result = runner.invoke(_app(), ["run", "--broken"])
    assert result.exit_code == EXIT_FAILED == 1
    assert result.stderr == "error: it broke across lines\n"
    result = runner.invoke(_app(), ["run", "-o", ""])
    assert result.exit_code == EXIT_BAD_INPUT == 2
    assert result.stderr == "error: -o: give a file\n"


def test_the_convention_options_take_their_names_and_bounds() -> None:
    result = runner.invoke(_app(), ["run", "--output", "x", "-j", "3", "--limit", "0"])
    assert result.exit_code == 0, result.output
    assert result.output == "x 3 0\n"
    for bad in (["-j", "0"], ["--limit", "-1"]):
        assert runner.invoke(_app(), ["run", *bad]).exit_code == EXIT_BAD_INPUT


def test_dry_run_takes_no_dry_run_only_when_negatable() -> None:
    app = typer.Typer()

    @app.command("plain")
    def plain(dry_run: Annotated[bool, dry_run_option("Run nothing.")] = False) -> None:
        typer.echo(f"plain {dry_run}")

    @app.command("negatable")
    def negatable(
        dry_run: Annotated[bool, dry_run_option("Run nothing.", negatable=True)] = False,
    ) -> None:
        typer.echo(f"negatable {dry_run}")

    assert runner.invoke(app, ["plain", "--dry-run"]).output == "plain True\n"
    assert runner.invoke(app, ["plain", "--no-dry-run"]).exit_code == EXIT_BAD_INPUT
    result = runner.invoke(app, ["negatable", "--dry-run", "--no-dry-run"])
    assert result.output == "negatable False\n"
