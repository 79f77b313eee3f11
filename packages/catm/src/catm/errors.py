"""The exception tree of catm.

Bad input rows never raise: readers count them as skips (see `Skip`). These exceptions are for
conditions a caller has to act on: an unreadable file, a judge that cannot be configured, a
missing optional extra.
"""

from __future__ import annotations


class CatmError(Exception):
    """Base of every error raised by catm."""


class InputError(CatmError):
    """A trajectory or instance file cannot be opened or is not in a known format at all."""


class JudgeError(CatmError):
    """The judge is misconfigured (bad endpoint, unreadable prompt template, broken cache)."""


class MissingExtraError(CatmError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""
