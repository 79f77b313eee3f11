"""A served model (`--base-url`) takes the same path through the gate as the lexical policy,
with its own calibration: an OpenAI-compatible server on 127.0.0.1 answers with two files, a
calibration measured for `openai:<model>` keeps rank 1 and drops rank 2; the lexical policy's
calibration is refused for it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from codegrep.cli import app
from codegrep.service import LocalizeRequest, LocalizeService
from codegrep_gate import Retriever, calibrate, shipped_calibration, write_calibration
from codegrep_gate._records import DataRef
from codegrep_records import Prediction
from typer.testing import CliRunner

MODEL = "scout-test"
ANSWER = ["billing/invoice.py", "billing/tax.py"]
REPLY = "Found them.\n```json\n" + json.dumps({"files": ANSWER}) + "\n```"


@pytest.fixture
def server(served_model: Callable[[Callable[[int], dict[str, Any]]], Any]) -> Any:
    """A served model that answers ANSWER to every request (no tool call)."""
    return served_model(lambda _n: {"content": REPLY})


@pytest.fixture
def repo(tmp_path: Path, git: Callable[..., str]) -> Path:
    root = tmp_path / "billing"
    (root / "billing").mkdir(parents=True)
    for rel in ANSWER:
        (root / rel).write_text("def f():\n    return 1\n")
    git(root, "init", "-q")
    return root


@pytest.fixture
def model_calibration(tmp_path: Path) -> Path:
    """Measured for openai:MODEL: rank 1 right 19 times in 20, rank 2 right 2 times in 20."""
    gold = {
        f"o__r-{i}": frozenset({f"a{i}.py"} | ({f"b{i}.py"} if i < 2 else set())) for i in range(20)
    }
    preds = [
        Prediction(
            instance_id=f"o__r-{i}",
            files=(f"a{i}.py" if i else "wrong.py", f"b{i}.py"),
            retriever=f"openai:{MODEL}",
        )
        for i in range(20)
    ]
    cal = calibrate(
        preds,
        gold,
        retriever=Retriever(name=f"openai:{MODEL}", package="codegrep-model"),
        data=DataRef(name="made-up instances"),
        resamples=300,
    )
    return write_calibration(tmp_path / "model.json", cal)


def test_cli_gates_a_served_models_answer_with_its_own_calibration(
    server: Any, repo: Path, model_calibration: Path
) -> None:
    args = ["localize", "--repo", str(repo), "--issue", "-", "--base-url", server.base_url]
    args += ["--model", MODEL, "--gate", "0.45", "--calibration", str(model_calibration)]
    result = CliRunner().invoke(app, [*args, "--json"], input="invoice totals are wrong\n")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["files"] == ANSWER
    assert data["policy"] == f"openai:{MODEL}"
    assert data["injected"] == ["billing/invoice.py"]  # rank 1 kept, rank 2 dropped
    decisions = {d["path"]: d for d in data["gate"]["files"]}
    assert decisions["billing/invoice.py"]["basis"] == "rank"  # the model gives no scores
    assert decisions["billing/tax.py"]["kept"] is False
    assert "made-up instances" in decisions["billing/tax.py"]["reason"]
    assert server.requests >= 1


def test_the_lexical_calibration_is_refused_for_a_served_model(
    server: Any, repo: Path, tmp_path: Path
) -> None:
    lexical = write_calibration(tmp_path / "lexical.json", shipped_calibration("lexical"))
    args = ["localize", "--repo", str(repo), "--issue", "-", "--base-url", server.base_url]
    args += ["--model", MODEL, "--gate", "0.45", "--calibration", str(lexical)]
    result = CliRunner().invoke(app, args, input="invoice totals are wrong\n")
    assert result.exit_code == 2
    assert "lexical" in result.stderr
    assert f"openai:{MODEL}" in result.stderr
    assert server.requests == 0  # refused before the search


async def test_the_service_gates_a_served_model_the_same_way(
    server: Any, repo: Path, model_calibration: Path
) -> None:
    from codegrep_gate import load_calibration
    from codegrep_model.policies.served import OpenAIPolicy

    async with (
        OpenAIPolicy(server.base_url, MODEL) as policy,
        LocalizeService(
            policy=policy, allow_roots=[repo], calibration=load_calibration(model_calibration)
        ) as service,
    ):
        response = await service.localize(
            LocalizeRequest(repo=str(repo), issue="invoice totals are wrong", inject="markdown")
        )
    assert response.files == ANSWER
    assert response.injected == ["billing/invoice.py"]
    assert response.injection is not None
    assert "billing/invoice.py" in response.injection
    assert "billing/tax.py" not in response.injection
