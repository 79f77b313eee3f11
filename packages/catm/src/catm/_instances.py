"""Instance files (SWE-bench style JSONL): instance_id → repository, patch files, issue text.

Accepted rows: SWE-bench (`instance_id`, `repo`, `patch`, `problem_statement`), rows that already
carry `gold_files`, and Multi-SWE-bench patch rows (`org`, `repo`, `number`, `fix_patch`), whose
id is `<org>__<repo>-<number>` as in the Multi-SWE-bench harness.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from catm._paths import patch_files
from catm._readers import open_text_lines
from catm._records import Skip

_JSON = msgspec.json.Decoder()


@dataclass(frozen=True, slots=True)
class Instance:
    instance_id: str
    repo: str
    patch_files: tuple[str, ...]
    issue: str = ""


def instance_from_row(row: Any, keep_issue: bool = True) -> Instance | str:
    """An `Instance`, or the reason the row is not one."""
    if not isinstance(row, dict):
        return "row is not a JSON object"
    instance_id = row.get("instance_id")
    repo = str(row.get("repo") or "")
    if not instance_id and row.get("org") and repo and row.get("number") is not None:
        instance_id = f"{row['org']}__{repo}-{row['number']}"
        repo = f"{row['org']}/{repo}"
    if not instance_id:
        return "no instance_id"
    patch = row.get("patch") or row.get("fix_patch") or ""
    files = patch_files(patch) if isinstance(patch, str) and patch else []
    if not files and isinstance(row.get("gold_files"), list):
        files = [str(f) for f in row["gold_files"]]
    if not files:
        return "no patch files (no patch, fix_patch or gold_files)"
    issue = row.get("problem_statement") or row.get("body") or ""
    return Instance(str(instance_id), repo, tuple(files), str(issue) if keep_issue else "")


def load_instances(
    paths: list[Path], keep_issue: bool = True
) -> tuple[dict[str, Instance], list[Skip]]:
    """Every usable instance of the given files (later files win on duplicate ids), and skips."""
    instances: dict[str, Instance] = {}
    skips: list[Skip] = []
    for path in paths:
        for number, line in open_text_lines(path):
            if not line.strip():
                continue
            try:
                row = _JSON.decode(line)
                result = instance_from_row(row, keep_issue)
            except msgspec.DecodeError as exc:
                skips.append(Skip(str(path), number, f"invalid JSON: {exc}"))
                continue
            except RecursionError:
                skips.append(Skip(str(path), number, "row nested too deeply"))
                continue
            if isinstance(result, str):
                skips.append(Skip(str(path), number, result))
            else:
                instances[result.instance_id] = result
    return instances, skips
