"""Reading files, converting peers' outputs, and the cross-check against independent figures."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from codegrep_records import Prediction, gold_from_instances, load_instances, load_predictions
from swe_eval import PeerFormat, convert_peer, evaluate, summarize, write_predictions

PATCH = "diff --git a/p/m.py b/p/m.py\n--- a/p/m.py\n+++ b/p/m.py\n@@ -1 +1 @@\n-a\n+b\n"


def test_write_predictions_writes_what_swe_eval_0_1_wrote(tmp_path: Path) -> None:
    """None fields are left out, and so is `fallback` while it is False (what readers assume)."""
    preds = [
        Prediction(
            instance_id="o__r-1",
            files=("a.py", "b.py"),
            scores=(57.399330139160156, 0.5),
            latency_s=1.5,
            retriever="bm25",
        ),
        Prediction(instance_id="o__r-2", files=(), retriever="lexical", turns=3, fallback=True),
    ]
    for name in ("p.jsonl", "p.jsonl.gz"):
        out = tmp_path / "sub" / name
        assert write_predictions(out, preds) == 2
        raw = gzip.decompress(out.read_bytes()) if name.endswith(".gz") else out.read_bytes()
        assert raw.decode().splitlines() == [
            '{"schema_version":1,"instance_id":"o__r-1","files":["a.py","b.py"],'
            '"scores":[57.399330139160156,0.5],"latency_s":1.5,"retriever":"bm25"}',
            '{"schema_version":1,"instance_id":"o__r-2","files":[],"turns":3,'
            '"retriever":"lexical","fallback":true}',
        ]
        loaded = load_predictions(out)
        assert loaded.problems == ()
        assert loaded.records == tuple(preds)


def test_gold_comes_from_the_patch_and_else_from_gold_files(tmp_path: Path) -> None:
    p = tmp_path / "i.jsonl"
    rows = [
        {"instance_id": "o__r-1", "repo": "o/r", "patch": PATCH, "gold_files": ["ignored.py"]},
        {"instance_id": "o__r-2", "repo": "o/r", "gold_files": ["/testbed/q/n.py"]},
        {"instance_id": "o__r-3", "repo": "o/r"},
    ]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    gold = gold_from_instances(load_instances(p).records)
    assert {iid: set(g.files) for iid, g in gold.items()} == {
        "o__r-1": {"p/m.py"},
        "o__r-2": {"q/n.py"},
        "o__r-3": set(),
    }
    assert [g.source for g in gold.values()] == ["patch", "gold_files", "gold_files"]


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
