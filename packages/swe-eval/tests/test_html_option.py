"""`swe-eval retrieval --html` and `downstream report --html`: the flags write the pages from
the same scores the table shows (tests/test_html_reports.py opens the pages in a browser)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from swe_eval.cli import app
from typer.testing import CliRunner

runner = CliRunner()


def _data(page: Path) -> dict[str, object]:
    m = re.search(r'id="report-data">(.*?)</script>', page.read_text(), re.S)
    assert m is not None
    return json.loads(m.group(1))  # type: ignore[no-any-return]


def _instances(tmp_path: Path) -> Path:
    patch = "diff --git a/{0} b/{0}\n--- a/{0}\n+++ b/{0}\n@@ -1 +1 @@\n-a\n+b\n"
    rows = [
        {
            "instance_id": "o__r-1",
            "repo": "o/r",
            "base_commit": "0" * 40,
            "problem_statement": "</script><b>issue one</b>",
            "patch": patch.format("a.py"),
        },
        {
            "instance_id": "o__r-2",
            "repo": "o/r",
            "base_commit": "0" * 40,
            "problem_statement": "issue two",
            "patch": patch.format("b.py"),
        },
    ]
    path = tmp_path / "instances.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_retrieval_html_has_one_case_per_instance_with_the_tables_scores(tmp_path: Path) -> None:
    preds = tmp_path / "p.jsonl"
    preds.write_text(
        json.dumps({"instance_id": "o__r-1", "files": ["a.py", "c.py"], "scores": [2.0, 1.0]})
        + "\n"
        + json.dumps({"instance_id": "o__r-2", "files": ["c.py"]})
        + "\n"
    )
    html = tmp_path / "r.html"
    result = runner.invoke(
        app,
        [
            "retrieval",
            "-i",
            str(_instances(tmp_path)),
            "-p",
            str(preds),
            "--resamples",
            "0",
            "-f",
            "json",
            "--html",
            str(html),
        ],
    )
    assert result.exit_code == 0, result.output
    cases = {c["id"]: c for c in _data(html)["cases"]}  # type: ignore[attr-defined]
    assert cases["o__r-1"]["files"] == ["a.py", "c.py"]
    assert cases["o__r-1"]["scores"] == [2.0, 1.0]
    assert cases["o__r-1"]["gold"] == ["a.py"]
    assert round(cases["o__r-1"]["f"], 3) == 0.556  # P 0.5, R 1
    assert cases["o__r-1"]["issue"] == "</script><b>issue one</b>"
    assert cases["o__r-2"]["f"] == 0.0


def test_retrieval_html_unwritable_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "retrieval",
            "-i",
            str(_instances(tmp_path)),
            "-p",
            str(tmp_path / "none.jsonl"),
            "--html",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 2
    assert "cannot write --html" in result.output


def test_downstream_html_holds_table_3(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"resolved_ids": ["o__r-1"]}))
    html = tmp_path / "d.html"
    result = runner.invoke(
        app,
        [
            "downstream",
            "report",
            f"--run=base=report={report}",
            "-i",
            str(_instances(tmp_path)),
            "--cases",
            "--resamples",
            "0",
            "--html",
            str(html),
        ],
    )
    assert result.exit_code == 0, result.output
    data = _data(html)["report"]
    assert [(c["name"], c["resolved"], c["n"]) for c in data["configs"]] == [("base", 1, 2)]  # type: ignore[index]
    assert len(data["cases"]) == 2  # type: ignore[index, arg-type]
