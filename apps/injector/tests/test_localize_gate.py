"""`codegrep localize --gate/--inject` on a small real git repository made here, with the
calibration shipped for the lexical policy; and `with_optional_values`, which lets `--gate`
stand alone."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from codegrep.cli import app, with_optional_values
from codegrep.gating import apply, calibration_for
from codegrep_gate import (
    GateConfig,
    Retriever,
    calibrate,
    render,
    shipped_calibration,
    write_calibration,
)
from codegrep_gate._records import DataRef
from codegrep_model.policies.lexical.ranker import AnswerCut, Ranker
from codegrep_records import Prediction
from typer.testing import CliRunner

runner = CliRunner()

FILES = {
    "README.md": "# billing\n",
    "billing/__init__.py": "",
    "billing/invoice.py": (
        "class Invoice:\n"
        "    def add_line(self, amount):\n"
        "        self.lines.append(amount)\n"
        "\n"
        "    def total(self):\n"
        "        return sum(self.lines)\n"
    ),
    "billing/credit.py": (
        "class CreditNote:\n    def total(self):\n        return round(sum(self.lines), 2)\n"
    ),
    "billing/tax.py": "def vat_rate(country):\n    return {'de': 0.19}.get(country, 0.0)\n",
}
# LexicalPolicy's two best files: both classes' (the cut below keeps two).
ISSUE = "`CreditNote.total` rounds but `Invoice.total` does not"
ANSWER = {"billing/credit.py", "billing/invoice.py"}


@pytest.fixture(autouse=True)
def two_file_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped ranker's learned cut answers this small repository with one file; gating is
    about what happens to each of several files, so here the cut keeps the best two (the
    ranking and the scores are the shipped ranker's)."""
    wide = dataclasses.replace(
        Ranker.shipped(), cut=AnswerCut(min_prob=0.0, ratio=0.0, max_files=2)
    )
    monkeypatch.setattr(Ranker, "shipped", classmethod(lambda cls: wide))


@pytest.fixture
def repo(tmp_path: Path, make_repo: Callable[[Path, dict[str, str]], Path]) -> Path:
    return make_repo(tmp_path / "billing-repo", FILES)


def _localize(repo: Path, *extra: str) -> tuple[int, str, str]:
    argv = with_optional_values(["localize", "--repo", str(repo), "--issue", "-", *extra])
    res = runner.invoke(app, argv, input=ISSUE)
    return res.exit_code, res.stdout, res.stderr


def _json(repo: Path, *extra: str) -> dict[str, object]:
    code, stdout, stderr = _localize(repo, "--json", *extra)
    assert code == 0, stderr
    data = json.loads(stdout)
    assert isinstance(data, dict)
    return data


def test_the_issue_is_answered_with_two_files(repo: Path) -> None:
    data = _json(repo)
    assert set(data["files"]) == ANSWER  # type: ignore[arg-type]
    assert data["scores"] is not None
    # not gated, not rendered: the record's gate and injection are null, every file injected
    assert data["gate"] is None
    assert data["injection"] is None
    assert data["injected"] == data["files"]


def test_gate_0_injects_every_file_and_gate_1_none(repo: Path) -> None:
    data = _json(repo, "--gate", "0")
    assert data["injected"] == data["files"]
    assert len(data["files"]) == 2  # type: ignore[arg-type]
    assert all(f["kept"] for f in data["gate"]["files"])  # type: ignore[index]

    data = _json(repo, "--gate", "1")
    assert data["injected"] == []
    assert data["files"]  # still found, and listed
    gate = data["gate"]
    assert isinstance(gate, dict)
    assert not any(f["kept"] for f in gate["files"])
    assert gate["summary"].startswith("nothing injected: no file's calibrated precision")

    # human output: every file marked, the summary last; still exit 0
    code, stdout, stderr = _localize(repo, "--gate", "1")
    assert code == 0, stderr
    assert stdout.count("drop: precision") == 2
    assert "inject:" not in stdout
    assert "nothing injected: no file's calibrated precision (95% lower bound) clears 1" in (
        " ".join(stdout.split())
    )
    code, stdout, stderr = _localize(repo, "--gate", "0")
    assert code == 0, stderr
    assert stdout.count("inject: precision") == 2
    assert "2 of 2 files injected" in stdout


def test_json_has_the_decision_with_reasons(repo: Path) -> None:
    data = _json(repo, "--gate", "0.3")
    gate = data["gate"]
    assert isinstance(gate, dict)
    config = {"threshold": 0.3, "bound": "lower", "basis": "auto", "max_files": None}
    assert gate["config"] == config
    assert gate["calibration"]["retriever"] == "lexical"
    assert [f["path"] for f in gate["files"]] == data["files"]
    for f in gate["files"]:
        # the lexical policy gives scores; the shipped calibration has a context model
        assert f["basis"] == "context"
        verdict = "injected" if f["kept"] else "not injected"
        assert f["reason"].endswith(verdict)
        assert "modelled precision" in f["reason"]
        assert "threshold 0.3" in f["reason"]
    assert data["injected"] == [f["path"] for f in gate["files"] if f["kept"]]
    assert data["injection"] is None  # rendered only with --inject


