"""codegrep-records: the shared records and rules of the CodeGrep toolkit, pydantic only.

One definition of each thing several packages read and write: the instance, prediction and
label records (each with a `schema_version`), the patch parser and the gold rule, the path
normalizer with its mount-prefix table, and the row readers with their accounting of bad rows.
Two public modules hold the utilities: `codegrep_records.io` (guarded reading and writing of
files) and `codegrep_records.stats` (the one bootstrap every evaluation draws its intervals
from, `ClusterBootstrap`).
It imports no other package of the toolkit; the others import it.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from codegrep_records._gold import (
    ChangeKind,
    GoldRule,
    PatchFile,
    files_from_patch,
    is_test_path,
    parse_patch,
)
from codegrep_records._paths import MOUNT_PREFIXES, normalize_path
from codegrep_records._readers import (
    Loaded,
    RowProblem,
    gold_from_instances,
    load_instances,
    load_labels,
    load_predictions,
    read_rows,
)
from codegrep_records._records import (
    CATM_WEIGHT_THRESHOLD,
    GoldLabel,
    Instance,
    LabelRecord,
    MinedFile,
    Prediction,
    Verdict,
)
from codegrep_records.errors import MissingExtraError, RecordError, RecordFileError

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("codegrep-records")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

__all__ = [
    "CATM_WEIGHT_THRESHOLD",
    "MOUNT_PREFIXES",
    "ChangeKind",
    "GoldLabel",
    "GoldRule",
    "Instance",
    "LabelRecord",
    "Loaded",
    "MinedFile",
    "MissingExtraError",
    "PatchFile",
    "Prediction",
    "RecordError",
    "RecordFileError",
    "RowProblem",
    "Verdict",
    "__version__",
    "files_from_patch",
    "gold_from_instances",
    "is_test_path",
    "load_instances",
    "load_labels",
    "load_predictions",
    "normalize_path",
    "parse_patch",
    "read_rows",
]
