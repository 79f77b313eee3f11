"""The judge against a real OpenAI-style HTTP server on 127.0.0.1 with scripted behaviour."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from catm import JudgeRequest, JudgeResult, OpenAIJudge
from catm._judge import JudgeCache, parse_verdict
from catm.errors import JudgeError
from codegrep_records import Verdict

_PATH = re.compile(r"<file>(.*?)</file>")


class ScriptedServer:
    """Answers /v1/chat/completions according to the file named in the prompt."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.hits: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.bodies: list[dict[str, object]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                # What `catm mine` checks before it starts: the endpoint serves the model.
                models = {"object": "list", "data": [{"id": "judge-model", "object": "model"}]}
                server._send(self, 200, json.dumps(models).encode())

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][0]["content"]
                path = _PATH.search(prompt).group(1)  # type: ignore[union-attr]
                with server.lock:
                    server.hits[path] += 1
                    attempt = server.hits[path]
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    server.bodies.append(body)
                try:
                    server.answer(self, path, attempt)
                finally:
                    with server.lock:
                        server.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def answer(self, handler: BaseHTTPRequestHandler, path: str, attempt: int) -> None:
        time.sleep(self.delay_s)
        name = Path(path).name
        if name == "flaky.py" and attempt <= 2:
            return self._send(handler, 503, b'{"error": "overloaded"}')
        if name == "slow.py" and attempt == 1:
            time.sleep(1.5)  # longer than the client's timeout
        if name == "html.py":
            return self._send(handler, 200, b"<html>bad gateway</html>")
        if name == "down.py":
            return self._send(handler, 500, b"{}")
        if name == "edge.py" and attempt == 1:
            return self._send(handler, 520, b"{}")  # a CDN's 5xx: retried like any other
        if name == "deliberating.py":
            # vLLM's reasoning parser, cut off by max_tokens: no content, only deliberation.
            message = {"role": "assistant", "content": None, "reasoning_content": "NOT RELEVANT?"}
            payload = {"choices": [{"index": 0, "message": message}]}
            return self._send(handler, 200, json.dumps(payload).encode())
        if name == "auth.py":
            return self._send(handler, 401, b'{"error": "bad key"}')
        if name == "deep.py":
            # A valid completion plus an extra field nested deeper than any decoder recurses.
            deep = b'{"choices": [{"message": {"content": "RELEVANT"}}], "x": '
            return self._send(handler, 200, deep + b"[" * 1100 + b"]" * 1100 + b"}")
        content = {
            "rel.py": "RELEVANT",
            "not.py": "NOT RELEVANT",
            "flaky.py": "NOT RELEVANT",
            "garbage.py": "¯\\_(ツ)_/¯ perhaps",
            "both.py": "RELEVANT or NOT RELEVANT, hard to say",
            "think.py": "<think>is it NOT RELEVANT?</think>\nRELEVANT",
            "slow.py": "RELEVANT",
            "edge.py": "NOT RELEVANT",
        }.get(name, "NOT RELEVANT")
        payload = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
        self._send(handler, 200, json.dumps(payload).encode())

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    s = ScriptedServer()
    s.thread.start()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def _requests(*names: str) -> list[JudgeRequest]:
    return [JudgeRequest("org__p-1", f"pkg/{n}", "the issue", f"I read {n}") for n in names]


def _judge(server: ScriptedServer, cache: Path | None, **kw: float) -> OpenAIJudge:
    options: dict[str, float] = {"timeout_s": 0.5, "backoff_s": 0.01, "max_retries": 3}
    options.update(kw)
    return OpenAIJudge(
        server.url,
        "judge-model",
        cache=cache,
        api_key="k",
        concurrency=4,
        timeout_s=options["timeout_s"],
        backoff_s=options["backoff_s"],
        max_retries=int(options["max_retries"]),
    )


