"""A served model whose reply decodes to a lone surrogate: JSON's `"\\udce9"` in its content, in
its answer's `files`, in a tool call's id, name or arguments. No UTF-8 writer takes one, and
the rollout record (written even without `--rollout`) could not be serialized: `codegrep
localize` ended with a `PydanticSerializationError` traceback and `serve` answered 500. Through
a real OpenAI-compatible endpoint on 127.0.0.1, `codegrep localize --policy openai:MODEL@URL`
and `POST /localize`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from codegrep.cli import app
from typer.testing import CliRunner

pytest.importorskip("uvicorn", reason="needs the 'serve' extra")

import httpx
from codegrep.serve_http import build_app, serve_in_thread
from codegrep.service import LocalizeService
from codegrep_model.policies.served import OpenAIPolicy

MODEL = "scout-test"
LONE = "\udce9"  # json.dumps writes it as the escape "\udce9", as a server's JSON would
ANSWER = json.dumps({"files": ["src/util.py"]})
FILES = {"src/util.py": "class TokenRefresher:\n    def refresh(self):\n        return 1\n"}
ISSUE = "TokenRefresher.refresh fails when the token expired"


def _call(name: str, arguments: str, call_id: str = "c0") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# Each case: the model's first message; its second (if it is asked again) answers ANSWER.
CASES: dict[str, dict[str, Any]] = {
    "content": {"content": f"r{LONE}sum{LONE}: the refresher.\n```json\n{ANSWER}\n```"},
    "answer files": {"content": json.dumps({"files": [f"src/r{LONE}.py", "src/util.py"]})},
    "answer escape": {"content": '{"files": ["src/r\\udce9.py", "src/util.py"]}'},
    "reasons": {
        "content": json.dumps({"files": ["src/util.py"], "reasons": {"src/util.py": LONE}})
    },
    "call arguments": {
        "content": None,
        "tool_calls": [_call("grep", json.dumps({"pattern": f"x{LONE}"}, ensure_ascii=False))],
    },
    "call escape": {"content": None, "tool_calls": [_call("read", '{"path": "\\udce9"}')]},
    "call name and id": {
        "content": None,
        "tool_calls": [_call(f"gr{LONE}p", '{"pattern": "x"}', call_id=f"c{LONE}")],
    },
    "hermes block": {
        "content": '<tool_call>{"name": "grep", "arguments": {"pattern": "\\udce9"}}</tool_call>'
    },
}


@pytest.fixture(params=list(CASES))
def model(
    request: pytest.FixtureRequest, served_model: Callable[[Callable[[int], dict[str, Any]]], Any]
) -> Any:
    """A served model that sends the case's message once, then ANSWER on every later request."""
    first = CASES[request.param]
    return served_model(lambda n: first if n == 1 else {"content": ANSWER})


def _check(files: list[str]) -> None:
    assert "src/util.py" in files
    for path in files:
        path.encode("utf-8")  # every name is text


def test_localize_answers_a_served_model_that_sends_a_lone_surrogate(
    model: Any, tmp_path: Path, make_repo: Callable[[Path, dict[str, str]], Path]
) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    rollout = tmp_path / "rollout.json"
    res = CliRunner().invoke(
        app,
        ["localize", "--repo", str(repo), "--policy", f"openai:{MODEL}@{model.base_url}",
         "--issue", "-", "--json", "--rollout", str(rollout)],
        input=ISSUE,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output
    _check(json.loads(res.stdout)["files"])
    assert json.loads(rollout.read_text(encoding="utf-8"))["policy"] == f"openai:{MODEL}"
    assert model.requests >= 1


def test_serve_answers_a_served_model_that_sends_a_lone_surrogate(
    model: Any, tmp_path: Path, make_repo: Callable[[Path, dict[str, str]], Path]
) -> None:
    root = tmp_path / "root"
    repo = make_repo(root / "repo", FILES)
    service = LocalizeService(policy=OpenAIPolicy(model.base_url, MODEL), allow_roots=[root])
    with serve_in_thread(build_app(service)) as url:
        r = httpx.post(f"{url}/localize", json={"repo": str(repo), "issue": ISSUE}, timeout=60)
    assert r.status_code == 200, r.text
    _check(r.json()["files"])
    assert model.requests >= 1
