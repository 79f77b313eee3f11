"""codegrep-report: static HTML reports of CodeGrep runs, one self-contained file each.

- `write_training_report`: a GRPO run's curves, alarms and rollout browser (step → group →
  rollout, each turn's tool calls and results), from the monitor's series and the run's logs.
- `write_retrieval_report`: per instance the issue, the answer with scores, the gold and F-beta.
- `write_downstream_report`: Table 3 with intervals and the per-instance case view, from the
  JSON form of `swe-eval downstream report`.

Standard library only. The page makes no request: the data is embedded as escaped JSON and
drawn by an inline script under a Content-Security-Policy of `default-src 'none'`.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from codegrep_report._cases import (
    RetrievalCase,
    RetrievalSummary,
    write_downstream_report,
    write_retrieval_report,
)
from codegrep_report._jsonl import BadRow, JsonLinesTail
from codegrep_report._training import (
    COMPLETIONS_FILE,
    ComparedRun,
    completion_rows,
    write_training_report,
)
from codegrep_report.errors import CodegrepReportError, ReportInputError

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("codegrep-report")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

__all__ = [
    "COMPLETIONS_FILE",
    "BadRow",
    "CodegrepReportError",
    "ComparedRun",
    "JsonLinesTail",
    "ReportInputError",
    "RetrievalCase",
    "RetrievalSummary",
    "__version__",
    "completion_rows",
    "write_downstream_report",
    "write_retrieval_report",
    "write_training_report",
]
