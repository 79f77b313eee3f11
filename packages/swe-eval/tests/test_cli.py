"""The CLI end to end on small files: every output format, paired bootstrap, convert, cut, plot."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
from pathlib import Path

import pytest
from swe_eval.cli import app
from typer.testing import CliRunner

runner = CliRunner()


def _patch(path: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    inst = tmp_path / "inst.jsonl"
    rows = [
        {"instance_id": f"o__{r}-{n}", "repo": f"o/{r}", "patch": _patch(f"{r}/m{n}.py")}
        for r in ("r", "s")
        for n in range(10)
    ]
    inst.write_text("\n".join(map(json.dumps, rows)) + "\n")
    good = tmp_path / "good.jsonl"
    bad = tmp_path / "bad.jsonl"
    good.write_text(
        "\n".join(
            json.dumps(
                {
                    "instance_id": r["instance_id"],
                    "files": [r["patch"].split()[2][2:]],
                    "retriever": "good",
                    "scores": [1.0],
                }
            )
            for r in rows
        )
        + "\n"
    )
    bad.write_text(
        "\n".join(
            json.dumps(
                {
                    "instance_id": r["instance_id"],
                    "files": ["x.py", r["patch"].split()[2][2:]],
                    "scores": [2.0, 1.0],
                }
            )
            for r in rows[:15]
        )
        + "\n"
    )
    return {"inst": inst, "good": good, "bad": bad}


def test_markdown_side_by_side_with_paired_bootstrap(files: dict[str, Path]) -> None:
    res = runner.invoke(
        app,
        [
            "retrieval",
            "-i",
            str(files["inst"]),
            "-p",
            str(files["good"]),
            "-p",
            str(files["bad"]),
            "--paired",
            "-f",
            "markdown",
            "--resamples",
            "300",
            "--by-repo",
        ],
    )
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "| good | 20 | 1.000 [1.000, 1.000] |" in out
    assert "| bad | 20 |" in out
    assert "good · o/r" in out
    assert "bad − good" in out


def test_csv_and_json_carry_the_counts(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    res = runner.invoke(
        app,
        [
            "retrieval",
            "-i",
            str(files["inst"]),
            "-p",
            str(files["bad"]),
            "-f",
            "csv",
            "-o",
            str(out),
            "--resamples",
            "0",
        ],
    )
    assert res.exit_code == 0, res.output
    (row,) = list(csv.DictReader(io.StringIO(out.read_text())))
    assert row["missing"] == "5"
    assert float(row["precision"]) == pytest.approx(15 * 0.5 / 20)
    res = runner.invoke(
        app,
        [
            "retrieval",
            "-i",
            str(files["inst"]),
            "-p",
            str(files["bad"]),
            "-f",
            "json",
            "--resamples",
            "0",
        ],
    )
    data = json.loads(res.stdout)
    assert data["schema_version"] == 1
    assert data["systems"][0]["missing"] == 5
    assert data["systems"][0]["metrics"]["acc@1"]["value"] == 0.0


def test_cut_sweep_writes_the_best_cut(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "cut.jsonl"
    res = runner.invoke(
        app, ["cut", "-i", str(files["inst"]), "-p", str(files["bad"]), "--best", "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    first = json.loads(out.read_text().splitlines()[0])
    # Top-2 keeps the gold file, top-1 only the decoy: P=1/2 with full recall beats 0.
    assert first["files"] == ["x.py", first["files"][1]]


def test_convert_reports_what_it_wrote(tmp_path: Path) -> None:
    src = tmp_path / "c.jsonl"
    src.write_text(
        json.dumps({"instance_id": "a", "hybrid": [["x.py", 0.9], ["y.py", 0.5]]}) + "\n"
    )
    out = tmp_path / "o.jsonl"
    res = runner.invoke(app, ["convert", "chronorepo", str(src), "-o", str(out), "--top-k", "1"])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["files"] == ["x.py"]


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs the 'plot' extra")
def test_plot_writes_a_png(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "p.png"
    res = runner.invoke(
        app,
        [
            "plot",
            "-i",
            str(files["inst"]),
            "-p",
            str(files["good"]),
            "-p",
            str(files["bad"]),
            "-o",
            str(out),
            "--resamples",
            "100",
        ],
    )
    assert res.exit_code == 0, res.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_precision_curve_stops_when_answers_stop_growing(files: dict[str, Path]) -> None:
    from codegrep_records import gold_from_instances, load_instances, load_predictions
    from swe_eval.plots import precision_curve

    gold = gold_from_instances(load_instances(files["inst"]).records)
    pts = precision_curve(gold, load_predictions(files["bad"]).records)
    assert [p.top_k for p in pts] == [1, 2]
    assert pts[1].precision == pytest.approx(15 * 0.5 / 20)


@pytest.mark.parametrize(
    "args",
    [
        ["retrieval", "-p", "{good}"],
        ["cut", "-p", "{good}"],
        ["plot", "-p", "{good}", "-o", "{tmp}/x.png"],
        ["predict", "-r", "bm25", "--cache", "{tmp}/cache", "-o", "{tmp}/o.jsonl"],
    ],
)
def test_a_missing_instance_file_is_a_clear_error(
    args: list[str], files: dict[str, Path], tmp_path: Path
) -> None:
    filled = [a.format(good=files["good"], tmp=tmp_path) for a in args]
    res = runner.invoke(app, [*filled, "-i", str(tmp_path / "nope.jsonl")])
    assert res.exit_code == 2
    assert "no such file" in " ".join(res.output.split())
    assert res.exception is None or isinstance(res.exception, SystemExit)


def test_cut_reports_the_rows_it_skipped(files: dict[str, Path], tmp_path: Path) -> None:
    with files["good"].open("a") as fh:
        fh.write("not json\n")
    res = runner.invoke(app, ["cut", "-i", str(files["inst"]), "-p", str(files["good"])])
    assert res.exit_code == 0, res.output
    assert "1 prediction (good.jsonl) row(s) skipped" in " ".join(res.output.split())


def test_changelog_entries_in_the_gold_are_a_choice_and_the_rule_is_said(tmp_path: Path) -> None:
    # the fix touched code and its changelog entries; the prediction names the code only
    patch = _patch("pkg/core.py") + _patch("CHANGES.rst") + _patch("changelog.d/12.bugfix.rst")
    inst = tmp_path / "inst.jsonl"
    inst.write_text(json.dumps({"instance_id": "o__r-1", "repo": "o/r", "patch": patch}) + "\n")
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"instance_id": "o__r-1", "files": ["pkg/core.py"]}) + "\n")
    argv = ["retrieval", "-i", str(inst), "-p", str(pred), "-f", "json", "--resamples", "0"]
    counted = runner.invoke(app, argv)
    left_out = runner.invoke(app, [*argv, "--exclude-changelogs"])
    assert counted.exit_code == 0, counted.output
    assert left_out.exit_code == 0, left_out.output

    def recall(res: object) -> float:
        data = json.loads(res.stdout)  # type: ignore[attr-defined]
        return float(data["systems"][0]["metrics"]["recall"]["value"])

    assert recall(counted) == pytest.approx(1 / 3)  # the default: as every published table
    assert recall(left_out) == 1.0
    # each table says which gold it scored against, on stderr
    said = "gold: modified and deleted files (renamed: old path); not added files, not tests; "
    assert said + "changelogs counted" in counted.stderr
    assert "gold: modified and deleted files" in left_out.stderr
    assert "changelogs left out" in left_out.stderr
