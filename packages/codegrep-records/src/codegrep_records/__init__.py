"""codegrep-records: the shared records and rules of the CodeGrep toolkit, pydantic only.

One definition of each thing several packages read and write: the instance, prediction and
label records (each with a `schema_version`), the patch parser and the gold rule, the path
normalizer with its mount-prefix table, the row readers with their accounting of bad rows, and
the one bootstrap every evaluation draws its intervals from (`ClusterBootstrap`).
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
from codegrep_records._json_files import (
    dumps_json,
    parse_json,
    read_json_file,
    read_json_object,
    read_text_file,
)
from codegrep_records._output import (
    open_appending,
    open_replacing,
    why_unwritable,
    write_atomically,
)
from codegrep_records._paths import MOUNT_PREFIXES, normalize_path
from codegrep_records._readers import (
    Loaded,
    RowProblem,
    describe_validation_error,
    gold_from_instances,
    load_instances,
    load_labels,
    load_predictions,
    load_records,
    read_rows,
    write_records,
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
from codegrep_records._stats import ClusterBootstrap, Ratio, percentile_interval, two_sided_p
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
    "ClusterBootstrap",
    "GoldLabel",
    "GoldRule",
    "Instance",
    "LabelRecord",
    "Loaded",
    "MinedFile",
    "MissingExtraError",
    "PatchFile",
    "Prediction",
    "Ratio",
    "RecordError",
    "RecordFileError",
    "RowProblem",
    "Verdict",
    "__version__",
    "describe_validation_error",
    "dumps_json",
    "files_from_patch",
    "gold_from_instances",
    "is_test_path",
    "load_instances",
    "load_labels",
    "load_predictions",
    "load_records",
    "normalize_path",
    "open_appending",
    "open_replacing",
    "parse_json",
    "parse_patch",
    "percentile_interval",
    "read_json_file",
    "read_json_object",
    "read_rows",
    "read_text_file",
    "two_sided_p",
    "why_unwritable",
    "write_atomically",
    "write_records",
]
