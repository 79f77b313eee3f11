"""The calibration math on inputs small enough to check by hand."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from codegrep_gate import GateError, Retriever, calibrate, check, data_ref, load_calibration_data
from codegrep_gate._data import gold_sets
from codegrep_gate.errors import CalibrationMismatchError, GateInputError
from codegrep_records import GoldLabel, GoldRule, Instance, Prediction, gold_from_instances

TOY = Retriever(name="toy", version="0.1.0")


def pred(iid: str, *files: str, scores: tuple[float, ...] | None = None) -> Prediction:
    return Prediction(instance_id=iid, files=files, scores=scores, retriever="toy")


# a: half right; b: right; c: no prediction row; d: no gold; e: an empty answer; zz: unknown id.
GOLD = {
    "a": frozenset({"x.py", "y.py"}),
    "b": frozenset({"z.py"}),
    "c": frozenset({"w.py"}),
    "d": frozenset(),
    "e": frozenset({"q.py"}),
}
PREDS = [
    pred("a", "x.py", "n.py"),
    pred("b", "z.py"),
    pred("e"),
    pred("zz", "x.py"),
    pred("a", "y.py"),  # a second row for `a`: the first one counts, as in swe-eval
]


def test_hand_computed_figures_and_accounting() -> None:
    cal = calibrate(PREDS, GOLD, retriever=TOY, data=data_ref("hand"), resamples=0)
    # scored: a, b, c, e. precision (0.5 + 1 + 0 + 0) / 4; answered only: (0.5 + 1) / 2.
    assert cal.precision.point == pytest.approx(0.375)
    assert cal.precision_answered.point == pytest.approx(0.75)
    assert cal.recall.point == pytest.approx((0.5 + 1.0) / 4)
    # F0.5 of a: P = R = 0.5 -> 0.5; of b: 1.
    assert cal.fbeta.point == pytest.approx((0.5 + 1.0) / 4)
    assert cal.files_per_answer == pytest.approx(1.5)
    d = cal.data
    assert (d.instances, d.scored, d.missing, d.empty, d.no_gold, d.unknown) == (5, 4, 1, 1, 1, 1)
    # without resamples an interval is its point
    assert cal.precision.low == cal.precision.high == cal.precision.point
    assert cal.bootstrap["resamples"] == 0
    assert cal.by_score is None


def test_rank_curve_by_hand() -> None:
    cal = calibrate(PREDS, GOLD, retriever=TOY, data=data_ref("hand"), resamples=0)
    # rank 1: x.py (a, gold) and z.py (b, gold); rank 2: n.py (a, not gold). No file deeper than
    # rank 2, so rank 2 is the last bin: "rank 2 and beyond".
    rank1, rank2 = cal.by_rank.bins
    assert (rank1.lo, rank1.hi, rank1.files, rank1.hits, rank1.instances) == (1, 1, 2, 2, 2)
    assert rank1.precision.point == 1.0
    assert (rank2.lo, rank2.hi, rank2.files, rank2.hits) == (2, None, 1, 0)
    assert [b.describe("rank") for b in cal.by_rank.bins] == ["rank 1", "rank 2+"]
    assert cal.by_rank.lookup(7).describe("rank") == "rank 2+"
    assert cal.by_rank.lookup(0) is rank1


def test_the_last_rank_bin_pools_the_deeper_ranks() -> None:
    gold = {f"i{k}": frozenset({"g.py"}) for k in range(4)}
    preds = [
        pred("i0", "g.py", "a", "b", "c"),
        pred("i1", "a", "g.py", "b", "c"),
        pred("i2", "a", "b", "g.py", "c"),
        pred("i3", "a", "b", "c", "g.py"),
    ]
    cal = calibrate(preds, gold, retriever=TOY, data=data_ref("deep"), resamples=0, max_rank=3)
    assert [(b.describe("rank"), b.files, b.hits) for b in cal.by_rank.bins] == [
        ("rank 1", 4, 1),
        ("rank 2", 4, 1),
        ("rank 3+", 8, 2),
    ]
    assert cal.by_rank.bins[-1].instances == 4
    assert "rank 3 and beyond pooled" in cal.by_rank.method


def _score_case() -> tuple[list[Prediction], dict[str, frozenset[str]]]:
    """Twenty one-file answers in four score groups of five; gold in 1, 3, 2, 4 of them."""
    preds, gold = [], {}
    hits_per_group = (1, 3, 2, 4)
    for g, hits in enumerate(hits_per_group):
        for k in range(5):
            iid = f"g{g}-{k}"
            gold[iid] = frozenset({f"{iid}.py"})
            name = f"{iid}.py" if k < hits else f"{iid}-miss.py"
            preds.append(pred(iid, name, scores=(0.1 * (g + 1) + 0.01 * k,)))
    return preds, gold


def test_pool_adjacent_violators_merges_a_constructed_violation() -> None:
    preds, gold = _score_case()
    cal = calibrate(
        preds,
        gold,
        retriever=TOY,
        data=data_ref("pav"),
        resamples=0,
        score_bins=4,
        min_bin_files=5,
    )
    assert cal.by_score is not None
    bins = cal.by_score.bins
    # quantile bins: 1/5, 3/5, 2/5, 4/5; the middle two violate and pool to 5/10.
    assert [(b.files, b.hits) for b in bins] == [(5, 1), (10, 5), (5, 4)]
    assert [b.precision.point for b in bins] == [0.2, 0.5, 0.8]
    assert (bins[1].lo, bins[1].hi) == (pytest.approx(0.2), pytest.approx(0.34))
    assert "4 quantile bin(s)" in cal.by_score.method
    assert "1 merge(s)" in cal.by_score.method
    # a score between two bins reads the lower (more cautious) one; beyond the ends, the ends
    assert cal.by_score.lookup(0.37) is bins[1]
    assert cal.by_score.lookup(-5) is bins[0]
    assert cal.by_score.lookup(99) is bins[2]
    assert bins[1].describe("score") == "score 0.20-0.34"


def test_score_bins_keep_equal_scores_together_and_respect_the_minimum() -> None:
    gold = {f"i{k}": frozenset({"g.py"}) for k in range(30)}
    preds = [pred(f"i{k}", "g.py" if k % 2 else "a.py", scores=(0.5,)) for k in range(30)]
    cal = calibrate(preds, gold, retriever=TOY, data=data_ref("ties"), resamples=0)
    assert cal.by_score is not None
    (only,) = cal.by_score.bins
    assert (only.lo, only.hi, only.files, only.hits) == (0.5, 0.5, 30, 15)
    assert only.describe("score") == "score 0.50"


def test_partial_scores_are_said_in_the_method() -> None:
    preds, gold = _score_case()
    preds[0] = pred(preds[0].instance_id, *preds[0].files)  # this one carries no scores
    cal = calibrate(
        preds, gold, retriever=TOY, data=data_ref("partial"), resamples=0, min_bin_files=5
    )
    assert cal.by_score is not None
    assert "19 of 20 answered instances" in cal.by_score.method


def test_bootstrap_is_deterministic_and_intervals_hold_their_points() -> None:
    preds, gold = _score_case()
    kwargs = {"retriever": TOY, "data": data_ref("boot"), "resamples": 300, "min_bin_files": 5}
    one = calibrate(preds, gold, seed=7, **kwargs)
    two = calibrate(preds, gold, seed=7, **kwargs)
    other = calibrate(preds, gold, seed=8, **kwargs)
    assert one.model_dump_json() == two.model_dump_json()
    assert one.precision != other.precision
    assert one.bootstrap == {
        "unit": "instance",
        "resamples": 300,
        "seed": 7,
        "level": 0.95,
        "interval": "percentile",
        "rng": "random.Random(seed).choices",
    }
    assert one.by_score is not None
    intervals = [one.precision, one.precision_answered, one.recall, one.fbeta]
    intervals += [b.precision for b in [*one.by_rank.bins, *one.by_score.bins]]
    for iv in intervals:
        assert 0.0 <= iv.low <= iv.point <= iv.high <= 1.0
        assert iv.level == 0.95
    assert one.precision.low < one.precision.point < one.precision.high


def test_a_bin_from_too_few_instances_gets_no_interval_of_its_own() -> None:
    gold = {f"i{k}": frozenset({"g.py"}) for k in range(40)}
    preds = [pred(f"i{k}", "g.py") for k in range(39)] + [pred("i39", "a.py", "g.py")]
    cal = calibrate(preds, gold, retriever=TOY, data=data_ref("rare"), resamples=200)
    rank2 = cal.by_rank.bins[1]
    assert rank2.instances == 1
    assert (rank2.precision.low, rank2.precision.point, rank2.precision.high) == (0.0, 1.0, 1.0)
    assert "widened to [0, 1]" in rank2.note
    assert cal.by_rank.bins[0].note == ""


def test_gold_labels_are_accepted_as_gold() -> None:
    labels = {
        iid: GoldLabel(instance_id=iid, files=files, source="x") for iid, files in GOLD.items()
    }
    a = calibrate(PREDS, GOLD, retriever=TOY, data=data_ref("a"), resamples=50)
    b = calibrate(PREDS, labels, retriever=TOY, data=data_ref("a"), resamples=50)
    assert a.model_dump() == b.model_dump()


def test_predictions_of_another_retriever_are_refused() -> None:
    other = [p.model_copy(update={"retriever": "bm25"}) for p in PREDS]
    with pytest.raises(CalibrationMismatchError, match="'bm25'"):
        calibrate(other, GOLD, retriever=TOY, data=data_ref("x"))


def test_nothing_to_calibrate() -> None:
    with pytest.raises(GateError, match="no prediction names a file"):
        calibrate([pred("e")], GOLD, retriever=TOY, data=data_ref("x"))
    with pytest.raises(GateError, match="has a gold file"):
        calibrate(PREDS, {"d": frozenset()}, retriever=TOY, data=data_ref("x"))
    with pytest.raises(GateInputError, match="max_rank"):
        calibrate(PREDS, GOLD, retriever=TOY, data=data_ref("x"), max_rank=0)
    with pytest.raises(GateInputError, match="level"):
        calibrate(PREDS, GOLD, retriever=TOY, data=data_ref("x"), level=1.0)


def test_check_measures_again_with_the_calibrations_bins() -> None:
    preds, gold = _score_case()
    cal = calibrate(
        preds, gold, retriever=TOY, data=data_ref("cal"), resamples=200, min_bin_files=5
    )
    same = check(cal, preds, gold, data=data_ref("same"), resamples=200)
    assert same.consistent
    assert "lies within" in same.note
    assert same.precision.point == cal.precision.point
    assert same.by_score is not None
    assert cal.by_score is not None
    assert [b.lo for b in same.by_score.bins] == [b.lo for b in cal.by_score.bins]
    assert same.data.name == "same"
    assert same.data.scored == 20
    assert cal.checks == []  # check() leaves the calibration alone
    held = cal.with_check(same)
    assert held.checks == [same]
    assert cal.checks == []

    worse = [pred(p.instance_id, "nope.py", scores=p.scores) for p in preds]
    bad = check(cal, worse, gold, data=data_ref("worse"), resamples=200)
    assert not bad.consistent
    assert "lies below" in bad.note
    assert "bins outside their calibrated interval" in bad.note

    unscored = [pred(p.instance_id, *p.files) for p in preds]
    plain = check(cal, unscored, gold, data=data_ref("plain"), resamples=0)
    assert plain.by_score is None
    assert "carry no scores" in plain.note


def test_gold_sets_follow_swe_eval_with_and_without_labels() -> None:
    patch = (
        "diff --git a/p/old.py b/p/new.py\nsimilarity index 90%\nrename from p/old.py\n"
        "rename to p/new.py\n"
        "diff --git a/tests/test_p.py b/tests/test_p.py\n--- a/tests/test_p.py\n"
        "+++ b/tests/test_p.py\n@@ -1 +1 @@\n-a\n+b\n"
    )
    insts = [
        Instance(instance_id="o__r-1", repo="o/r", patch=patch),
        Instance(instance_id="o__r-2", repo="o/r", gold_files=("x.py",)),
    ]
    assert gold_sets(insts) == {"o__r-1": frozenset({"p/old.py"}), "o__r-2": frozenset({"x.py"})}
    assert gold_sets(insts, rule=GoldRule(renames="new")) == {
        "o__r-1": frozenset({"p/new.py"}),
        "o__r-2": frozenset({"x.py"}),
    }
    assert {k: v.files for k, v in gold_from_instances(insts).items()} == gold_sets(insts)
    labels = [GoldLabel(instance_id="o__r-1", files=frozenset({"a.py", "b.py"}), source="l")]
    assert gold_sets(insts, labels=labels) == {
        "o__r-1": frozenset({"a.py", "b.py"}),
        "o__r-2": frozenset(),  # no label: counted as no_gold
    }


def _write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_load_calibration_data_reads_hashes_and_counts(tmp_path: Path) -> None:
    patch = "diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    inst = _write_jsonl(
        tmp_path / "instances.jsonl",
        [
            {"instance_id": "o__r-1", "repo": "o/r", "patch": patch.format(f="a.py")},
            {"instance_id": "o__r-2", "repo": "o/r", "patch": patch.format(f="b.py")},
            {"instance_id": "p__q-1", "repo": "p/q", "patch": patch.format(f="c.py")},
            {"instance_id": "bad", "repo": "no-slash"},
        ],
    )
    preds = _write_jsonl(
        tmp_path / "pred.jsonl",
        [
            {"instance_id": "o__r-1", "files": ["/testbed/a.py", "c.py"], "retriever": "toy"},
            {"instance_id": "o__r-2", "files": ["b.py"], "retriever": "toy"},
            "not a row",
        ],
    )
    labels = _write_jsonl(
        tmp_path / "labels.jsonl", [{"instance_id": "o__r-1", "gold": ["a.py", "c.py"]}]
    )
    loaded = load_calibration_data(inst, preds, name="fixture")
    assert loaded.gold == {
        "o__r-1": frozenset({"a.py"}),
        "o__r-2": frozenset({"b.py"}),
        "p__q-1": frozenset({"c.py"}),
    }
    assert loaded.predictions[0].files == ("a.py", "c.py")  # paths normalized by the reader
    assert len(loaded.problems) == 2
    d = loaded.data
    assert d.instances_sha256 == hashlib.sha256(inst.read_bytes()).hexdigest()
    assert d.predictions_sha256 == hashlib.sha256(preds.read_bytes()).hexdigest()
    assert (d.labels_file, d.labels_sha256) == (None, None)
    assert d.repos == {"o/r": 2, "p/q": 1}
    assert d.skipped_rows == 2
    assert d.gold_rule == {
        "include_added": False,
        "exclude_tests": True,
        "renames": "old",
        "source": "patch",
    }
    cal = calibrate(loaded.predictions, loaded.gold, retriever=TOY, data=d, resamples=0)
    assert cal.data.repos == {"o/r": 2, "p/q": 1}
    assert (cal.data.instances, cal.data.scored, cal.data.missing) == (3, 3, 1)
    assert cal.precision.point == pytest.approx((0.5 + 1.0 + 0.0) / 3)

    with_labels = load_calibration_data(inst, preds, labels_file=labels)
    assert with_labels.gold["o__r-1"] == frozenset({"a.py", "c.py"})
    assert with_labels.gold["o__r-2"] == frozenset()
    assert with_labels.data.labels_sha256 == hashlib.sha256(labels.read_bytes()).hexdigest()
    assert with_labels.data.gold_rule["source"] == "labels"
    assert with_labels.data.gold_rule["label_threshold"] == 0.15
    assert with_labels.data.name == "instances.jsonl"


def test_data_ref_in_memory_and_missing_files(tmp_path: Path) -> None:
    ref = data_ref("memory")
    assert (ref.instances_file, ref.instances_sha256, ref.labels_file) == ("", "", None)
    assert ref.gold_rule["renames"] == "old"
    with pytest.raises(GateError, match="cannot read"):
        data_ref("gone", tmp_path / "nope.jsonl", tmp_path / "nope2.jsonl")


def test_a_file_named_twice_is_one_file_at_its_first_rank() -> None:
    """Counted twice, recall came out 2.0 (and the calibration could not hold it)."""
    gold = {"i0": frozenset({"a.py"}), "i1": frozenset({"b.py"})}
    preds = [
        pred("i0", "a.py", "a.py", "x.py", scores=(0.9, 0.8, 0.1)),
        pred("i1", "b.py", scores=(0.7,)),
    ]
    cal = calibrate(preds, gold, retriever=Retriever(name="toy"), data=data_ref("t"), resamples=0)
    assert cal.recall.point == 1.0
    assert cal.precision.point == pytest.approx((1 / 2 + 1) / 2)
    assert cal.files_per_answer == 1.5
    rank_2 = cal.by_rank.lookup(2)
    assert (rank_2.lo, rank_2.files, rank_2.hits) == (2.0, 1, 0)  # x.py, not the repeat


def test_several_instances_files_the_first_holding_an_id_gives_it(tmp_path: Path) -> None:
    patch = "diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    first = _write_jsonl(
        tmp_path / "first.jsonl",
        [
            {"instance_id": "o__r-1", "repo": "o/r", "patch": patch.format(f="a.py")},
            {"instance_id": "o__r-2", "repo": "o/r", "patch": patch.format(f="b.py")},
        ],
    )
    second = _write_jsonl(
        tmp_path / "second.jsonl",
        [
            # a repeat with another patch: the first file's instance is the one measured
            {"instance_id": "o__r-1", "repo": "o/r", "patch": patch.format(f="z.py")},
            {"instance_id": "p__q-1", "repo": "p/q", "patch": patch.format(f="c.py")},
            {"instance_id": "p__q-2", "repo": "p/q", "patch": patch.format(f="d.py")},
        ],
    )
    preds = _write_jsonl(
        tmp_path / "pred.jsonl",
        [
            {"instance_id": "o__r-1", "files": ["a.py"], "retriever": "toy"},
            {"instance_id": "p__q-1", "files": ["x.py"], "retriever": "toy"},
        ],
    )
    loaded = load_calibration_data([first, second], preds)
    assert loaded.gold == {
        "o__r-1": frozenset({"a.py"}),
        "o__r-2": frozenset({"b.py"}),
        "p__q-1": frozenset({"c.py"}),
        "p__q-2": frozenset({"d.py"}),
    }
    d = loaded.data
    assert d.instances_file == str(first)
    assert [(f.path, f.sha256) for f in d.more_instances_files] == [
        (str(second), hashlib.sha256(second.read_bytes()).hexdigest())
    ]
    assert d.selection == "1 repeated ids read from the first file holding them"
    assert d.repos == {"o/r": 2, "p/q": 2}
    # every instance is measured: the two without a prediction score 0 as missing
    cal = calibrate(loaded.predictions, loaded.gold, retriever=TOY, data=d, resamples=0)
    assert (cal.data.instances, cal.data.missing) == (4, 2)
    assert cal.precision.point == pytest.approx(1 / 4)

    # --predicted-only: predictions made for a chosen part of the files
    asked = load_calibration_data([first, second], preds, predicted_only=True)
    assert set(asked.gold) == {"o__r-1", "p__q-1"}
    assert asked.data.selection == (
        "1 repeated ids read from the first file holding them; "
        "only the 2 instances with a prediction (of 4)"
    )
    cal = calibrate(asked.predictions, asked.gold, retriever=TOY, data=asked.data, resamples=0)
    assert (cal.data.instances, cal.data.missing) == (2, 0)
    assert cal.precision.point == pytest.approx(1 / 2)
    # the filters apply after it; a repository no chosen instance has is named
    only = load_calibration_data([first, second], preds, predicted_only=True, repos=["p/q"])
    assert set(only.gold) == {"p__q-1"}
    assert only.data.selection.startswith("only p/q; 1 repeated ids")
    with pytest.raises(GateError, match="no instance of n/o"):
        load_calibration_data([first, second], preds, exclude_repos=["n/o"])
    with pytest.raises(GateError, match="no instances file"):
        load_calibration_data([], preds)
