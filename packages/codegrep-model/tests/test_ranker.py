"""The learned candidate ranking: the answer cut, the fit on data with a known signal, the file
format and its errors, the shipped ranker, and LexicalPolicy with and without it."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from codegrep_model.policies.lexical import LexicalPolicy
from codegrep_model.policies.lexical.ranker import (
    FEATURES,
    AnswerCut,
    Example,
    Ranker,
    RankerError,
    _logistic,
    fit,
    fit_report,
)
from codegrep_model.policies.lexical.ranker_train import (
    InstanceCandidates,
    examples_of,
    read_examples,
)


def test_the_cut_takes_the_first_then_what_clears_both_bars() -> None:
    cut = AnswerCut(min_prob=0.3, ratio=0.5, max_files=3)
    assert cut.take([]) == 0
    assert cut.take([0.01]) == 1  # the best candidate is always answered
    assert cut.take([0.9, 0.5, 0.44, 0.3]) == 2  # 0.44 < 0.5 * 0.9
    assert cut.take([0.6, 0.3, 0.3, 0.3]) == 3  # at both bars exactly, up to max_files
    assert cut.take([0.6, 0.29, 0.5]) == 1  # the order is the caller's: it stops at the first miss
    with pytest.raises(RankerError, match="max_files 0"):
        AnswerCut(max_files=0)
    with pytest.raises(RankerError, match=r"min_prob 1\.5"):
        AnswerCut(min_prob=1.5)


def test_logistic_regression_recovers_a_known_model() -> None:
    rng = random.Random(7)
    true_w, true_b = (2.0, -1.0, 0.0), -0.5
    x, y = [], []
    for _ in range(3000):
        row = [rng.gauss(0, 1) for _ in true_w]
        z = true_b + sum(w * v for w, v in zip(true_w, row, strict=True))
        x.append(row)
        y.append(1.0 if rng.random() < 1 / (1 + math.exp(-z)) else 0.0)
    w, b = _logistic(x, y, l2=0.01)
    assert w == pytest.approx(true_w, abs=0.2)
    assert b == pytest.approx(true_b, abs=0.15)


def test_logistic_regression_converges_on_separable_data() -> None:
    # without the penalty the weights would run off to infinity; with it the fit is finite
    x = [[-2.0], [-1.0], [1.0], [2.0]]
    w, b = _logistic(x, [0.0, 0.0, 1.0, 1.0], l2=1.0)
    assert 0 < w[0] < 10
    assert abs(b) < 1e-6


def _synthetic(n_instances: int, seed: int) -> list[Example]:
    """Instances of 8 candidates where `coverage` says which is gold and `rank_inv` (the
    heuristic order) is noise: a ranker must learn coverage and beat the heuristic."""
    rng = random.Random(seed)
    out = []
    for i in range(n_instances):
        gold = rng.randrange(8)
        order = list(range(8))
        rng.shuffle(order)
        for j in range(8):
            feats = {
                "coverage": (0.8 if j == gold else 0.3) + rng.gauss(0, 0.1),
                "rank_inv": 1 / (order.index(j) + 1),
                "score_ratio": 1.0 if order.index(j) == 0 else 0.5,
            }
            out.append(
                Example(
                    group=f"i{i}",
                    path=f"f{j}.py",
                    features=feats,
                    gold=j == gold,
                    repo=f"r/{i % 6}",
                    gold_total=1,
                )
            )
    return out


def test_fit_learns_the_signal_and_reports_it_out_of_fold() -> None:
    ranker, report = fit(_synthetic(120, seed=1), l2=1.0, folds=3)
    assert report.instances == 120
    assert report.folds == 3
    assert report.oof_fbeta > 0.8  # coverage separates gold almost always
    assert report.heuristic_fbeta < 0.3  # the shuffled order finds it 1 time in 8
    w = dict(zip(ranker.features, ranker.weights, strict=True))
    assert w["coverage"] > 1.0
    assert abs(w["rank_inv"]) < w["coverage"] / 4
    # one gold file per instance: the learned cut answers one file almost always
    fresh = _synthetic(60, seed=2)
    sizes = []
    for i in range(60):
        cands = [e for e in fresh if e.group == f"i{i}"]
        sizes.append(ranker.cut.take(sorted(ranker.probability(e.features) for e in cands)[::-1]))
    assert sum(sizes) / len(sizes) < 1.1
    assert fit_report(fresh, ranker) > 0.8  # and it holds on new data
    assert ranker.meta["instances"] == 120
    assert ranker.meta["positives"] == 120


def test_fit_refuses_data_it_cannot_learn_from() -> None:
    with pytest.raises(RankerError, match="no training examples"):
        fit([])
    none_gold = [Example("i", "a.py", {"coverage": 1.0}, gold=False, repo="r/r", gold_total=1)]
    with pytest.raises(RankerError, match="no gold file"):
        fit(none_gold)


def test_a_ranker_file_round_trips_and_bad_files_are_named(tmp_path: Path) -> None:
    ranker, _ = fit(_synthetic(40, seed=3), folds=2, meta={"trained_on": "synthetic"})
    path = tmp_path / "r.json"
    ranker.dump(path)
    again = Ranker.load(path)
    assert again.to_dict() == ranker.to_dict()
    assert again.digest == ranker.digest
    assert again.meta["trained_on"] == "synthetic"

    def bad(data: object, name: str) -> str:
        p = tmp_path / name
        p.write_text(json.dumps(data))
        with pytest.raises(RankerError) as err:
            Ranker.load(p)
        return str(err.value)

    good = ranker.to_dict()
    assert "schema_version 1" in bad(good | {"schema_version": 9}, "v.json")
    n = len(good["features"])
    renamed = ["bogus", *good["features"][1:]]
    assert "does not compute: bogus" in bad(good | {"features": renamed}, "f.json")
    assert f"{n} features but 2 means" in bad(good | {"mean": good["mean"][:2]}, "m.json")
    assert "scales must be positive" in bad(good | {"scale": [0.0] * n}, "s.json")
    assert "malformed" in bad({k: v for k, v in good.items() if k != "weights"}, "w.json")
    assert "expected a JSON object, found a list" in bad([1, 2], "l.json")
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(RankerError, match=r"x\.json: not JSON"):
        Ranker.load(tmp_path / "x.json")
    with pytest.raises(RankerError, match="cannot read ranker file"):
        Ranker.load(tmp_path / "missing.json")


def test_the_shipped_ranker_loads_and_says_what_it_was_trained_on() -> None:
    ranker = Ranker.shipped()
    assert ranker.features == FEATURES
    trained = ranker.meta["trained_on"]
    files = {d["file"] for d in trained}
    assert "lite.jsonl" in files
    # the localizer's test repositories (read once per release) are never training data: every
    # instance of the pool but theirs is (benchmarks/train_ranker.sh)
    splits = json.loads(
        (Path(__file__).resolve().parents[1] / "benchmarks" / "localizer_splits.json").read_text()
    )
    test_repos = {i.rsplit("-", 1)[0].replace("__", "/", 1) for i in splits["test_ids"]}
    assert test_repos == {"astropy/astropy", "sphinx-doc/sphinx"}
    trained_repos = {r for d in trained for r in d["repos"]}
    assert not trained_repos & test_repos
    assert sum(d["instances"] for d in trained) == len(splits["cv_ids"])
    assert ranker.meta["instances"] >= 300
    assert 1 <= ranker.cut.max_files <= 4


def test_policy_names_say_which_ranking_answers() -> None:
    assert LexicalPolicy().name == "lexical"
    assert LexicalPolicy().ranker is not None
    old = LexicalPolicy(heuristic=True)
    assert old.name == "lexical-heuristic"
    assert old.ranker is None
    assert not old.usage_greps
    with pytest.raises(ValueError, match="heuristic=True means no ranker"):
        LexicalPolicy(heuristic=True, ranker=Ranker.shipped())


def test_examples_file_round_trip_and_bad_rows(tmp_path: Path) -> None:
    from codegrep_model.policies.lexical.policy import Candidate

    row = InstanceCandidates(
        instance_id="o__r-1",
        repo="o/r",
        gold=("a.py", "b.py"),
        candidates=(
            Candidate("a.py", 2.0, {"coverage": 0.5, "test": 0.0}),
            Candidate("c.py", 1.0, {"coverage": 0.1}),
        ),
    )
    path = tmp_path / "ex.jsonl"
    path.write_text(row.to_json() + "\n\n")
    (back,) = read_examples(path)
    assert back.gold == row.gold
    assert [c.path for c in back.candidates] == ["a.py", "c.py"]
    assert back.candidates[0].features == {"coverage": 0.5}  # zeros are not stored
    ex = examples_of([back])
    assert [(e.path, e.gold, e.gold_total) for e in ex] == [("a.py", True, 2), ("c.py", False, 2)]
    path.write_text(row.to_json() + "\n" + '{"instance_id": "x"}\n')
    with pytest.raises(RankerError, match=r"ex\.jsonl:2: not an examples row"):
        read_examples(path)


_DEEP = "[" * 100_000 + "]" * 100_000
_GOOD_ROW = {
    "instance_id": "o__r-1",
    "repo": "o/r",
    "gold": ["a.py"],
    "candidates": [{"path": "a.py", "score": 1.0, "features": {"bm25": 1.0}}],
}


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (_DEEP.encode(), "nested too deeply"),
        (json.dumps(_GOOD_ROW).replace("1.0}", "1e999}").encode(), "number out of range"),
        (json.dumps(_GOOD_ROW).replace("1.0}", "1" + "0" * 5000 + "}").encode(), "too long"),
        (json.dumps(_GOOD_ROW).replace("1.0}", '"nan"}').encode(), "not a finite number"),
        (b'{"instance_id": "\xff"}', "not UTF-8"),
        (b"[1, 2]", "not an examples row"),
    ],
)
def test_hostile_examples_are_one_line_errors(tmp_path: Path, line: bytes, reason: str) -> None:
    from codegrep_model.cli import app
    from codegrep_model.policies.lexical.ranker_train import read_examples
    from typer.testing import CliRunner

    examples = tmp_path / "ex.jsonl"
    examples.write_bytes(json.dumps(_GOOD_ROW).encode() + b"\n" + line + b"\n")
    with pytest.raises(RankerError, match=reason) as info:
        read_examples(examples)
    assert str(info.value).startswith(f"{examples}:2: ")
    instances = tmp_path / "i.jsonl"
    instances.write_text(json.dumps({"instance_id": "o__r-1", "repo": "o/r"}) + "\n")
    res = CliRunner().invoke(
        app,
        [
            "train-ranker",
            "-i",
            str(instances),
            "--examples",
            str(examples),
            "-o",
            str(tmp_path / "r.json"),
        ],
    )
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert f"{examples}:2: not an examples row" in " ".join(res.output.split())


def test_a_hostile_ranker_file_is_a_ranker_error(tmp_path: Path) -> None:
    for text in (_DEEP.encode(), b'{"weights": 1e999}', b"\xff", b"[]"):
        p = tmp_path / "r.json"
        p.write_bytes(text)
        with pytest.raises(RankerError, match=f"cannot read ranker file {p}: "):
            Ranker.load(p)
