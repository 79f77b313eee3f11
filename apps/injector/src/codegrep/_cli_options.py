"""The served-model options that `codegrep localize` and `codegrep serve` share, declared once.

For: the `--base-url`/`--model`/`--api-key` declarations and the check of `--base-url`, so that
both commands take and check a served model alike. Not for: building the policy (the commands
do) or any other flag.
"""

from __future__ import annotations

from typing import Annotated

import typer
from codegrep_cli import fail

from codegrep.localize_job import base_url_problem

_BaseUrlOption = Annotated[
    str | None,
    typer.Option(help="OpenAI-compatible endpoint of a served model; default: lexical."),
]
_ModelOption = Annotated[str, typer.Option(help="Model name at --base-url.")]
_ApiKeyOption = Annotated[str | None, typer.Option(envvar="OPENAI_API_KEY")]


def _check_base_url(base_url: str | None) -> None:
    """--base-url, when given, is an http(s) URL with a host; else exit 2 saying so."""
    problem = base_url_problem(base_url)
    if problem is not None:
        raise fail(problem)
