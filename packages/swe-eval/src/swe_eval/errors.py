"""The exception tree of swe-eval.

Everything this package raises on purpose derives from `SweEvalError`. A missing optional
dependency is a `MissingExtraError`, which is also an `ImportError` so that `except ImportError`
in user code keeps working.

Instance, prediction and label files are read by `codegrep_records`, which raises its own
`RecordFileError` for a file that cannot be read at all (and its own `MissingExtraError` for
parquet without pyarrow), both `codegrep_records.RecordError`s. `DatasetError` derives from
`RecordFileError` too, so `except codegrep_records.RecordFileError` catches an unreadable file
whichever package found it; the CLI handles `RecordError` wherever it handles `SweEvalError`.
"""

from __future__ import annotations

from codegrep_records import RecordFileError

__all__ = [
    "DatasetError",
    "MissingExtraError",
    "PlanError",
    "PredictionError",
    "SweEvalError",
]


class SweEvalError(Exception):
    """Base of every error raised by swe-eval."""


class DatasetError(SweEvalError, RecordFileError):
    """An input file cannot be read at all (missing, wrong format).

    The readers of `codegrep_records` raise its `RecordFileError`, of which this is a subclass.
    """


class PlanError(SweEvalError):
    """Bad input for a downstream run plan, found before anything is written."""


class PredictionError(SweEvalError):
    """Predictions are inconsistent with the instances they are scored against."""


class MissingExtraError(SweEvalError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, extra: str, module: str) -> None:
        self.extra = extra
        self.module = module
        super().__init__(
            f"{module} is not installed; install the '{extra}' extra: "
            f"pip install 'swe-eval[{extra}]'"
        )
