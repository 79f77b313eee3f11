"""The calibration record: what was measured, on which data, for which retriever.

A `Calibration` is written once (by `calibrate`) and read many times (by the gate, in every
process that serves or evaluates a retriever), so it is a frozen pydantic model with a
`schema_version` and a `kind`, and it says everything a reader needs to judge it: the retriever
and its version, the data with file hashes and the accounting of every instance, the bootstrap
that made the intervals, and the curves the gate looks files up in.

The math lives in `codegrep_gate._calibrate`; reading and writing files in
`codegrep_gate._files`.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from itertools import pairwise
from typing import Annotated, Any, ClassVar, Literal

from codegrep_records.stats import percentile_interval
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

__all__ = [
    "CONTEXT_FEATURES",
    "Bin",
    "Calibration",
    "Check",
    "ContextModel",
    "Curve",
    "DataRef",
    "Interval",
    "Retriever",
    "context_features",
]

Basis = Literal["rank", "score"]


class _Model(BaseModel):
    # Frozen: a calibration is evidence, not a scratch pad. Extra fields are ignored so that a
    # later 0.x release may add an optional field without older readers refusing the file.
    model_config = ConfigDict(frozen=True, extra="ignore")


# A calibration is read by a gate that injects on what it says: a precision of 7.5 or -2, a count
# of 2.5 or "3", or bins out of order would parse as numbers and be believed. Every number is
# held to what it can be: rates finite in [0, 1], counts non-negative integers (JSON integers,
# not floats, strings or booleans).
Rate = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0, strict=True)]


class Interval(_Model):
    """A rate (precision, recall, F-beta: finite, in [0, 1]) and its bootstrap interval at
    `level` (low <= point <= high)."""

    point: Rate
    low: Rate
    high: Rate
    level: float = Field(default=0.95, gt=0, lt=1, allow_inf_nan=False)

    @model_validator(mode="after")
    def _ordered(self) -> Interval:
        if not self.low <= self.point <= self.high:
            raise ValueError(
                f"interval must hold low <= point <= high, got {self.low} <= {self.point} "
                f"<= {self.high}"
            )
        return self

    def fmt(self, digits: int = 2) -> str:
        """`0.71 [0.64, 0.78]`."""
        return f"{self.point:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def _fmt_score(x: float) -> str:
    return f"{x:.2f}" if abs(x) < 10 else f"{x:.4g}"


class Bin(_Model):
    """One step of a curve: the files that fall in it and the share of them that are gold.

    Rank bins: `lo == hi == r` for rank r; the last rank bin has `hi=None` ("rank r and
    beyond"). Score bins: the scores `[lo, hi]` seen in the bin (after merging by
    pool-adjacent-violators, the merged range).
    """

    lo: float = Field(allow_inf_nan=False)
    hi: float | None = Field(allow_inf_nan=False)
    files: Count
    hits: Count
    instances: Count = Field(description="Instances with at least one file in this bin.")
    precision: Interval
    note: str = Field(default="", description="Why the interval is wider than usual, if it is.")

    @model_validator(mode="after")
    def _consistent(self) -> Bin:
        if self.hi is not None and self.hi < self.lo:
            raise ValueError(f"bin has hi {self.hi} below lo {self.lo}")
        if self.hits > self.files:
            raise ValueError(f"bin has {self.hits} hits among {self.files} files")
        if self.instances > self.files:
            raise ValueError(f"bin has {self.instances} instances among {self.files} files")
        # the point is the share of the bin's files that are gold; any other value is a claim
        # the counts do not support
        if self.files and abs(self.precision.point - self.hits / self.files) > 1e-9:
            raise ValueError(
                f"bin precision {self.precision.point} is not its {self.hits} hits among "
                f"{self.files} files"
            )
        return self

    def describe(self, basis: Basis) -> str:
        """`rank 2`, `rank 5+`, `score 0.62-0.71`."""
        if basis == "rank":
            if self.hi is None:
                return f"rank {int(self.lo)}+"
            return f"rank {int(self.lo)}"
        if self.hi is None or self.hi == self.lo:
            return f"score {_fmt_score(self.lo)}"
        return f"score {_fmt_score(self.lo)}-{_fmt_score(self.hi)}"


class Curve(_Model):
    """Measured precision by rank or by score, as steps (bins sorted by `lo`)."""

    basis: Basis
    method: str = Field(description="How the bins were made, in words a reader can check.")
    bins: list[Bin] = Field(min_length=1)

    @field_validator("bins")
    @classmethod
    def _sorted(cls, bins: list[Bin]) -> list[Bin]:
        los = [b.lo for b in bins]
        if los != sorted(los) or len(set(los)) != len(los):
            raise ValueError("bins must be sorted by lo, without repeats")
        for b, after in pairwise(bins):
            if b.hi is None:
                raise ValueError("only the last bin may be open-ended (hi null)")
            if b.hi > after.lo:
                raise ValueError(f"bins overlap: one ends at {b.hi}, the next starts at {after.lo}")
        return bins

    @model_validator(mode="after")
    def _ranks(self) -> Curve:
        if self.basis == "rank":
            for b in self.bins:
                if b.lo < 1 or b.lo != int(b.lo) or (b.hi is not None and b.hi != b.lo):
                    raise ValueError(
                        f"a rank bin covers one rank of 1 or more (lo == hi), or rank lo and "
                        f"beyond (hi null); got lo {b.lo}, hi {b.hi}"
                    )
        return self

    def lookup(self, x: float) -> Bin:
        """The bin `x` (a rank or a score) falls in.

        The last bin whose `lo` is at most `x`: a score between two bins goes to the lower one
        (on a score curve made non-decreasing, the more cautious), a rank past the last rank
        bin to that bin ("r and beyond"). Below the first bin: the first bin.
        """
        i = bisect_right([b.lo for b in self.bins], x) - 1
        return self.bins[max(i, 0)]

    def describe(self, x: float) -> str:
        return self.lookup(x).describe(self.basis)


_MAJOR_MINOR = re.compile(r"^\s*v?(\d+)\.(\d+)")


def _major_minor(version: str) -> str:
    m = _MAJOR_MINOR.match(version)
    return f"{int(m.group(1))}.{int(m.group(2))}" if m else version.strip()


class Retriever(_Model):
    """The system a calibration measured."""

    name: str = Field(
        min_length=1,
        description="Prediction.retriever / the policy name: 'lexical', 'openai:MODEL', 'bm25'.",
    )
    version: str | None = Field(
        default=None,
        description="Version of the package that implements it, e.g. codegrep-model's 0.1.0.",
    )
    package: str | None = Field(default=None, description="That package, e.g. 'codegrep-model'.")
    config: dict[str, Any] = Field(
        default_factory=dict, description="What else identifies it (rollout config, model)."
    )
    definitions: str | None = Field(
        default=None,
        description="How the retriever read definitions when measured: 'tree-sitter' "
        "(worktree-sandbox's symbols extra) or 'regex' (`codegrep_model.definitions_mode`); "
        "None: not recorded. The lexical policy's scores differ between the two.",
    )

    @model_serializer(mode="wrap")
    def _without_unrecorded_mode(self, handler: SerializerFunctionWrapHandler) -> Any:
        """No `definitions` key when it is not recorded: a calibration written without it is
        written again byte for byte."""
        data = handler(self)
        if isinstance(data, dict) and data.get("definitions") is None:
            data.pop("definitions", None)
        return data

    def describe(self) -> str:
        """`lexical 0.1.0 (codegrep-model)`."""
        out = self.name
        if self.version:
            out += f" {self.version}"
        if self.package:
            out += f" ({self.package})"
        return out

    def mismatch(
        self, name: str, version: str | None = None, definitions: str | None = None
    ) -> str | None:
        """Why this calibration does not fit retriever `name` at `version`, reading definitions
        the `definitions` way; None when it does.

        Names must be equal. Versions are compared on major.minor, and only when both are
        known: within a 0.x minor a retriever's behaviour is meant to stay put. The definitions
        modes too must be equal when both are known: the same retriever scores differently
        with and without the syntax tree.
        """
        if name != self.name:
            return f"the calibration measured retriever {self.name!r}, not {name!r}"
        if version and self.version and _major_minor(version) != _major_minor(self.version):
            return (
                f"the calibration measured {self.describe()}, not {name} {version} "
                "(major.minor differ); calibrate this version"
            )
        if definitions and self.definitions and definitions != self.definitions:
            return (
                f"the calibration was measured with definitions read by {self.definitions}, "
                f"this run reads them by {definitions} (worktree-sandbox's symbols extra is "
                f"{'not ' if definitions == 'regex' else ''}installed here); install the same "
                "or calibrate in this mode"
            )
        return None


class FileRef(_Model):
    """A file a record was measured on, and its SHA-256."""

    path: str
    sha256: str


class DataRef(_Model):
    """The data a calibration (or a check) was measured on, with its full accounting.

    `instances` = `scored` + `no_gold`; `missing` and `empty` are among `scored` (they score 0).
    `unknown` counts prediction rows for ids outside the instances (ignored). A file field is
    empty text, and its hash too, for data that never was a file (built in memory). Instances
    read from several files name the first in `instances_file` and the others, in the order
    read, in `more_instances_files`; the first file that holds an id gives its instance.
    """

    name: str = Field(description="e.g. 'SWE-bench Lite (fetchable repositories)'.")
    instances_file: str = ""
    more_instances_files: tuple[FileRef, ...] = Field(
        default=(),
        description="Further instances files, read after `instances_file` in this order (the "
        "first file holding an id gives it); empty for one file.",
    )
    predictions_file: str = ""
    labels_file: str | None = None
    instances_sha256: str = ""
    predictions_sha256: str = ""
    labels_sha256: str | None = None
    instances: Count = 0
    scored: Count = 0
    missing: Count = 0
    empty: Count = 0
    no_gold: Count = 0
    unknown: Count = 0
    skipped_rows: Count = Field(
        default=0, description="Rows the readers could not use (bad or duplicate rows)."
    )
    repos: dict[str, Count] = Field(default_factory=dict, description="Instances per repository.")
    selection: str = Field(
        default="",
        description="Which instances of the file were used, when not all (e.g. 'without "
        "django/django'); their predictions are left out too.",
    )
    gold_rule: dict[str, Any] = Field(
        default_factory=dict, description="The gold rule (or label source) gold was built with."
    )

    def describe(self) -> str:
        """`SWE-bench Lite (300 instances)`, `Lite (299 instances, without a/b)`; a name that
        already counts its instances (`out-of-fold answers (331 instances, 16 Python
        repositories)`) is not counted again (every reason of the gate says this)."""
        chosen = f", {self.selection}" if self.selection else ""
        if re.search(rf"\b{self.instances} instances\b", self.name):
            return f"{self.name} ({self.selection})" if self.selection else self.name
        return f"{self.name} ({self.instances} instances{chosen})"


class Check(_Model):
    """The calibration measured again on other (held-out) data, with the same bins."""

    data: DataRef
    precision: Interval
    precision_answered: Interval
    by_rank: Curve
    by_score: Curve | None
    consistent: bool = Field(
        description="The held-out precision points lie in the calibration's intervals."
    )
    note: str


# The context model's features, in the order of its coefficients after the intercept. A
# file's score is a probability; its log-odds are taken with the score clipped to
# [CONTEXT_SCORE_CLIP, 1 - CONTEXT_SCORE_CLIP], so that 0 and 1 stay finite.
CONTEXT_FEATURES: tuple[str, ...] = ("logit_score", "rank_2plus", "several_files")
CONTEXT_SCORE_CLIP = 0.01


def context_features(score: float, rank: int, answer_files: int) -> tuple[float, ...]:
    """The context model's inputs for one file: 1 (the intercept), the log-odds of its score,
    whether it is ranked 2nd or lower, whether its answer holds more than one file.

    >>> [round(x, 3) for x in context_features(0.5, 1, 1)]
    [1.0, 0.0, 0.0, 0.0]
    >>> [round(x, 3) for x in context_features(1.0, 2, 3)]
    [1.0, 4.595, 1.0, 1.0]
    """
    s = min(max(score, CONTEXT_SCORE_CLIP), 1 - CONTEXT_SCORE_CLIP)
    return (1.0, math.log(s / (1 - s)), float(rank > 1), float(answer_files > 1))


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1 / (1 + math.exp(-z))
    e = math.exp(z)
    return e / (1 + e)


Coefficients = tuple[Annotated[float, Field(allow_inf_nan=False)], ...]


class ContextModel(_Model):
    """Precision conditioned on what is known when a file is gated: a logistic model of "this
    file is gold" on the file's score (log-odds), its rank (1st or lower) and its answer's size
    (one file or more), fitted on answers with known gold; its interval comes from refits on
    resamples of the data's repositories (or instances), so that it says how far the promise
    moves from one set of repositories to another."""

    kind: Literal["logistic"] = "logistic"
    features: tuple[str, ...] = Field(description="Names, in coefficient order after 1.")
    coefficients: Coefficients = Field(description="Intercept first, then one per feature.")
    draws: tuple[Coefficients, ...] = Field(
        description="The coefficients refitted on each bootstrap resample; the interval of a "
        "file's precision is the percentiles of its predictions under them."
    )
    level: float = Field(default=0.95, gt=0, lt=1, allow_inf_nan=False)
    unit: Literal["repository", "instance"] = Field(
        description="What the bootstrap resamples: repositories (a new repository's answers "
        "vary with it) or instances."
    )
    groups: Count = Field(description="Repositories (or instances) resampled.")
    instances: Count
    files: Count
    hits: Count
    penalty: float = Field(ge=0, allow_inf_nan=False, description="L2 on the non-intercept terms.")
    seed: Count = 0
    note: str = ""

    @model_validator(mode="after")
    def _shape(self) -> ContextModel:
        unknown = [f for f in self.features if f not in CONTEXT_FEATURES]
        if unknown or tuple(self.features) != CONTEXT_FEATURES[: len(self.features)]:
            raise ValueError(
                f"context model features {list(self.features)} are not this codegrep-gate's "
                f"{list(CONTEXT_FEATURES)}; upgrade codegrep-gate to read it"
            )
        n = len(self.features) + 1
        if len(self.coefficients) != n or any(len(d) != n for d in self.draws):
            raise ValueError(f"context model coefficients and every draw must have {n} numbers")
        if self.hits > self.files:
            raise ValueError(f"context model has {self.hits} hits among {self.files} files")
        return self

    def _x(self, score: float, rank: int, answer_files: int) -> tuple[float, ...]:
        return context_features(score, rank, answer_files)[: len(self.features) + 1]

    def precision(self, score: float, rank: int, answer_files: int) -> Interval:
        """The modelled precision of a file with this score, rank and answer size, with its
        percentile interval over the draws (the point when there are none)."""
        x = self._x(score, rank, answer_files)
        point = _sigmoid(math.fsum(c * v for c, v in zip(self.coefficients, x, strict=True)))
        dist = [_sigmoid(math.fsum(c * v for c, v in zip(d, x, strict=True))) for d in self.draws]
        low, high = percentile_interval(point, dist, self.level)
        return Interval(point=point, low=low, high=high, level=self.level)

    def describe(self) -> str:
        """`logistic on score, rank and answer size (365 files of 330 instances; interval
        over 16 repositories)`."""
        return (
            f"logistic on score, rank and answer size ({self.files} files of {self.instances} "
            f"instances; interval over {self.groups} "
            f"{'repositories' if self.unit == 'repository' else 'instances'})"
        )


class Calibration(_Model):
    """A retriever's measured precision: overall, by rank, and by score when it has scores."""

    SCHEMA_VERSION: ClassVar[int] = 1
    KIND: ClassVar[str] = "codegrep-calibration"

    schema_version: int = Field(default=1, ge=1)
    kind: Literal["codegrep-calibration"] = "codegrep-calibration"
    retriever: Retriever
    data: DataRef
    bootstrap: dict[str, Any] = Field(
        description="{'unit': 'instance', 'resamples': B, 'seed': s, 'level': 0.95, ...}"
    )
    precision: Interval = Field(
        description="swe-eval's macro precision: every instance with gold counts, a missing or "
        "empty answer as 0."
    )
    precision_answered: Interval = Field(
        description="Macro precision over answered instances only: what an injected list sees."
    )
    recall: Interval
    fbeta: Interval = Field(description="F0.5, swe-eval's definition (macro, missing = 0).")
    files_per_answer: float = Field(ge=0, allow_inf_nan=False)
    by_rank: Curve
    by_score: Curve | None = Field(description="None when the predictions carry no scores.")
    context: ContextModel | None = Field(
        default=None,
        description="Precision conditioned on score, rank and answer size (`calibrate(..., "
        "context=True)`); the gate prefers it when the answer carries scores. None: not fitted "
        "(a reader that does not know the field ignores it and reads the curves).",
    )
    checks: list[Check] = Field(default_factory=list)
    created_with: dict[str, str] = Field(description="Package versions that wrote it.")

    @field_validator("schema_version")
    @classmethod
    def _known_schema_version(cls, value: int) -> int:
        if value > cls.SCHEMA_VERSION:
            raise ValueError(
                f"calibration schema_version {value} is newer than this codegrep-gate knows "
                f"({cls.SCHEMA_VERSION}); upgrade codegrep-gate to read it"
            )
        return value

    @field_validator("bootstrap")
    @classmethod
    def _bootstrap_numbers(cls, value: dict[str, Any]) -> dict[str, Any]:
        # `check` measures again with these: a level or a count of resamples that is not one
        # would fail there, or give intervals of another confidence than the file says
        level = value.get("level")
        if level is not None and not (
            type(level) in (int, float) and math.isfinite(level) and 0 < level < 1
        ):
            raise ValueError(f"bootstrap level must be a number in (0, 1), not {level!r}")
        for key in ("resamples", "seed"):
            count = value.get(key)
            if count is not None and not (type(count) is int and count >= 0):
                raise ValueError(f"bootstrap {key} must be an integer >= 0, not {count!r}")
        return value

    @field_validator("by_rank")
    @classmethod
    def _rank_basis(cls, curve: Curve) -> Curve:
        if curve.basis != "rank":
            raise ValueError("by_rank must be a rank curve")
        return curve

    @field_validator("by_score")
    @classmethod
    def _score_basis(cls, curve: Curve | None) -> Curve | None:
        if curve is not None and curve.basis != "score":
            raise ValueError("by_score must be a score curve")
        return curve

    @property
    def level(self) -> float:
        return self.precision.level

    def with_check(self, check: Check) -> Calibration:
        """A copy with `check` appended to `checks` (this calibration is left as it is)."""
        return self.model_copy(update={"checks": [*self.checks, check]})

    def describe(self) -> str:
        """`lexical 0.1.0 (codegrep-model) on SWE-bench Lite (300 instances): precision ...`."""
        return (
            f"{self.retriever.describe()} on {self.data.describe()}: precision "
            f"{self.precision.fmt()}, answered {self.precision_answered.fmt()}"
        )
