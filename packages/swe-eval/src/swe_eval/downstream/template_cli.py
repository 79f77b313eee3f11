"""`swe-eval downstream template`: the stock agent's prompt for one run, from the runner's own
template (read from its checkout when the run starts; see `stock`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from codegrep_cli import fail, output_option
from codegrep_records import RecordFileError
from codegrep_records.io import read_text_file, write_atomically

from swe_eval._cli_io import check_output, say
from swe_eval.downstream.stock import StockTemplateError, stock_template, treatment_template

__all__ = ["template"]


def template(
    stock: Annotated[Path, typer.Argument(help="The runner's template (prompts/default.j2).")],
    output: Annotated[Path, output_option("Write the template here.")],
    inject: Annotated[
        bool,
        typer.Option(
            "--inject/--unchanged",
            help="Add the injected section after the issue (a treatment), or copy the "
            "template unchanged (the baseline).",
        ),
    ] = False,
) -> None:
    """The runner's own template, unchanged (baseline) or with the injected section after the
    issue (treatment): the only difference between the two.

    Example: swe-eval downstream template "$BENCHMARKS/benchmarks/swebench/prompts/default.j2"
    --inject -o plans/verified/lexical/prompt.j2
    """

    check_output("-o", output)
    try:
        text = read_text_file(stock, refuse_links=True)
    except RecordFileError as exc:
        raise fail(str(exc)) from exc
    try:
        out = treatment_template(text) if inject else stock_template(text)
    except StockTemplateError as exc:
        raise fail(f"{stock}: {exc}") from exc
    try:  # replaced in one step; a link at -o, or at any name beside it, is never followed
        write_atomically(output, out)
    except OSError as exc:
        raise fail(f"cannot write -o {output}: {exc.strerror or exc}") from exc
    say(f"wrote {output} ({'with' if inject else 'without'} the injected section)")
