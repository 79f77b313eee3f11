"""The exception tree of codegrep-report.

Bad rows in a log are not exceptions: they are counted and shown in the report with file and
line. Exceptions are for what stops a report from being written: an input file that cannot be
read at all, or an output that cannot be written.
"""

from __future__ import annotations

__all__ = ["CodegrepReportError", "ReportInputError", "ReportWriteError"]


class CodegrepReportError(Exception):
    """Base of every error raised by codegrep-report."""


class ReportInputError(CodegrepReportError, ValueError):
    """An input file that cannot be read (missing, a folder, a link, too large)."""


class ReportWriteError(CodegrepReportError, OSError):
    """The report file cannot be written."""