def test_verdicts_retries_and_failures(server: ScriptedServer, tmp_path: Path) -> None:
    names = [
        "rel.py",
        "not.py",
        "garbage.py",
        "both.py",
        "think.py",
        "flaky.py",
        "slow.py",
        "html.py",
        "down.py",
        "auth.py",
    ]
    judge = _judge(server, tmp_path / "cache.sqlite")
    results = judge.judge(_requests(*names))
    verdict = {n: r.verdict for n, r in zip(names, results, strict=True)}
    assert verdict == {
        "rel.py": Verdict.RELEVANT,
        "not.py": Verdict.NOT_RELEVANT,
        "garbage.py": Verdict.RELEVANT,  # unparseable -> conservative
        "both.py": Verdict.RELEVANT,  # ambiguous -> conservative
        "think.py": Verdict.RELEVANT,  # reasoning blocks are not the answer
        "flaky.py": Verdict.NOT_RELEVANT,  # after two 503s
        "slow.py": Verdict.RELEVANT,  # after one client timeout
        "html.py": Verdict.JUDGE_FAILED,
        "down.py": Verdict.JUDGE_FAILED,
        "auth.py": Verdict.JUDGE_FAILED,
    }
    assert server.hits["pkg/flaky.py"] == 3
    assert server.hits["pkg/slow.py"] == 2
    assert server.hits["pkg/down.py"] == 4  # 1 + max_retries
    assert server.hits["pkg/auth.py"] == 1  # a 401 is not retried
    assert "HTTP 401" in results[names.index("auth.py")].answer
    assert server.max_in_flight <= 4
    body = server.bodies[0]
    assert body["model"] == "judge-model"
    assert body["temperature"] == 0.0

    # A rerun asks only what failed; every parsed answer comes from the cache.
    before = sum(server.hits.values())
    again = _judge(server, tmp_path / "cache.sqlite").judge(_requests(*names))
    assert [r.verdict for r in again] == list(verdict.values())
    asked = sum(server.hits.values()) - before
    assert asked == 4 + 4 + 1  # html, down (1 + 3 retries each) and auth
    assert all(
        r.cached for n, r in zip(names, again, strict=True) if verdict[n] != Verdict.JUDGE_FAILED
    )


def test_any_5xx_is_retried_and_reasoning_content_is_no_verdict(server: ScriptedServer) -> None:
    names = ["edge.py", "deliberating.py"]
    results = _judge(server, None).judge(_requests(*names))
    assert [r.verdict for r in results] == [Verdict.NOT_RELEVANT, Verdict.RELEVANT]
    assert server.hits["pkg/edge.py"] == 2  # the 520, then the answer
    assert server.hits["pkg/deliberating.py"] == 1
    assert results[1].answer == ""


def test_cache_key_depends_on_model_and_prompt(tmp_path: Path) -> None:
    assert JudgeCache.key("m1", "p") != JudgeCache.key("m2", "p")
    assert JudgeCache.key("m1", "p") != JudgeCache.key("m1", "q")
    cache = JudgeCache(tmp_path / "c.sqlite")
    assert len(cache) == 0
    cache.close()


def test_deeply_nested_completion_is_a_counted_failure(server: ScriptedServer) -> None:
    [result] = _judge(server, None, max_retries=1).judge(_requests("deep.py"))
    assert result.verdict is Verdict.JUDGE_FAILED
    assert "not a chat completion" in result.answer
    assert server.hits["pkg/deep.py"] == 2


def _foreign_sqlite(path: Path) -> None:
    db = sqlite3.connect(str(path))
    db.execute("CREATE TABLE answers (id INTEGER, text TEXT)")
    db.commit()
    db.close()


@pytest.mark.parametrize("broken", ["parent_is_a_file", "directory", "not_sqlite", "foreign"])
def test_unusable_cache_is_a_judge_error(tmp_path: Path, broken: str) -> None:
    path = tmp_path / "cache.sqlite"
    if broken == "parent_is_a_file":
        (tmp_path / "file").write_text("x")
        path = tmp_path / "file" / "cache.sqlite"
    elif broken == "directory":
        path.mkdir()
    elif broken == "not_sqlite":
        path.write_bytes(bytes(range(256)) * 8)
    else:
        _foreign_sqlite(path)
    with pytest.raises(JudgeError, match="judge cache"):
        JudgeCache(path)


