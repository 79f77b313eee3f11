"""`run_localize_job`: the command's job as a library call raises the app's errors (the CLI only
maps them to exit 2) and returns the record the command prints."""

from __future__ import annotations

from pathlib import Path

import pytest
from codegrep.errors import InjectorError, IssueInputError, JobInputError, OutputWriteError
from codegrep.localize_job import LocalizeJob, run_localize_job


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "session.py").write_text("class Session:\n    def get(self):\n        pass\n")
    return repo


def test_bad_settings_are_the_apps_errors_naming_the_flag(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    issue = tmp_path / "issue.md"
    issue.write_text("KeyError in Session.get\n")
    job = LocalizeJob(repo=str(repo), issue=str(issue))
    with pytest.raises(JobInputError, match="--inject bogus: not one of"):
        run_localize_job(LocalizeJob(repo=str(repo), issue=str(issue), inject="bogus"))
    with pytest.raises(JobInputError, match="--base-url ftp://x: not an http"):
        run_localize_job(LocalizeJob(repo=str(repo), issue=str(issue), base_url="ftp://x"))
    out = tmp_path / "same.json"
    with pytest.raises(JobInputError, match="the same file"):
        run_localize_job(LocalizeJob(repo=str(repo), issue=str(issue), output=out, rollout=out))
    with pytest.raises(OutputWriteError, match="cannot write -o"):
        run_localize_job(LocalizeJob(repo=str(repo), issue=str(issue), output=tmp_path))
    (tmp_path / "empty.md").write_text("  \n")
    with pytest.raises(IssueInputError, match="the issue text is empty"):
        run_localize_job(LocalizeJob(repo=str(repo), issue=str(tmp_path / "empty.md")))
    assert issubclass(JobInputError, InjectorError)
    assert issubclass(OutputWriteError, InjectorError)

    outcome = run_localize_job(job)
    assert outcome.result.status != "error"
    assert outcome.response["files"] == [f.path for f in outcome.result.files]
    assert outcome.response == outcome.result.to_json()  # ungated: the same record


def test_the_response_says_its_layout_and_an_old_one_reads() -> None:
    """`LocalizeResponse` carries `schema_version`; a response written before it still reads."""
    from codegrep.response import LOCALIZE_RESPONSE_SCHEMA_VERSION, LocalizeResponse

    old = {
        "files": ["a.py"],
        "scores": None,
        "reasons": {"a.py": "read"},
        "line_ranges": {},
        "status": "answered",
        "policy": "lexical",
        "turns": 2,
        "tool_calls": 3,
        "tokens": 0,
        "latency_s": 0.5,
        "issue_bytes": 10,
        "injected": ["a.py"],
    }
    read = LocalizeResponse.model_validate(old)
    assert read.schema_version == LOCALIZE_RESPONSE_SCHEMA_VERSION == 1
    assert read.model_dump(mode="json")["schema_version"] == 1
