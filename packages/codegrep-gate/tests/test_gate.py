"""Gate decisions on a calibration written by hand, so every boundary is known exactly."""

from __future__ import annotations

import pytest
from codegrep_gate import Calibration, Curve, GateConfig, GateError, Retriever, gate
from codegrep_gate._records import Bin, DataRef, Interval
from codegrep_gate.errors import CalibrationMismatchError, GateInputError
from pydantic import ValidationError


def _bin(lo: float, hi: float | None, point: float, low: float, high: float) -> Bin:
    return Bin(
        lo=lo,
        hi=hi,
        files=100,
        hits=round(100 * point),
        instances=100,
        precision=Interval(point=point, low=low, high=high),
    )


BY_RANK = Curve(
    basis="rank",
    method="by hand",
    bins=[
        _bin(1, 1, 0.70, 0.45, 0.80),  # lower bound exactly at the default threshold
        _bin(2, 2, 0.50, 0.449999, 0.60),  # lower bound just below it
        _bin(3, None, 0.30, 0.20, 0.40),
    ],
)
BY_SCORE = Curve(
    basis="score",
    method="by hand",
    bins=[
        _bin(0.0, 0.4, 0.20, 0.10, 0.30),
        _bin(0.5, 0.7, 0.50, 0.46, 0.55),
        _bin(0.8, 1.0, 0.80, 0.70, 0.90),
    ],
)


def _calibration(by_score: Curve | None = BY_SCORE) -> Calibration:
    iv = Interval(point=0.5, low=0.4, high=0.6)
    return Calibration(
        retriever=Retriever(name="lexical", version="0.1.0", package="codegrep-model"),
        data=DataRef(name="SWE-bench Lite", instances=300, scored=290),
        bootstrap={"unit": "instance", "resamples": 1000, "seed": 0, "level": 0.95},
        precision=iv,
        precision_answered=iv,
        recall=iv,
        fbeta=iv,
        files_per_answer=2.5,
        by_rank=BY_RANK,
        by_score=by_score,
        created_with={"codegrep-gate": "0.1.0"},
    )


CAL = _calibration()
FILES = ["a.py", "b.py", "c.py"]


def test_lower_bound_at_the_threshold_is_kept_just_below_is_dropped() -> None:
    d = gate(FILES, None, CAL)
    assert [f.kept for f in d.files] == [True, False, False]
    assert d.injected == ["a.py"]
    assert [f.bin for f in d.files] == ["rank 1", "rank 2", "rank 3+"]
    assert all(f.basis == "rank" for f in d.files)  # auto without scores: the rank curve
    assert d.summary.startswith(
        "1 of 3 files injected: calibrated precision (95% lower bound) >= 0.45 on SWE-bench Lite"
    )
    assert d.summary.endswith("on SWE-bench Lite, retriever lexical 0.1.0 (codegrep-model)")


def test_every_reason_says_precision_interval_bin_threshold_and_data() -> None:
    d = gate(FILES, None, CAL)
    kept, dropped = d.files[0].reason, d.files[1].reason
    assert kept == (
        "rank 1: measured precision 0.70 (95% interval 0.45-0.80, 70 of 100 files gold) on "
        "SWE-bench Lite (300 instances); 95% lower bound 0.45 >= threshold 0.45: injected"
    )
    assert "rank 2: measured precision 0.50 (95% interval 0.45-0.60" in dropped
    assert "95% lower bound 0.449999 < threshold 0.45: not injected" in dropped
    assert d.files[1].precision.low == 0.449999


def test_point_bound() -> None:
    d = gate(FILES, None, CAL, GateConfig(bound="point"))
    assert d.injected == ["a.py", "b.py"]
    assert "point estimate 0.50 >= threshold 0.45" in d.files[1].reason
    assert "(point estimate)" in d.summary


def test_a_higher_threshold() -> None:
    d = gate(FILES, None, CAL, GateConfig(threshold=0.68, bound="point"))
    assert d.injected == ["a.py"]
    assert "threshold 0.68" in d.files[0].reason


def test_auto_uses_scores_when_both_sides_have_them() -> None:
    d = gate(FILES, [0.9, 0.6, 0.45], CAL)
    assert [f.basis for f in d.files] == ["score", "score", "score"]
    # 0.45 lies between the first two score bins: the lower, more cautious one
    assert [f.bin for f in d.files] == ["score 0.80-1.00", "score 0.50-0.70", "score 0.00-0.40"]
    assert d.injected == ["a.py", "b.py"]
    assert [f.score for f in d.files] == [0.9, 0.6, 0.45]
    # scores below the first bin read the first, above the last the last
    low, high = gate(["x", "y"], [-3.0, 7.0], CAL).files
    assert (low.bin, high.bin) == ("score 0.00-0.40", "score 0.80-1.00")


def test_auto_falls_back_to_rank_without_a_score_curve() -> None:
    d = gate(FILES, [0.9, 0.6, 0.45], _calibration(by_score=None))
    assert [f.basis for f in d.files] == ["rank", "rank", "rank"]
    assert d.injected == ["a.py"]


def test_basis_rank_and_score_forced() -> None:
    assert gate(FILES, [0.9, 0.6, 0.45], CAL, GateConfig(basis="rank")).injected == ["a.py"]
    with pytest.raises(GateError, match="no scores were given"):
        gate(FILES, None, CAL, GateConfig(basis="score"))
    with pytest.raises(GateError, match="no score curve"):
        gate(FILES, [0.9, 0.6, 0.45], _calibration(by_score=None), GateConfig(basis="score"))


