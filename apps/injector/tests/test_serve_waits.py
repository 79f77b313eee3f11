"""Nothing a model call or a repository's files hold can make `codegrep serve` wait: a glob
that a backtracking matcher took exponential time on, and FIFOs (or links to one) where git or
the layout check reads. Each answer comes back in seconds, `/health` answers all the while, and
healthy repositories are served after. Real repositories, a real uvicorn on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="needs the 'serve' extra")
pytest.importorskip("starlette", reason="needs the 'serve' extra")

import httpx
from codegrep.serve_http import build_app, serve_in_thread
from codegrep.service import LocalizeService, ServiceLimits
from codegrep_model import PolicyReply, PolicyRequest, ToolCall

Git = Callable[..., str]
MakeRepo = Callable[[Path, dict[str, str]], Path]

FILES = {
    "billing/invoice.py": "class Invoice:\n    def add_line(self, amount):\n        pass\n",
    "a/b/c/d/e/f/g/h.py": "deep = 1\n",  # 8 deep, as in a real tree
}
ISSUE = "`Invoice.add_line(-5)` raises ValueError"
HOSTILE_GLOB = "**/" * 40 + "x"  # 121 characters; the schema allows 500


class GlobPolicy:
    """Calls glob, and grep with glob=, with one pattern; then answers."""

    name = "glob-probe"

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.results: list[str] = []

    async def reply(self, request: PolicyRequest) -> PolicyReply:
        if request.history or request.observations:
            seen = request.observations or request.history[-1]
            self.results += [o.result.text if o.result else "refused" for o in seen]
            return PolicyReply(content=json.dumps({"files": ["billing/invoice.py"]}))
        calls = (
            ToolCall(id="c0", name="glob", arguments=json.dumps({"pattern": self.pattern})),
            ToolCall(
                id="c1",
                name="grep",
                arguments=json.dumps({"pattern": "deep", "glob": self.pattern}),
            ),
        )
        return PolicyReply(content=None, tool_calls=calls)


# the slowest /health answer allowed while a hostile request runs: a loop held by it answers
# only after the held call (the request's 20 s timeout, or the 51 s a hostile glob once took),
# if at all; an unheld one took up to 2.3 s on 2 cores shared with a training run (over the
# 2.0 s this bound was)
_HEALTH_S = 4.0


@contextmanager
def _watched_health(url: str) -> Iterator[list[float]]:
    """Asks `/health` every 50 ms in a thread; yields the list of answer times (inf: none)."""
    times: list[float] = []
    stop = threading.Event()

    def ask() -> None:
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                ok = httpx.get(f"{url}/health", timeout=5).status_code == 200
            except httpx.HTTPError:
                ok = False
            times.append(time.perf_counter() - t0 if ok else float("inf"))
            stop.wait(0.05)

    watcher = threading.Thread(target=ask, daemon=True)
    watcher.start()
    try:
        yield times
    finally:
        stop.set()
        watcher.join(10)


def _post(url: str, body: object) -> tuple[httpx.Response, float]:
    t0 = time.perf_counter()
    r = httpx.post(f"{url}/localize", json=body, timeout=30)
    return r, time.perf_counter() - t0


@pytest.mark.parametrize("commit", [None, "HEAD"])
def test_a_hostile_glob_is_answered_and_the_server_stays_up(
    tmp_path: Path, make_repo: MakeRepo, commit: str | None
) -> None:
    root = tmp_path / "allowed"
    repo = make_repo(root / "repo", FILES)
    policy = GlobPolicy(HOSTILE_GLOB)
    service = LocalizeService(policy=policy, allow_roots=[root], rank_off_loop=False)
    with serving(service) as url, _watched_health(url) as health:
        r, seconds = _post(url, {"repo": str(repo), "issue": ISSUE, "commit": commit})
    assert r.status_code == 200, r.text
    assert seconds < 10, seconds
    assert len(policy.results) == 2, policy.results
    assert all("No files" in text for text in policy.results), policy.results
    assert health, "no /health answer"
    assert max(health) < _HEALTH_S, health


@contextmanager
def serving(service: LocalizeService) -> Iterator[str]:
    with serve_in_thread(build_app(service)) as url:
        yield url


def _release(fifos: list[Path]) -> None:
    """Whatever still waits on a FIFO (the old code) is let go: a writer comes and leaves."""
    for fifo in fifos:
        for _ in range(20):
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                time.sleep(0.05)
                continue
            os.close(fd)
            break


# Where git, or the layout check, opens a file of the repository: a FIFO there, or a link to a
# FIFO inside the allowed root.
_FIFO_PLACES = [
    ".git/objects/info/alternates",
    ".git/config",
    ".git/packed-refs",
    ".git/info/grafts",
    ".git/shallow",
    ".git/HEAD",
    "link:.git/objects/info/alternates",
    "link:.git/info/exclude",
]


@pytest.mark.parametrize("place", _FIFO_PLACES)
def test_a_fifo_where_git_reads_is_refused_at_once(
    tmp_path: Path, make_repo: MakeRepo, place: str
) -> None:
    root = tmp_path / "allowed"
    healthy = make_repo(root / "healthy", FILES)
    hostile = make_repo(root / "hostile", FILES)
    linked, _, rel = place.rpartition(":")
    target = hostile / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        target.unlink()
    fifo = root / "fifo" if linked else target
    os.mkfifo(fifo)
    if linked:
        target.symlink_to(fifo)
    limits = ServiceLimits(timeout_s=20, max_concurrent=2)
    service = LocalizeService(allow_roots=[root], limits=limits)
    try:
        with serving(service) as url, _watched_health(url) as health:
            answers = [
                _post(url, {"repo": str(hostile), "issue": ISSUE, "commit": commit})
                for commit in (None, "HEAD", None, "HEAD")
            ]
            # more requests than the worker threads: none of them is held by the ones before
            good = [
                _post(url, {"repo": str(healthy), "issue": ISSUE, "commit": commit})
                for commit in ("HEAD", None)
            ]
    finally:
        _release([fifo])
    for r, seconds in answers:
        assert r.status_code == 403, r.text
        assert "FIFO" in r.json()["error"]["message"], r.text
        assert seconds < 5, seconds
    for r, seconds in good:
        assert r.status_code == 200, r.text
        assert seconds < 10, seconds
    assert health, "no /health answer"
    assert max(health) < _HEALTH_S, health