def test_unknown_cached_verdict_is_a_miss(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "c.sqlite")
    cache.put("k", "m", JudgeResult(Verdict.RELEVANT, "RELEVANT"))
    cache._db.execute("UPDATE answers SET verdict = 'MAYBE' WHERE key = 'k'")
    assert cache.get("k") is None  # asked again rather than trusted or raised
    cache.close()


def test_configuration_errors() -> None:
    with pytest.raises(JudgeError, match="http"):
        OpenAIJudge("localhost:8000", "m")
    with pytest.raises(JudgeError, match="template"):
        OpenAIJudge("http://127.0.0.1:1/v1", "m", template="{unknown}")


def test_connection_refused_is_a_counted_failure(tmp_path: Path) -> None:
    judge = OpenAIJudge("http://127.0.0.1:9/v1", "m", max_retries=1, backoff_s=0.01, timeout_s=1)
    [result] = judge.judge(_requests("rel.py"))
    assert result.verdict is Verdict.JUDGE_FAILED
    assert "transport" in result.answer


def test_preflight_says_at_once_whether_the_endpoint_serves_the_model(
    server: ScriptedServer,
) -> None:
    assert "serves judge-model" in _judge(server, None).preflight(timeout_s=2)
    assert sum(server.hits.values()) == 0  # GET /models only: no judge request was spent
    other = OpenAIJudge(server.url, "other-model")
    with pytest.raises(JudgeError, match="does not serve model 'other-model'"):
        other.preflight(timeout_s=2)
    start = time.monotonic()
    with pytest.raises(JudgeError, match="is not reachable"):
        OpenAIJudge("http://127.0.0.1:9/v1", "m", max_retries=4).preflight(timeout_s=2)
    assert time.monotonic() - start < 2  # no retries, no backoff


@pytest.mark.parametrize(
    ("answer", "verdict", "clean"),
    [
        ("RELEVANT", Verdict.RELEVANT, True),
        ("relevant.", Verdict.RELEVANT, True),
        ("NOT RELEVANT", Verdict.NOT_RELEVANT, True),
        ("Not_Relevant", Verdict.NOT_RELEVANT, True),
        ("irrelevant", Verdict.NOT_RELEVANT, True),
        ("RELEVANT? NOT RELEVANT", Verdict.RELEVANT, False),
        ("", Verdict.RELEVANT, False),
        ("yes", Verdict.RELEVANT, False),
        # A thinking model cut off by max_tokens: the open block is deliberation, not a verdict.
        ("<think>\nIs it NOT RELEVANT? The agent", Verdict.RELEVANT, False),
        ("<think>maybe RELEVANT</think>\nNOT RELEVANT", Verdict.NOT_RELEVANT, True),
    ],
)
def test_parse_verdict(answer: str, verdict: Verdict, clean: bool) -> None:
    assert parse_verdict(answer) == (verdict, clean)


