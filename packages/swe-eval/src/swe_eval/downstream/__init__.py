"""Downstream evaluation: a frozen coding agent with and without injected files.

The CodeGrep paper's Table 3 (resolve rate, rounds and tokens per resolved instance,
unresolved rounds) from agent outputs (OpenHands V0/V1 `output.jsonl`, raw LLM completions)
and harness reports (swebench 4.x/5.x, per-instance `report.json`, OpenHands' Markdown report,
AutoCodeRover, SWE-agent, moatless resolved-by lists), on a fixed denominator, with what the
paper left out: McNemar's exact test, paired bootstrap intervals, the co-resolved deltas, a
per-instance case view and the precision-benefit table.

Not for running the agent or the harness (that needs Docker; see the `plan` command).
"""

from swe_eval.downstream.analysis import (
    CaseRow,
    ConfigRun,
    ConfigSummary,
    InstanceOutcome,
    PairedComparison,
    PrecisionBenefit,
    RelativeDelta,
    Spread,
    build_config,
    case_rows,
    compare,
    mcnemar_exact,
    paired_bootstrap,
    precision_benefit,
    retrieval_precision,
    summarize_config,
)
from swe_eval.downstream.readers import (
    Manifest,
    classify_error,
    parse_agent_record,
    parse_run_option,
    read_agent_outputs,
    read_harness_report,
    read_instance_ids,
    read_manifest,
)
from swe_eval.downstream.records import (
    Action,
    AgentOutputs,
    AgentRun,
    Failure,
    HarnessReport,
    OutputFormat,
    ReportKind,
    RunSpec,
    TokenBasis,
    TokenCount,
    Verdict,
)
from swe_eval.downstream.render import (
    DownstreamFormat,
    DownstreamReport,
    render_report,
    report_notes,
)

__all__ = [
    "Action",
    "AgentOutputs",
    "AgentRun",
    "CaseRow",
    "ConfigRun",
    "ConfigSummary",
    "DownstreamFormat",
    "DownstreamReport",
    "Failure",
    "HarnessReport",
    "InstanceOutcome",
    "Manifest",
    "OutputFormat",
    "PairedComparison",
    "PrecisionBenefit",
    "RelativeDelta",
    "ReportKind",
    "RunSpec",
    "Spread",
    "TokenBasis",
    "TokenCount",
    "Verdict",
    "build_config",
    "case_rows",
    "classify_error",
    "compare",
    "mcnemar_exact",
    "paired_bootstrap",
    "parse_agent_record",
    "parse_run_option",
    "precision_benefit",
    "read_agent_outputs",
    "read_harness_report",
    "read_instance_ids",
    "read_manifest",
    "render_report",
    "report_notes",
    "retrieval_precision",
    "summarize_config",
]
