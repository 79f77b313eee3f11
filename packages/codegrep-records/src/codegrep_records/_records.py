"""The records that cross package and file boundaries: instances, predictions, labels.

Each is a frozen pydantic model with a `schema_version`. A row written by a newer release (a
`schema_version` above the class's `SCHEMA_VERSION`) does not validate: its fields may not mean
what this release thinks they mean. Extra fields of a source row are ignored, not kept.

This module holds shapes and the few coercions real files need (SWE-bench's JSON-in-a-string
test lists, Multi-SWE-bench's column names, versions written as numbers). Reading files is
`codegrep_records._readers`; which patch files are gold is `codegrep_records._gold`.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, ClassVar, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FiniteFloat,
    field_serializer,
    field_validator,
    model_validator,
)

from codegrep_records._gold import GoldRule, files_from_patch
from codegrep_records._paths import normalize_path

__all__ = [
    "CATM_WEIGHT_THRESHOLD",
    "GoldLabel",
    "Instance",
    "LabelRecord",
    "MinedFile",
    "Prediction",
    "Verdict",
]

# A CATM label's gold is the patch files plus mined files with weight >= 0.15 (catm's README,
# "The rules", Stage 3).
CATM_WEIGHT_THRESHOLD = 0.15

# owner/name: one slash, neither side empty, no whitespace. Hosts differ on the characters they
# allow; worktree-sandbox checks the stricter form it needs before it touches the disk.
_REPO = re.compile(r"^[^/\s]+/[^/\s]+$")


class _Record(BaseModel):
    """Frozen, extra fields ignored, and a `schema_version` this release can read."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    SCHEMA_VERSION: ClassVar[int] = 1

    schema_version: int = Field(default=1, ge=1)

    @field_validator("schema_version")
    @classmethod
    def _known_schema_version(cls, value: int) -> int:
        if value > cls.SCHEMA_VERSION:
            raise ValueError(
                f"schema_version {value} is newer than this reader knows "
                f"({cls.SCHEMA_VERSION}); upgrade codegrep-records to read it"
            )
        return value


def _json_list(value: Any) -> Any:
    """A list as itself or as JSON text (SWE-bench's `"[\\"a\\", \\"b\\"]"`); null is empty."""
    if value is None:
        return ()
    if not isinstance(value, str):
        return value
    if not value.strip():
        return ()
    try:
        decoded = json.loads(value)
    except RecursionError:
        raise ValueError("the JSON list in this string is nested too deeply") from None
    except ValueError:
        decoded = None
    if not isinstance(decoded, list):
        raise ValueError(f"a string must hold a JSON list, got {value[:80]!r}")
    return decoded


class Instance(_Record):
    """One SWE-bench-style task.

    Also reads Multi-SWE-bench rows: `org` + `repo` + `number` give `instance_id`
    `<org>__<repo>-<number>` (when the row has none) and `repo` `org/repo`; `fix_patch` is the
    patch, `body` the problem statement, `base.sha` the base commit.
    """

    instance_id: str = Field(min_length=1)
    repo: str = Field(min_length=1, description="owner/name, e.g. 'psf/requests'.")
    base_commit: str | None = Field(
        default=None, description="The commit the issue was filed against; None for synthetic sets."
    )
    problem_statement: str = ""
    patch: str = Field(default="", description="The gold patch (unified diff).")
    test_patch: str = ""
    FAIL_TO_PASS: tuple[str, ...] = ()
    PASS_TO_PASS: tuple[str, ...] = ()
    version: str | None = Field(
        default=None,
        description="As the dataset writes it ('2.0'). An int becomes its digits ('3'); a float "
        "becomes Python's shortest repr ('2.0', '0.1'): a float cannot remember a trailing zero "
        "it lost before it got here ('0.10' stored as a number is 0.1), so write versions as "
        "strings.",
    )
    environment_setup_commit: str | None = None
    hints_text: str | None = None
    created_at: str | None = None
    gold_files: tuple[str, ...] = Field(
        default=(), description="Gold given directly, for rows without a patch."
    )

    @model_validator(mode="before")
    @classmethod
    def _multi_swe_bench(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        row = dict(data)
        org, repo, number = row.get("org"), row.get("repo"), row.get("number")
        if isinstance(org, str) and org and isinstance(repo, str) and repo and "/" not in repo:
            if not row.get("instance_id") and number is not None:
                row["instance_id"] = f"{org}__{repo}-{number}"
            row["repo"] = f"{org}/{repo}"
        if not row.get("patch") and isinstance(row.get("fix_patch"), str):
            row["patch"] = row["fix_patch"]
        if not row.get("problem_statement") and isinstance(row.get("body"), str):
            row["problem_statement"] = row["body"]
        base = row.get("base")
        if (
            row.get("base_commit") is None
            and isinstance(base, Mapping)
            and isinstance(base.get("sha"), str)
        ):
            row["base_commit"] = base["sha"]
        return row

    @field_validator("repo")
    @classmethod
    def _owner_name(cls, value: str) -> str:
        if not _REPO.match(value) or value.split("/")[1] in (".", ".."):
            raise ValueError(f"repo must be owner/name, got {value[:80]!r}")
        return value

    @field_validator("problem_statement", "patch", "test_patch", mode="before")
    @classmethod
    def _null_text(cls, value: Any) -> Any:
        # Parquet and some JSON exports write an absent text as null.
        return "" if value is None else value

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", "gold_files", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _json_list(value)

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("version must be a string, not a boolean")
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"version must be a string, got {value!r}")
            return repr(value)
        return value

    @field_validator("created_at", mode="before")
    @classmethod
    def _timestamp_text(cls, value: Any) -> Any:
        # Parquet timestamp columns arrive as datetime objects.
        if isinstance(value, dt.date):
            return value.isoformat()
        return value

    def gold_files_for(self, rule: GoldRule | None = None) -> tuple[str, ...]:
        """Gold: the files of `patch` under `rule`, or the normalized `gold_files` without one.

        `gold_files` are taken as given (normalized, empties and repeats dropped): whoever
        wrote them already decided what counts, and a list of paths cannot say which were added.
        """
        if self.patch:
            return files_from_patch(self.patch, rule)
        out = dict.fromkeys(n for n in (normalize_path(f) for f in self.gold_files) if n)
        return tuple(out)


