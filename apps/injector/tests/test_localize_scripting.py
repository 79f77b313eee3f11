"""What people script against and what a new user trips on: `--paths`, `--top N`, line ranges,
output that is not wrapped when piped, help that is not cut, the bare-repository rule, the one
definitions mode, a fast `--version`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import pytest
from codegrep.cli import DEFAULT_MAX_ISSUE_BYTES, DEFAULT_TIMEOUT_S, app
from codegrep_gate import shipped_calibration
from typer.testing import CliRunner

FILES = {
    "README.md": "# billing\n",
    "billing/__init__.py": "",
    "billing/invoice.py": (
        "class Invoice:\n"
        "    def add_line(self, amount):\n"
        "        if amount < 0:\n"
        "            raise ValueError('negative amounts are not allowed on an invoice')\n"
        "        self.lines.append(amount)\n"
        "\n"
        "def total(invoice):\n"
        "    return sum(invoice.lines)\n"
    ),
    "billing/tax.py": "def vat_rate(country):\n    return {'de': 0.19}.get(country, 0.0)\n",
    "billing/credit.py": "from billing.invoice import Invoice\n\ndef credit_note(invoice):\n"
    "    return Invoice().add_line(-1)\n",
    "tests/test_invoice.py": "from billing.invoice import Invoice\n\ndef test_add_line():\n"
    "    Invoice().add_line(1)\n",
}
ISSUE = (
    "Refunds fail: `Invoice.add_line(-5)` raises\n\n"
    "    ValueError: negative amounts are not allowed on an invoice\n\n"
    "Credit notes need negative lines; the `total` of an invoice with a refund is wrong too."
)


@pytest.fixture
def repo(tmp_path: Path, make_repo: Callable[[Path, dict[str, str]], Path]) -> Path:
    return make_repo(tmp_path / "billing-repo", FILES)


def _run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, list(args), input=ISSUE)
    return res.exit_code, res.stdout, res.stderr


def test_paths_prints_one_path_a_line_and_nothing_else(repo: Path) -> None:
    code, out, err = _run("localize", "--repo", str(repo), "--issue", "-", "--json")
    assert code == 0, err
    answer = json.loads(out)
    code, out, err = _run("localize", "--repo", str(repo), "--issue", "-", "--paths")
    assert code == 0, err
    assert out.splitlines() == answer["injected"] == ["billing/invoice.py"]
    # gated: what the gate injects (here nothing clears 1.0), still nothing but paths
    code, out, err = _run("localize", "--repo", str(repo), "--issue", "-", "--paths", "--gate", "1")
    assert code == 0, err
    assert out == ""
    # one output at a time
    for other in (["--json"], ["--inject", "markdown"]):
        code, out, err = _run("localize", "--repo", str(repo), "--issue", "-", "--paths", *other)
        assert code == 2
        assert f"--paths and {other[0]}: choose one output" in err


def test_top_gives_the_best_files_beyond_the_answer(repo: Path) -> None:
    argv = ["localize", "--repo", str(repo), "--issue", "-"]
    code, out, err = _run(*argv, "--json", "--top", "3")
    assert code == 0, err
    data = json.loads(out)
    top = data["top"]
    assert [t["path"] for t in top[:1]] == data["files"] == ["billing/invoice.py"]
    assert len(top) == 3  # more candidates than the answer holds
    assert top[0]["score"] == data["scores"][0]
    scores = [t["score"] for t in top]
    assert scores == sorted(scores, reverse=True)
    assert all(0 <= s <= 1 for s in scores)
    # the answer is the same as without --top; `top` is null when not asked for
    code, out, err = _run(*argv, "--json")
    plain = json.loads(out)
    assert (plain["files"], plain["scores"], plain["top"]) == (data["files"], data["scores"], None)
    # --paths --top N: the N paths
    code, out, err = _run(*argv, "--paths", "--top", "3")
    assert code == 0, err
    assert out.splitlines() == [t["path"] for t in top]
    # the person's view lists the ones beyond the answer, marked
    code, out, err = _run(*argv, "--top", "3")
    assert code == 0, err
    beyond = [line for line in out.splitlines() if "not in the answer" in line]
    assert [line.split("\t")[0] for line in beyond] == [t["path"] for t in top[1:]]
    code, out, err = _run(*argv, "--top", "0")
    assert code == 2


def test_line_ranges_are_the_definitions_the_answer_matched(repo: Path) -> None:
    code, out, err = _run("localize", "--repo", str(repo), "--issue", "-", "--json")
    assert code == 0, err
    # `Invoice` (lines 1-5, add_line inside it) and `total` (7-8), from the syntax tree
    assert json.loads(out)["line_ranges"] == {"billing/invoice.py": [[1, 5], [7, 8]]}


def test_piped_output_is_one_line_a_file_never_wrapped(repo: Path) -> None:
    long_reason_issue = ISSUE + " " + " ".join(f"`name_{i}`" for i in range(40))
    res = CliRunner().invoke(
        app, ["localize", "--repo", str(repo), "--issue", "-"], input=long_reason_issue
    )
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    # the file, its score and its reason on one line, separated by tabs; then the summary
    # lines: `awk '{print $1}'` gives the path first, and no fragment of a reason
    path, score, reason = lines[0].split("\t")
    assert path == "billing/invoice.py"
    assert 0 <= float(score) <= 1
    assert reason.startswith("defines ")
    assert len(lines) == 3
    assert lines[1].startswith("lexical: 3 turns")
    assert lines[2].startswith("not gated: every file found is listed")


def _script(*argv: str, code: str = "") -> subprocess.CompletedProcess[str]:
    """`codegrep ARGV` in a fresh interpreter, stdout a pipe (never a terminal)."""
    prog = f"import sys; sys.argv = ['codegrep', *{list(argv)!r}]\n{code}\n"
    prog += "from codegrep.cli import main\ntry:\n    main()\nfinally:\n"
    prog += "    print(sorted(m for m in sys.modules if m.split('.')[0] in HEAVY), file=sys.stderr)"
    heavy = "HEAVY = {'codegrep_model', 'codegrep_gate', 'worktree_sandbox', 'pydantic', 'rich'}"
    return subprocess.run(
        [sys.executable, "-c", heavy + "\n" + prog],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_help_is_not_cut_when_piped() -> None:
    proc = _script("localize", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "…" not in proc.stdout
    # words rich cut at 80 columns are whole
    assert "worktree_sandbox.BareRepoCache" in proc.stdout
    assert "https://github.com/{repo}.git" in proc.stdout
    assert "--paths" in proc.stdout
    assert "--top" in proc.stdout
    # the examples keep their lines, one command a line
    example = "    codegrep localize --repo . --issue issue.md --paths --top 10\n"
    assert example in proc.stdout
    # the command list's summaries are whole (click cut its own at the list's width, "...")
    proc = _script("--help")
    assert proc.returncode == 0, proc.stderr
    assert "..." not in proc.stdout.split("Commands:", 1)[1]
    assert "…" not in proc.stdout
    listed = proc.stdout.split("Commands:", 1)[1]
    summary = " ".join(listed.split("localize", 1)[1].split("calibrate", 1)[0].split())
    assert summary == "Find the files ISSUE needs in REPO and print them with a reason each."


def test_version_imports_no_search() -> None:
    proc = _script("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"codegrep {metadata.version('codegrep')}\n"
    # neither the search, the gate, the sandbox nor pydantic: --version imports typer and the
    # command modules only
    assert proc.stderr.strip() == "[]", proc.stderr
    # the constants the command line declares without importing their modules
    from codegrep.localize_job import DEFAULT_TIMEOUT_S as job_timeout
    from codegrep_model import DEFAULT_MAX_ISSUE_BYTES as model_max

    assert (job_timeout, model_max) == (DEFAULT_TIMEOUT_S, DEFAULT_MAX_ISSUE_BYTES)


def test_a_bare_repository_needs_a_commit(repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "billing.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    code, out, err = _run("localize", "--repo", str(bare), "--issue", "-", "--json")
    assert code == 2
    assert out == ""
    assert "is a bare git repository (no working tree to search): give --commit" in err
    assert "--commit HEAD" in err
    # with a commit, its objects are searched
    code, out, err = _run("localize", "--repo", str(bare), "--commit", "HEAD", "--issue", "-")
    assert code == 0, err
    assert out.startswith("billing/invoice.py\t")


def test_one_definitions_mode_said_and_checked(repo: Path, tmp_path: Path) -> None:
    # the app requires the symbols extra: the tree-sitter index is always there
    requires = metadata.requires("codegrep") or []
    assert any(r.replace(" ", "").startswith("worktree-sandbox[symbols]") for r in requires)
    code, out, err = _run("localize", "--repo", str(repo), "--issue", "-", "--json")
    assert code == 0, err
    assert json.loads(out)["definitions"] == "tree-sitter"
    # a calibration measured in the other mode is refused, naming both
    cal = shipped_calibration("lexical")
    other = cal.model_copy(
        update={"retriever": cal.retriever.model_copy(update={"definitions": "regex"})}
    )
    path = tmp_path / "regex.json"
    path.write_text(other.model_dump_json())
    argv = ["localize", "--repo", str(repo), "--issue", "-", "--gate", "0.45"]
    argv += ["--calibration", str(path)]
    code, out, err = _run(*argv)
    assert code == 2
    assert "measured with definitions read by regex, this run reads them by tree-sitter" in err
    # the same mode, or one not recorded (calibrations written before the field), is used
    for mode in ("tree-sitter", None):
        same = cal.model_copy(
            update={"retriever": cal.retriever.model_copy(update={"definitions": mode})}
        )
        path.write_text(same.model_dump_json())
        code, out, err = _run(*argv)
        assert code == 0, err


HOSTILE_POLICY = """
import json
from codegrep_model import PolicyReply

