"""swe-eval scores with codegrep-records' records, gold rule and readers: the very same objects.

The behaviour itself (patch parsing, the gold rule, Lite's published gold files, every reader and
its bad-row accounting) is tested in codegrep-records; here only that swe-eval's names still lead
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
def test_swe_evals_name_is_the_records_object(name: str) -> None:
    assert getattr(swe_eval, name) is getattr(codegrep_records, name)


def test_the_gold_rule_has_no_second_import_path() -> None:
    # `swe_eval.gold` only re-exported the records' rule; the names come from `swe_eval` or
    # `codegrep_records` (no version with that module was released).
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("swe_eval.gold")
    assert swe_eval.GoldRule is codegrep_records.GoldRule


def test_the_prediction_schema_version_is_the_records_one() -> None:
    assert swe_eval.PREDICTION_SCHEMA_VERSION == codegrep_records.Prediction.SCHEMA_VERSION == 1


def test_an_unreadable_file_is_one_kind_of_error_whoever_found_it() -> None:
    # The readers raise RecordFileError; swe-eval's own DatasetError is one too, so a caller
    # catching RecordFileError (as the CLI does, through RecordError) sees both.
    assert issubclass(DatasetError, codegrep_records.RecordFileError)
    assert issubclass(DatasetError, SweEvalError)