def test_the_cli_decision_is_what_gating_apply_returns(repo: Path) -> None:
    """One path: the CLI's decision equals `codegrep.gating.apply` on the same files/scores."""
    cal = calibration_for("lexical")
    assert cal == shipped_calibration("lexical")
    for extra, config, max_files in (
        (["--gate", "0.3"], GateConfig(threshold=0.3), None),
        (["--gate"], GateConfig(), None),
        (["--gate", "0.45", "--gate-bound", "point"], GateConfig(bound="point"), None),
        (["--gate", "0", "--max-files", "1"], GateConfig(threshold=0.0), 1),
    ):
        data = _json(repo, *extra, "--inject", "json")
        files, scores = data["files"], data["scores"]
        assert isinstance(files, list)
        assert isinstance(scores, list)
        gated = apply(
            files,
            scores,
            calibration=cal,
            config=config,
            policy_name="lexical",
            max_files=max_files,
            inject="json",
        )
        assert gated.decision is not None
        assert data["gate"] == gated.decision.model_dump(mode="json"), extra
        assert data["injected"] == gated.injected, extra
        assert data["injection"] == gated.injection, extra
        # the decision follows the calibration: the bin's bound against the threshold
        expected = [
            f["path"]
            for f in data["gate"]["files"]  # type: ignore[index]
            if (f["precision"]["low"] if config.bound == "lower" else f["precision"]["point"])
            >= config.threshold
        ][:max_files]
        assert data["injected"] == expected, extra
    assert data["injected"] == files[:1]  # --max-files 1


def test_inject_markdown_prints_only_the_block(repo: Path) -> None:
    code, stdout, stderr = _localize(repo, "--gate", "0", "--inject", "markdown")
    assert code == 0, stderr
    files = _json(repo)["files"]
    assert isinstance(files, list)
    assert stdout == render(files, "markdown")  # exactly the text, no blank line after
    assert stdout.startswith("### Files likely relevant to this issue")
    assert stderr.startswith("2 of 2 files injected")  # the why, on stderr
    # nothing passes: nothing at all on stdout, the summary on stderr
    code, stdout, stderr = _localize(repo, "--gate", "1", "--inject", "markdown")
    assert code == 0, stderr
    assert stdout == ""
    assert stderr.startswith("nothing injected")
    # json: one line
    code, stdout, stderr = _localize(repo, "--gate", "0", "--inject", "json")
    assert code == 0, stderr
    assert json.loads(stdout)["candidate_files"] == files
    assert stdout.count("\n") == 1
    # ungated: every file, and stderr says it was not gated (`serve` gates by default: the
    # same request's `injected` differs, and each output says which it did)
    code, stdout, stderr = _localize(repo, "--inject", "openhands")
    assert code == 0, stderr
    assert stdout == render(files, "openhands")  # exactly the text, no blank line after
    assert stderr.startswith("not gated: every file found is listed")
    assert "`codegrep serve` gates by default" in stderr
    assert stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--inject", "bogus"],
            "--inject bogus: not one of openhands, markdown, agent_context, json",
        ),
        (["--gate", "1.5"], "--gate 1.5: a threshold between 0 and 1, like 0.45"),
        (["--gate", "-0.1"], "--gate -0.1: a threshold between 0 and 1, like 0.45"),
        (["--gate", "abc"], "--gate abc: a threshold between 0 and 1, like 0.45"),
        (["--gate", "nan"], "--gate nan: a threshold between 0 and 1, like 0.45"),
        (["--gate", "--gate-bound", "upper"], "--gate-bound upper: lower or point"),
        (["--calibration", "x.json"], "--calibration is for the gate: add --gate [THRESHOLD]"),
    ],
)
def test_bad_gate_options_exit_2(repo: Path, extra: list[str], message: str) -> None:
    code, stdout, stderr = _localize(repo, *extra)
    assert code == 2
    assert stderr == f"error: {message}\n"
    assert stdout == ""


def _calibration_of(tmp_path: Path, retriever: str) -> Path:
    gold = {f"o__r-{i}": frozenset({f"m{i}.py"}) for i in range(10)}
    predictions = [
        Prediction(instance_id=iid, files=(f"m{i}.py", "x.py"), retriever=retriever)
        for i, iid in enumerate(gold)
    ]
    cal = calibrate(
        predictions, gold, retriever=Retriever(name=retriever), data=DataRef(name="toy")
    )
    return write_calibration(tmp_path / f"{retriever}.json", cal)


