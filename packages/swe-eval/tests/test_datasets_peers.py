"""Reading files, converting peers' outputs, and the cross-check against independent figures."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from swe_eval import (
    DatasetError,
    PeerFormat,
    convert_peer,
    evaluate,
    gold_from_instances,
    load_instances,
    load_labels,
    load_predictions,
    summarize,
    write_predictions,
)

PATCH = "diff --git a/p/m.py b/p/m.py\n--- a/p/m.py\n+++ b/p/m.py\n@@ -1 +1 @@\n-a\n+b\n"
ROW = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "patch": PATCH}


def test_jsonl_with_bad_rows_counts_them(tmp_path: Path) -> None:
    p = tmp_path / "i.jsonl"
    p.write_text(
        json.dumps(ROW) + "\nnot json\n" + json.dumps({"repo": "x"}) + "\n" + json.dumps(ROW) + "\n"
    )
    loaded = load_instances(p)
    assert [i.instance_id for i in loaded.records] == ["o__r-1"]
    messages = [str(x) for x in loaded.problems]
    assert len(messages) == 3
    assert any(":2: not JSON" in m for m in messages)
    assert any("instance_id" in m for m in messages)
    assert any("duplicate" in m for m in messages)


def test_json_list_gzip_and_parquet_give_the_same_instances(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "a.json").write_text(json.dumps([ROW]))
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as fh:
        fh.write(json.dumps(ROW) + "\n")
    pq.write_table(pa.Table.from_pylist([ROW]), tmp_path / "c.parquet")
    got = [load_instances(tmp_path / n).records for n in ("a.json", "b.jsonl.gz", "c.parquet")]
    assert got[0] == got[1] == got[2]
    assert gold_from_instances(got[0])["o__r-1"].files == {"p/m.py"}


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such file"):
        load_instances(tmp_path / "nope.jsonl")


def test_predictions_round_trip_normalized(tmp_path: Path) -> None:
    from swe_eval import Prediction

    out = tmp_path / "p.jsonl"
    write_predictions(
        out,
        [
            Prediction(
                instance_id="x", files=("./a.py", "/testbed/a.py", "b\\c.py"), scores=(3, 2, 1)
            )
        ],
    )
    (pred,) = load_predictions(out).records
    assert pred.files == ("a.py", "b/c.py")
    assert pred.scores == (3.0, 1.0)


def test_labels_gold_list_or_catm_weights(tmp_path: Path) -> None:
    p = tmp_path / "labels.jsonl"
    rows = [
        {"instance_id": "a", "gold": ["x.py", "./y.py"]},
        {
            "instance_id": "b",
            "patch_files": ["p.py"],
            "mined": [{"path": "m1.py", "weight": 0.4}, {"path": "m2.py", "weight": 0.1}],
        },
        {"instance_id": "c", "something": 1},
    ]
    p.write_text("\n".join(map(json.dumps, rows)) + "\n")
    loaded = load_labels(p)
    by_id = {lab.instance_id: lab.files for lab in loaded.records}
    assert by_id == {"a": {"x.py", "y.py"}, "b": {"p.py", "m1.py"}}
    assert len(loaded.problems) == 1


def test_converters_on_small_files(tmp_path: Path) -> None:
    chrono = tmp_path / "c.jsonl"
    chrono.write_text(
        json.dumps(
            {
                "instance_id": "a",
                "gold": ["x"],
                "bm25": [["y", 9.0], ["x", 5.0]],
                "hybrid": [["x", 0.9]],
            }
        )
        + "\n"
    )
    (pred,) = convert_peer(PeerFormat.CHRONOREPO, chrono, ranking="bm25", top_k=1).predictions
    assert pred.files == ("y",)
    assert pred.retriever == "chronorepo-bm25@1"
    (pred,) = convert_peer("chronorepo", chrono, ranking="bm25", min_score=6).predictions
    assert pred.files == ("y",)
    loc = tmp_path / "l.json"
    loc.write_text(json.dumps({"per_instance": [{"instance_id": "a", "pred_files": ["x", "z"]}]}))
    (pred,) = convert_peer("locagent", loc).predictions
    assert pred.files == ("x", "z")
    acr = tmp_path / "acr.json"
    new = (
        "diff --git a/rep.py b/rep.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/rep.py\n@@ -0,0 +1 @@\n+x\n"
    )
    acr.write_text(
        json.dumps(
            [
                {"instance_id": "a", "model_patch": PATCH + new},
                {"instance_id": "b", "model_patch": None},
                {"x": 1},
            ]
        )
    )
    conv = convert_peer("autocoderover", acr)
    assert [p.files for p in conv.predictions] == [("p/m.py",), ()]
    assert len(conv.problems) == 1


def test_cross_check_against_independent_figures(shared_data: Path) -> None:
    """ChronoRepo BM25 top-1 and LocAgent top-1 F-beta on all 300 Lite: 0.227 and 0.773."""
    inst = load_instances(shared_data / "swebench" / "lite.jsonl").records
    gold = gold_from_instances(inst)
    peers = shared_data / "peers"
    bm25 = convert_peer(
        "chronorepo", peers / "chronorepo" / "f1_scores_lite.jsonl", ranking="bm25", top_k=1
    )
    loc = convert_peer(
        "locagent", peers / "chronorepo" / "locagent_claude35_outputs.jsonl", top_k=1
    )
    for conv, expected in ((bm25, 0.227), (loc, 0.773)):
        s = summarize(evaluate(gold, conv.predictions), n_resamples=0, by_repo=False)
        assert s.n == 300
        assert s.missing == 0
        assert round(s.metrics["fbeta"].value, 3) == expected
    # LocAgent's whole list: CodeScout's evaluation reports file F1 0.4348 for it.
    full = convert_peer("locagent", peers / "codescout_eval" / "locagent_evaluation.json")
    s = summarize(evaluate(gold, full.predictions), n_resamples=0, by_repo=False)
    assert s.metrics["f1"].value == pytest.approx(0.4348, abs=5e-4)


def test_a_duplicate_is_reported_at_its_own_line(tmp_path: Path) -> None:
    p = tmp_path / "i.jsonl"
    p.write_text(json.dumps(ROW) + "\nnot json\n\n" + json.dumps(ROW) + "\n")
    (dup,) = [x for x in load_instances(p).problems if "duplicate" in x.message]
    assert dup.line == 4


def test_an_unknown_prediction_schema_version_is_skipped_and_reported(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    rows = [
        {"instance_id": "a", "files": ["x.py"], "schema_version": 2},
        {"instance_id": "b", "files": ["y.py"]},
    ]
    p.write_text("\n".join(map(json.dumps, rows)) + "\n")
    loaded = load_predictions(p)
    assert [r.instance_id for r in loaded.records] == ["b"]
    (problem,) = loaded.problems
    assert problem.line == 1
    assert "schema_version 2" in problem.message


def test_an_unreadable_parquet_file_is_a_dataset_error(tmp_path: Path) -> None:
    p = tmp_path / "i.parquet"
    p.write_text("not parquet")
    with pytest.raises(DatasetError, match="parquet"):
        load_instances(p)


def test_a_label_row_with_bad_patch_files_is_reported_not_emptied(tmp_path: Path) -> None:
    p = tmp_path / "labels.jsonl"
    p.write_text(json.dumps({"instance_id": "a", "patch_files": [1], "mined": []}) + "\n")
    loaded = load_labels(p)
    assert loaded.records == ()
    assert len(loaded.problems) == 1


def test_a_non_numeric_ranking_score_skips_the_row(tmp_path: Path) -> None:
    chrono = tmp_path / "c.jsonl"
    rows = [
        {"instance_id": "a", "bm25": [["x", "high"]]},
        {"instance_id": "b", "bm25": [["x", None]]},
        {"instance_id": "c", "bm25": [["x", True]]},
        {"instance_id": "d", "bm25": [["x", 2]]},
    ]
    chrono.write_text("\n".join(map(json.dumps, rows)) + "\n")
    conv = convert_peer("chronorepo", chrono, ranking="bm25")
    assert [p.instance_id for p in conv.predictions] == ["d"]
    assert [x.line for x in conv.problems] == [1, 2, 3]
    assert all("score" in x.message for x in conv.problems)
