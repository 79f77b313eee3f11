"""Calibration files: a round trip, one clear line for every way a file can be wrong, and the
calibrations shipped in the package."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from codegrep_gate import (
    Calibration,
    GateError,
    Retriever,
    calibrate,
    data_ref,
    load_calibration,
    shipped_calibration,
    write_calibration,
)
from codegrep_gate._files import shipped_calibrations
from codegrep_gate.errors import CalibrationFileError
from codegrep_records import Prediction
from pydantic import ValidationError


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


def _claiming(good: dict[str, Any], claim: object) -> dict[str, Any]:
    """`good` with every precision (overall and per bin) claimed to be `claim`."""
    bad = copy.deepcopy(good)
    lie = {"point": claim, "low": claim, "high": claim, "level": 0.95}
    bad["precision"] = bad["precision_answered"] = lie
    for curve in (bad["by_rank"], bad["by_score"]):
        for b in curve["bins"]:
            b["precision"] = lie
    return bad


@pytest.mark.parametrize("claim", [7.5, -2])
def test_a_precision_outside_0_1_is_refused_naming_the_field(tmp_path: Path, claim: float) -> None:
    """A precision of 7.5 (or -2) would clear any threshold (or none): refused, so no gate is
    ever built on it."""
    good = json.loads(_calibration().model_dump_json())
    message = _error(_write(tmp_path, _claiming(good, claim)))
    assert "invalid calibration: precision.point: Input should be" in message
    # each place a precision sits is held to [0, 1] on its own
    bin_only = copy.deepcopy(good)
    bin_only["by_rank"]["bins"][0]["precision"]["high"] = claim
    assert "by_rank.bins.0.precision.high: Input should be" in _error(_write(tmp_path, bin_only))
    with pytest.raises(ValidationError):
        Calibration.model_validate(_claiming(good, claim))


@pytest.mark.parametrize(
    ("where", "value", "expected"),
    [
        # NaN is refused by the JSON reader itself, before validation
        (("precision", "low"), float("nan"), "not JSON: NaN is not a number JSON allows"),
        (("recall", "high"), 1.5, "recall.high: Input should be less than or equal to 1"),
        (("fbeta", "level"), 1.0, "fbeta.level: Input should be less than 1"),
        (("data", "scored"), -1, "data.scored: Input should be greater than or equal to 0"),
        (("data", "instances"), 2.5, "data.instances: Input should be a valid integer"),
        (("data", "missing"), "3", "data.missing: Input should be a valid integer"),
        (("data", "no_gold"), True, "data.no_gold: Input should be a valid integer"),
        (("by_rank", "bins", 0, "files"), 1.0, "by_rank.bins.0.files: Input should be a valid"),
        (("bootstrap", "level"), 7.5, "bootstrap: bootstrap level must be a number in (0, 1)"),
        (("bootstrap", "resamples"), -5, "bootstrap: bootstrap resamples must be an integer"),
    ],
)
def test_every_number_is_held_to_what_it_can_be(
    tmp_path: Path, where: tuple[str | int, ...], value: object, expected: str
) -> None:
    good = json.loads(_calibration().model_dump_json())
    bad = copy.deepcopy(good)
    node: Any = bad
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    text = json.dumps(bad)  # NaN written as json.dumps (and some other writers) write it
    assert expected in _error(_write(tmp_path, text))


def test_bins_must_be_ordered_and_agree_with_their_counts(tmp_path: Path) -> None:
    good = json.loads(_calibration().model_dump_json())
    rank_bins = good["by_rank"]["bins"]
    assert len(rank_bins) >= 2
    swapped = copy.deepcopy(good)
    swapped["by_rank"]["bins"] = rank_bins[::-1]
    assert "by_rank.bins: bins must be sorted by lo" in _error(_write(tmp_path, swapped))
    open_early = copy.deepcopy(good)
    open_early["by_rank"]["bins"][0]["hi"] = None
    assert "only the last bin may be open-ended" in _error(_write(tmp_path, open_early))
    overlap = copy.deepcopy(good)
    score_bins = overlap["by_score"]["bins"]
    assert len(score_bins) >= 2
    score_bins[0]["hi"] = score_bins[1]["lo"] + 0.01
    assert "by_score.bins: bins overlap: one ends at" in _error(_write(tmp_path, overlap))
    fractional = copy.deepcopy(good)
    fractional["by_rank"]["bins"][0]["lo"] = fractional["by_rank"]["bins"][0]["hi"] = 0.5
    assert "a rank bin covers one rank of 1 or more" in _error(_write(tmp_path, fractional))
    # a point the bin's counts do not give: 1 of 4 files gold, claimed 0.9
    inflated = copy.deepcopy(good)
    b = inflated["by_rank"]["bins"][0]
    b["files"], b["hits"], b["instances"] = 4, 1, 4
    b["precision"] = {"point": 0.9, "low": 0.8, "high": 1.0, "level": 0.95}
    message = _error(_write(tmp_path, inflated))
    assert "by_rank.bins.0: bin precision 0.9 is not its 1 hits among 4 files" in message


def test_hostile_numbers_and_nesting_are_refused_before_validation(tmp_path: Path) -> None:
    good = _calibration().model_dump_json()
    huge = good.replace('"schema_version":1', '"schema_version":1' + "0" * 5000, 1)
    assert huge != good
    assert "not JSON: number too long" in _error(_write(tmp_path, huge))
    assert "not JSON: number out of range: 1e999" in _error(
        _write(tmp_path, good[:-1] + ', "extra": 1e999}')
    )
    assert "not JSON: nested too deeply" in _error(_write(tmp_path, "[" * 100_000))


def test_choose_calibration_is_one_rule_for_every_gate(tmp_path: Path) -> None:
    """A file when given; else the retriever's shipped one; predictions naming no retriever
    get the lexical one; a retriever with none shipped has none (or None when not required)."""
    from codegrep_gate import choose_calibration
    from codegrep_gate.errors import CalibrationMismatchError

    lexical = choose_calibration("lexical")
    assert lexical is not None
    assert (lexical.source, lexical.shipped) == ("shipped:lexical", True)
    unnamed = choose_calibration(None)
    assert unnamed is not None
    assert unnamed.source == "shipped:lexical"
    with pytest.raises(GateError, match=r"no calibration for 'bm25' \(shipped: .*lexical"):
        choose_calibration("bm25")
    assert choose_calibration("bm25", required=False) is None
    path = write_calibration(tmp_path / "lex.json", shipped_calibration("lexical"))
    from_file = choose_calibration("lexical", path)
    assert from_file is not None
    assert (from_file.source, from_file.shipped) == (str(path), False)
    with pytest.raises(CalibrationMismatchError, match="measured retriever 'lexical', not 'bm25'"):
        choose_calibration("bm25", path)
    with pytest.raises(CalibrationMismatchError, match=r"major\.minor differ"):
        choose_calibration("lexical", path, version="99.0")
