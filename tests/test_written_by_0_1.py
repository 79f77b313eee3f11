"""Files the 0.1 releases wrote still read with today's readers, each with the reader that owns it.

`tests/fixtures/written-by-0.1/` holds files written by the 0.1 code of each package, unchanged
(its README says which command wrote which). Users have such files on disk; a reader that moves
to `codegrep-records` must keep reading them, with no row skipped and no field lost. Every file
of the folder has a check here, and a file added without one fails the first test.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import catm
import codegrep_model
import codegrep_records
import pytest
import swe_eval
from catm._readers import read_trajectories
from catm._records import MiningStats, Trajectory
from swe_eval.cli import app as swe_eval_app
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "written-by-0.1"
# The shared data sits beside the checkout, as for swe-eval's own tests.
SHARED = Path(os.environ.get("CODEGREP_SHARED_DATA", ROOT.parent / "shared" / "data"))
LITE_IDS = ("psf__requests-1963", "psf__requests-2148")
PREDICTION_FILES = ("swe-eval-bm25.pred.jsonl", "codegrep-model-batch.pred.jsonl")

runner = CliRunner()


def test_every_fixture_file_has_a_reader_check_here() -> None:
    checked = {
        "README.md",  # says where each file came from; not data
        "catm-input.instances.jsonl",
        "catm-input.trajectories.jsonl",
        "catm.labels.jsonl",
        "catm.labels.jsonl.stats.json",
        "codegrep-model-batch.rollouts.jsonl",
        *PREDICTION_FILES,
    }
    assert {p.name for p in FIXTURES.iterdir()} == checked


def _rows(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line]


# Predictions: swe-eval reads both writers' files --------------------------------------------------


@pytest.mark.parametrize("name", PREDICTION_FILES)
def test_swe_eval_reads_every_prediction_file_with_its_fields(name: str) -> None:
    loaded = codegrep_records.load_predictions(FIXTURES / name)
    assert loaded.problems == ()
    written = _rows(name)
    assert [p.instance_id for p in loaded.records] == [r["instance_id"] for r in written]
    for pred, row in zip(loaded.records, written, strict=True):
        # Every field the file holds comes back with its value: nothing dropped or renamed.
        assert pred.model_dump(include=set(row)) == {
            key: tuple(value) if isinstance(value, list) else value for key, value in row.items()
        }


def test_the_codegrep_model_file_keeps_fallback_empty_line_ranges_and_int_turns() -> None:
    preds = codegrep_records.load_predictions(FIXTURES / "codegrep-model-batch.pred.jsonl").records
    assert [p.fallback for p in preds] == [False, False]
    assert [p.line_ranges for p in preds] == [{}, {}]
    assert [p.turns for p in preds] == [3, 3]
    assert all(type(p.turns) is int for p in preds)
    assert [p.retriever for p in preds] == ["lexical", "lexical"]


def test_the_swe_eval_file_keeps_its_scores_and_writes_back_byte_for_byte(tmp_path: Path) -> None:
    source = FIXTURES / "swe-eval-bm25.pred.jsonl"
    preds = codegrep_records.load_predictions(source).records
    assert all(p.scores is not None and len(p.scores) == len(p.files) == 5 for p in preds)
    assert all(p.fallback is False for p in preds)
    # What swe-eval writes today is what 0.1 wrote.
    again = tmp_path / "again.jsonl"
    assert swe_eval.write_predictions(again, preds) == 2
    assert again.read_bytes() == source.read_bytes()


# CATM's files ------------------------------------------------------------------------------------


def test_codegrep_records_reads_the_catm_labels_file_as_written() -> None:
    loaded = codegrep_records.load_labels(FIXTURES / "catm.labels.jsonl")
    assert loaded.problems == ()
    (label,) = loaded.records
    assert label.instance_id == "o__p-1"
    # A row with `gold` is read as written, whatever rule made it (0.1 named the rename's new
    # path, the added file and the test file; that is the file's meaning, kept).
    assert label.files == frozenset(_rows("catm.labels.jsonl")[0]["gold"])


def test_catm_reads_its_labels_file() -> None:
    records = list(catm.read_labels(FIXTURES / "catm.labels.jsonl"))
    assert [type(r) for r in records] == [codegrep_records.LabelRecord]
    (label,) = records
    assert isinstance(label, codegrep_records.LabelRecord)
    assert label.patch_files == ["p/new.py", "p/added.py", "tests/test_p.py"]
    assert [m.path for m in label.mined] == ["p/a.py", "p/old.py"]
    assert label.judge == "none"


def test_catm_reads_its_stats_file() -> None:
    stats = MiningStats.model_validate_json((FIXTURES / "catm.labels.jsonl.stats.json").read_text())
    assert stats.labels_written == 1


def test_catm_reads_its_input_files() -> None:
    instances, skips = catm.load_mining_instances([FIXTURES / "catm-input.instances.jsonl"])
    assert skips == []
    assert list(instances) == ["o__p-1"]
    assert codegrep_records.load_instances(FIXTURES / "catm-input.instances.jsonl").problems == ()
    trajectories = list(read_trajectories(FIXTURES / "catm-input.trajectories.jsonl"))
    assert [type(t) for t in trajectories] == [Trajectory]


# codegrep-model's rollout -----------------------------------------------------------------------


def test_codegrep_model_validates_its_rollout_line() -> None:
    (line,) = (FIXTURES / "codegrep-model-batch.rollouts.jsonl").read_text().splitlines()
    record = codegrep_model.RolloutRecord.model_validate_json(line)
    assert record.instance_id == "psf__requests-1963"
    assert record.repo == "psf/requests"


# Scoring them: `swe-eval retrieval` on the two Lite rows they answer ------------------------------


@pytest.fixture(scope="module")
def lite_two(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lite = SHARED / "swebench" / "lite.jsonl"
    if not lite.is_file():
        pytest.skip(
            f"SWE-bench Lite not found at {lite}: the fixtures answer two of its rows "
            "(set CODEGREP_SHARED_DATA to the shared data folder)"
        )
    rows = [json.loads(line) for line in lite.read_text().splitlines() if line.strip()]
    chosen = [r for r in rows if r["instance_id"] in LITE_IDS]
    assert sorted(r["instance_id"] for r in chosen) == list(LITE_IDS)
    path = tmp_path_factory.mktemp("lite") / "instances.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in chosen))
    return path


@pytest.mark.parametrize(
    ("name", "system", "precision"),
    [
        ("swe-eval-bm25.pred.jsonl", "bm25", 0.2),
        ("codegrep-model-batch.pred.jsonl", "lexical", 0.75),
    ],
)
def test_swe_eval_retrieval_scores_each_prediction_file(
    lite_two: Path, name: str, system: str, precision: float
) -> None:
    res = runner.invoke(
        swe_eval_app,
        ["retrieval", "-i", str(lite_two), "-p", str(FIXTURES / name), "-f", "json",
         "--resamples", "0"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["skipped_rows"]["total"] == 0
    (summary,) = report["systems"]
    assert summary["name"] == system
    assert (summary["n"], summary["missing"], summary["empty"], summary["unknown"]) == (2, 0, 0, 0)
    # Both rankings hold each instance's one gold file.
    assert summary["metrics"]["recall"]["value"] == 1.0
    assert summary["metrics"]["precision"]["value"] == pytest.approx(precision)
