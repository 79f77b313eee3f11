"""swe-eval: score file retrievers on SWE-bench-style instances, peers' outputs included.

The records (`Instance`, `Prediction`, `GoldLabel`), the gold rule and the file readers are
`codegrep_records`'s own objects, re-exported here under the names swe-eval has always had
(`swe_eval.Instance is codegrep_records.Instance`), so a file means the same to swe-eval as to
every package that wrote it. Scoring, reports, peer conversion and the baselines are swe-eval's.
"""

from importlib import metadata as _metadata

from codegrep_records import (
    CATM_WEIGHT_THRESHOLD,
    ChangeKind,
    GoldLabel,
    GoldRule,
    Instance,
    Loaded,
    PatchFile,
    Prediction,
    RowProblem,
    files_from_patch,
    gold_from_instances,
    is_test_path,
    load_instances,
    load_labels,
    load_predictions,
    parse_patch,
    read_rows,
)

from swe_eval._prediction_writer import write_predictions
from swe_eval.errors import DatasetError, MissingExtraError, PredictionError, SweEvalError
from swe_eval.metrics import (
    DEFAULT_KS,
    Estimate,
    InstanceScore,
    PairedDifference,
    ScoreStatus,
    SystemEval,
    SystemSummary,
    evaluate,
    paired_difference,
    score_instance,
    summarize,
)
from swe_eval.peers import Conversion, PeerFormat, convert_peer
from swe_eval.report import TableFormat, render_table

# The prediction schema this release reads and writes (codegrep-records' `Prediction`).
PREDICTION_SCHEMA_VERSION = Prediction.SCHEMA_VERSION

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("swe-eval")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

__all__ = [
    "CATM_WEIGHT_THRESHOLD",
    "DEFAULT_KS",
    "PREDICTION_SCHEMA_VERSION",
    "ChangeKind",
    "Conversion",
    "DatasetError",
    "Estimate",
    "GoldLabel",
    "GoldRule",
    "Instance",
    "InstanceScore",
    "Loaded",
    "MissingExtraError",
    "PairedDifference",
    "PatchFile",
    "PeerFormat",
    "Prediction",
    "PredictionError",
    "RowProblem",
    "ScoreStatus",
    "SweEvalError",
    "SystemEval",
    "SystemSummary",
    "TableFormat",
    "__version__",
    "convert_peer",
    "evaluate",
    "files_from_patch",
    "gold_from_instances",
    "is_test_path",
    "load_instances",
    "load_labels",
    "load_predictions",
    "paired_difference",
    "parse_patch",
    "read_rows",
    "render_table",
    "score_instance",
    "summarize",
    "write_predictions",
]
