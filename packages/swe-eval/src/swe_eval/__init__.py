"""swe-eval: score file retrievers on SWE-bench-style instances, peers' outputs included.

Scoring, reports, peer conversion and the baselines are swe-eval's; the records (`Instance`,
`Prediction`, `GoldLabel`), the gold rule and the file readers are `codegrep_records`'s, imported
from there, so a file means the same to swe-eval as to every package that wrote it.
"""

from importlib import metadata as _metadata

from swe_eval._prediction_writer import write_predictions
from swe_eval.errors import DatasetError, SweEvalError
from swe_eval.metrics import SystemEval, SystemSummary, evaluate, paired_difference, summarize
from swe_eval.peers import PeerFormat, convert_peer
from swe_eval.report import render_table

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("swe-eval")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

__all__ = [
    "DatasetError",
    "PeerFormat",
    "SweEvalError",
    "SystemEval",
    "SystemSummary",
    "__version__",
    "convert_peer",
    "evaluate",
    "paired_difference",
    "render_table",
    "summarize",
    "write_predictions",
]
