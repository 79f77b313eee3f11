"""Names from input files (a predictions file's `retriever`, a run's name) stay inside their
table cell in every format: no forged Markdown row, no rich markup read from them."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from swe_eval._markdown import md_cell
from swe_eval.cli import app
from typer.testing import CliRunner

runner = CliRunner()
FORGER = "mine | 3 | 0.000\n| FORGED-ROW | 3 | 1.000 | 1.000"


def _cells(line: str) -> list[str]:
    """A GFM table row split as cmark-gfm does: a backslash escapes the next character, an
    unescaped `|` ends a cell."""
    assert line.startswith("|"), line
    assert line.endswith("|"), line
    cells, cell, i = [], "", 1
    while i < len(line) - 1:
        if line[i] == "\\":
            cell += line[i : i + 2]
            i += 2
            continue
        if line[i] == "|":
            cells.append(cell)
            cell = ""
        else:
            cell += line[i]
        i += 1
    return [*cells, cell]


def _files(tmp_path: Path, retriever: str) -> tuple[Path, Path]:
    def patch(n: int) -> str:
        name = f"r/m{n}.py"
        return f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n@@ -1 +1 @@\n-a\n+b\n"

    rows = [{"instance_id": f"o__r-{n}", "repo": "o/r", "patch": patch(n)} for n in range(3)]
    inst = tmp_path / "inst.jsonl"
    inst.write_text("".join(json.dumps(r) + "\n" for r in rows))
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        "".join(
            json.dumps({"instance_id": r["instance_id"], "files": ["x.py"], "retriever": retriever})
            + "\n"
            for r in rows
        )
    )
    return inst, preds


def test_a_retriever_name_cannot_forge_a_markdown_row(tmp_path: Path) -> None:
    inst, preds = _files(tmp_path, FORGER)
    other = tmp_path / "other.jsonl"
    other.write_text(preds.read_text().replace(json.dumps(FORGER), '"plain"'))
    res = runner.invoke(
        app,
        ["retrieval", "-i", str(inst), "-p", str(preds), "-p", str(other), "-f", "markdown",
         "--paired", "--resamples", "50", "--title", "T | x\n| y"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert not any(line.startswith("| FORGED") for line in lines), res.stdout
    tables = [t.splitlines() for t in res.stdout.split("\n\n") if t.startswith("|")]
    assert len(tables) == 2
    for table in tables:  # every row has its header's cells
        assert all(len(_cells(row)) == len(_cells(table[0])) for row in table), table
    assert [_cells(r)[0].strip() for r in tables[0][2:]] == [md_cell(FORGER), "plain"]
    assert [_cells(r)[0].strip() for r in tables[1][2:]] == [f"plain − {md_cell(FORGER)}"] * 2
    assert lines[0] == "**T \\| x\\n\\| y**"


def test_a_retriever_name_is_not_rich_markup(tmp_path: Path) -> None:
    inst, preds = _files(tmp_path, "mine[/bold] [red]x")
    res = runner.invoke(app, ["retrieval", "-i", str(inst), "-p", str(preds)])
    assert res.exit_code == 0, res.output
    assert "mine[/bold] [red]x" in res.stdout


def test_a_run_name_cannot_forge_a_downstream_row(tmp_path: Path) -> None:
    ids = [f"o__r-{n}" for n in range(4)]
    inst = tmp_path / "inst.jsonl"
    inst.write_text("".join(json.dumps({"instance_id": i, "repo": "o/r"}) + "\n" for i in ids))
    for name, resolved in (("a", ids[:1]), ("b", ids[:3])):
        (tmp_path / f"{name}.json").write_text(
            json.dumps({"resolved_ids": resolved, "completed_ids": ids, "schema_version": 2})
        )
    manifest = tmp_path / "runs.json"
    forged = "b | 4 | 4 | 100.0%\n| FORGED | 4"
    manifest.write_text(json.dumps({
        "instances": "inst.jsonl",
        "runs": [{"name": "a", "report": "a.json"}, {"name": forged, "report": "b.json"}],
    }))  # fmt: skip
    res = runner.invoke(
        app, ["downstream", "report", "--manifest", str(manifest), "-f", "markdown",
              "--resamples", "50"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert not any(line.startswith("| FORGED") for line in res.stdout.splitlines()), res.stdout
    tables = [t.splitlines() for t in res.stdout.split("\n\n") if t.startswith("|")]
    assert len(tables) == 2
    for table in tables:  # every row has its header's cells
        assert all(len(_cells(row)) == len(_cells(table[0])) for row in table), table
    assert [_cells(r)[0].strip() for r in tables[0][2:]] == ["a", md_cell(forged)]
    assert [_cells(r)[0].strip() for r in tables[1][2:]] == [f"{md_cell(forged)} vs a"]


@given(st.lists(st.text(), min_size=1, max_size=4))
def test_escaped_cells_are_one_row_of_as_many_cells(cells: list[str]) -> None:
    line = "| " + " | ".join(map(md_cell, cells)) + " |"
    assert not {"\n", "\r"} & set(line)
    assert len(_cells(line)) == len(cells)
    assert not {"<", ">"} & set(line)
