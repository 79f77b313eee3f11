"""swe-eval scores with codegrep-records' records, gold rule and readers: the very same objects.

The behaviour itself (patch parsing, the gold rule, Lite's published gold files, every reader and
its bad-row accounting) is tested in codegrep-records; here only that swe-eval reads them from
there, and what swe-eval adds around them.
"""

from __future__ import annotations

import importlib

import codegrep_records
import pytest
import swe_eval
from swe_eval import DatasetError, SweEvalError

SHARED = [
    "CATM_WEIGHT_THRESHOLD",
    "ChangeKind",
    "GoldLabel",
    "GoldRule",
    "Instance",
    "Loaded",
    "PatchFile",
    "Prediction",
    "RowProblem",
    "files_from_patch",
    "gold_from_instances",
    "is_test_path",
    "load_instances",
    "load_labels",
    "load_predictions",
    "parse_patch",
    "read_rows",
]


@pytest.mark.parametrize("name", SHARED)
def test_the_records_names_come_from_codegrep_records_only(name: str) -> None:
    # one import path per name: swe-eval reads the records' objects, it does not re-export them
    assert hasattr(codegrep_records, name)
    assert not hasattr(swe_eval, name)


def test_the_gold_rule_has_no_second_import_path() -> None:
    # `swe_eval.gold` only re-exported the records' rule; the names come from `codegrep_records`
    # (no version with that module was released).
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("swe_eval.gold")


def test_an_unreadable_file_is_one_kind_of_error_whoever_found_it() -> None:
    # The readers raise RecordFileError; swe-eval's own DatasetError is one too, so a caller
    # catching RecordFileError (as the CLI does, through RecordError) sees both.
    assert issubclass(DatasetError, codegrep_records.RecordFileError)
    assert issubclass(DatasetError, SweEvalError)
