"""Calibration files: a round trip, one clear line for every way a file can be wrong, and the
calibrations shipped in the package."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from codegrep_gate import (
    Calibration,
    CalibrationFileError,
    GateError,
    Retriever,
    calibrate,
    data_ref,
    load_calibration,
    shipped_calibration,
    shipped_calibrations,
    write_calibration,
)
from codegrep_records import Prediction


def _calibration() -> Calibration:
    gold = {f"i{k}": frozenset({f"g{k}.py"}) for k in range(12)}
    preds = [
        Prediction(
            instance_id=f"i{k}",
            files=(f"g{k}.py" if k % 3 else "x.py", "y.py"),
            scores=(0.9 - k / 100, 0.2),
        )
        for k in range(12)
    ]
    return calibrate(
        preds,
        gold,
        retriever=Retriever(name="toy", version="0.1.0", config={"max_turns": 4}),
        data=data_ref("toy"),
        resamples=100,
        min_bin_files=4,
    )


def test_round_trip(tmp_path: Path) -> None:
    cal = _calibration()
    assert cal.by_score is not None
    path = write_calibration(tmp_path / "deep" / "toy.json", cal)
    back = load_calibration(path)
    assert back == cal
    assert Calibration.model_validate_json(cal.model_dump_json()) == cal
    raw = json.loads(path.read_text())
    assert raw["kind"] == "codegrep-calibration"
    assert raw["schema_version"] == 1
    assert raw["created_with"]["codegrep-gate"] == "0.1.0"
    assert raw["retriever"]["config"] == {"max_turns": 4}


def _write(tmp_path: Path, value: object) -> Path:
    path = tmp_path / "cal.json"
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return path


def _error(path: Path) -> str:
    with pytest.raises(CalibrationFileError) as info:
        load_calibration(path)
    message = str(info.value)
    assert message.startswith(str(path) + ": ")
    assert "\n" not in message
    return message


def test_errors_name_the_file_on_one_line(tmp_path: Path) -> None:
    good = json.loads(_calibration().model_dump_json())
    assert "no such calibration file" in _error(tmp_path / "missing.json")
    assert "is a directory" in _error(tmp_path)
    assert "not JSON: Expecting value (line 1, column 1)" in _error(_write(tmp_path, "nope"))
    assert "expected a JSON object, got list" in _error(_write(tmp_path, [good]))
    assert "no kind field" in _error(_write(tmp_path, {**good, "kind": None}))
    assert "kind 'codegrep-labels'" in _error(_write(tmp_path, {**good, "kind": "codegrep-labels"}))
    newer = _error(_write(tmp_path, {**good, "schema_version": 2}))
    assert "schema_version 2 is newer than this codegrep-gate knows (1)" in newer
    assert "upgrade codegrep-gate" in newer
    missing = {k: v for k, v in good.items() if k != "by_rank"}
    assert "invalid calibration: by_rank: Field required" in _error(_write(tmp_path, missing))
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe{")
    assert "not UTF-8" in _error(tmp_path / "bin.json")
    assert issubclass(CalibrationFileError, GateError)


def test_an_interval_out_of_order_is_invalid(tmp_path: Path) -> None:
    good = json.loads(_calibration().model_dump_json())
    good["precision"] = {"point": 0.5, "low": 0.6, "high": 0.7, "level": 0.95}
    assert "low <= point <= high" in _error(_write(tmp_path, good))


def test_shipped_calibrations_load() -> None:
    names = shipped_calibrations()
    assert all(isinstance(n, str) and n for n in names)
    for name in names:
        cal = shipped_calibration(name)
        # a shipped calibration was measured on files it names and hashes
        assert cal.data.instances_sha256
        assert cal.data.predictions_sha256
        assert cal.data.scored > 0


def test_an_absent_shipped_calibration_names_the_shipped_ones() -> None:
    listed = ", ".join(shipped_calibrations()) or "none in this release"
    with pytest.raises(
        GateError, match=f"no shipped calibration named 'no-such'; shipped: {listed}"
    ):
        shipped_calibration("no-such")
    with pytest.raises(GateError, match="no shipped calibration"):
        shipped_calibration("../calibrations/README")


def test_hostile_numbers_and_nesting_are_refused_before_validation(tmp_path: Path) -> None:
    good = _calibration().model_dump_json()
    huge = good.replace('"schema_version":1', '"schema_version":1' + "0" * 5000, 1)
    assert huge != good
    assert "not JSON: number too long" in _error(_write(tmp_path, huge))
    assert "not JSON: number out of range: 1e999" in _error(
        _write(tmp_path, good[:-1] + ', "extra": 1e999}')
    )
    assert "not JSON: nested too deeply" in _error(_write(tmp_path, "[" * 100_000))
