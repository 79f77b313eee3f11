"""Calibration files: reading one with a one-line error for every way it can be wrong, writing
one, the calibrations shipped inside the package (`codegrep_gate/calibrations/*.json`), and the
one rule for which calibration gates a retriever (`choose_calibration`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from codegrep_records.io import describe_validation_error, parse_json
from pydantic import ValidationError

from codegrep_gate._records import Calibration
from codegrep_gate.errors import CalibrationFileError, CalibrationMismatchError, GateError

__all__ = [
    "CalibrationChoice",
    "choose_calibration",
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


#: The retriever whose shipped calibration gates predictions that name no retriever.
DEFAULT_RETRIEVER = "lexical"


@dataclass(frozen=True)
class CalibrationChoice:
    """The calibration chosen, and where it came from: the file, or `shipped:<name>`."""

    calibration: Calibration
    source: str

    @property
    def shipped(self) -> bool:
        return self.source.startswith("shipped:")


def choose_calibration(
    retriever: str | None,
    path: str | Path | None = None,
    *,
    version: str | None = None,
    required: bool = True,
    definitions: str | None = None,
) -> CalibrationChoice | None:
    """The calibration that gates `retriever` (at `version`): the one rule every gate follows
    (`codegrep localize --gate`, `codegrep serve`, swe-eval's downstream plan).

    The file at `path` when one is given; else the one shipped for `retriever`; else, for
    predictions that name no retriever (`retriever` None), the lexical policy's, which is then
    assumed to fit them. A retriever with no shipped calibration and no file has none: a
    `GateError` saying how to make one (or None when not `required`). The choice is then checked
    against `retriever`, `version` and `definitions` (`Retriever.mismatch`):
    `CalibrationMismatchError` with the reason alone, so the caller names its own flag. A file
    that cannot be read is the `CalibrationFileError` of `load_calibration` (it names the file).
    """
    if path is not None:
        choice = CalibrationChoice(load_calibration(path), str(path))
    else:
        name = DEFAULT_RETRIEVER if retriever is None else retriever
        shipped = shipped_calibrations()
        if name not in shipped:
            if not required:
                return None
            listed = ", ".join(shipped) or "none"
            raise GateError(
                f"no calibration for {name!r} (shipped: {listed}): measure one with "
                "`codegrep calibrate` on its predictions"
            )
        choice = CalibrationChoice(shipped_calibration(name), f"shipped:{name}")
    if retriever is not None:
        problem = choice.calibration.retriever.mismatch(retriever, version, definitions)
        if problem is not None:
            raise CalibrationMismatchError(problem)
    return choice
