"""What the GRPO and SFT rows share: the row base with its `schema_version`, the account of
what was left out (`Dropped`), and the gold rule for one instance (patch, gold files or a CATM
label, with the patch's line ranges).
Not for: building either kind of row (`_grpo_rows`, `_sft_rows`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import codegrep_records as records
import grpo_rewards as rewards
from pydantic import BaseModel, ConfigDict, Field, field_validator

from codegrep_model.records import Instance

__all__ = [
    "GOLD_FROM_LABEL",
    "REPORT_SCHEMA_VERSION",
    "ROW_SCHEMA_VERSION",
    "Dropped",
    "GoldLineRange",
]

#: `schema_version` of the GRPO and SFT rows this release writes; a row without one (written
#: before it was added) reads as version 1, a newer one is refused.
ROW_SCHEMA_VERSION = 1
#: `schema_version` of the GRPO and SFT reports (report.json) this release writes.
REPORT_SCHEMA_VERSION = 1

#: `gold_source` of a row whose gold came from a label file (else "patch" or "gold_files").
GOLD_FROM_LABEL = "label"


# The pydantic row models below are what the trainer reads, so their JSON is the contract.
# `tools` is a JSON *string* because ms-swift parses it so (OnPolicySample.to_infer_request,
# the agent template's `_parse_json`): an external format, not a choice of ours.


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _VersionedRow(_Row):
    """A row written to a file: it says which version of its shape it is."""

    schema_version: int = Field(default=ROW_SCHEMA_VERSION, ge=1)

    @field_validator("schema_version")
    @classmethod
    def _known_schema_version(cls, value: int) -> int:
        if value > ROW_SCHEMA_VERSION:
            raise ValueError(
                f"schema_version {value} is newer than this reader knows "
                f"({ROW_SCHEMA_VERSION}); upgrade codegrep-model to read it"
            )
        return value


class GoldLineRange(_Row):
    """One gold line range, `[start, end]` inclusive and 1-based, in the file before the patch.

    Records rather than a `{path: ranges}` mapping, so that the column is one Arrow type for
    every row (a mapping's keys would become struct fields that differ from row to row).
    """

    path: str
    start: int
    end: int


@dataclass(frozen=True)
class Dropped:
    """An instance (or rollout) left out, and why; `detail` says more (the error, the reward)."""

    instance_id: str
    repo: str
    reason: str
    detail: str = ""


def _by_reason(dropped: Iterable[Dropped]) -> dict[str, int]:
    return dict(sorted(Counter(d.reason for d in dropped).items()))


class _DropReport:
    """What the GRPO and SFT reports share: their drops counted by reason, and the JSON form
    (the fields, then `dropped_by_reason`). A base without fields, so each report keeps its
    own field order; the subclass is a dataclass with a `dropped` field."""

    if TYPE_CHECKING:  # declared by the dataclass subclass; no annotation here at run time
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]
        dropped: list[Dropped]

    @property
    def dropped_by_reason(self) -> dict[str, int]:
        return _by_reason(self.dropped)

    def to_dict(self) -> dict[str, Any]:
        """The report as written (report.json): `schema_version` first, the fields, then
        `dropped_by_reason`. A report without `schema_version` (written before it) is 1."""
        out: dict[str, Any] = {"schema_version": REPORT_SCHEMA_VERSION, **asdict(self)}
        out["dropped_by_reason"] = self.dropped_by_reason
        return out


# ---------------------------------------------------------------------------------- gold


def _gold(
    instance_id: str,
    inst: Instance | None,
    labels: Mapping[str, records.GoldLabel],
    rule: records.GoldRule | None,
) -> tuple[tuple[str, ...], str]:
    """The gold files of an instance and where they came from: its label when there is one
    (it replaces the patch), else its patch under `rule`; ((), "none") when neither is known."""
    label = labels.get(instance_id)
    if label is not None:
        return tuple(sorted(label.files)), GOLD_FROM_LABEL
    if inst is None:
        return (), "none"
    return inst.gold_files_for(rule), "patch" if inst.patch else "gold_files"


def _gold_line_ranges(
    inst: Instance | None, gold: tuple[str, ...], source: str
) -> tuple[GoldLineRange, ...]:
    """The hunks of the gold files in the instance's patch, when the patch is the gold."""
    if inst is None or source != "patch" or not inst.patch:
        return ()
    keep = set(gold)
    ranges = rewards.gold_line_ranges_from_patch(inst.patch)
    return tuple(
        GoldLineRange(path=path, start=r.start, end=r.end)
        for path in sorted(ranges)
        if path in keep
        for r in ranges[path]
    )


def _line_range_records(ranges: tuple[GoldLineRange, ...]) -> list[dict[str, object]]:
    return [r.model_dump() for r in ranges]


_NO_GOLD = {
    GOLD_FROM_LABEL: "the label has no gold file",
    "patch": "the patch has no gold file under the gold rule",
    "gold_files": "no patch and no gold_files",
    "none": "the instance is in neither the instances nor the labels",
}


def _label_map(labels: Iterable[records.GoldLabel]) -> dict[str, records.GoldLabel]:
    out: dict[str, records.GoldLabel] = {}
    for label in labels:
        out.setdefault(label.instance_id, label)  # first kept, as the readers do
    return out