def test_max_files_cuts_after_the_gate() -> None:
    d = gate(FILES, [0.9, 0.85, 0.6], CAL, GateConfig(max_files=2))
    assert d.injected == ["a.py", "b.py"]
    assert not d.files[2].kept
    assert "but max_files=2 is reached" in d.files[2].reason
    assert d.summary.endswith("; 1 more cleared but max_files=2")
    none = gate(FILES, [0.9, 0.85, 0.6], CAL, GateConfig(max_files=0))
    assert none.injected == []
    assert none.summary == "nothing injected: max_files=0"


def test_nothing_injected() -> None:
    d = gate(["c.py"], [0.1], CAL)
    assert d.injected == []
    assert d.summary.startswith(
        "nothing injected: no file's calibrated precision (95% lower bound) clears 0.45 "
        "on SWE-bench Lite, retriever lexical 0.1.0 (codegrep-model); best 0.10 (score 0.00-0.40)"
    )
    empty = gate([], None, CAL)
    assert empty.injected == []
    assert empty.files == []
    assert empty.summary == "nothing injected: the retriever returned no files"


def test_a_repeated_path_is_decided_once() -> None:
    d = gate(["a.py", "a.py"], [0.9, 0.9], CAL)
    assert d.injected == ["a.py"]
    assert d.files[1].reason == "repeats the file at rank 1; decided there"


def test_mismatch_is_raised() -> None:
    with pytest.raises(CalibrationMismatchError, match="'lexical', not 'bm25'"):
        gate(FILES, None, CAL, retriever="bm25")
    with pytest.raises(CalibrationMismatchError, match=r"major\.minor"):
        gate(FILES, None, CAL, retriever="lexical", version="0.2.0")
    assert isinstance(CalibrationMismatchError("x"), GateError)
    # same name, same major.minor, or an unknown version: accepted
    for version in (None, "0.1.7", "0.1.0.dev3"):
        assert gate(FILES, None, CAL, retriever="lexical", version=version).injected == ["a.py"]


def test_retriever_mismatch_rules() -> None:
    r = Retriever(name="lexical", version="0.1.0")
    assert r.mismatch("lexical") is None
    assert r.mismatch("lexical", "0.1.9") is None
    assert r.mismatch("lexical", "1.1.0") is not None
    assert Retriever(name="lexical").mismatch("lexical", "9.9") is None
    assert r.mismatch("openai:m") == "the calibration measured retriever 'lexical', not 'openai:m'"


def test_retriever_definitions_mode_must_match_when_both_are_known() -> None:
    ts = Retriever(name="lexical", version="0.1.0", definitions="tree-sitter")
    assert ts.mismatch("lexical", "0.1.0", "tree-sitter") is None
    assert ts.mismatch("lexical", "0.1.0") is None  # the run's mode unknown
    assert Retriever(name="lexical").mismatch("lexical", None, "regex") is None  # not recorded
    said = ts.mismatch("lexical", "0.1.0", "regex")
    assert said is not None
    assert "measured with definitions read by tree-sitter, this run reads them by regex" in said
    assert "symbols extra is not installed here" in said
    # not recorded: the key is not written, so older calibrations are written again unchanged
    assert "definitions" not in Retriever(name="lexical").model_dump()
    assert ts.model_dump()["definitions"] == "tree-sitter"
    assert Retriever.model_validate_json(ts.model_dump_json()) == ts


def test_bad_inputs() -> None:
    with pytest.raises(GateInputError, match="2 score"):
        gate(FILES, [0.1, 0.2], CAL)
    with pytest.raises(ValueError, match="finite"):
        gate(["a.py"], [float("nan")], CAL)
    with pytest.raises(GateInputError, match="the string"):
        gate("a.py", None, CAL)
    with pytest.raises(ValidationError):
        GateConfig(threshold=1.5)
    with pytest.raises(ValidationError):
        GateConfig(max_files=-1)


def test_decision_records_the_calibration_and_round_trips() -> None:
    d = gate(FILES, None, CAL)
    assert d.calibration == {
        "retriever": "lexical",
        "version": "0.1.0",
        "package": "codegrep-model",
        "data": "SWE-bench Lite",
        "instances": 300,
        "scored": 290,
        "precision": 0.5,
        "precision_answered": 0.5,
        "level": 0.95,
    }
    assert type(d).model_validate_json(d.model_dump_json()) == d


def test_data_described_without_counting_its_instances_twice() -> None:
    counted = "out-of-fold answers (331 instances, 16 Python repositories)"
    assert DataRef(name=counted, instances=331).describe() == counted
    chosen = DataRef(name=counted, instances=331, selection="only those with a prediction")
    assert chosen.describe() == counted + " (only those with a prediction)"
    assert chosen.describe().count("331 instances") == 1
    lite = DataRef(name="SWE-bench Lite", instances=300, selection="without a/b")
    assert lite.describe() == "SWE-bench Lite (300 instances, without a/b)"


def test_the_changelog_question_is_recorded_only_when_asked() -> None:
    from codegrep_gate import data_ref
    from codegrep_records import GoldRule

    # the defaults are recorded as every shipped calibration has them, without the new key
    default = data_ref("d").gold_rule
    assert default == {
        "include_added": False,
        "exclude_tests": True,
        "renames": "old",
        "source": "patch",
    }
    asked = data_ref("d", gold_rule=GoldRule(exclude_changelogs=True)).gold_rule
    assert asked["exclude_changelogs"] is True
