"""Fixtures: a small real git repository made here (importlib mode: tests cannot import this
module, so the helpers come as fixtures)."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

Git = Callable[..., str]
MakeRepo = Callable[[Path, dict[str, str]], Path]
# the assistant message (content, tool_calls) a served model sends for its n-th request (from 1)
Reply = Callable[[int], dict[str, Any]]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def _make_repo(root: Path, files: dict[str, str]) -> Path:
    """A git repository at `root` (made if missing) with `files` committed on `main`."""
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q", "-b", "main")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@e.com", "commit", "-q", "-m", "init")
    return root


@pytest.fixture(scope="session")
def git() -> Git:
    """`git(repo, *args)`: runs git in `repo`, checked, and returns its stdout."""
    return _git


@pytest.fixture(scope="session")
def make_repo() -> MakeRepo:
    """`make_repo(root, files)`: commits `files` in a new repository at `root`; returns it."""
    return _make_repo


class ServedModel:
    """An OpenAI-compatible `/v1/chat/completions` on 127.0.0.1 whose n-th reply is
    `reply(n)`; `requests` counts what it was asked."""

    def __init__(self, reply: Reply) -> None:
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                outer.requests += 1
                body = json.dumps({
                    "id": "x",
                    "object": "chat.completion",
                    "choices": [{
                        "index": 0,
                        "message": {"role": "assistant", **reply(outer.requests)},
                        "finish_reason": "stop",
                    }],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"


@pytest.fixture
def served_model() -> Iterator[Callable[[Reply], ServedModel]]:
    """`served_model(reply)`: a started `ServedModel`, shut down after the test."""
    started: list[ServedModel] = []

    def start(reply: Reply) -> ServedModel:
        server = ServedModel(reply)
        server.thread.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.httpd.shutdown()
        server.httpd.server_close()
