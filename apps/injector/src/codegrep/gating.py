"""The gate and the injection of one answer: the one path that `codegrep localize --gate`,
`codegrep serve` (HTTP and MCP) take from a retriever's ranked files to what is injected.

`calibration_for` finds the calibration a policy is gated with (a file, else the one shipped
for it) and checks that it was measured on that retriever; `apply` gates the files with it and
renders what passes (`codegrep_gate.gate` and `render`: the same code swe-eval's downstream
evaluation uses).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from codegrep_gate import (
    Calibration,
    GateConfig,
    GateDecision,
    GateError,
    RenderStyle,
    choose_calibration,
    gate,
    render,
)
from codegrep_gate.errors import CalibrationFileError, CalibrationMismatchError

from codegrep.errors import InjectorError

__all__ = ["CalibrationChoiceError", "Gated", "apply", "calibration_for", "retriever_version"]

# "agent" is swe-eval's name for predictions of a served model run by codegrep-model's engine;
# every policy kind names its own package in codegrep-model's `POLICY_KINDS`.
_ALSO_IMPLEMENTED_BY = {"agent": "codegrep-model"}


class CalibrationChoiceError(InjectorError):
    """No calibration fits: none given and none shipped, unreadable, or another retriever's."""


def retriever_version(name: str) -> tuple[str | None, str | None]:
    """(package, version) of the code behind retriever `name` (`lexical`, `openai:MODEL`)."""
    from codegrep_model.policies.spec import POLICY_KINDS

    kind = name.split(":", 1)[0]
    entry = POLICY_KINDS.get(kind)
    package = entry.package if entry is not None else _ALSO_IMPLEMENTED_BY.get(kind)
    if package is None:
        return None, None
    try:
        return package, metadata.version(package)
    except metadata.PackageNotFoundError:
        return package, None


def calibration_for(
    policy_name: str, path: Path | None = None, *, required: bool = True
) -> Calibration | None:
    """The calibration to gate `policy_name` with, by codegrep-gate's one rule
    (`codegrep_gate.choose_calibration`: the file at `path`, else the one shipped for it; only
    `lexical` has one, a served model needs its own file, from `codegrep calibrate`), checked
    against the policy's version and this process's definitions mode
    (`codegrep_model.definitions_mode`). Raises `CalibrationChoiceError` naming the flag when it
    cannot be read, was measured on another retriever or version, or (with `required`) when
    there is none; returns None when there is none and it is not required."""
    from codegrep_model import definitions_mode

    where = f"--calibration {path}" if path is not None else "the shipped calibration"
    try:
        choice = choose_calibration(
            policy_name,
            path,
            version=retriever_version(policy_name)[1],
            required=required,
            definitions=definitions_mode(),
        )
    except CalibrationFileError as exc:
        raise CalibrationChoiceError(f"{where}: {exc}") from exc
    except CalibrationMismatchError as exc:
        raise CalibrationChoiceError(
            f"{where} does not fit this retriever: {exc} (measure one for "
            f"{policy_name!r} with `codegrep calibrate`)"
        ) from exc
    except GateError as exc:
        raise CalibrationChoiceError(f"{exc} and give it with --calibration FILE") from exc
    return None if choice is None else choice.calibration


@dataclass(frozen=True)
class Gated:
    """What is injected: the files, the gate's decision (None when not gated), the text."""

    injected: list[str]
    decision: GateDecision | None
    injection: str | None


def apply(
    files: Sequence[str],
    scores: Sequence[float] | None,
    *,
    calibration: Calibration | None,
    config: GateConfig | None,
    policy_name: str,
    max_files: int | None = None,
    inject: RenderStyle | None = None,
) -> Gated:
    """Gate `files` (when `config` is given; `calibration` must be too) and render what passes.

    Ungated, every file is injected, cut to `max_files`; gated, `max_files` is the gate's own
    cut (`GateConfig.max_files`) unless the config already has one.
    """
    decision = None
    if config is not None:
        if calibration is None:
            raise CalibrationChoiceError("gating needs a calibration; none is loaded")
        if max_files is not None and config.max_files is None:
            config = config.model_copy(update={"max_files": max_files})
        decision = gate(
            files,
            scores,
            calibration,
            config,
            retriever=policy_name,
            version=retriever_version(policy_name)[1],
        )
        injected = list(decision.injected)
    else:
        injected = list(files[:max_files] if max_files is not None else files)
    injection = None if inject is None else render(injected, inject, decision=decision)
    return Gated(injected, decision, injection)
