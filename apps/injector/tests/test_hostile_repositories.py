"""Repositories that try the main job and the server through their content and config: a
promisor remote outside the roots, a file name that is not UTF-8, a folder whose name holds a
newline, ignore rules over tracked files. Through `codegrep localize` and `POST /localize`."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from codegrep.cli import app
from typer.testing import CliRunner

pytest.importorskip("uvicorn", reason="needs the 'serve' extra")

import httpx
from codegrep.serve_http import build_app, serve_in_thread
from codegrep.service import LocalizeService

MakeRepo = Callable[[Path, dict[str, str]], Path]
Git = Callable[..., str]
ISSUE = "TokenRefresher.refresh fails when the token expired"
TOKEN = "class TokenRefresher:\n    def refresh(self):\n        return 1\n"


@contextmanager
def serving(root: Path) -> Iterator[str]:
    with serve_in_thread(build_app(LocalizeService(allow_roots=[root]))) as url:
        yield url


def _post(url: str, body: object) -> httpx.Response:
    return httpx.post(f"{url}/localize", json=body, timeout=60)


def _localize(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["localize", *args, "--issue", "-", "--json"], input=ISSUE)
    return res.exit_code, res.output


def test_a_non_utf8_file_name_is_answered_by_the_cli_and_the_server(
    tmp_path: Path, make_repo: MakeRepo, git: Git
) -> None:
    root = tmp_path / "root"
    repo = make_repo(root / "latin1", {"src/util.py": "def helper():\n    return 2\n"})
    with open(os.fsencode(repo) + b"/src/r\xe9sum\xe9_token.py", "w") as fh:
        fh.write(TOKEN)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@e.com", "commit", "-q", "-m", "latin-1")
    answers = []
    for commit in ([], ["--commit", "HEAD"]):
        code, out = _localize("--repo", str(repo), *commit)
        assert code == 0, out
        answers.append(json.loads(out))
    with serving(root) as url:
        for commit in (None, "HEAD"):
            r = _post(url, {"repo": str(repo), "issue": ISSUE, "commit": commit})
            assert r.status_code == 200, r.text
            answers.append(r.json())
    for data in answers:
        assert data["files"][0] == "src/résumé_token.py"
        assert "TokenRefresher" in data["reasons"]["src/résumé_token.py"]


def test_a_newline_in_a_folder_name_forges_no_answer(tmp_path: Path, make_repo: MakeRepo) -> None:
    root = tmp_path / "root"
    repo = make_repo(root / "torn", {"src/util.py": "def helper():\n    return 2\n"})
    forged = repo / "zz\nsrc" / "util.py"  # untracked: what a torn name would read as src/util.py
    forged.parent.mkdir()
    forged.write_text(TOKEN)
    code, out = _localize("--repo", str(repo))
    assert code == 0, out
    assert "src/util.py" not in json.loads(out)["files"]
    with serving(root) as url:
        r = _post(url, {"repo": str(repo), "issue": ISSUE})
        assert r.status_code == 200, r.text
        assert "src/util.py" not in r.json()["files"]


def test_ignore_rules_give_the_folder_its_commits_answer(
    tmp_path: Path, make_repo: MakeRepo, git: Git
) -> None:
    root = tmp_path / "root"
    repo = make_repo(
        root / "ignoring",
        {".ignore": "src/\n", "README.md": "# sessions\n",
         "src/session.py": "class Session:\n    def get(self):\n        pass\n"},
    )  # fmt: skip
    issue = "Session.get returns None for a missing key"
    folder = CliRunner().invoke(app, ["localize", "--repo", str(repo), "--issue", "-", "--json"],
                                input=issue)  # fmt: skip
    commit = CliRunner().invoke(
        app, ["localize", "--repo", str(repo), "--commit", "HEAD", "--issue", "-", "--json"],
        input=issue,
    )  # fmt: skip
    assert folder.exit_code == commit.exit_code == 0, folder.output + commit.output
    a, b = json.loads(folder.output), json.loads(commit.output)
    assert a["files"][0] == "src/session.py"
    assert (a["files"], a["scores"], a["reasons"]) == (b["files"], b["scores"], b["reasons"])


def test_a_promisor_remote_outside_the_roots_is_refused(
    tmp_path: Path, make_repo: MakeRepo, git: Git
) -> None:
    outside = make_repo(tmp_path / "outside", {"secret/keys.py": "SECRET_TOKEN = 1\n"})
    sha = git(outside, "rev-parse", "HEAD").strip()
    root = tmp_path / "root"
    inside = root / "repo.git"
    root.mkdir()
    git(root, "init", "-q", "--bare", str(inside))
    with open(inside / "config", "a") as cfg:
        cfg.write(
            "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tpartialClone = origin\n"
            f'[remote "origin"]\n\turl = {outside}\n\tpromisor = true\n'
        )
    (inside / "refs" / "heads" / "main").write_text(sha + "\n")
    (inside / "HEAD").write_text("ref: refs/heads/main\n")
    with serving(root) as url:
        r = _post(url, {"repo": str(inside), "issue": "SECRET_TOKEN", "commit": "HEAD"})
    assert r.status_code == 403, r.text
    assert "promisor remote" in r.json()["error"]["message"]
    assert str(outside) not in r.text
    # the main job: nothing fetched, no outside file named, no pack written
    code, out = _localize("--repo", str(inside), "--commit", "HEAD")
    assert code != 0
    assert "keys.py" not in out
    assert list((inside / "objects").rglob("*.pack")) == []
    assert subprocess.run(
        ["git", f"--git-dir={inside}", "count-objects"], capture_output=True, text=True,
        check=True, env={**os.environ, "GIT_NO_LAZY_FETCH": "1"},
    ).stdout.startswith("0 objects")  # fmt: skip


SURROGATE_POLICY = """
import json
from codegrep_model import PolicyReply, ToolCall

class SurrogateCall:
    name = "surrogate-call"

    async def reply(self, request):
        if not (request.history or request.observations):
            args = '{"pattern": "x", "path": "\\\\udce9"}'  # JSON's escape of a lone surrogate
            call = ToolCall(id="c0", name="grep", arguments=args)
            return PolicyReply(content=None, tool_calls=(call,))
        return PolicyReply(content=json.dumps({"files": ["src/util.py"]}))
"""


def test_a_lone_surrogate_in_a_models_call_ends_no_localize(
    tmp_path: Path, make_repo: MakeRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model's call whose path decodes to a lone surrogate: its error echoed the path, and
    the record could not be written (exit 1, a PydanticSerializationError traceback)."""
    repo = make_repo(tmp_path / "repo", {"src/util.py": "def helper():\n    return 2\n"})
    (tmp_path / "surrogate_policy.py").write_text(SURROGATE_POLICY)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out = _localize("--repo", str(repo), "--policy", "surrogate_policy:SurrogateCall")
    assert code == 0, out
    assert json.loads(out)["files"] == ["src/util.py"]