class Hostile:
    name = "hostile"

    async def reply(self, request):
        return PolicyReply(content=json.dumps({"files": [NAME]}))
"""


def test_a_hostile_file_name_stays_one_line(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # git allows a newline or an escape sequence in a file name, and a policy's answer is
    # untrusted text: a name like this must not become two lines or a terminal command
    name = "billing/inv\noice\x1b[2J.py"
    (tmp_path / "hostile_policy.py").write_text(HOSTILE_POLICY.replace("NAME", repr(name)))
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["localize", "--repo", str(repo), "--issue", "-", "--policy", "hostile_policy:Hostile"]
    code, out, err = _run(*argv, "--json")
    assert code == 0, err
    assert json.loads(out)["files"] == [name]
    # --paths: one line, the name as a JSON string (as git quotes such names)
    code, out, err = _run(*argv, "--paths")
    assert code == 0, err
    assert out.splitlines() == [json.dumps(name)]
    assert json.loads(out) == name
    assert "\x1b" not in out
    # the piped human output too
    code, out, err = _run(*argv)
    assert code == 0, err
    assert out.splitlines()[0].split("\t")[0] == json.dumps(name)
    assert "\x1b" not in out


def test_on_a_terminal_a_table_with_the_files_beyond_the_answer(repo: Path) -> None:
    import os
    import pty

    main_fd, child_fd = pty.openpty()
    prog = "from codegrep.cli import main; main()"
    argv = ["localize", "--repo", str(repo), "--issue", "-", "--top", "3"]
    proc = subprocess.Popen(
        [sys.executable, "-c", f"import sys; sys.argv = ['codegrep', *{argv!r}]; {prog}"],
        stdin=subprocess.PIPE,
        stdout=child_fd,
        stderr=subprocess.PIPE,
        env={**os.environ, "TERM": "dumb", "NO_COLOR": "1"},
    )
    os.close(child_fd)
    _, err = proc.communicate(ISSUE.encode(), timeout=120)
    chunks = []
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main_fd)
    out = b"".join(chunks).decode()
    assert proc.returncode == 0, err
    lines = [line.rstrip() for line in out.splitlines()]
    assert lines[0].startswith("billing/invoice.py ")
    assert "\t" not in out  # a table, not the piped form
    assert "beyond the answer (--top 3):" in lines
    assert "not gated: every file found is listed" in out  # wrapped to the terminal's width


def test_calibrate_records_the_mode_the_predictions_ran_in(tmp_path: Path) -> None:
    from codegrep.calibrate_cli import retriever_of

    predictions = tmp_path / "lexical.jsonl"
    meta = tmp_path / "lexical.jsonl.meta.json"
    meta.write_text(json.dumps({"policy": "lexical", "config": {}, "definitions": "regex"}))
    assert retriever_of("lexical", predictions).definitions == "regex"
    # a meta written before the field, or a value that is not a mode: not recorded
    for written in ({"policy": "lexical"}, {"definitions": "yes"}):
        meta.write_text(json.dumps(written))
        assert retriever_of("lexical", predictions).definitions is None
