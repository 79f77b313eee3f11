"""`codegrep serve` under a flood of idle connections from one local process.

Starts `codegrep serve --port 0` on a small repository made here (or `--repo`), opens
`--connections` TCP connections that never send a byte (reopening each one the server closes,
every `--reopen` s, as a client keeping the flood up would), and meanwhile asks `GET /health`
every 0.5 s and `POST /localize` every 2 s on fresh connections. Prints, for the flood's
`--seconds`, the status codes of both, their p50 and max latency and how many of the idle
connections were open on average. `--server` runs another checkout's `codegrep` (to compare two
versions on the same flood). Progress goes to stderr, the figures to stdout and to `-o` as JSON.
Not a timed test: figures depend on the machine (say which when quoting).

    uv run --all-packages --extra serve python apps/injector/benchmarks/idle_flood.py
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_latency import _pct, log, start_server  # a sibling benchmark script

ISSUE = "Invoice.total ignores the discount when the cart has a coupon."


def _small_repo(folder: Path) -> Path:
    repo = folder / "shop"
    (repo / "billing").mkdir(parents=True)
    (repo / "billing" / "invoice.py").write_text(
        "class Invoice:\n    def total(self, discount=0):\n        return 100 - discount\n"
    )
    (repo / "billing" / "tax.py").write_text("def vat_rate(country):\n    return 0.19\n")
    env = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), *env, "commit", "-qm", "shop"], check=True)
    return repo


class Flood:
    """`n` idle connections to `port`, each reopened (every `reopen` s) once the server closed
    it; `open_counts` samples how many were open."""

    def __init__(self, port: int, n: int, reopen: float) -> None:
        self.port, self.n, self.reopen = port, n, reopen
        self.socks: list[socket.socket | None] = [None] * n
        self.open_counts: list[int] = []
        self.opened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _connect(self, i: int) -> None:
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", self.port))
        except OSError:
            s.close()
            return
        s.setblocking(False)
        self.socks[i] = s
        self.opened += 1

    def _alive(self, s: socket.socket) -> bool:
        try:
            return s.recv(1, socket.MSG_PEEK) != b""  # b"": the server closed it
        except BlockingIOError:
            return True
        except OSError:
            return False

    def _run(self) -> None:
        while not self._stop.is_set():
            for i, s in enumerate(self.socks):
                if s is not None and not self._alive(s):
                    s.close()
                    self.socks[i] = s = None
                if s is None:
                    self._connect(i)
            self.open_counts.append(sum(s is not None for s in self.socks))
            self._stop.wait(self.reopen)

    def __enter__(self) -> Flood:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        for s in self.socks:
            if s is not None:
                s.close()


def _probe(method: str, url: str, body: dict[str, Any] | None, timeout: float) -> tuple[str, float]:
    t0 = time.perf_counter()
    try:
        with httpx.Client(timeout=timeout) as client:  # a fresh connection each time
            r = client.request(method, url, json=body)
        status = str(r.status_code)
    except httpx.HTTPError as exc:
        status = type(exc).__name__
    return status, time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repo", type=Path, help="a git work tree to serve (default: a small one)")
    p.add_argument("--connections", type=int, default=90)
    p.add_argument("--reopen", type=float, default=9.0)
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--max-concurrent", type=int, default=2)
    p.add_argument("--max-queue", type=int, default=16)
    p.add_argument("--server", type=Path, help="the codegrep executable to serve with")
    p.add_argument("-o", "--output", type=Path)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = a.repo.resolve() if a.repo else _small_repo(Path(tmp))
        args = argparse.Namespace(
            server=a.server, max_concurrent=a.max_concurrent, max_queue=a.max_queue,
            requests=0, timeout=30, calibration=None,
        )  # fmt: skip
        proc, url = start_server(args, repo)
        try:
            port = int(url.rsplit(":", 1)[1])
            health: list[tuple[str, float]] = []
            search: list[tuple[str, float]] = []
            body = {"repo": str(repo), "issue": ISSUE}
            log(f"flood: {a.connections} idle connections for {a.seconds:g} s")
            with Flood(port, a.connections, a.reopen) as flood:
                time.sleep(1.0)  # the flood's first round is open
                end = time.monotonic() + a.seconds
                tick = 0
                while time.monotonic() < end:
                    health.append(_probe("GET", f"{url}/health", None, 5))
                    if tick % 4 == 0:
                        search.append(_probe("POST", f"{url}/localize", body, 30))
                    tick += 1
                    time.sleep(0.5)
            figures = {
                "connections": a.connections,
                "seconds": a.seconds,
                "limits": {"max_concurrent": a.max_concurrent, "max_queue": a.max_queue},
                "idle_open_mean": sum(flood.open_counts) / max(1, len(flood.open_counts)),
                "idle_opened": flood.opened,
            }
            for name, got in (("health", health), ("localize", search)):
                seconds = [t for _, t in got]
                figures[name] = {
                    "status": dict(Counter(s for s, _ in got)),
                    "p50_s": round(_pct(seconds, 50), 3) if seconds else None,
                    "max_s": round(max(seconds), 3) if seconds else None,
                }
        finally:
            proc.terminate()
            proc.wait(10)
    print(json.dumps(figures, indent=2))
    if a.output:
        a.output.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
