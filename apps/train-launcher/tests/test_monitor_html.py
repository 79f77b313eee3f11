"""`codegrep-train monitor --html`: the flag writes the page, and an unwritable path is said
before any reading (the page itself is tested in a browser in tests/test_html_reports.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from train_launcher.cli import app
from typer.testing import CliRunner

FIXTURES = Path(__file__).parent / "fixtures" / "monitor"
runner = CliRunner()


def test_html_holds_the_alarms_and_every_logged_rollout(tmp_path: Path) -> None:
    html = tmp_path / "kl.html"
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        [
            "monitor",
            str(FIXTURES / "v1_kl_drift"),
            "--no-plot",
            "-o",
            str(out),
            "--html",
            str(html),
        ],
    )
    assert result.exit_code == 1, result.output  # the KL alarm
    page = html.read_text()
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    report = json.loads((out / "report.json").read_text())
    assert [(a["name"], a["step"]) for a in data["alarms"]] == [
        (a["name"], a["step"]) for a in report["alarms"]
    ]
    log = FIXTURES / "v1_kl_drift" / "v0-20261001-100000" / "codegrep_rollouts.jsonl"
    assert len(data["rollouts"]) == sum(1 for line in log.read_text().splitlines() if line.strip())
    assert "kl" in data["curves"]
    assert f"wrote {html}" in result.output


def test_an_unwritable_html_path_exits_2_before_reading(tmp_path: Path) -> None:
    folder = tmp_path / "taken"
    folder.mkdir()
    result = runner.invoke(
        app,
        [
            "monitor",
            str(FIXTURES / "healthy"),
            "--no-plot",
            "-o",
            str(tmp_path / "o"),
            "--html",
            str(folder),
        ],
    )
    assert result.exit_code == 2
    assert "cannot write --html" in result.output
    assert not (tmp_path / "o" / "report.json").exists()
