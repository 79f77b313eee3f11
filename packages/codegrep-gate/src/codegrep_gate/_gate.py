"""The gate: which of a retriever's files to inject, file by file, on measured precision.

The CodeGrep paper found that injected files hurt a frozen coding agent when their precision is
low (BM25, precision 0.375: resolve rate -0.6 pp, resolved tokens +21%), are neutral around
0.45 (Jina, 0.445) and pay around 0.68 (CodeGrep, 0.677). So a file is injected only when the
precision measured for files like it (same rank, or same score range) clears a threshold, 0.45
by default, and by default with its 95% lower bound rather than its point estimate.

Every decision carries its reason: the measured precision with its interval, the bin it was
read from, the threshold, and the data it was measured on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from codegrep_gate._records import Bin, Calibration, ContextModel, Curve, Interval
from codegrep_gate.errors import CalibrationMismatchError, GateError, GateInputError

__all__ = [
    "FileDecision",
    "GateConfig",
    "GateDecision",
    "gate",
]

# The comparison with the threshold is inclusive; this slack keeps a precision that is the
# threshold in exact arithmetic (9/20 against 0.45) from being dropped by float rounding.
_EPS = 1e-12


class GateConfig(BaseModel):
    """How strict the gate is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    threshold: float = Field(
        default=0.45,
        ge=0,
        le=1,
        description="Inject a file when its calibrated precision is at least this. 0.45: the "
        "paper's neutral point; 0.68 asks for the regime where injection paid.",
    )
    bound: Literal["lower", "point"] = Field(
        default="lower",
        description="Compare the interval's lower bound (cautious) or its point estimate.",
    )
    basis: Literal["auto", "context", "score", "rank"] = Field(
        default="auto",
        description="auto: the context model when the calibration has one and scores are "
        "given, else the score curve when it has one and scores are given, else the rank "
        "curve.",
    )
    max_files: int | None = Field(
        default=None, ge=0, description="Inject at most this many of the files that clear."
    )

    def describe_bound(self, level: float) -> str:
        if self.bound == "lower":
            return f"{level:.0%} lower bound"
        return "point estimate"


class FileDecision(BaseModel):
    """What the gate decided for one file, and why."""

    model_config = ConfigDict(frozen=True)

    path: str
    rank: int = Field(ge=1)
    score: float | None
    basis: Literal["rank", "score", "context"]
    bin: str = Field(
        description="The bin its precision was read from, e.g. 'rank 2', or for the context "
        "model the file's context, e.g. 'score 0.55, rank 1 of 1'."
    )
    precision: Interval
    kept: bool
    reason: str


class GateDecision(BaseModel):
    """The files to inject, a decision per file, and one line a human reads."""

    model_config = ConfigDict(frozen=True)

    injected: list[str]
    files: list[FileDecision]
    config: GateConfig
    calibration: dict[str, Any] = Field(
        description="Retriever name and version, data name, instances, overall precision."
    )
    summary: str


def _choose_curve(
    calibration: Calibration, scores: Sequence[float] | None, basis: str
) -> Curve | ContextModel:
    if basis == "rank":
        return calibration.by_rank
    if basis == "context":
        if calibration.context is None:
            raise GateError(
                "basis 'context' asked for, but the calibration has no context model (made "
                "with `calibrate(..., context=True)`, `codegrep calibrate --context`); use "
                "basis 'score', 'rank' or 'auto'"
            )
        if scores is None:
            raise GateError("basis 'context' asked for, but no scores were given with the files")
        return calibration.context
    if basis == "score":
        if calibration.by_score is None:
            raise GateError(
                "basis 'score' asked for, but the calibration has no score curve (its "
                "predictions carried no scores); use basis 'rank' or 'auto'"
            )
        if scores is None:
            raise GateError("basis 'score' asked for, but no scores were given with the files")
        return calibration.by_score
    if calibration.context is not None and scores is not None:
        return calibration.context
    if calibration.by_score is not None and scores is not None:
        return calibration.by_score
    return calibration.by_rank


def _check_inputs(files: Sequence[str], scores: Sequence[float] | None) -> None:
    if isinstance(files, str):
        raise GateInputError(f"files must be a sequence of paths, got the string {files!r}")
    if scores is None:
        return
    if len(scores) != len(files):
        raise GateInputError(
            f"{len(scores)} score(s) for {len(files)} file(s); give one score per file or none"
        )
    bad = [s for s in scores if not math.isfinite(s)]
    if bad:
        raise GateInputError(f"scores must be finite numbers, got {bad[0]!r}")


def _summary_of(calibration: Calibration) -> dict[str, Any]:
    r = calibration.retriever
    return {
        "retriever": r.name,
        "version": r.version,
        "package": r.package,
        "data": calibration.data.name,
        "instances": calibration.data.instances,
        "scored": calibration.data.scored,
        "precision": calibration.precision.point,
        "precision_answered": calibration.precision_answered.point,
        "level": calibration.level,
    }


def _against(value: float, threshold: float) -> str:
    """`value` to two decimals, or to as many as show how it differs from `threshold`."""
    text = f"{value:.2f}"
    if value != threshold and text == f"{threshold:.2f}":
        text = f"{value:.6g}"
    return text


