"""Calibration files: reading one with a one-line error for every way it can be wrong, writing
one, and the calibrations shipped inside the package (`codegrep_gate/calibrations/*.json`).
"""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from codegrep_records import describe_validation_error, parse_json
from pydantic import ValidationError

from codegrep_gate._records import Calibration
from codegrep_gate.errors import CalibrationFileError, GateError

__all__ = [
    "load_calibration",
    "parse_calibration",
    "shipped_calibration",
    "shipped_calibrations",
    "write_calibration",
]

_SHIPPED = "calibrations"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def parse_calibration(text: str, where: str) -> Calibration:
    """A calibration from JSON text; `where` names its source in every error."""
    try:  # too deep, 1e999, NaN, a 5,000-digit number: refused before anything is built
        data = parse_json(text)
    except ValueError as exc:
        raise CalibrationFileError(f"{where}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise CalibrationFileError(
            f"{where}: not a calibration: expected a JSON object, got {type(data).__name__}"
        )
    kind = data.get("kind")
    if kind != Calibration.KIND:
        found = "no kind field" if kind is None else f"kind {kind!r}"
        raise CalibrationFileError(
            f"{where}: not a CodeGrep calibration: {found}, expected kind {Calibration.KIND!r}"
        )
    version = data.get("schema_version")
    if type(version) is int and version > Calibration.SCHEMA_VERSION:  # not a bool, not None
        raise CalibrationFileError(
            f"{where}: calibration schema_version {version} is newer than this "
            f"codegrep-gate knows ({Calibration.SCHEMA_VERSION}); upgrade codegrep-gate "
            "to read it"
        )
    try:
        return Calibration.model_validate(data)
    except ValidationError as exc:
        detail = describe_validation_error(exc).replace("\n", " ")
        raise CalibrationFileError(f"{where}: invalid calibration: {detail}") from None


def load_calibration(path: str | Path) -> Calibration:
    """Read a calibration file; `CalibrationFileError` (naming the file) when it cannot be used."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CalibrationFileError(f"{p}: no such calibration file") from None
    except IsADirectoryError:
        raise CalibrationFileError(f"{p}: is a directory, not a calibration file") from None
    except UnicodeDecodeError as exc:
        raise CalibrationFileError(
            f"{p}: not UTF-8 text (byte {exc.start}); not a calibration file"
        ) from None
    except OSError as exc:
        raise CalibrationFileError(f"{p}: cannot read: {exc.strerror or exc}") from None
    return parse_calibration(text, str(p))


def write_calibration(path: str | Path, calibration: Calibration) -> Path:
    """Write `calibration` as indented JSON (parent folder created); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(calibration.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return p


def _shipped_folder() -> Traversable:
    return resources.files("codegrep_gate").joinpath(_SHIPPED)


def shipped_calibrations() -> list[str]:
    """Names of the calibrations shipped with this release (`shipped_calibration(name)`)."""
    folder = _shipped_folder()
    if not folder.is_dir():
        return []
    return sorted(
        entry.name[: -len(".json")]
        for entry in folder.iterdir()
        if entry.name.endswith(".json") and entry.is_file()
    )


def shipped_calibration(name: str = "lexical") -> Calibration:
    """The calibration `name` shipped with this release, e.g. of the model-free lexical policy.

    Raises `GateError` naming the shipped ones when there is none by that name.
    """
    available = shipped_calibrations()
    if not _NAME.match(name) or name not in available:
        listed = ", ".join(available) if available else "none in this release"
        raise GateError(f"no shipped calibration named {name!r}; shipped: {listed}")
    entry = _shipped_folder().joinpath(f"{name}.json")
    return parse_calibration(
        entry.read_text(encoding="utf-8"), f"codegrep_gate/{_SHIPPED}/{name}.json"
    )