def test_another_retrievers_calibration_exits_2(repo: Path, tmp_path: Path) -> None:
    path = _calibration_of(tmp_path, "bm25")
    code, stdout, stderr = _localize(repo, "--gate", "--calibration", str(path))
    assert code == 2
    assert stderr == (
        f"error: --calibration {path} does not fit this retriever: the calibration measured "
        "retriever 'bm25', not 'lexical' (measure one for 'lexical' with `codegrep calibrate`)\n"
    )
    assert stdout == ""
    # an unreadable one too, in one line
    code, _, stderr = _localize(repo, "--gate", "--calibration", str(tmp_path / "none.json"))
    assert code == 2
    assert stderr.startswith(f"error: --calibration {tmp_path / 'none.json'}: ")
    assert len(stderr.splitlines()) == 1
    # the lexical one given as a file gates as the shipped one does
    own = _calibration_of(tmp_path, "lexical")
    data = _json(repo, "--gate", "0", "--calibration", str(own))
    assert data["gate"]["calibration"]["data"] == "toy"  # type: ignore[index]
    assert data["injected"] == data["files"]


def test_a_served_model_without_calibration_exits_2_before_any_request(
    repo: Path, tmp_path: Path
) -> None:
    argv = ["--base-url", "http://127.0.0.1:9/v1", "--timeout", "2"]
    code, stdout, stderr = _localize(repo, *argv, "--gate")
    # exit 1 (and a ConnectError) would mean a request was tried
    assert code == 2
    assert stderr.startswith("error: no calibration for 'openai:codegrep' (shipped: lexical): ")
    assert "`codegrep calibrate`" in stderr
    assert len(stderr.splitlines()) == 1
    assert stdout == ""
    # the lexical calibration does not fit a served model either
    code, _, stderr = _localize(
        repo, *argv, "--gate", "--calibration", str(_calibration_of(tmp_path, "lexical"))
    )
    assert code == 2
    assert "the calibration measured retriever 'lexical', not 'openai:codegrep'" in stderr


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["localize", "--gate"], ["localize", "--gate", "default"]),
        (["localize", "--gate", "--json"], ["localize", "--gate", "default", "--json"]),
        (["localize", "--gate", "0.6"], ["localize", "--gate", "0.6"]),
        (["localize", "--gate=0.6"], ["localize", "--gate=0.6"]),
        (["localize", "--gate", "-0.5"], ["localize", "--gate", "-0.5"]),  # said out of range
        (["localize", "--gate", "abc"], ["localize", "--gate", "abc"]),  # said not a number
        (
            ["localize", "--json", "--gate", "--repo", ".", "--gate", "1"],
            ["localize", "--json", "--gate", "default", "--repo", ".", "--gate", "1"],
        ),
        # only localize's --gate takes a value: serve's is an on/off flag
        (["serve", "--gate", "--allow-root", "."], ["serve", "--gate", "--allow-root", "."]),
        (["--version"], ["--version"]),
        ([], []),
    ],
)
def test_with_optional_values(argv: list[str], expected: list[str]) -> None:
    assert with_optional_values(argv) == expected


def test_a_bare_gate_is_the_default_threshold(repo: Path) -> None:
    code, stdout, stderr = _localize(repo, "--gate", "--json")
    assert code == 0, stderr
    assert json.loads(stdout)["gate"]["config"]["threshold"] == 0.45
    code, stdout, stderr = _localize(repo, "--json", "--gate")
    assert code == 0, stderr
    assert json.loads(stdout)["gate"]["config"]["threshold"] == 0.45


@pytest.mark.parametrize("claim", [7.5, -2])
def test_a_calibration_claiming_a_precision_outside_0_1_gates_nothing(
    repo: Path, tmp_path: Path, claim: float
) -> None:
    """The shipped calibration with every precision claimed to be 7.5 (or -2): at 7.5 every
    file would clear any threshold. The file is refused before any file is gated."""
    data = json.loads(shipped_calibration("lexical").model_dump_json())
    lie = {"point": claim, "low": claim, "high": claim, "level": 0.95}
    data["precision"] = data["precision_answered"] = lie
    for curve in (data["by_rank"], data["by_score"]):
        for b in curve["bins"]:
            b["precision"] = lie
    path = tmp_path / "lying.json"
    path.write_text(json.dumps(data))
    code, stdout, stderr = _localize(repo, "--json", "--gate", "0.45", "--calibration", str(path))
    assert code == 2
    assert stdout == ""
    assert stderr.startswith(f"error: --calibration {path}: {path}: invalid calibration: ")
    assert "precision.point: Input should be" in stderr
