"""`codegrep localize`'s options are declared once (`codegrep.localize_options`): the command
line, the job and the server's request all read that declaration."""

from __future__ import annotations

from dataclasses import fields

import codegrep_cli
import typer.main
from codegrep.cli import app
from codegrep.localize_options import CLI_ONLY, Flag, LocalizeJob, Served, cli_options
from codegrep.service import LocalizeRequest


def _localize() -> typer.main.click.Command:
    group = typer.main.get_command(app)
    return group.commands["localize"]  # type: ignore[attr-defined, no-any-return]


def test_every_job_field_is_an_option_and_every_option_is_declared() -> None:
    flagged = [f.name for f in fields(LocalizeJob) if "flag" in f.metadata]
    assert [f.name for f in fields(LocalizeJob) if f.name not in flagged] == ["progress"]
    params = [p.name for p in _localize().params]
    assert params == [name for name, _, _, _ in cli_options()]
    assert len(params) == len(flagged) + len(CLI_ONLY)


def test_a_kit_option_is_the_command_line_kits() -> None:
    kits = [f.metadata["flag"].kit for f in fields(LocalizeJob) if "flag" in f.metadata]
    for kit in filter(None, kits):
        assert callable(getattr(codegrep_cli, kit)), kit
    assert all(isinstance(f.metadata.get("flag", Flag()), Flag) for f in fields(LocalizeJob))


def test_the_server_request_is_the_served_options() -> None:
    served = {f.name: f.metadata["served"] for f in fields(LocalizeJob) if "served" in f.metadata}
    assert set(LocalizeRequest.model_fields) == set(served)
    for name, field in LocalizeRequest.model_fields.items():
        assert isinstance(served[name], Served)
        assert field.description == served[name].description, name
