"""The gate acts on the precision swe-eval reports: one number, not two that drift apart.

Both score with grpo-rewards' scoring core (`account`, `score_ranked`; its rules are tested in
packages/grpo-rewards/tests/test_scoring.py). These tests hold the wiring: that codegrep-gate's
calibration and swe-eval's summary, each reading through that core, give the same figures and
the same accounting on the same predictions and gold: generated cases (missing, empty, repeated
and unknown rows, files named twice, instances without gold), and the `swe-eval retrieval`
command on files, with and without CATM labels.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from codegrep_gate import GateError, Retriever, calibrate, data_ref, load_calibration_data
from codegrep_records import GoldLabel, Prediction
from hypothesis import given, settings
from hypothesis import strategies as st
from swe_eval import evaluate, summarize
from swe_eval.cli import app as swe_eval_app
from typer.testing import CliRunner

PATHS = ["a.py", "b.py", "c.py", "d.py", "e.py"]
IDS = [f"o__r-{k}" for k in range(6)]

gold_strategy = st.dictionaries(
    st.sampled_from(IDS), st.frozensets(st.sampled_from(PATHS), max_size=3), min_size=1
)
prediction_strategy = st.lists(
    st.builds(
        lambda iid, files: Prediction(instance_id=iid, files=tuple(files), retriever="toy"),
        st.sampled_from([*IDS, "other__id-1"]),
        st.lists(st.sampled_from(PATHS), max_size=6),  # may name a file twice
    ),
    max_size=10,
)


@settings(max_examples=150, deadline=None)
@given(gold=gold_strategy, predictions=prediction_strategy)
def test_calibrate_equals_swe_eval_summary(
    gold: dict[str, frozenset[str]], predictions: list[Prediction]
) -> None:
    labels = {
        iid: GoldLabel(instance_id=iid, files=files, source="t") for iid, files in gold.items()
    }
    summary = summarize(evaluate(labels, predictions), n_resamples=0, by_repo=False)
    try:
        cal = calibrate(
            predictions, gold, retriever=Retriever(name="toy"), data=data_ref("t"), resamples=0
        )
    except GateError:
        # nothing to calibrate: no instance with gold, or none with an answer
        assert summary.n == 0 or summary.missing + summary.empty == summary.n
        return
    for name in ("precision", "recall", "fbeta"):
        theirs = summary.metrics[name].value
        ours = getattr(cal, name).point
        assert ours == pytest.approx(theirs, abs=1e-12), name
    d = cal.data
    assert (d.scored, d.missing, d.empty, d.no_gold, d.unknown) == (
        summary.n,
        summary.missing,
        summary.empty,
        summary.no_gold,
        summary.unknown,
    )


PATCH = "diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
RENAME_ADD_TEST = (
    "diff --git a/p/old.py b/p/new.py\nsimilarity index 90%\nrename from p/old.py\n"
    "rename to p/new.py\n"
    "diff --git a/p/added.py b/p/added.py\nnew file mode 100644\n--- /dev/null\n"
    "+++ b/p/added.py\n@@ -0,0 +1 @@\n+x = 1\n"
    "diff --git a/tests/test_p.py b/tests/test_p.py\n--- a/tests/test_p.py\n"
    "+++ b/tests/test_p.py\n@@ -1 +1 @@\n-a\n+b\n"
)


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    instances = _jsonl(
        tmp_path / "instances.jsonl",
        [
            {"instance_id": "o__r-1", "repo": "o/r", "patch": RENAME_ADD_TEST},
            {"instance_id": "o__r-2", "repo": "o/r", "patch": PATCH.format(f="b.py")},
            {"instance_id": "o__r-3", "repo": "o/r", "patch": PATCH.format(f="c.py")},
            {"instance_id": "o__r-4", "repo": "o/r", "patch": PATCH.format(f="tests/test_x.py")},
            {"instance_id": "p__q-1", "repo": "p/q", "patch": PATCH.format(f="d.py")},
        ],
    )
    predictions = _jsonl(
        tmp_path / "pred.jsonl",
        [
            # the old name of the rename is gold; the new name, the added file and the test are not
            {"instance_id": "o__r-1", "files": ["/testbed/p/old.py", "p/new.py", "p/added.py"]},
            {"instance_id": "o__r-2", "files": ["b.py", "x.py", "b.py"], "retriever": "toy"},
            {"instance_id": "o__r-3", "files": []},
            {"instance_id": "o__r-4", "files": ["tests/test_x.py"]},
            {"instance_id": "z__z-9", "files": ["a.py"]},
        ],
    )
    labels = _jsonl(
        tmp_path / "labels.jsonl",
        [
            {
                "instance_id": "o__r-1",
                "patch_files": ["p/old.py"],
                "mined": [
                    {"path": "p/new.py", "weight": 0.4},
                    {"path": "p/added.py", "weight": 0.1},
                ],
            },
            {"instance_id": "o__r-2", "gold": ["b.py", "x.py"]},
        ],
    )
    return instances, predictions, labels


def _swe_eval_precision(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(
        swe_eval_app, ["retrieval", *args, "-f", "json", "--resamples", "0"]
    )
    assert result.exit_code == 0, result.output
    start = result.stdout.index("{")
    system = json.loads(result.stdout[start:])["systems"][0]
    assert isinstance(system, dict)
    return system


@pytest.mark.parametrize("with_labels", [False, True], ids=["patch-gold", "catm-labels"])
def test_calibrate_equals_swe_eval_retrieval_on_files(
    files: tuple[Path, Path, Path], with_labels: bool
) -> None:
    instances, predictions, labels = files
    args = ["-i", str(instances), "-p", str(predictions)]
    if with_labels:
        args += ["-l", str(labels)]
    theirs = _swe_eval_precision(*args)
    data = load_calibration_data(
        instances, predictions, labels_file=labels if with_labels else None
    )
    cal = calibrate(
        data.predictions, data.gold, retriever=Retriever(name="toy"), data=data.data, resamples=0
    )
    metrics = theirs["metrics"]
    assert isinstance(metrics, dict)
    assert cal.precision.point == pytest.approx(metrics["precision"]["value"], abs=1e-12)
    assert cal.recall.point == pytest.approx(metrics["recall"]["value"], abs=1e-12)
    assert cal.fbeta.point == pytest.approx(metrics["fbeta"]["value"], abs=1e-12)
    d = cal.data
    assert (d.scored, d.missing, d.empty, d.no_gold, d.unknown) == (
        theirs["n"],
        theirs["missing"],
        theirs["empty"],
        theirs["no_gold"],
        theirs["unknown"],
    )
    if with_labels:
        # o__r-1: p/old.py and p/new.py (weight 0.4 >= 0.15); o__r-2: b.py, x.py; others unlabeled
        assert (d.scored, d.no_gold) == (2, 3)
    else:
        # o__r-4 changes only a test file: no gold
        assert (d.scored, d.missing, d.empty, d.no_gold, d.unknown) == (4, 1, 1, 1, 1)
