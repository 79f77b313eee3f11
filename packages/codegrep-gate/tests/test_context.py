"""The context model: precision on score, rank and answer size, its interval over repositories."""

from __future__ import annotations

import json
import math
import random

import pytest
from codegrep_gate import GateConfig, GateError, Retriever, calibrate, data_ref, gate
from codegrep_gate._context import fit_logistic
from codegrep_gate._files import parse_calibration
from codegrep_gate._records import CONTEXT_FEATURES, context_features
from codegrep_gate.errors import CalibrationFileError, GateInputError
from codegrep_records import Prediction

LEXICAL = Retriever(name="lexical", version="0.1.0", package="codegrep-model")


def _made_up(n_repos: int = 8, per_repo: int = 30, seed: int = 1):
    """Answers whose first file is gold with probability `score` when it is alone, and much
    less when a second file follows (the pattern the pool's answers show)."""
    rng = random.Random(seed)
    predictions, gold, groups = [], {}, {}
    for r in range(n_repos):
        for i in range(per_repo):
            iid = f"o__r{r}-{i}"
            groups[iid] = f"o/r{r}"
            score = rng.uniform(0.05, 0.95)
            several = rng.random() < 0.3
            p_first = score * (0.4 if several else 1.0)
            files = ["a.py", "b.py"] if several else ["a.py"]
            scores = [score, score / 2] if several else [score]
            truth = {"a.py"} if rng.random() < p_first else {"gold.py"}
            if several and rng.random() < 0.2:
                truth.add("b.py")
            predictions.append(
                Prediction(
                    instance_id=iid, files=tuple(files), scores=tuple(scores), retriever="lexical"
                )
            )
            gold[iid] = frozenset(truth)
    return predictions, gold, groups


def test_fit_logistic_finds_the_coefficients_that_made_the_data():
    rng = random.Random(0)
    rows = []
    for _ in range(4000):
        x = rng.uniform(-3, 3)
        y = float(rng.random() < 1 / (1 + math.exp(-(0.5 + 1.5 * x))))
        rows.append(((1.0, x), y, 1.0))
    b0, b1 = fit_logistic(rows, penalty=0.0)
    assert abs(b0 - 0.5) < 0.15
    assert abs(b1 - 1.5) < 0.2


def test_calibrate_with_context_fits_the_model_and_resamples_repositories():
    predictions, gold, groups = _made_up()
    cal = calibrate(
        predictions,
        gold,
        retriever=LEXICAL,
        data=data_ref("made up"),
        resamples=50,
        context=True,
        groups=groups,
        context_resamples=40,
    )
    model = cal.context
    assert model is not None
    assert model.unit == "repository"
    assert model.groups == 8
    assert model.instances == 240
    assert len(model.draws) == 40
    assert model.features == CONTEXT_FEATURES
    # a second file in the answer lowers the first file's precision, as the data was made
    alone = model.precision(0.7, 1, 1)
    followed = model.precision(0.7, 1, 2)
    assert alone.point > followed.point + 0.1
    assert alone.low <= alone.point <= alone.high
    # precision rises with the score
    assert model.precision(0.9, 1, 1).point > model.precision(0.3, 1, 1).point
    # without groups the draws resample instances
    by_instance = calibrate(
        predictions,
        gold,
        retriever=LEXICAL,
        data=data_ref("made up"),
        resamples=0,
        context=True,
        context_resamples=5,
    )
    assert by_instance.context is not None
    assert by_instance.context.unit == "instance"
    assert by_instance.context.groups == 240


def test_the_same_seed_gives_the_same_model_and_the_file_round_trips():
    predictions, gold, groups = _made_up()
    kwargs = {
        "retriever": LEXICAL,
        "data": data_ref("made up"),
        "resamples": 10,
        "context": True,
        "groups": groups,
        "context_resamples": 10,
    }
    a = calibrate(predictions, gold, **kwargs)
    b = calibrate(predictions, gold, **kwargs)
    assert a.context == b.context
    assert parse_calibration(a.model_dump_json(), "x.json") == a


