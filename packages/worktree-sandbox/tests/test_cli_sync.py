"""The command line (JSON out, prepare's report) and the synchronous wrapper."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner
from worktree_sandbox import BareRepoCache, SyncSandbox, ToolErrorKind
from worktree_sandbox.cli import app

runner = CliRunner()


def test_grep_glob_read_print_json(repo: Any) -> None:
    sha = repo.commits[-1]
    out = runner.invoke(app, ["grep", "class Session", "--repo", str(repo.path), "--commit", sha])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["matches"] == [{"path": "src/app/core.py", "line": 12, "text": "class Session:"}]
    out = runner.invoke(app, ["glob", "*.py", "--repo", str(repo.path), "--path", "tests"])
    assert json.loads(out.stdout)["paths"] == ["tests/test_core.py"]
    out = runner.invoke(
        app, ["read", "README.md", "--repo", str(repo.path), "--commit", sha, "--text"]
    )
    assert out.stdout == "1\t# proj\n2\thello world\n"


def test_tool_error_exits_nonzero_with_a_result(repo: Any) -> None:
    out = runner.invoke(app, ["read", "../x", "--repo", str(repo.path), "--commit", "HEAD"])
    assert out.exit_code == 1
    assert json.loads(out.stdout)["error"] == "invalid_path"


def test_prepare_reports_and_counts_bad_rows(tmp_path: Path, repo: Any) -> None:
    rows = [
        {"instance_id": "a-1", "repo": "someone/proj", "base_commit": repo.commits[0]},
        {"instance_id": "a-2", "repo": "someone/proj", "base_commit": repo.commits[1]},
        {"instance_id": "a-3", "repo": "someone/proj", "base_commit": "e" * 40},
    ]
    instances = tmp_path / "i.jsonl"
    instances.write_text("\n".join(json.dumps(r) for r in rows) + "\n{broken\n")
    report = tmp_path / "report.json"
    out = runner.invoke(
        app,
        ["prepare", str(instances), "--cache", str(tmp_path / "c"),
         "--source", str(repo.path.parent / "{name}"), "-o", str(report)],
    )  # fmt: skip
    assert out.exit_code == 1  # one commit missing, one row unreadable: said, not hidden
    data = json.loads(report.read_text())
    assert data["repos"][0]["commits_ok"] == 2
    assert data["repos"][0]["commits"] == 3
    assert len(data["failures"]) == 1
    assert "a-3" in data["failures"][0]
    assert len(data["skipped_rows"]) == 1
    assert "i.jsonl:4" in data["skipped_rows"][0]


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".json", ".parquet"])
def test_prepare_reads_every_instance_format(tmp_path: Path, repo: Any, suffix: str) -> None:
    """Instance files are read by codegrep-records, as every other package of the toolkit reads
    them; a row without an instance_id is still prepared."""
    rows = [
        {"instance_id": "a-1", "repo": "someone/proj", "base_commit": repo.commits[0]},
        {"repo": "someone/proj", "base_commit": repo.commits[1], "problem_statement": None},
    ]
    instances = tmp_path / f"i{suffix}"
    if suffix == ".jsonl.gz":
        with gzip.open(instances, "wt", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
    elif suffix == ".json":
        instances.write_text(json.dumps(rows))
    else:
        pa = pytest.importorskip("pyarrow")
        pq = pytest.importorskip("pyarrow.parquet")
        pq.write_table(pa.Table.from_pylist(rows), instances)
    report = tmp_path / "report.json"
    out = runner.invoke(
        app,
        ["prepare", str(instances), "--cache", str(tmp_path / "c"),
         "--source", str(repo.path.parent / "{name}"), "-o", str(report)],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    data = json.loads(report.read_text())
    assert data["repos"][0]["commits_ok"] == 2
    assert data["failures"] == []
    assert data["skipped_rows"] == []


def test_prepare_reports_rows_it_cannot_use_by_file_and_line(tmp_path: Path, repo: Any) -> None:
    rows = [
        {"instance_id": "a-1", "repo": "someone/proj", "base_commit": repo.commits[0]},
        {"instance_id": "a-2", "repo": "someone/proj"},
        {"instance_id": "a-3", "repo": "someone/proj", "base_commit": None},
        {"instance_id": "a-4", "repo": "some one/proj", "base_commit": repo.commits[0]},
        {"instance_id": "a-5", "repo": "someone/proj", "base_commit": repo.commits[0]},
    ]
    instances = tmp_path / "i.jsonl"
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = tmp_path / "report.json"
    out = runner.invoke(
        app,
        ["prepare", str(instances), "--cache", str(tmp_path / "c"),
         "--source", str(repo.path.parent / "{name}"), "-o", str(report)],
    )  # fmt: skip
    assert out.exit_code == 1, out.output
    data = json.loads(report.read_text())
    skipped = data["skipped_rows"]
    assert [s.split(": ", 2)[0].rsplit(":", 1)[1] for s in skipped] == ["2", "3", "4"]
    assert skipped[0].startswith(f"{instances}:2: base_commit")
    assert skipped[1].startswith(f"{instances}:3: base_commit")
    assert skipped[2].startswith(f"{instances}:4: repo")
    # Two rows at one commit are one clone, not a bad row.
    assert data["repos"][0]["instances"] == 2
    assert data["failures"] == []


def test_only_the_cli_reads_instance_files_with_codegrep_records() -> None:
    # The library (trees, cache, pool) stays usable without the shared records package.
    code = (
        "import sys, worktree_sandbox, worktree_sandbox.sync, worktree_sandbox.pool\n"
        "print('codegrep_records' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_sync_sandbox(tmp_path: Path, repo: Any) -> None:
    cache = BareRepoCache(tmp_path / "c", str(repo.path.parent / "{name}"))
    with SyncSandbox(cache, workdir=tmp_path / "trees") as sb:
        tree = sb.tree("someone/proj", repo.commits[-1])
        assert tree.grep("def parse_args").matches[0].path == "src/app/core.py"
        assert tree.read("src/app/core.py", start_line=1, end_line=1).content == "import os"
        assert "src/app/cli.py" in tree.glob("src/**").paths
        assert tree.call("read", {"path": "/etc"}).error is ToolErrorKind.INVALID_PATH
        local = sb.directory(repo.path)
        assert local.read("README.md").ok
        assert local.read(".git/config").error is ToolErrorKind.INVALID_PATH
    assert list((tmp_path / "trees").iterdir()) == []
