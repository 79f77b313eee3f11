"""Cross-validation by repository: a repository is never in its own fit, every instance is
scored once under every selection, the test repositories are fixed by their names, and the
summary's pooled figures are the hand-computed ones."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest
from codegrep_model.policies.lexical.policy import Candidate
from codegrep_model.policies.lexical.ranker import RankerError
from codegrep_model.policies.lexical.ranker_cv import (
    METHODS,
    InstanceScore,
    answer_heuristic,
    cross_validate,
    pick_test_repositories,
    summarize,
)
from codegrep_model.policies.lexical.ranker_train import InstanceCandidates
from codegrep_records import load_predictions


def _row(
    iid: str, repo: str, gold_index: int, flip: bool, rng: random.Random
) -> InstanceCandidates:
    """Four candidates; `coverage` is high on the gold one, or (flip) on every other one."""
    cands = []
    for j in range(4):
        high = (j == gold_index) != flip
        cands.append(
            Candidate(
                path=f"f{j}.py",
                score=1 / (j + 1),  # the heuristic's score: f0 first
                features={
                    "coverage": (0.9 if high else 0.1) + rng.gauss(0, 0.02),
                    "rank_inv": 1 / (j + 1),
                    "score_ratio": 1.0 if j == 0 else 0.5,
                },
            )
        )
    return InstanceCandidates(iid, repo, (f"f{gold_index}.py",), tuple(cands))


def test_a_left_out_repository_is_answered_by_what_the_others_taught() -> None:
    rng = random.Random(0)
    rows = []
    for r in range(4):
        for i in range(15):
            # in repository r/3 the signal is reversed: learnt from itself it would be easy,
            # learnt from the other three it is wrong every time
            rows.append(_row(f"r{r}-{i}", f"r/{r}", rng.randrange(1, 4), r == 3, rng))
    scores, cuts = cross_validate(rows, l2=1.0, inner_folds=3)
    assert sorted(s.instance_id for s in scores) == sorted(r.instance_id for r in rows)
    assert set(cuts) == {"r/0", "r/1", "r/2", "r/3"}
    assert all(set(c) == {"threshold", "expected_f"} for c in cuts.values())
    for s in scores:
        assert set(s.answers) == set(METHODS)
        assert s.candidates == 4
        assert s.gold_in_candidates == 1
    normal = [s.fbeta("threshold") for s in scores if s.repo != "r/3"]
    flipped = [s.fbeta("threshold") for s in scores if s.repo == "r/3"]
    assert sum(normal) / len(normal) > 0.8  # r/3 in their fits blurs the cut a little
    assert max(flipped) == 0.0  # never its own signal
    # the heuristic's order (rank_inv) puts f0 first, never gold here
    assert all(s.fbeta("heuristic") == 0.0 for s in scores)
    with pytest.raises(RankerError, match="two or more"):
        cross_validate([r for r in rows if r.repo == "r/0"])


def test_the_heuristic_answer_keeps_what_clears_its_ratio() -> None:
    def c(path: str, rank: float, ratio: float) -> Candidate:  # the best scores 1.0
        return Candidate(path, ratio, {"rank_inv": rank, "score_ratio": ratio})

    row = InstanceCandidates(
        "i", "o/r", ("b.py",), (c("b.py", 0.5, 0.95), c("a.py", 1.0, 1.0), c("u.py", 0, 0))
    )
    assert answer_heuristic(row) == ("a.py", "b.py")
    assert answer_heuristic(row, keep_ratio=0.99) == ("a.py",)
    assert answer_heuristic(InstanceCandidates("j", "o/r", ("x.py",), ())) == ()


def test_the_test_repositories_are_fixed_by_their_names() -> None:
    counts = {f"o/r{i}": 10 for i in range(40)}
    picked = pick_test_repositories(counts)
    assert picked == pick_test_repositories(dict(reversed(counts.items())))  # order-free
    assert 0 < len(picked) < 20  # about one in five
    assert pick_test_repositories(counts, salt="other") != picked
    big = {**counts, picked[0]: 10_000}  # over 20% of the pool: never a test repository
    assert picked[0] not in pick_test_repositories(big)


def test_the_summary_pools_by_repository() -> None:
    def s(iid: str, repo: str, hit: bool) -> InstanceScore:
        answers = dict.fromkeys(METHODS, ("g.py",) if hit else ("x.py",))
        answers["heuristic"] = ("x.py",)
        return InstanceScore(iid, repo, ("g.py",), 2, 1, answers)

    scores = [
        s("a1", "o/a", True),
        s("a2", "o/a", True),
        s("a3", "o/a", False),
        s("b1", "o/b", False),
    ]
    out = summarize(scores, resamples=200)
    assert out["by_repo"]["o/a"]["threshold"]["mean"] == pytest.approx(2 / 3, abs=1e-4)
    assert out["pooled"]["threshold"]["mean"] == pytest.approx(0.5)  # 2 of 4 instances
    assert out["macro"]["threshold"]["mean"] == pytest.approx((2 / 3 + 0) / 2, abs=1e-4)
    assert out["pooled"]["heuristic"]["mean"] == 0.0
    paired = out["paired"]["threshold - heuristic"]["pooled"]
    assert paired["mean"] == pytest.approx(0.5)
    lo, hi = paired["ci95"]
    assert lo <= 0.5 <= hi
    assert out["macro"]["threshold"]["n"] == 2


def test_the_summary_does_not_depend_on_the_order_of_the_scores() -> None:
    # rollouts collected with -j 2 finish in any order; the intervals must not follow it
    def s(iid: str, repo: str, hit: bool) -> InstanceScore:
        answers = dict.fromkeys(METHODS, ("g.py",) if hit else ("x.py",))
        return InstanceScore(iid, repo, ("g.py",), 2, 1, answers)

    scores = [s(f"{r}{i}", f"o/{r}", (i * 7 + len(r)) % 3 == 0) for r in "abc" for i in range(9)]
    forward = summarize(scores, resamples=300)
    backward = summarize(scores[::-1], resamples=300)
    shuffled = summarize(scores[1::2] + scores[::2], resamples=300)
    assert forward == backward == shuffled
    within = forward["by_repo"]["o/a"]["threshold"]["ci95"]
    assert within[0] < within[1]  # a real interval, not a degenerate one


def test_the_examples_in_the_docstrings_hold() -> None:
    import doctest

    from codegrep_model.policies.lexical import ranker_cv, selection

    for module in (ranker_cv, selection):
        result = doctest.testmod(module)
        assert result.attempted > 0
        assert result.failed == 0


def test_the_benchmark_reads_the_test_part_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`benchmarks/localizer_cv.py`: cv over the cv part, then the test part once; a second
    read is refused unless it says why."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "localizer_cv.py"
    spec = importlib.util.spec_from_file_location("localizer_cv_script", script)
    assert spec is not None
    assert spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    rng = random.Random(1)
    rows = [
        _row(f"r{r}-{i}", f"o/r{r}", rng.randrange(1, 4), False, rng)
        for r in range(4)
        for i in range(8)
    ]
    examples = tmp_path / "examples.jsonl"
    examples.write_text("".join(r.to_json() + "\n" for r in rows))
    splits = tmp_path / "splits.json"
    splits.write_text(
        json.dumps(
            {
                "cv_ids": [r.instance_id for r in rows if r.repo != "o/r3"],
                "test_ids": [r.instance_id for r in rows if r.repo == "o/r3"],
            }
        )
    )
    out = tmp_path / "out"
    args = [str(examples), "--splits", str(splits), "-o", str(out)]
    assert bench.main(["cv", *args]) == 0
    cv = json.loads((out / "cv.summary.json").read_text())
    assert set(cv["by_repo"]) == {"o/r0", "o/r1", "o/r2"}  # the test repository is not in it
    assert len((out / "cv.jsonl").read_text().splitlines()) == 24
    # the shipped selection's answers with the fold rankers' probabilities, for the gate
    predicted = load_predictions(out / "cv.predictions.jsonl").records
    answers = {
        row["instance_id"]: row["answers"]["threshold"]
        for row in map(json.loads, (out / "cv.jsonl").read_text().splitlines())
    }
    assert [p.instance_id for p in predicted] == sorted(answers)
    for p in predicted:
        assert list(p.files) == answers[p.instance_id]
        assert p.scores is not None
        assert all(0 <= v <= 1 for v in p.scores)
        assert list(p.scores) == sorted(p.scores, reverse=True)
    assert bench.main(["test", *args]) == 0
    test = json.loads((out / "test.summary.json").read_text())
    assert set(test["by_repo"]) == {"o/r3"}
    capsys.readouterr()
    assert bench.main(["test", *args]) == 2  # read once
    assert "read once per release" in capsys.readouterr().err
    assert bench.main(["test", *args, "--again", "a new feature set"]) == 0
    assert json.loads((out / "test.summary.json").read_text())["again"] == "a new feature set"
    # an instance of the cv part without its examples row: refused, never scored as 0 silently
    examples.write_text("".join(r.to_json() + "\n" for r in rows[1:]))
    assert bench.main(["cv", *args]) == 2
    assert "r0-0" in capsys.readouterr().err
    # the test repositories train_ranker.sh leaves out, from the test ids of the splits file
    real = {"test_ids": ["o__r3-1", "org__name-x-12", "o__r3-2"], "cv_ids": []}
    splits.write_text(json.dumps(real))
    assert bench.main(["test-repos", str(splits)]) == 0
    assert capsys.readouterr().out.split() == ["o/r3", "org/name-x"]
    splits.write_text(json.dumps({"test_ids": "o__r3-1"}))
    assert bench.main(["test-repos", str(splits)]) == 2
    assert "OWNER__NAME-NUMBER" in capsys.readouterr().err
