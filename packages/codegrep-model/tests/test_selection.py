"""The answer set chosen for F0.5: the expectation checked against full enumeration, the
decision on clear cases, the recalibration, the ranker file that carries it, and the fit that
chooses it on out-of-fold probabilities."""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import pytest
from codegrep_model.policies.lexical.ranker import (
    AnswerCut,
    Example,
    Ranker,
    RankerError,
    fit,
    fit_platt,
)
from codegrep_model.policies.lexical.selection import (
    ExpectedFCut,
    SelectionError,
    expected_fbeta,
    missing_pmf,
)
from grpo_rewards import fbeta_from_counts


def _enumerated(probs: list[float], k: int, missing: list[float]) -> float:
    """E[F0.5] by listing every gold subset of the candidates and every missed count."""
    total = 0.0
    for gold in itertools.product((0, 1), repeat=len(probs)):
        p = math.prod(q if g else 1 - q for q, g in zip(probs, gold, strict=True))
        hits = sum(gold[:k])
        for m, pm in enumerate(missing):
            if hits:
                total += p * pm * fbeta_from_counts(hits, k, sum(gold) + m, 0.5)
    return total


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_the_expectation_is_the_enumerated_one(k: int) -> None:
    rng = random.Random(k)
    for _ in range(20):
        probs = sorted((rng.random() for _ in range(5)), reverse=True)
        missing = [rng.random() for _ in range(3)]
        missing = [m / sum(missing) for m in missing]
        assert expected_fbeta(probs, k, missing) == pytest.approx(
            _enumerated(probs, k, missing), abs=1e-12
        )
    assert expected_fbeta([], 1, [1.0]) == 0.0
    assert expected_fbeta([0.5], 0, [1.0]) == 0.0


def test_the_decision_answers_what_is_worth_its_precision() -> None:
    cut = ExpectedFCut(max_files=4)  # identity recalibration, no gold missed
    assert cut.take([]) == 0
    assert cut.take([0.05]) == 1  # the best candidate is always answered
    assert cut.take([0.9, 0.1, 0.05]) == 1  # a weak second file costs more than it brings
    assert cut.take([0.9, 0.85, 0.8, 0.1]) == 3  # three likely files together
    # gold the candidates miss lowers the recall every answer can reach, not the choice alone
    assert ExpectedFCut(missing=(0.0, 1.0), max_files=4).take([0.9, 0.85, 0.8, 0.1]) == 3
    assert ExpectedFCut(max_files=1).take([0.9, 0.85, 0.8]) == 1  # capped


def test_a_bad_selection_is_named() -> None:
    with pytest.raises(SelectionError, match="max_files 0"):
        ExpectedFCut(max_files=0)
    with pytest.raises(SelectionError, match="summing to 1"):
        ExpectedFCut(missing=(0.5, 0.2))
    with pytest.raises(SelectionError, match="must be finite"):
        ExpectedFCut(slope=math.inf)


def test_platt_recovers_a_known_recalibration() -> None:
    rng = random.Random(3)
    probs, gold = [], []
    for _ in range(4000):
        z = rng.gauss(0, 2)
        probs.append(1 / (1 + math.exp(-z)))
        gold.append(rng.random() < 1 / (1 + math.exp(-(0.5 * z - 1.0))))
    slope, intercept = fit_platt(probs, gold)
    assert slope == pytest.approx(0.5, abs=0.08)
    assert intercept == pytest.approx(-1.0, abs=0.12)
    assert fit_platt([], []) == (1.0, 0.0)
    # separable: the small penalty keeps it finite
    a, b = fit_platt([0.1, 0.2, 0.8, 0.9], [False, False, True, True])
    assert math.isfinite(a)
    assert math.isfinite(b)
    assert a > 0


def test_missed_gold_counts_make_a_distribution() -> None:
    assert missing_pmf([]) == (1.0,)
    assert missing_pmf([0, 0, 1, 3]) == (0.5, 0.25, 0.0, 0.25)
    assert missing_pmf([0, 9]) == (0.5, 0.0, 0.0, 0.0, 0.5)  # more than 4 counts as 4


def _examples(n: int, seed: int) -> list[Example]:
    """Instances with one or two gold files among six candidates; `coverage` tells them."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        golds = set(rng.sample(range(6), 2 if i % 3 == 0 else 1))
        for j in range(6):
            out.append(
                Example(
                    group=f"i{i}",
                    path=f"f{j}.py",
                    features={"coverage": (0.8 if j in golds else 0.3) + rng.gauss(0, 0.12)},
                    gold=j in golds,
                    repo=f"r/{i % 5}",
                    gold_total=len(golds),
                )
            )
    return out


def test_fit_chooses_both_cuts_on_the_same_out_of_fold_probabilities(tmp_path: Path) -> None:
    examples = _examples(150, seed=1)
    threshold, report = fit(examples, l2=1.0, folds=3)
    assert isinstance(threshold.cut, AnswerCut)
    assert set(report.cuts) == {"threshold", "expected_f"}
    assert set(report.selection_fbeta) == {"threshold", "expected_f"}
    assert report.selection_fbeta["threshold"] == pytest.approx(report.oof_fbeta)
    chosen, other = fit(examples, l2=1.0, folds=3, selection="expected_f")
    assert isinstance(chosen.cut, ExpectedFCut)
    assert chosen.cut == report.cuts["expected_f"]  # the same fit, another cut
    assert other.oof_fbeta == pytest.approx(report.selection_fbeta["expected_f"])
    assert chosen.meta["selection"] == "expected_f"
    # a third of the instances have two gold files: the decision answers two there
    assert chosen.cut.max_files >= 2
    with pytest.raises(RankerError, match="selection must be one of"):
        fit(examples, selection="top1")  # type: ignore[arg-type]

    # the file: version 2 carries the selection; a threshold cut stays version 1
    path = tmp_path / "r.json"
    chosen.dump(path)
    data = json.loads(path.read_text())
    assert data["schema_version"] == 2
    assert data["cut"]["kind"] == "expected_f"
    again = Ranker.load(path)
    assert again.to_dict() == chosen.to_dict()
    threshold.dump(path)
    assert json.loads(path.read_text())["schema_version"] == 1
    assert "kind" not in json.loads(path.read_text())["cut"]


def test_a_cut_a_version_cannot_hold_is_refused(tmp_path: Path) -> None:
    ranker, _ = fit(_examples(60, seed=2), l2=1.0, folds=2, selection="expected_f")
    data = ranker.to_dict()
    for name, bad, why in (
        ("v1.json", data | {"schema_version": 1}, "needs schema_version 2"),
        ("k.json", data | {"cut": {"kind": "top1"}}, "unknown answer cut kind 'top1'"),
        ("m.json", data | {"cut": {**data["cut"], "missing": [0.5]}}, None),
        ("s.json", data | {"cut": {**data["cut"], "max_files": 0}}, "max_files 0"),
    ):
        p = tmp_path / name
        p.write_text(json.dumps(bad))
        if why is None:  # one entry renormalized: a distribution again, read as (1.0,)
            assert Ranker.load(p).cut.missing == (1.0,)  # type: ignore[union-attr]
            continue
        with pytest.raises(RankerError, match=why):
            Ranker.load(p)


def test_the_shipped_ranker_file_reads_and_writes_as_it_always_did() -> None:
    from importlib import resources

    text = (
        resources.files("codegrep_model.policies.lexical")
        .joinpath("rankers/lexical.json")
        .read_text()
    )
    shipped = Ranker.shipped()
    assert shipped.to_dict() == json.loads(text)  # same fields, same version: same digest
