"""Readers for downstream evaluation: agent outputs, harness reports, instance lists, run lists.

The formats each reader accepts, and what it takes from each, are said where it lives:
`_agent_outputs` (OpenHands V0 and V1 outputs, raw completion logs: rounds, tokens, cost),
`_harness_reports` (swebench run reports, per-instance reports, OpenHands' markdown, the
AutoCodeRover, SWE-agent and moatless reports) and `_run_lists` (instance ids, `--run` options,
run manifests, the plan's manifest); `_reader_values` holds the file readers they share. This
module is their public face, and every name keeps its import path.

A bad row is skipped and reported with file and line; a file that cannot be read at all raises
`DatasetError`. Nothing is printed here.
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
    read_run_read,
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
    "read_run_read",
]
