"""Run plans for the downstream evaluation: a frozen OpenHands agent with and without injected
files, its patches graded by the SWE-bench harness, the results read by `downstream report`.

For every configuration (a baseline with no injection; a retriever's predictions injected as
they are, or through codegrep-gate's precision gate with a calibration) a plan holds the
runner's inputs: the same instances in the same order with a `candidate_files` column (the
shipped OpenHands template reads it), the gate's decision per instance, the template itself and
one LLM config (same model, temperature 0, same round cap) for all; and the exact commands: the
OpenHands/benchmarks V1 runner, its converter to SWE-bench predictions, the swebench 4.1.0
harness, and `swe-eval downstream report`. Every pin has its reason written next to it.

Not for running anything: no agent, Docker or model is touched here, and nothing is printed
(`plan_cli` prints and writes). Files are written only by `write_plan`, and only the plan's own.

The plan is built in `_plan_selection` (instances and configurations), `_plan_gating` (one
configuration's rows), `_plan_commands` (runs, commands, manifests) and written by
`_plan_writing`; the pins are in `_plan_pins`. This module is their public face, and every
name keeps its import path.
"""

from __future__ import annotations

from swe_eval.downstream._plan_commands import (
    AgentSettings,
    Command,
    Pin,
    Plan,
    PlannedConfig,
    make_plan,
    render_commands,
    report_manifest,
    run_manifest,
    run_names,
    target_files,
    where_it_runs,
)
from swe_eval.downstream._plan_gating import (
    BuiltConfig,
    ConfigStats,
    DatasetRow,
    GateLine,
    GateRef,
    build_config,
)
from swe_eval.downstream._plan_pins import (
    BENCHMARKS_COMMIT,
    BENCHMARKS_PLACEHOLDER,
    PLAN_KIND,
    STOCK_TEMPLATE,
)
from swe_eval.downstream._plan_selection import (
    ConfigSpec,
    Selection,
    baseline_spec,
    load_selection,
    parse_config_option,
)
from swe_eval.downstream._plan_writing import (
    check_output,
    write_plan,
)
from swe_eval.errors import PlanError

__all__ = [
    "BENCHMARKS_COMMIT",
    "BENCHMARKS_PLACEHOLDER",
    "PLAN_KIND",
    "STOCK_TEMPLATE",
    "AgentSettings",
    "BuiltConfig",
    "Command",
    "ConfigSpec",
    "ConfigStats",
    "DatasetRow",
    "GateLine",
    "GateRef",
    "Pin",
    "Plan",
    "PlanError",
    "PlannedConfig",
    "Selection",
    "baseline_spec",
    "build_config",
    "check_output",
    "load_selection",
    "make_plan",
    "parse_config_option",
    "render_commands",
    "report_manifest",
    "run_manifest",
    "run_names",
    "target_files",
    "where_it_runs",
    "write_plan",
]
