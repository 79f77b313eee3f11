"""codegrep-gate: inject a retriever's files into a coding agent's prompt only where they pay.

Retrieved files help a frozen coding agent when their precision is high and hurt when it is low
(the CodeGrep paper: BM25 at precision 0.375 cost 0.6 pp of resolve rate and 21% more tokens,
0.45 was neutral, 0.68 paid). This package measures a retriever's precision with intervals
(`calibrate`, `check`), keeps the measurement as a `Calibration` record, decides per file
whether its measured precision clears a threshold (`gate`), and renders what passes into a
prompt (`render`, the OpenHands template). Precision means what swe-eval means by it.

Pure Python on codegrep-records, grpo-rewards (its F-beta) and pydantic.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from codegrep_gate._calibrate import calibrate, check
from codegrep_gate._data import CalibrationData, data_ref, load_calibration_data
from codegrep_gate._files import (
    choose_calibration,
    load_calibration,
    shipped_calibration,
    write_calibration,
)
from codegrep_gate._gate import GateConfig, GateDecision, gate
from codegrep_gate._records import Calibration, Check, Curve, Retriever
from codegrep_gate._render import (
    RENDER_STYLES,
    RenderStyle,
    candidate_files_column,
    openhands_template_path,
    render,
)
from codegrep_gate.errors import GateError

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("codegrep-gate")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

__all__ = [
    "RENDER_STYLES",
    "Calibration",
    "CalibrationData",
    "Check",
    "Curve",
    "GateConfig",
    "GateDecision",
    "GateError",
    "RenderStyle",
    "Retriever",
    "__version__",
    "calibrate",
    "candidate_files_column",
    "check",
    "choose_calibration",
    "data_ref",
    "gate",
    "load_calibration",
    "load_calibration_data",
    "openhands_template_path",
    "render",
    "shipped_calibration",
    "write_calibration",
]
