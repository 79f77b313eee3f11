"""Fixtures: a small real git repository and a scripted OpenAI-compatible HTTP server."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def make_repo(root: Path, files: dict[str, str]) -> tuple[Path, str]:
    """A git repository with `files` committed; returns (path, commit sha)."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init")
    return root, git(root, "rev-parse", "HEAD").strip()


SMALL_REPO = {
    "README.md": "# shop\n",
    "shop/__init__.py": "from shop.cart import Cart\n",
    "shop/cart.py": (
        "class Cart:\n"
        "    def __init__(self):\n"
        "        self.items = []\n\n"
        "    def add_item(self, sku, qty):\n"
        "        if qty <= 0:\n"
        "            raise ValueError('quantity must be positive for every line')\n"
        "        self.items.append((sku, qty))\n\n"
        "    def total_price(self, prices):\n"
        "        return sum(prices[s] * q for s, q in self.items)\n"
    ),
    "shop/pricing.py": "def apply_discount(total, rate):\n    return total * (1 - rate)\n",
    "shop/util/money.py": "def round_cents(x):\n    return round(x, 2)\n",
    "tests/test_cart.py": (
        "from shop.cart import Cart\n\n"
        "def test_add_item():\n    c = Cart()\n    c.add_item('a', 1)\n"
        "    c.total_price({'a': 1})\n"
    ),
}


@pytest.fixture(scope="session")
def repo_factory() -> Callable[[Path, dict[str, str]], tuple[Path, str]]:
    """`make_repo` for tests in other modules (importlib mode cannot import conftest)."""
    return make_repo


@pytest.fixture
def small_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "shop", SMALL_REPO)[0]


@dataclass
class Scripted:
    """One scripted HTTP reply: a chat-completions message, a status, a delay."""

    message: dict[str, Any] | None = None
    status: int = 200
    delay_s: float = 0.0
    raw: str | None = None
    usage: dict[str, int] = field(
        default_factory=lambda: {"prompt_tokens": 100, "completion_tokens": 10}
    )


class ChatServer:
    """An OpenAI-compatible `/v1/chat/completions` on 127.0.0.1 that replays a script."""

    def __init__(self) -> None:
        self.script: list[Scripted] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                with outer._lock:
                    outer.requests.append(body)
                    step = outer.script.pop(0) if outer.script else Scripted(status=599)
                if step.delay_s:
                    time.sleep(step.delay_s)
                if step.status != 200:
                    payload = step.raw or json.dumps({"error": {"message": "scripted failure"}})
                else:
                    payload = step.raw or json.dumps(
                        {
                            "id": "x",
                            "object": "chat.completion",
                            "choices": [
                                {"index": 0, "message": step.message, "finish_reason": "stop"}
                            ],
                            "usage": step.usage,
                        }
                    )
                data = payload.encode()
                try:
                    self.send_response(step.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def tool_reply(self, *calls: tuple[str, Any], content: str | None = None) -> Scripted:
        tool_calls = [
            {
                "id": f"c{len(self.requests)}_{i}_{name}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for i, (name, args) in enumerate(calls)
        ]
        return Scripted({"role": "assistant", "content": content, "tool_calls": tool_calls})

    @staticmethod
    def failure(status: int) -> Scripted:
        return Scripted(status=status)

    @staticmethod
    def text_reply(text: str, **kw: Any) -> Scripted:
        return Scripted({"role": "assistant", "content": text}, **kw)


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    server = ChatServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