def _stored(cache: Path) -> int:
    """Answers a judging process has committed to its cache so far (read-only: opening a
    `JudgeCache` here could create the file or its table under the writer)."""
    if not cache.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"file:{cache}?mode=ro", uri=True)) as db:
            return int(db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
    except sqlite3.Error:  # no table yet, or the writer holds a lock
        return 0


def test_resume_after_kill(tmp_path: Path) -> None:
    """Kill a judging process mid-run: the rerun asks only the questions not yet answered."""
    server = ScriptedServer(delay_s=0.15)
    server.thread.start()
    try:
        cache = tmp_path / "cache.sqlite"
        names = [f"f{i}.py" for i in range(24)]
        script = tmp_path / "run_judge.py"
        script.write_text(
            textwrap.dedent(f"""
            from pathlib import Path
            from catm import JudgeRequest, OpenAIJudge
            names = {names!r}
            requests = [JudgeRequest("org__p-1", f"pkg/{{n}}", "issue", "r") for n in names]
            judge = OpenAIJudge({server.url!r}, "judge-model", cache=Path({str(cache)!r}),
                                concurrency=2)
            judge.judge(requests)
        """)
        )
        child = subprocess.Popen([sys.executable, str(script)], env=os.environ.copy())
        # killed once an answer is stored, not once some requests arrived: under load the
        # child had been asked 6 questions yet stored none when the kill came
        deadline = time.monotonic() + 60
        while _stored(cache) < 2 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        answered_before = len(JudgeCache(cache))
        assert 1 <= answered_before < len(names)
        # the rerun asks a server of its own: a request the killed child had sent could still
        # reach the first one late (seen under load: two hits counted after the kill)
        again = ScriptedServer()
        again.thread.start()
        results = OpenAIJudge(again.url, "judge-model", cache=cache).judge(
            [JudgeRequest("org__p-1", f"pkg/{n}", "issue", "r") for n in names]
        )
        assert all(r.verdict is Verdict.NOT_RELEVANT for r in results)
        assert sum(r.cached for r in results) == answered_before
        asked = Counter(f"pkg/{n}" for n, r in zip(names, results, strict=True) if not r.cached)
        assert again.hits == asked  # each question not yet answered, once; no answered one
        again.httpd.shutdown()
        again.httpd.server_close()
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


def test_cli_with_a_judge_endpoint(server: ScriptedServer, tmp_path: Path) -> None:
    """`catm mine --judge M --endpoint URL`: verdicts land in the labels, reruns hit the cache."""
    from catm import read_labels
    from catm.cli import app
    from codegrep_records import LabelRecord
    from typer.testing import CliRunner

    ws = "/workspace/o__p__1"

    def view(cid: str, path: str) -> dict[str, object]:
        args = json.dumps({"command": "view", "path": f"{ws}/{path}"})
        return {"id": cid, "function": {"name": "str_replace_editor", "arguments": args}}

    record = {
        "instance_id": "o__p-1",
        "trajectory_id": "t1",
        "messages": [
            {"role": "user", "content": f"<uploaded_files>\n{ws}\n</uploaded_files>"},
            {"role": "assistant", "content": "", "tool_calls": [view("a", "pkg/rel.py")]},
            {"role": "tool", "tool_call_id": "a", "content": "1 x"},
            {
                "role": "assistant",
                "content": "rel.py matters " * 5,
                "tool_calls": [view("b", "pkg/not.py")],
            },
            {"role": "tool", "tool_call_id": "b", "content": "1 y"},
            {"role": "assistant", "content": "not.py was a dead end " * 3},
        ],
    }
    trajectories = tmp_path / "t.jsonl"
    trajectories.write_text(json.dumps(record) + "\n")
    instances = tmp_path / "i.jsonl"
    row = {
        "instance_id": "o__p-1",
        "repo": "o/p",
        "patch": "diff --git a/pkg/fix.py b/pkg/fix.py\n",
        "problem_statement": "it breaks",
    }
    instances.write_text(json.dumps(row) + "\n")
    labels = tmp_path / "labels.jsonl"
    args = [
        "mine",
        str(trajectories),
        "-i",
        str(instances),
        "-o",
        str(labels),
        "--judge",
        "judge-model",
        "--endpoint",
        server.url,
        "-j",
        "2",
    ]
    runner = CliRunner()
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    [label] = list(read_labels(labels))
    assert isinstance(label, LabelRecord)
    verdicts = {m.path: m.verdict for m in label.mined}
    assert verdicts == {"pkg/rel.py": Verdict.RELEVANT, "pkg/not.py": Verdict.NOT_RELEVANT}
    assert label.gold == ["pkg/fix.py", "pkg/rel.py"]
    assert label.judge == "judge-model"
    assert (tmp_path / "labels.jsonl.judge-cache.sqlite").exists()
    before = sum(server.hits.values())
    assert runner.invoke(app, args).exit_code == 0
    assert sum(server.hits.values()) == before  # the rerun cost nothing
