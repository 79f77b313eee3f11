"""The exception tree of codegrep-records.

Everything this package raises on purpose derives from `RecordError`. A row that does not
validate is not an exception: readers skip it and report it as a `RowProblem`. A file that cannot
be read at all is a `RecordFileError`, because the rows after the break are unknown and going on
without them would quietly change a denominator. A missing optional dependency is a
`MissingExtraError`, which is also an `ImportError` so that `except ImportError` keeps working.
"""

from __future__ import annotations

__all__ = [
    "MissingExtraError",
    "RecordError",
    "RecordFileError",
]


class RecordError(Exception):
    """Base of every error raised by codegrep-records."""


class RecordFileError(RecordError):
    """A record file cannot be read at all: missing, a directory, truncated or corrupt."""


class MissingExtraError(RecordError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, extra: str, module: str) -> None:
        self.extra = extra
        self.module = module
        super().__init__(
            f"{module} is not installed; install the '{extra}' extra: "
            f"pip install 'codegrep-records[{extra}]'"
        )
