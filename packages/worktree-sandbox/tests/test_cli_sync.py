"""The command line (JSON out, prepare's report) and the synchronous wrapper."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
