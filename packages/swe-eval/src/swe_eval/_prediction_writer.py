"""Prediction files as swe-eval writes them: one JSON object a line, gzipped by the name.

Reading them (and instance and label files) is `codegrep_records`. This module keeps the bytes
swe-eval has always written: fields that are None are left out, and so is `fallback` while it is
False, the value every reader assumes when it is absent (swe-eval's baselines and peer
conversions never fall back, and their files stay what 0.1 wrote).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from codegrep_records import Prediction
from codegrep_records.io import write_records

__all__ = ["prediction_json", "write_predictions"]


def prediction_json(prediction: Prediction) -> str:
    """One prediction as the JSON line swe-eval writes (without the newline)."""
    exclude = None if prediction.fallback else {"fallback"}
    return prediction.model_dump_json(exclude_none=True, exclude=exclude)


def write_predictions(path: str | Path, predictions: Iterable[Prediction]) -> int:
    """Write JSON Lines (gzipped when the name ends in .gz); returns the number of rows.

    The parent folder is created when missing.
    """
    return write_records(path, predictions, dump=prediction_json)
