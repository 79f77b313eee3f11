"""The exception tree of codegrep-gate.

Everything this package raises on purpose derives from `GateError`:

- `CalibrationMismatchError`: the calibration measured another retriever (or another
  major.minor version of it) than the one whose files are being gated, or predictions of one
  retriever were given to calibrate another. Gating with it would apply someone else's precision.
- `CalibrationFileError`: a calibration file cannot be read: missing, not JSON, not a
  calibration, written by a newer release, or invalid. The message names the file.
- `GateInputError`: bad arguments (scores that do not line up with the files, a path that is
  not one line of text, a parameter out of range). It is also a `ValueError`.
"""

from __future__ import annotations

__all__ = [
    "CalibrationFileError",
    "CalibrationMismatchError",
    "GateError",
    "GateInputError",
]


class GateError(Exception):
    """Base of every error raised by codegrep-gate."""


class CalibrationMismatchError(GateError):
    """The calibration is for another retriever, or another version of it."""


class CalibrationFileError(GateError):
    """A calibration file cannot be read; the message names the file and says why."""


class GateInputError(GateError, ValueError):
    """An argument is out of range or does not line up with another (e.g. scores and files)."""
