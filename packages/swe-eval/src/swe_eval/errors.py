"""The exception tree of swe-eval.

Everything this package raises on purpose derives from `SweEvalError`. A missing optional
dependency is a `MissingExtraError`, which is also an `ImportError` so that `except ImportError`
in user code keeps working.
"""

from __future__ import annotations

__all__ = [
    "DatasetError",
    "MissingExtraError",
    "PredictionError",
    "SweEvalError",
]


class SweEvalError(Exception):
    """Base of every error raised by swe-eval."""


class DatasetError(SweEvalError):
    """An instance, label or prediction file cannot be read at all (missing, wrong format)."""


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
