"""swe-eval: score file retrievers on SWE-bench-style instances, peers' outputs included."""

from importlib import metadata as _metadata

from swe_eval.datasets import (
    CATM_WEIGHT_THRESHOLD,
    Loaded,
    RowProblem,
    gold_from_instances,
    load_instances,
    load_labels,
    load_predictions,
    write_predictions,
)
from swe_eval.errors import DatasetError, MissingExtraError, PredictionError, SweEvalError
from swe_eval.gold import (
    ChangeKind,
    GoldRule,
    PatchFile,
    files_from_patch,
    is_test_path,
    parse_patch,
)
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
from swe_eval.models import PREDICTION_SCHEMA_VERSION, GoldLabel, Instance, Prediction
from swe_eval.peers import Conversion, PeerFormat, convert_peer
from swe_eval.report import TableFormat, render

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
    "render",
    "score_instance",
    "summarize",
    "write_predictions",
]