def _measured(b: Bin, basis: Literal["rank", "score"], calibration: Calibration) -> str:
    p = b.precision
    return (
        f"{b.describe(basis)}: measured precision {p.point:.2f} ({p.level:.0%} interval "
        f"{p.low:.2f}-{p.high:.2f}, {b.hits} of {b.files} files gold) on "
        f"{calibration.data.describe()}"
    )


def _modelled(model: ContextModel, where: str, p: Interval, calibration: Calibration) -> str:
    return (
        f"{where}: modelled precision {p.point:.2f} ({p.level:.0%} interval "
        f"{p.low:.2f}-{p.high:.2f}; {model.describe()}) on {calibration.data.describe()}"
    )


def _unique_count(files: Sequence[str]) -> int:
    return len(dict.fromkeys(files))


def gate(
    files: Sequence[str],
    scores: Sequence[float] | None,
    calibration: Calibration,
    config: GateConfig | None = None,
    *,
    retriever: str | None = None,
    version: str | None = None,
) -> GateDecision:
    """Decide which of `files` (ranked, best first) to inject.

    A file is kept when the calibrated precision of its bin (by score or by rank, see
    `GateConfig.basis`) has its lower bound (or point, `bound="point"`) at or above
    `threshold`; then at most `max_files` of the kept files, in rank order. A path named twice
    is decided once, at its first rank. When no file clears, nothing is injected.

    With `retriever` (and `version`), the calibration must have measured that retriever, and
    that major.minor version when both are known: `CalibrationMismatchError` otherwise.
    `GateInputError` when `scores` do not line up with `files`.
    """
    config = config or GateConfig()
    if retriever is not None:
        why = calibration.retriever.mismatch(retriever, version)
        if why is not None:
            raise CalibrationMismatchError(why)
    _check_inputs(files, scores)
    curve = _choose_curve(calibration, scores, config.basis)
    basis: Literal["rank", "score", "context"] = (
        "context" if isinstance(curve, ContextModel) else curve.basis
    )
    answer_files = _unique_count(files)
    bound_text = config.describe_bound(calibration.level)
    decisions: list[FileDecision] = []
    injected: list[str] = []
    seen: dict[str, int] = {}
    cut = 0
    for j, path in enumerate(files):
        rank = j + 1
        score = None if scores is None else float(scores[j])
        if isinstance(curve, ContextModel):
            assert score is not None  # _choose_curve gives the model only with scores
            # a repeated path is decided at its first rank: its rank among distinct paths
            distinct = len(dict.fromkeys(files[:j])) + 1
            precision = curve.precision(score, distinct, answer_files)
            where = f"score {score:.2f}, rank {distinct} of {answer_files}"
            measured = _modelled(curve, where, precision, calibration)
        else:
            x = score if basis == "score" and score is not None else float(rank)
            b = curve.lookup(x)
            precision = b.precision
            where = b.describe(curve.basis)
            measured = _measured(b, curve.basis, calibration)
        value = precision.low if config.bound == "lower" else precision.point
        if path in seen:
            kept, reason = False, f"repeats the file at rank {seen[path]}; decided there"
        elif value + _EPS >= config.threshold:
            clears = (
                f"{bound_text} {_against(value, config.threshold)} >= threshold "
                f"{config.threshold:g}"
            )
            if config.max_files is not None and len(injected) >= config.max_files:
                kept = False
                cut += 1
                reason = f"{measured}; {clears}, but max_files={config.max_files} is reached"
            else:
                kept = True
                reason = f"{measured}; {clears}: injected"
        else:
            kept = False
            reason = (
                f"{measured}; {bound_text} {_against(value, config.threshold)} < threshold "
                f"{config.threshold:g}: not injected"
            )
        seen.setdefault(path, rank)
        if kept:
            injected.append(path)
        decisions.append(
            FileDecision(
                path=path,
                rank=rank,
                score=score,
                basis=basis,
                bin=where,
                precision=precision,
                kept=kept,
                reason=reason,
            )
        )
    summary = _summary(decisions, injected, cut, config, calibration, bound_text)
    return GateDecision(
        injected=injected,
        files=decisions,
        config=config,
        calibration=_summary_of(calibration),
        summary=summary,
    )


def _summary(
    decisions: Sequence[FileDecision],
    injected: Sequence[str],
    cut: int,
    config: GateConfig,
    calibration: Calibration,
    bound_text: str,
) -> str:
    where = f"on {calibration.data.name}, retriever {calibration.retriever.describe()}"
    if not decisions:
        return "nothing injected: the retriever returned no files"
    if not injected:
        if cut:
            return f"nothing injected: max_files={config.max_files}"
        best = max(
            decisions,
            key=lambda d: d.precision.low if config.bound == "lower" else d.precision.point,
        )
        value = best.precision.low if config.bound == "lower" else best.precision.point
        return (
            f"nothing injected: no file's calibrated precision ({bound_text}) clears "
            f"{config.threshold:g} {where}; best {value:.2f} ({best.bin})"
        )
    text = (
        f"{len(injected)} of {len(decisions)} files injected: calibrated precision "
        f"({bound_text}) >= {config.threshold:g} {where}"
    )
    if cut:
        text += f"; {cut} more cleared but max_files={config.max_files}"
    return text
