"""`codegrep localize` on small real git repositories made here, and on the example issue."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from codegrep import localize
from codegrep.cli import app
from codegrep_model import PolicyReply
from codegrep_model.policies.scripted import ScriptedPolicy
from typer.testing import CliRunner
from worktree_sandbox import BareRepoCache, TreePool

ROOT = Path(__file__).resolve().parents[3]

FILES = {
    "README.md": "# billing\n",
    "billing/__init__.py": "",
    "billing/invoice.py": (
        "class Invoice:\n"
        "    def add_line(self, amount):\n"
        "        if amount < 0:\n"
        "            raise ValueError('negative amounts are not allowed on an invoice')\n"
        "        self.lines.append(amount)\n"
    ),
    "billing/tax.py": "def vat_rate(country):\n    return {'de': 0.19}.get(country, 0.0)\n",
    "tests/test_invoice.py": "from billing.invoice import Invoice\n\ndef test_add_line():\n"
    "    Invoice().add_line(1)\n",
}
ISSUE = (
    "Refunds fail: `Invoice.add_line(-5)` raises\n\n"
    "    ValueError: negative amounts are not allowed on an invoice\n\n"
    "Credit notes need negative lines."
)


@pytest.fixture
def repo(tmp_path: Path, make_repo: Callable[[Path, dict[str, str]], Path]) -> Path:
    return make_repo(tmp_path / "billing-repo", FILES)


def test_localize_json_on_a_working_tree(repo: Path, tmp_path: Path) -> None:
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    res = CliRunner().invoke(
        app, ["localize", "--repo", str(repo), "--issue", str(issue), "--json"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["files"] == ["billing/invoice.py"]
    assert "Invoice" in data["reasons"]["billing/invoice.py"]
    assert data["status"] == "answered"
    assert data["policy"] == "lexical"
    assert 1 <= data["turns"] <= 4
    # the policy's confidence per file, aligned with `files`
    assert len(data["scores"]) == len(data["files"])
    assert all(0 <= s <= 1 for s in data["scores"])


def test_localize_reads_stdin_and_prints_reasons(repo: Path) -> None:
    res = CliRunner().invoke(app, ["localize", "--repo", str(repo), "--issue", "-"], input=ISSUE)
    assert res.exit_code == 0, res.output
    first = res.output.splitlines()[0]
    assert first.startswith("billing/invoice.py")
    assert re.search(r"billing/invoice\.py\t0\.\d\d\tdefines", first)  # the score column
    assert "lexical:" in res.output


def test_a_policy_without_scores_prints_none(repo: Path) -> None:
    policy = ScriptedPolicy([PolicyReply(content='{"files": ["billing/tax.py"]}')])
    result = asyncio.run(localize(str(repo), "vat is wrong", policy=policy))
    assert result.to_json()["scores"] is None
    assert result.files[0].score is None


def test_names_open_through_the_cache_and_a_pool_can_be_given(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    source = str(repo.parent / "{name}")  # a local mirror pattern
    # a folder needs no clone cache, and none is made
    res = CliRunner().invoke(app, ["localize", "--repo", str(repo), "--issue", "-"], input=ISSUE)
    assert res.exit_code == 0, res.output
    assert not (tmp_path / "home" / ".cache").exists()
    argv = ["localize", "--repo", "acme/billing-repo", "--commit", "HEAD", "--issue", "-"]
    res = CliRunner().invoke(
        app, [*argv, "--json", "--cache", str(tmp_path / "cache"), "--source", source], input=ISSUE
    )
    assert res.exit_code == 0, res.output
    answer = json.loads(res.stdout)
    assert answer["files"] == ["billing/invoice.py"]
    # the first use clones, said on stderr (stdout stays one JSON object), its time apart
    clone_dir = tmp_path / "cache" / "repos" / "acme__billing-repo.git"
    lines = res.stderr.splitlines()
    assert lines[0] == f"cloning acme/billing-repo into {clone_dir} (the first time only; " + (
        "later runs reuse the clone)"
    )
    assert re.fullmatch(r"cloned acme/billing-repo in \d+\.\d s", lines[1])
    assert answer["clone_s"] > 0
    # the second use has the clone: nothing said, no clone time
    res = CliRunner().invoke(
        app, [*argv, "--json", "--cache", str(tmp_path / "cache"), "--source", source], input=ISSUE
    )
    assert res.exit_code == 0, res.output
    assert res.stderr == ""
    assert json.loads(res.stdout)["clone_s"] == 0.0
    # the human output says the clone time apart from the search's
    res = CliRunner().invoke(
        app, [*argv, "--cache", str(tmp_path / "cache2"), "--source", source], input=ISSUE
    )
    assert res.exit_code == 0, res.output
    assert re.search(r"lexical: 3 turns, \d+ calls, \d+\.\d\d s, cloned in \d+\.\d s", res.stdout)

    async def served() -> list[list[str]]:
        cache = BareRepoCache(tmp_path / "cache", source)
        async with TreePool(cache, workdir=tmp_path / "trees") as pool:
            results = await asyncio.gather(
                *(localize("acme/billing-repo", ISSUE, commit="HEAD", pool=pool) for _ in range(3)),
                localize(str(repo), ISSUE, pool=pool),
            )
            assert pool.stats.trees_opened == 1  # the three requests shared one tree
        return [[f.path for f in r.files] for r in results]

    assert asyncio.run(served()) == [["billing/invoice.py"]] * 4


def test_localize_sees_uncommitted_changes_and_commits(repo: Path, tmp_path: Path) -> None:
    # a new, uncommitted module that defines the name the issue talks about
    (repo / "billing" / "refund.py").write_text("def issue_credit_note(invoice):\n    pass\n")
    text = "`issue_credit_note` should round to cents"
    res = CliRunner().invoke(
        app, ["localize", "--repo", str(repo), "--issue", "-", "--json"], input=text
    )
    assert json.loads(res.output)["files"] == ["billing/refund.py"]
    # at the commit, the file does not exist yet
    res = CliRunner().invoke(
        app,
        ["localize", "--repo", str(repo), "--commit", "HEAD", "--issue", "-", "--json"],
        input=text,
    )
    assert res.exit_code == 0, res.output
    assert "billing/refund.py" not in json.loads(res.output)["files"]


def test_bad_inputs_exit_2(repo: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["localize", "--repo", str(repo), "--issue", str(tmp_path / "no")])
    assert res.exit_code == 2
    res = runner.invoke(app, ["localize", "--repo", str(repo), "--issue", "-"], input="  \n")
    assert res.exit_code == 2
    res = runner.invoke(app, ["localize", "--repo", "not/here", "--issue", "-"], input="x y z")
    assert res.exit_code == 2
    assert "'not/here' is not a directory; a repository name (owner/name) needs --commit" in (
        " ".join(res.output.split())
    )
    argv = ["localize", "--repo", "not/a/dir", "--commit", "HEAD", "--issue", "-"]
    res = runner.invoke(app, argv, input="x y z")
    assert res.exit_code == 2
    assert "neither a folder nor a repository name" in res.output
    binary = tmp_path / "issue.bin"
    binary.write_bytes(b"\xff\xfe not utf-8")
    res = runner.invoke(app, ["localize", "--repo", str(repo), "--issue", str(binary)])
    assert res.exit_code == 2
    assert "cannot read --issue" in res.output
    (tmp_path / "a-file").write_text("")
    for flag in ("-o", "--rollout"):
        target = tmp_path / "a-file" / "out.json"  # a folder that cannot be made
        res = runner.invoke(
            app,
            ["localize", "--repo", str(repo), "--issue", "-", flag, str(target)],
            input=ISSUE,
        )
        assert res.exit_code == 2
        assert f"error: cannot write {flag} {target}: {tmp_path / 'a-file'} is not a directory" in (
            res.stderr
        )
        assert res.stdout == ""  # said before the search, not after it


def test_the_example_issue_on_this_repository() -> None:
    example = ROOT / "apps" / "injector" / "examples" / "issue.md"
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    res = CliRunner().invoke(
        app, ["localize", "--repo", str(ROOT), "--issue", str(example), "--json"]
    )
    assert res.exit_code == 0, res.output
    files = json.loads(res.output)["files"]
    assert "packages/codegrep-model/src/codegrep_model/answer.py" in files


def test_a_1mb_issue_is_cut_with_a_warning(repo: Path, tmp_path: Path) -> None:
    # a pasted log after the report: the same traceback over and over, to 1 MB
    frame = (
        "Traceback (most recent call last):\n"
        '  File "/srv/billing/invoice.py", line 4, in add_line\n'
        "    raise ValueError('negative amounts are not allowed on an invoice')\n"
        "ValueError: negative amounts are not allowed on an invoice\n"
    )
    text = ISSUE + "\n\n```\n" + frame * (1_000_000 // len(frame)) + "```\n"
    issue = tmp_path / "issue.md"
    issue.write_text(text)
    size = len(text.encode())
    res = CliRunner().invoke(
        app, ["localize", "--repo", str(repo), "--issue", str(issue), "--json"]
    )
    assert res.exit_code == 0, res.output
    assert f"the issue was cut from {size} to 262144 bytes" in res.stderr
    data = json.loads(res.stdout)
    assert (data["issue_bytes"], data["issue_cut_to"]) == (size, 262144)
    assert data["files"] == ["billing/invoice.py"]
    # the cap is an option; a short issue is used whole and nothing is said
    res = CliRunner().invoke(
        app,
        ["localize", "--repo", str(repo), "--issue", "-", "--json", "--max-issue-bytes", "60"],
        input=ISSUE,
    )
    assert f"cut from {len(ISSUE.encode())} to 60 bytes" in res.stderr
    res = CliRunner().invoke(
        app, ["localize", "--repo", str(repo), "--issue", "-", "--json"], input=ISSUE
    )
    assert res.stderr == ""
    assert json.loads(res.stdout)["issue_cut_to"] is None
