"""Instance files: instance_id → the shared `Instance` record, and which rows can give a label.

Reading and validating rows is `codegrep_records` (`read_rows`, `Instance`): JSON Lines, a JSON
list, either gzipped, or parquet (the `parquet` extra); a byte-order mark is allowed; SWE-bench
rows, rows that carry `gold_files`, and Multi-SWE-bench rows (`org`, `repo`, `number`,
`fix_patch`) are all read by the record itself. What catm adds: a row with no patch files under
the gold rule is unusable (no label can be built for it) and is counted as a `Skip`, like a row
that is not JSON or does not validate; and several files merge, a later file's row replacing an
earlier file's (Lite and Verified share instances).

This module does not decide which files of a patch count; that is `codegrep_records.GoldRule`.
"""

from __future__ import annotations

from pathlib import Path

from codegrep_records import GoldRule, Instance, RowProblem, read_rows
from codegrep_records import MissingExtraError as RecordsMissingExtraError
from codegrep_records.errors import RecordFileError
from codegrep_records.io import describe_validation_error
from pydantic import ValidationError

from catm._records import Skip
from catm.errors import InputError, MissingExtraError

NO_PATCH_FILES = "no patch files (no patch, fix_patch or gold_files)"
NO_GOLD_FILES = "no patch files under the gold rule (the patch only adds files or changes tests)"


def _usable(instance: Instance, rule: GoldRule) -> str | None:
    """Why `instance` can give no label under `rule`, or None if it can."""
    if instance.gold_files_for(rule):
        return None
    return NO_GOLD_FILES if instance.patch else NO_PATCH_FILES


def _read_file(
    path: Path, rule: GoldRule, keep_issue: bool, instances: dict[str, Instance], skips: list[Skip]
) -> None:
    source = str(path)
    seen: set[str] = set()
    for line, row in read_rows(path):
        if isinstance(row, RowProblem):
            skips.append(Skip(row.path, row.line, row.message))
            continue
        try:
            instance = Instance.model_validate(row)
        except ValidationError as exc:
            skips.append(Skip(source, line, describe_validation_error(exc)))
            continue
        # Within one file a repeated id is a defect of the file: the first row is kept and the
        # repeat reported, as every reader of codegrep-records does.
        if instance.instance_id in seen:
            skips.append(
                Skip(source, line, f"duplicate instance_id {instance.instance_id!r}; first kept")
            )
            continue
        seen.add(instance.instance_id)
        reason = _usable(instance, rule)
        if reason is not None:
            skips.append(Skip(source, line, reason))
            continue
        if not keep_issue and instance.problem_statement:
            instance = instance.model_copy(update={"problem_statement": ""})
        instances[instance.instance_id] = instance


def load_mining_instances(
    paths: list[Path], keep_issue: bool = True, *, rule: GoldRule | None = None
) -> tuple[dict[str, Instance], list[Skip]]:
    """Every usable instance of the given files, and a `Skip` for every row that is not one.

    A row is usable when it validates as an `Instance` and has patch files under `rule` (default:
    the shared `GoldRule()`); see `Instance.gold_files_for`. Later files win on duplicate ids;
    within one file the first row wins and the repeat is a skip. `keep_issue=False` drops the
    problem statements (the judge is the only reader of them).

    Raises `InputError` for a file that cannot be read at all and `MissingExtraError` for a
    parquet file without pyarrow.
    """
    rule = rule or GoldRule()
    instances: dict[str, Instance] = {}
    skips: list[Skip] = []
    for path in paths:
        try:
            _read_file(path, rule, keep_issue, instances, skips)
        except RecordFileError as exc:
            raise InputError(str(exc)) from exc
        except RecordsMissingExtraError as exc:
            raise MissingExtraError(
                f"{path}: parquet instance files need pyarrow: pip install 'catm[parquet]'"
            ) from exc
    return instances, skips
