"""Readers for downstream evaluation: agent outputs, harness reports, instance lists, run lists.

Agent outputs (JSON Lines, gzipped or not; the format is found per record):
- OpenHands V0 `output.jsonl`: `history` of action/observation dicts, `metrics`,
  `test_result.git_patch` (and `test_result.report` once `eval_infer` has run), `error`.
- OpenHands V1 (OpenHands/benchmarks `EvalOutput`): `history` of openhands-sdk events with a
  `kind`, the same `metrics` shape, `attempt` (1-indexed); and the benchmarks' standardized
  `output.jsonl` (`status`, `resolved`, `cost` with input/output tokens; no history).
- Raw completions (one line per attempt): `messages` (the last LLM request, so the whole
  conversation), `final_response` (the reply to it, with `usage`), `resolved`, `attempt`,
  `is_last_attempt`. Only the last attempt of an instance is scored; earlier ones are counted.

What each format gives for rounds and tokens:
- V0/V1: rounds = LLM calls = `metrics.response_latencies` (one per completion request, a
  request whose reply was rejected included); without them, the distinct model responses among
  the events. Tokens = `metrics.accumulated_token_usage` prompt + completion, summed over every
  call (`TokenBasis.SUM_OF_CALLS`). Cost = `metrics.accumulated_cost`, when anything was costed.
- Raw completions: rounds = the assistant messages of the last request + the final response
  (= `n_llm_calls`). Only the final call's usage is kept, so tokens = that request's prompt
  tokens + its completion tokens: the context at the end of the run
  (`TokenBasis.FINAL_CONTEXT`), not a sum over calls. The record's `cost` is not read: in
  OpenHands' completion logs it is the last call's cost only.

Harness reports (found by their keys): swebench 4.x/5.x run reports (`resolved_ids`,
`unresolved_ids`, `error_ids`, `empty_patch_ids`, `incomplete_ids`, 5.x `infra_failure_ids`,
`ambiguous_failure_ids`; OpenHands V1's derived `output.report.json` too), per-instance
`report.json` (a file, or a folder searched for them), OpenHands V0 `output.swebench_eval.md`,
AutoCodeRover's bucket report, SWE-agent's final report, and moatless resolved-by lists (JSON
Lines; pick the system with `system=`).

A bad row is skipped and reported with file and line; a file that cannot be read at all raises
`DatasetError`. Nothing is printed here.

The readers live in `_agent_outputs`, `_harness_reports` and `_run_lists`; this module is
their public face, and every name keeps its import path.
"""

from __future__ import annotations

from swe_eval.downstream._agent_outputs import (
    classify_error,
    parse_agent_record,
    read_agent_outputs,
)
from swe_eval.downstream._harness_reports import read_harness_report
from swe_eval.downstream._run_lists import (
    Manifest,
    parse_run_option,
    read_instance_ids,
    read_manifest,
    read_run_manifest,
)

__all__ = [
    "Manifest",
    "classify_error",
    "parse_agent_record",
    "parse_run_option",
    "read_agent_outputs",
    "read_harness_report",
    "read_instance_ids",
    "read_manifest",
    "read_run_manifest",
]
