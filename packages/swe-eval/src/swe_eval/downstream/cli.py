"""`swe-eval downstream`: the frozen-agent evaluation commands, as a typer sub-app.

Each command lives in its own module (`report_cli`, and `plan_cli` for run plans) and is
registered here; `swe_eval.cli` attaches this sub-app under the name `downstream`. None of
them imports `swe_eval.cli`: what they share with it is in `swe_eval._cli_io`.
"""

from __future__ import annotations

import typer

from swe_eval.downstream import plan_cli, power_cli, report_cli, stamp_cli, template_cli

__all__ = ["downstream_app"]

downstream_app = typer.Typer(
    help="Downstream evaluation: a frozen coding agent with and without injected files "
    "(the CodeGrep paper's Table 3, with significance)."
    "\n\nExit codes: 0 done; 2 bad input.",
    no_args_is_help=True,
    add_completion=False,
)
downstream_app.command("report")(report_cli.report)
downstream_app.command("plan")(plan_cli.plan)
downstream_app.command("power")(power_cli.power)
downstream_app.command("template")(template_cli.template)
downstream_app.command("stamp")(stamp_cli.stamp)