def test_gate_prefers_the_context_model_and_says_why():
    predictions, gold, groups = _made_up()
    cal = calibrate(
        predictions,
        gold,
        retriever=LEXICAL,
        data=data_ref("made up"),
        resamples=50,
        context=True,
        groups=groups,
        context_resamples=40,
    )
    decision = gate(["x.py"], [0.9], cal, GateConfig(threshold=0.45))
    first = decision.files[0]
    assert first.basis == "context"
    assert first.bin == "score 0.90, rank 1 of 1"
    assert "modelled precision" in first.reason
    assert "interval over 8 repositories" in first.reason
    assert first.precision == cal.context.precision(0.9, 1, 1)
    # the same file followed by another is modelled lower
    two = gate(["x.py", "y.py"], [0.9, 0.5], cal, GateConfig(threshold=0.45, bound="point"))
    assert two.files[0].precision.point < first.precision.point
    assert two.files[0].bin == "score 0.90, rank 1 of 2"
    # a path named twice counts once in the answer's size and is decided at its first rank
    dup = gate(["x.py", "x.py"], [0.9, 0.9], cal)
    assert dup.files[0].bin == "score 0.90, rank 1 of 1"
    assert dup.files[1].kept is False
    # the curves stay available
    assert gate(["x.py"], [0.9], cal, GateConfig(basis="score")).files[0].basis == "score"
    assert gate(["x.py"], None, cal).files[0].basis == "rank"


def test_context_basis_needs_a_model_and_scores():
    predictions, gold, _groups = _made_up(n_repos=2, per_repo=10)
    plain = calibrate(predictions, gold, retriever=LEXICAL, data=data_ref("d"), resamples=0)
    with pytest.raises(GateError, match="no context model"):
        gate(["x.py"], [0.5], plain, GateConfig(basis="context"))
    fitted = calibrate(
        predictions,
        gold,
        retriever=LEXICAL,
        data=data_ref("d"),
        resamples=0,
        context=True,
        context_resamples=0,
    )
    with pytest.raises(GateError, match="no scores"):
        gate(["x.py"], None, fitted, GateConfig(basis="context"))
    # no draws: the interval is the point
    p = fitted.context.precision(0.5, 1, 1)
    assert p.low == p.point == p.high


def test_context_model_needs_every_answered_file_scored():
    gold = {"o__r-1": frozenset({"a.py"})}
    rows = [Prediction(instance_id="o__r-1", files=("a.py",), retriever="lexical")]
    with pytest.raises(GateInputError, match="without a score"):
        calibrate(rows, gold, retriever=LEXICAL, data=data_ref("d"), resamples=0, context=True)


def test_a_context_model_the_gate_cannot_compute_is_refused():
    predictions, gold, _groups = _made_up(n_repos=2, per_repo=10)
    cal = calibrate(
        predictions,
        gold,
        retriever=LEXICAL,
        data=data_ref("d"),
        resamples=0,
        context=True,
        context_resamples=2,
    )
    doc = json.loads(cal.model_dump_json())
    doc["context"]["features"] = ["logit_score", "repository_size", "several_files"]
    with pytest.raises(CalibrationFileError, match="upgrade codegrep-gate"):
        parse_calibration(json.dumps(doc), "x.json")
    doc = json.loads(cal.model_dump_json())
    doc["context"]["coefficients"] = [1.0, 2.0]
    with pytest.raises(CalibrationFileError, match="coefficients"):
        parse_calibration(json.dumps(doc), "x.json")
    # an older reader's view: a file without the field has no model, and the gate reads curves
    doc = json.loads(cal.model_dump_json())
    del doc["context"]
    assert parse_calibration(json.dumps(doc), "x.json").context is None


def test_context_features_clip_the_score():
    assert context_features(0.0, 1, 1) == context_features(0.01, 1, 1)
    assert context_features(1.0, 3, 2)[1:] == context_features(0.99, 2, 5)[1:]
