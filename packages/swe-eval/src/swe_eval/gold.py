"""The gold rule, kept importable under its old name: `codegrep_records` owns it now.

Every name here is the `codegrep_records` object itself (`swe_eval.gold.GoldRule is
codegrep_records.GoldRule`), so gold means the same in every package. New code imports them from
`codegrep_records` or from `swe_eval`; this module only keeps `swe_eval.gold` imports working.
"""

from __future__ import annotations

from codegrep_records import (
    ChangeKind,
    GoldRule,
    PatchFile,
    files_from_patch,
    is_test_path,
    parse_patch,
)

__all__ = [
    "ChangeKind",
    "GoldRule",
    "PatchFile",
    "files_from_patch",
    "is_test_path",
    "parse_patch",
]
