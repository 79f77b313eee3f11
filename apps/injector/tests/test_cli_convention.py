"""`codegrep` and the toolkit's flag convention: --version, -o checked before the search,
--timeout (and its old spelling), exit 2 for bad input and 1 for a failed search, each said in
one `error:` line; paths with square brackets printed as they are."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from codegrep import __version__
from codegrep.cli import app
from typer.testing import CliRunner

runner = CliRunner()
ISSUE = "`render_slug_page` crashes when the invoice id is missing"


FILES = {
    "pages/[slug].py": "def render_slug_page(props):\n    return fetch_invoice(props['id'])\n",
    "README.md": "# web\n",
}


@pytest.fixture
def repo(tmp_path: Path, make_repo: Callable[[Path, dict[str, str]], Path]) -> Path:
    """A repository whose one relevant file has square brackets in its path (Next.js style)."""
    return make_repo(tmp_path / "web", FILES)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # closed again: a connection to it is refused


def test_version_flag() -> None:
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0
    assert res.stdout == f"codegrep {__version__}\n"
    assert runner.invoke(app, ["version"]).stdout == f"{__version__}\n"  # kept


def test_square_brackets_in_paths_are_printed(repo: Path) -> None:
    res = runner.invoke(app, ["localize", "--repo", str(repo), "--issue", "-"], input=ISSUE)
    assert res.exit_code == 0, res.output
    # rich read "[slug]" as a style tag and printed "pages/.py"
    assert res.stdout.splitlines()[0].startswith("pages/[slug].py")


def test_outputs_are_checked_before_the_search(repo: Path, tmp_path: Path) -> None:
    argv = ["localize", "--repo", str(repo), "--issue", "-"]
    res = runner.invoke(app, [*argv, "--rollout", str(tmp_path)], input=ISSUE)
    assert res.exit_code == 2
    assert f"error: cannot write --rollout {tmp_path}: it is a directory" in res.stderr
    same = tmp_path / "x.json"
    res = runner.invoke(app, [*argv, "-o", str(same), "--rollout", str(same)], input=ISSUE)
    assert res.exit_code == 2
    assert "error: -o and --rollout are the same file" in res.stderr
    assert not same.exists()
    # a folder that can be made is made, and only when the output is written
    out = tmp_path / "new" / "dir" / "loc.json"
    res = runner.invoke(app, [*argv, "-o", str(out)], input=ISSUE)
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["files"] == ["pages/[slug].py"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--timeout", "0"], "error: --timeout must be a positive number of seconds, got 0"),
        (
            ["--timeout", "5", "--timeout-s", "6"],
            "error: --timeout 5 and --timeout-s 6 (its old spelling) disagree",
        ),
        (["--base-url", "localhost:8000"], "error: --base-url localhost:8000: not an http(s) URL"),
        (["--policy", "bm25"], "error: --policy: policy 'bm25': not one of lexical"),
        (
            ["--policy", "lexical", "--base-url", "http://h/v1"],
            "error: --policy lexical and --base-url http://h/v1 both name the policy",
        ),
        (["--model", "m"], "error: --model m names a model at --base-url"),
        (["--policy", "no_such_module_x:P"], "error: policy 'no_such_module_x:P': cannot import"),
    ],
)
def test_bad_options_exit_2_in_one_line(repo: Path, extra: list[str], message: str) -> None:
    res = runner.invoke(app, ["localize", "--repo", str(repo), "--issue", "-", *extra], input=ISSUE)
    assert res.exit_code == 2
    assert res.stderr.startswith(message)
    assert len(res.stderr.splitlines()) == 1
    assert res.stdout == ""


def test_any_policy_spec_reaches_localize(repo: Path, tmp_path: Path) -> None:
    """`--policy` takes what the registry takes, an import path included, and the served spec
    is the same policy as the old --base-url/--model."""
    (tmp_path / "outside_localizer.py").write_text(
        "from codegrep_model import PolicyReply\n\n\n"
        "class OneFile:\n"
        "    name = 'one-file'\n\n"
        "    async def reply(self, request):\n"
        '        return PolicyReply(content=\'{"files": ["pages/[slug].py"]}\')\n',
        encoding="utf-8",
    )
    sys.path.insert(0, str(tmp_path))
    try:
        argv = ["localize", "--repo", str(repo), "--issue", "-", "--json"]
        res = runner.invoke(app, [*argv, "--policy", "outside_localizer:OneFile"], input=ISSUE)
        assert res.exit_code == 0, res.output
        data = json.loads(res.stdout)
        assert (data["policy"], data["files"]) == ("one-file", ["pages/[slug].py"])
        heuristic = runner.invoke(app, [*argv, "--policy", "lexical-heuristic"], input=ISSUE)
        assert heuristic.exit_code == 0, heuristic.output
        assert json.loads(heuristic.stdout)["policy"] == "lexical-heuristic"
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("outside_localizer", None)
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    new = runner.invoke(app, [*argv, "--policy", f"openai:m@{url}", "--timeout", "2"], input=ISSUE)
    old = runner.invoke(
        app, [*argv, "--base-url", url, "--model", "m", "--timeout", "2"], input=ISSUE
    )
    assert new.exit_code == old.exit_code == 1
    assert json.loads(new.stdout)["policy"] == json.loads(old.stdout)["policy"] == "openai:m"


def test_a_failed_search_exits_1_with_the_json_and_one_error_line(repo: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    res = runner.invoke(
        app,
        ["localize", "--repo", str(repo), "--issue", "-", "--json", "--base-url", url,
         "--timeout-s", "2"],  # the old spelling still works
        input=ISSUE,
    )  # fmt: skip
    assert res.exit_code == 1
    data = json.loads(res.stdout)
    assert data["status"] == "error"
    assert "ConnectError" in data["error"]
    assert res.stderr.startswith("error: the search failed: EndpointError: ")
    assert len(res.stderr.splitlines()) == 1


def test_a_clone_cache_that_cannot_be_made_is_bad_input(repo: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    res = runner.invoke(
        app,
        ["localize", "--repo", "acme/web", "--commit", "HEAD", "--issue", "-", "--cache",
         str(blocker), "--source", str(repo.parent / "{name}")],
        input=ISSUE,
    )  # fmt: skip
    assert res.exit_code == 2  # was a NotADirectoryError traceback
    assert res.stderr == (
        f"error: cannot use {blocker} as the clone cache (--cache): Not a directory\n"
    )