class Prediction(_Record):
    """One retriever's answer for one instance: a ranked list of repository-relative files."""

    instance_id: str = Field(min_length=1)
    files: tuple[str, ...] = Field(default=(), description="Ranked, best first.")
    # Finite: JSON has no NaN or Infinity, and pydantic writes them as null, which no reader
    # could read back.
    scores: tuple[FiniteFloat, ...] | None = Field(
        default=None, description="Retriever scores, one per file of `files`, when it has them."
    )
    line_ranges: dict[str, tuple[tuple[int, int], ...]] | None = None
    turns: int | float | None = Field(default=None, ge=0, allow_inf_nan=False)
    tool_calls: int | None = Field(default=None, ge=0)
    tokens: int | None = Field(default=None, ge=0)
    latency_s: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    retriever: str | None = Field(default=None, description="Name of the system that answered.")
    fallback: bool = Field(
        default=False,
        description="The system gave no parsable answer and something else stands in for it.",
    )

    @model_validator(mode="after")
    def _scores_aligned(self) -> Self:
        # A shorter list would pair scores with the wrong files after any reordering or cut.
        if self.scores is not None and len(self.scores) != len(self.files):
            raise ValueError(
                f"scores has {len(self.scores)} value(s) for {len(self.files)} file(s); "
                "give one score per file or none"
            )
        return self


class GoldLabel(_Record):
    """The files an instance's answer is scored against (from the patch or from a label file)."""

    instance_id: str = Field(min_length=1)
    files: frozenset[str]
    source: str = Field(description="'patch', 'gold_files', or the label file it came from.")

    @field_serializer("files")
    def _sorted(self, files: frozenset[str]) -> list[str]:
        # A set has no order; a sorted list makes written files comparable byte for byte.
        return sorted(files)


class Verdict(StrEnum):
    """CATM stage 2 outcome for one mined file."""

    RELEVANT = "RELEVANT"
    NOT_RELEVANT = "NOT_RELEVANT"
    UNJUDGED = "UNJUDGED"  # `--judge none`: kept without asking anyone
    JUDGE_FAILED = "JUDGE_FAILED"  # endpoint failed after every retry; kept (conservative), counted


class MinedFile(BaseModel):
    """A file some agent read for this instance, with what each CATM stage decided about it."""

    model_config = ConfigDict(frozen=True)

    path: str
    reasoning_tokens: int = Field(ge=0, description="l(f) after combining reads and trajectories")
    n_reads: int = Field(ge=1)
    verdict: Verdict
    judge_answer: str = ""  # the judge's raw first line, for audits
    # w̃(f), and w(f) = w̃ / mean(w̃); None when the judge dropped the file. Always finite: a NaN
    # or infinite weight read back is a corrupt row, and would break the histogram.
    weight_raw: float | None = Field(default=None, allow_inf_nan=False)
    weight: float | None = Field(default=None, allow_inf_nan=False)
    in_patch: bool
    in_gold: bool
    trajectories: list[str]
    reasoning: str = ""  # the post-reasoning the judge saw; only with `--keep-reasoning`


class LabelRecord(_Record):
    """CATM's label of one instance: patch files, mined files and the final gold set.

    `gold` is `patch_files` plus every mined file with weight >= `CATM_WEIGHT_THRESHOLD` (or
    the threshold the run was given).
    """

    instance_id: str
    repo: str = ""
    patch_files: list[str]
    mined: list[MinedFile]
    gold: list[str]
    trajectories: list[str]
    judge: str  # the judge model, or "none"
