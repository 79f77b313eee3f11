"""Records at swe-eval's boundaries: instances, predictions and gold labels.

These are what files hold, one JSON object a line. Readers live in `swe_eval.datasets`; the
scoring code never sees raw dicts.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat

__all__ = [
    "PREDICTION_SCHEMA_VERSION",
    "GoldLabel",
    "Instance",
    "Prediction",
]

PREDICTION_SCHEMA_VERSION = 1


class Instance(BaseModel):
    """One SWE-bench-style task. Extra fields of the source file are ignored, not kept."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    instance_id: str = Field(min_length=1)
    repo: str = Field(min_length=1, description="owner/name, e.g. 'psf/requests'.")
    base_commit: str | None = Field(
        default=None, description="The commit the issue was filed against; None for synthetic sets."
    )
    problem_statement: str = ""
    patch: str = Field(default="", description="The gold patch (unified diff).")


class Prediction(BaseModel):
    """One retriever's answer for one instance: a ranked list of repository-relative files."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    schema_version: int = PREDICTION_SCHEMA_VERSION
    instance_id: str = Field(min_length=1)
    files: tuple[str, ...] = Field(default=(), description="Ranked, best first.")
    # Finite: JSON has no NaN or Infinity, and pydantic writes them as null, which no reader
    # could read back.
    scores: tuple[FiniteFloat, ...] | None = Field(
        default=None, description="Retriever scores aligned with `files`, when it has them."
    )
    line_ranges: dict[str, tuple[tuple[int, int], ...]] | None = None
    turns: float | None = Field(default=None, ge=0)
    tool_calls: int | None = Field(default=None, ge=0)
    tokens: int | None = Field(default=None, ge=0)
    latency_s: float | None = Field(default=None, ge=0)
    retriever: str | None = Field(default=None, description="Name of the system that answered.")


class GoldLabel(BaseModel):
    """The files an instance's answer is scored against (from the patch or from CATM)."""

    model_config = ConfigDict(frozen=True)

    instance_id: str
    files: frozenset[str]
    source: str = Field(description="'patch' or the label file it came from.")
