"""`codegrep serve` keeps the sandbox's promise: the probes of a tester, each as a test.

Real git repositories made here (one outside the allowed root that must never be read), real
uvicorn servers on 127.0.0.1 (a free port, in a thread) with the server's own settings
(`server_config`), driven with httpx and raw sockets.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn", reason="needs the 'serve' extra")
pytest.importorskip("starlette", reason="needs the 'serve' extra")

import httpx
from codegrep.cli import app
from codegrep.serve_http import build_app, serve_in_thread
from codegrep.service import LocalizeService, ServiceConfigError, ServiceLimits
from codegrep_model import PolicyReply, PolicyRequest
from typer.testing import CliRunner
from worktree_sandbox import TreePool
from worktree_sandbox._liveness import dir_bytes

Git = Callable[..., str]
MakeRepo = Callable[[Path, dict[str, str]], Path]

FILES = {
    "billing/__init__.py": "",
    "billing/invoice.py": (
        "class Invoice:\n"
        "    def add_line(self, amount):\n"
        "        if amount < 0:\n"
        "            raise ValueError('negative amounts are not allowed on an invoice')\n"
    ),
}
ISSUE = "`Invoice.add_line(-5)` raises ValueError: negative amounts are not allowed on an invoice"
SECRET = {"secret_module.py": "def outside_secret_marker():\n    raise ValueError('negative')\n"}
SECRET_ISSUE = "`outside_secret_marker()` raises ValueError: negative"


@pytest.fixture
def allowed(tmp_path: Path, make_repo: MakeRepo) -> Path:
    root = tmp_path / "allowed"
    make_repo(root / "billing-repo", FILES)
    return root


@pytest.fixture
def outside(tmp_path: Path, make_repo: MakeRepo) -> Path:
    """A real repository next to the allowed root: nothing of it may ever be served."""
    return make_repo(tmp_path / "outside" / "secret", SECRET)


@contextmanager
def serving(app_: Any, **config: Any) -> Iterator[str]:
    """A real uvicorn server, configured as `codegrep serve` configures it, on 127.0.0.1."""
    with serve_in_thread(app_, **config) as url:
        yield url


def _post(url: str, body: object, **kw: Any) -> httpx.Response:
    return httpx.post(f"{url}/localize", json=body, timeout=30, **kw)


def _not_allowed(r: httpx.Response, role: str, *hidden: Path) -> None:
    assert r.status_code == 403, r.text
    assert r.json()["error"]["code"] == "not_allowed"
    message = r.json()["error"]["message"]
    assert role in message, message
    for path in hidden:  # the place outside is not said
        assert str(path) not in message
    assert "secret_module" not in r.text
    assert "outside_secret_marker" not in r.text


# --- where a repository's data lives ---------------------------------------------------------


def test_a_dot_git_link_out_of_the_root_is_refused(
    allowed: Path, outside: Path, make_repo: MakeRepo
) -> None:
    # The folder's files are inside; its history and objects are the outside repository's.
    linked = allowed / "linked"
    linked.mkdir()
    (linked / "secret_module.py").write_text(SECRET["secret_module.py"])
    (linked / ".git").symlink_to(outside / ".git", target_is_directory=True)
    with serving(build_app(LocalizeService(allow_roots=[allowed]))) as url:
        for commit in (None, "HEAD"):
            r = _post(url, {"repo": str(linked), "issue": SECRET_ISSUE, "commit": commit})
            _not_allowed(r, "git dir", outside)


def test_a_gitdir_file_and_a_commondir_out_of_the_root_are_refused(
    allowed: Path, outside: Path, git: Git, tmp_path: Path
) -> None:
    # a `.git` file naming the outside repository's git dir
    pointer = allowed / "pointer"
    pointer.mkdir()
    (pointer / ".git").write_text(f"gitdir: {outside / '.git'}\n")
    # a linked worktree of the outside repository, its admin folder moved inside the root: its
    # git dir is inside, its common dir (objects, refs) is not
    git(outside, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "wt")
    linked = allowed / "wt"
    (tmp_path / "wt").rename(linked)
    admin = outside / ".git" / "worktrees" / "wt"
    admin.rename(allowed / "wt-admin")
    (linked / ".git").write_text(f"gitdir: {allowed / 'wt-admin'}\n")
    (allowed / "wt-admin" / "commondir").write_text(f"{outside / '.git'}\n")
    with serving(build_app(LocalizeService(allow_roots=[allowed]))) as url:
        for commit in (None, "HEAD"):
            r = _post(url, {"repo": str(pointer), "issue": SECRET_ISSUE, "commit": commit})
            _not_allowed(r, "git dir", outside)
            r = _post(url, {"repo": str(linked), "issue": SECRET_ISSUE, "commit": commit})
            _not_allowed(r, "common dir", outside)


def test_a_linked_worktree_inside_the_root_is_served(allowed: Path, git: Git) -> None:
    # its `.git` file and its common dir are inside: served as a folder and at a commit (the
    # folder's git was once handed the `.git` file itself and failed: "Not a directory")
    linked = allowed / "billing-wt"
    git(allowed / "billing-repo", "worktree", "add", "-q", "-b", "wt", str(linked))
    with serving(build_app(LocalizeService(allow_roots=[allowed]))) as url:
        for commit in (None, "HEAD"):
            r = _post(url, {"repo": str(linked), "issue": ISSUE, "commit": commit})
            assert r.status_code == 200, r.text
            assert r.json()["files"][0] == "billing/invoice.py"


def test_object_alternates_out_of_the_root_are_refused(
    allowed: Path, outside: Path, git: Git, make_repo: MakeRepo
) -> None:
    secret_head = git(outside, "rev-parse", "HEAD").strip()
    # `clone --shared`: the clone's objects are the outside repository's (alternates)
    git(allowed, "clone", "-q", "--shared", str(outside), str(allowed / "borrowed"))
    # two levels: an alternate inside the root whose own alternates lead out
    inner = make_repo(allowed / "inner", {"x.py": "x = 1\n"})
    (inner / ".git" / "objects" / "info" / "alternates").write_text(
        f"{outside / '.git' / 'objects'}\n"
    )
    git(allowed, "clone", "-q", "--shared", str(inner), str(allowed / "nested"))
    # and one that stays inside: served
    repo = allowed / "billing-repo"
    git(allowed, "clone", "-q", "--shared", str(repo), str(allowed / "shared-inside"))
    with serving(build_app(LocalizeService(allow_roots=[allowed]))) as url:
        for name in ("borrowed", "nested"):
            for commit in (None, "HEAD", secret_head):
                r = _post(
                    url, {"repo": str(allowed / name), "issue": SECRET_ISSUE, "commit": commit}
                )
                _not_allowed(r, "object alternate", outside)
        r = _post(url, {"repo": str(allowed / "shared-inside"), "issue": ISSUE, "commit": "HEAD"})
        assert r.status_code == 200, r.text
        assert r.json()["files"] == ["billing/invoice.py"]


def test_links_inside_the_git_dir_out_of_the_root_are_refused(
    allowed: Path, outside: Path, git: Git, make_repo: MakeRepo
) -> None:
    # git follows a link anywhere in its git dir: a pack folder or a loose-object folder linked
    # to another repository's serves that repository's history
    git(outside, "repack", "-q", "-a", "-d")
    packed = make_repo(allowed / "packed", {"x.py": "x = 1\n"})
    pack = packed / ".git" / "objects" / "pack"
    for f in pack.iterdir():
        f.unlink()
    pack.rmdir()
    pack.symlink_to(outside / ".git" / "objects" / "pack", target_is_directory=True)
    loose = make_repo(allowed / "loose", {"y.py": "y = 1\n"})
    objects = loose / ".git" / "objects"
    # a loose-object folder it does not have yet (a fixed name can be taken: ids follow the clock)
    free = next(n for n in (f"{i:02x}" for i in range(256)) if not (objects / n).exists())
    (objects / free).symlink_to(outside, target_is_directory=True)
    # a link that stays inside the roots is served
    inside = make_repo(allowed / "inside", {"billing.py": "def invoice(): pass\n"})
    (inside / ".git" / "hooks-link").symlink_to(allowed, target_is_directory=True)
    with serving(build_app(LocalizeService(allow_roots=[allowed]))) as url:
        for name in ("packed", "loose"):
            for commit in (None, "HEAD"):
                r = _post(
                    url, {"repo": str(allowed / name), "issue": SECRET_ISSUE, "commit": commit}
                )
                _not_allowed(r, "link inside the git dir", outside)
        r = _post(url, {"repo": str(inside), "issue": ISSUE})
        assert r.status_code == 200, r.text


def test_git_environment_adds_no_alternates(
    allowed: Path, outside: Path, git: Git, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret_head = git(outside, "rev-parse", "HEAD").strip()
    monkeypatch.setenv("GIT_ALTERNATE_OBJECT_DIRECTORIES", str(outside / ".git" / "objects"))
    with serving(build_app(LocalizeService(allow_roots=[allowed]))) as url:
        r = _post(
            url,
            {"repo": str(allowed / "billing-repo"), "issue": SECRET_ISSUE, "commit": secret_head},
        )
        assert r.status_code == 404, r.text
        assert "secret_module" not in r.text


# --- who may drive the server ----------------------------------------------------------------


def test_host_origin_and_content_type_are_checked(allowed: Path) -> None:
    repo = str(allowed / "billing-repo")
    body = json.dumps({"repo": repo, "issue": ISSUE})
    with serving(lambda port: build_app(LocalizeService(allow_roots=[allowed]), port=port)) as url:
        port = url.rsplit(":", 1)[1]
        ok = {"Content-Type": "application/json"}
        assert httpx.post(f"{url}/localize", content=body, headers=ok).status_code == 200
        same = {**ok, "Origin": f"http://localhost:{port}"}
        assert httpx.post(f"{url}/localize", content=body, headers=same).status_code == 200
        for origin in ("https://evil.example", f"http://evil.example:{port}", "null",
                       "http://localhost:1"):  # fmt: skip
            r = httpx.post(f"{url}/localize", content=body, headers={**ok, "Origin": origin})
            assert r.status_code == 403, (origin, r.text)
            assert r.json()["error"]["code"] == "forbidden_origin"
        # DNS rebinding: the page's own name arrives as Host
        for host in (f"evil.example:{port}", "127.0.0.1:1", ""):
            r = httpx.post(f"{url}/localize", content=body, headers={**ok, "Host": host})
            assert r.status_code == 403, (host, r.text)
            r = httpx.get(f"{url}/health", headers={"Host": host})
            assert r.status_code == 403
        # a "simple" cross-origin request needs no preflight: refused before any route
        for media in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
            r = httpx.post(f"{url}/localize", content=body, headers={"Content-Type": media})
            assert r.status_code == 415, (media, r.text)
        r = httpx.post(f"{url}/localize", content=body)
        assert r.status_code == 415


def test_a_token_is_required_when_set(allowed: Path) -> None:
    repo = str(allowed / "billing-repo")
    service = LocalizeService(allow_roots=[allowed])
    with serving(build_app(service, token="s3cret-token")) as url:
        for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "s3cret-token"}):
            r = _post(url, {"repo": repo, "issue": ISSUE}, headers=headers)
            assert r.status_code == 401, r.text
            assert r.headers["www-authenticate"] == "Bearer"
        assert httpx.get(f"{url}/health").status_code == 401
        r = _post(
            url, {"repo": repo, "issue": ISSUE}, headers={"Authorization": "Bearer s3cret-token"}
        )
        assert r.status_code == 200, r.text


def test_serve_refuses_unsafe_configurations(
    allowed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    monkeypatch.delenv("CODEGREP_SERVE_TOKEN", raising=False)
    res = runner.invoke(app, ["serve", "--allow-root", str(allowed), "--host", "0.0.0.0"])
    assert res.exit_code == 2, res.output
    assert "--token" in " ".join(res.output.split())
    res = runner.invoke(
        app, ["serve", "--allow-root", str(allowed), "--host", "0.0.0.0", "--token", " "]
    )
    assert res.exit_code == 2
    res = runner.invoke(app, ["serve", "--allow-root", "/"])
    assert res.exit_code == 2, res.output
    assert "--allow-broad-root" in " ".join(res.output.split())
    home = tmp_path / "home"
    (home / "src").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for root in ("/", home, tmp_path):  # the root, the home folder, a folder above it
        with pytest.raises(ServiceConfigError, match="--allow-broad-root"):
            LocalizeService(allow_roots=[root])
    LocalizeService(allow_roots=[home / "src"])  # a folder in the home folder is fine
    LocalizeService(allow_roots=["/"], allow_broad_root=True)


# --- fetching --------------------------------------------------------------------------------


@pytest.fixture
def mirror_source(allowed: Path, tmp_path: Path, git: Git) -> str:
    mirrors = tmp_path / "mirrors"
    git(
        allowed,
        "clone",
        "-q",
        "--bare",
        str(allowed / "billing-repo"),
        str(mirrors / "acme+billing"),
    )
    return str(mirrors / "{owner}+{name}")


def test_no_fetch_for_a_client_without_allow_fetch(tmp_path: Path, mirror_source: str) -> None:
    source_dir = str(Path(mirror_source).parent)
    service = LocalizeService(
        allow_repos=["acme/billing"], cache_dir=tmp_path / "cache", source=mirror_source
    )
    with serving(build_app(service)) as url:
        for commit in ("HEAD", "1" * 40):
            r = _post(url, {"repo": "acme/billing", "issue": ISSUE, "commit": commit})
            assert r.status_code == 404, r.text
            assert "--allow-fetch" in r.json()["error"]["message"]
            assert source_dir not in r.text
        assert not (tmp_path / "cache" / "repos" / "acme__billing.git").exists()
        health = httpx.get(f"{url}/health").json()
        assert (health["fetches"], health["fetches_refused"]) == (0, 2)


def test_fetches_are_rate_limited_and_never_name_the_source(
    tmp_path: Path, mirror_source: str
) -> None:
    source_dir = str(Path(mirror_source).parent)
    service = LocalizeService(
        allow_repos=["acme/billing"],
        cache_dir=tmp_path / "cache",
        source=mirror_source,
        allow_fetch=True,
        limits=ServiceLimits(fetch_burst=2, fetches_per_minute=0.01),
    )
    with serving(build_app(service)) as url:
        r = _post(url, {"repo": "acme/billing", "issue": ISSUE, "commit": "HEAD"})  # the clone
        assert r.status_code == 200, r.text
        r = _post(url, {"repo": "acme/billing", "issue": ISSUE, "commit": "2" * 40})  # a fetch
        assert r.status_code == 404, r.text
        assert source_dir not in r.text
        r = _post(url, {"repo": "acme/billing", "issue": ISSUE, "commit": "3" * 40})
        assert r.status_code == 429, r.text
        assert int(r.headers["retry-after"]) >= 1
        # what is in the clone needs no fetch, whatever the rate
        r = _post(url, {"repo": "acme/billing", "issue": ISSUE, "commit": "HEAD"})
        assert r.status_code == 200, r.text
        health = httpx.get(f"{url}/health").json()
        assert (health["fetches"], health["fetches_refused"]) == (2, 1)


# --- abandoned and hostile requests ----------------------------------------------------------


class HeldPolicy:
    """Answers only once `release` is set; says when a reply started."""

    name = "held"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()

    async def reply(self, request: PolicyRequest) -> PolicyReply:
        self.entered.set()
        while not self.release.is_set():
            await asyncio.sleep(0.01)
        return PolicyReply(content=json.dumps({"files": ["billing/invoice.py"]}))


def _raw_post(url: str, body: bytes, *, send: int | None = None) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    conn = socket.create_connection((host, int(port)), timeout=10)
    head = (
        f"POST /localize HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    conn.sendall(head + body[:send])
    return conn


def _read_until_closed(conn: socket.socket) -> bytes:
    """Everything the server sends before it closes the connection: the head and the body of
    an answer may come in separate packets, so one `recv` may hold only the head."""
    chunks = []
    while chunk := conn.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_client_that_hangs_up_frees_its_slot_within_a_second(allowed: Path) -> None:
    policy = HeldPolicy()
    limits = ServiceLimits(max_concurrent=1, max_queue=0, timeout_s=60)
    service = LocalizeService(policy=policy, allow_roots=[allowed], limits=limits)
    body = json.dumps({"repo": str(allowed / "billing-repo"), "issue": ISSUE}).encode()
    with serving(build_app(service)) as url:
        conn = _raw_post(url, body)
        assert policy.entered.wait(15), "the search did not start"
        assert httpx.get(f"{url}/health").json()["in_flight"] == 1
        conn.close()  # the client goes away
        left = time.monotonic()
        while httpx.get(f"{url}/health").json()["in_flight"] != 0:
            assert time.monotonic() - left < 1.0, "the slot is still held"
            time.sleep(0.02)
        health = httpx.get(f"{url}/health").json()
        assert (health["abandoned"], health["queued"]) == (1, 0)
        policy.release.set()
        r = _post(url, {"repo": str(allowed / "billing-repo"), "issue": ISSUE})
        assert r.status_code == 200, r.text


def test_half_sent_bodies_and_headers_time_out(allowed: Path) -> None:
    body = json.dumps({"repo": str(allowed / "billing-repo"), "issue": ISSUE}).encode()
    app_ = build_app(LocalizeService(allow_roots=[allowed]), body_timeout_s=0.5)
    with serving(app_, header_timeout_s=0.5) as url:
        conn = _raw_post(url, body, send=10)  # the headers, and 10 bytes of the body
        started = time.monotonic()
        answer = _read_until_closed(conn)
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b"body_timeout" in answer
        assert time.monotonic() - started < 3
        conn.close()
        # headers that never end: the connection is closed
        host, port = url.removeprefix("http://").split(":")
        conn = socket.create_connection((host, int(port)), timeout=10)
        conn.sendall(b"POST /localize HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        assert conn.recv(65536) == b""
        assert time.monotonic() - started < 3
        conn.close()
        # and the server still answers
        assert _post(url, json.loads(body)).status_code == 200


def test_deeply_nested_json_is_a_400(allowed: Path) -> None:
    with serving(build_app(LocalizeService(allow_roots=[allowed]))) as url:
        headers = {"Content-Type": "application/json"}
        for body in (
            b"[" * 100_000 + b"]" * 100_000,
            b'{"repo": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
            b'{"a": ' * 50_000 + b"1" + b"}" * 50_000,
        ):
            r = httpx.post(f"{url}/localize", content=body, headers=headers, timeout=30)
            assert r.status_code == 400, r.text[:200]
            assert r.json()["error"]["code"] == "malformed_json"
            assert "deeper" in r.json()["error"]["message"]
        # brackets inside strings are text, not nesting
        issue = ISSUE + " [" * 200 + " {" * 200
        r = _post(url, {"repo": str(allowed / "billing-repo"), "issue": issue})
        assert r.status_code == 200, r.text


def test_the_checkout_budget_holds_over_40_commits(
    tmp_path: Path, make_repo: MakeRepo, git: Git
) -> None:
    root = tmp_path / "allowed"
    repo = make_repo(root / "many", FILES)
    for i in range(39):  # 40 commits, each a distinct tree of ~20 KB
        (repo / "billing" / "data.py").write_text(f"ROWS_{i} = {list(range(3000 + i))!r}\n")
        git(repo, "add", "-A")
        git(repo, "-c", "user.name=t", "-c", "user.email=t@e.com", "commit", "-q", "-m", f"c{i}")
    shas = git(repo, "rev-list", "HEAD").split()
    assert len(shas) == 40
    size = sum(int(x) for x in git(repo, "ls-tree", "-r", "-l", "HEAD").split()[3::5])
    budget = 3 * size + size // 2  # room for three checkouts, not four
    work = tmp_path / "work"
    limits = ServiceLimits(max_checkout_bytes=budget, max_idle_trees=64)
    pool = TreePool(None, workdir=work, max_checkout_bytes=budget, max_idle_trees=64)
    service = LocalizeService(allow_roots=[root], limits=limits, pool=pool)
    peak = 0
    with serving(build_app(service)) as url:
        for sha in shas:
            r = _post(url, {"repo": str(repo), "issue": ISSUE, "commit": sha})
            assert r.status_code == 200, r.text
            peak = max(peak, dir_bytes(work))
        time.sleep(0.5)  # the last checkouts finish
        peak = max(peak, dir_bytes(work))
        health = httpx.get(f"{url}/health").json()["pool"]
    assert 0 < peak <= budget, (peak, budget)
    assert health["checkout_bytes_peak"] <= budget
    assert health["max_checkout_bytes"] == budget
    assert health["budget_evictions"] >= 30
    assert health["open_trees"] <= 40 - health["budget_evictions"]
    # the service's own pool takes the budget and the idle bound from its limits
    own = LocalizeService(
        allow_roots=[root], limits=ServiceLimits(max_checkout_bytes=12345, max_idle_trees=3)
    )
    assert (own.pool.max_checkout_bytes, own.pool.max_idle_trees) == (12345, 3)
    asyncio.run(own.aclose())


class BusyPolicy:
    """Ranks for `seconds` of pure CPU (no await), as the lexical policy's scoring does."""

    name = "busy"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.entered = threading.Event()

    async def reply(self, request: PolicyRequest) -> PolicyReply:
        self.entered.set()
        end = time.perf_counter() + self.seconds
        while time.perf_counter() < end:
            sum(range(1000))
        return PolicyReply(content=json.dumps({"files": ["billing/invoice.py"]}))


def test_ranking_runs_off_the_event_loop(allowed: Path) -> None:
    policy = BusyPolicy(2.0)
    service = LocalizeService(policy=policy, allow_roots=[allowed], rank_off_loop=True)
    with serving(build_app(service)) as url:
        result: list[httpx.Response] = []
        worker = threading.Thread(
            target=lambda: result.append(
                _post(url, {"repo": str(allowed / "billing-repo"), "issue": ISSUE})
            )
        )
        worker.start()
        assert policy.entered.wait(15)
        slowest = 0.0
        for _ in range(5):
            t0 = time.perf_counter()
            assert httpx.get(f"{url}/health", timeout=10).status_code == 200
            slowest = max(slowest, time.perf_counter() - t0)
        worker.join(30)
        assert result, "no answer"
        assert result[0].status_code == 200, result[0].text
        assert slowest < 1.0, slowest  # on the loop, /health would wait out the 2 s


def test_the_lexical_policy_ranks_on_a_worker_and_answers_the_same(allowed: Path) -> None:
    repo = str(allowed / "billing-repo")
    answers = []
    for off in (True, False):
        with serving(build_app(LocalizeService(allow_roots=[allowed], rank_off_loop=off))) as url:
            r = _post(url, {"repo": repo, "issue": ISSUE, "commit": "HEAD"})
            assert r.status_code == 200, r.text
            answers.append({k: r.json()[k] for k in ("files", "scores", "reasons")})
    assert answers[0] == answers[1]
    assert answers[0]["files"] == ["billing/invoice.py"]


def _closed_by_server(conn: socket.socket, within: float) -> bool:
    conn.settimeout(within)
    try:
        return conn.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def test_a_flood_of_idle_connections_does_not_turn_requests_away(allowed: Path) -> None:
    """More idle connections than the limit, from one process: the oldest idle ones are closed
    to make room, so `/health` and a search still answer (uvicorn's `limit_concurrency` had
    answered them 503 while the idle connections stayed open)."""
    app_ = build_app(LocalizeService(allow_roots=[allowed]))
    with serving(app_, max_connections=6, header_timeout_s=30) as url:
        host, port = url.removeprefix("http://").split(":")
        flood = [socket.create_connection((host, int(port)), timeout=10) for _ in range(20)]
        try:
            for _ in range(3):
                r = httpx.get(f"{url}/health", timeout=10)
                assert r.status_code == 200, r.text
            r = _post(url, {"repo": str(allowed / "billing-repo"), "issue": ISSUE})
            assert r.status_code == 200, r.text
            # the first idle connections made room; the newest are still open
            assert _closed_by_server(flood[0], within=5)
            assert not _closed_by_server(flood[-1], within=0.3)
        finally:
            for conn in flood:
                conn.close()


def test_a_connection_sending_its_body_makes_room_after_the_idle_ones(allowed: Path) -> None:
    body = json.dumps({"repo": str(allowed / "billing-repo"), "issue": ISSUE}).encode()
    app_ = build_app(LocalizeService(allow_roots=[allowed]), body_timeout_s=30)
    with serving(app_, max_connections=2, header_timeout_s=30) as url:
        host, port = url.removeprefix("http://").split(":")
        older = _raw_post(url, body, send=10)  # headers and 10 bytes of the body, then nothing
        time.sleep(0.2)
        idle = socket.create_connection((host, int(port)), timeout=10)
        time.sleep(0.2)
        newer = None
        try:
            # the probe is a third connection: the idle one goes, though it is the younger
            assert httpx.get(f"{url}/health", timeout=10).status_code == 200
            assert _closed_by_server(idle, within=5)
            assert not _closed_by_server(older, within=0.3)
            newer = _raw_post(url, body, send=10)
            time.sleep(0.2)
            # no idle one left: of the two sending their bodies, the one sending longest goes
            assert httpx.get(f"{url}/health", timeout=10).status_code == 200
            assert _closed_by_server(older, within=5)
            assert not _closed_by_server(newer, within=0.3)
        finally:
            for conn in (older, idle, newer):
                if conn is not None:
                    conn.close()


class SwappingPolicy:
    """Links a loose-object folder of the repository to `target` while it searches (as a
    process racing the server would), then answers."""

    name = "swapping"

    def __init__(self, git_dir: Path, target: Path, folder: str) -> None:
        self.git_dir, self.target, self.folder = git_dir, target, folder

    async def reply(self, request: PolicyRequest) -> PolicyReply:
        link = self.git_dir / "objects" / self.folder
        if not link.is_symlink():
            link.symlink_to(self.target, target_is_directory=True)
        return PolicyReply(content=json.dumps({"files": ["billing/invoice.py"]}))


def test_a_layout_swapped_during_the_search_or_the_wait_is_refused(
    allowed: Path, outside: Path
) -> None:
    """The layout is checked when a request comes, again when it has its slot (before git
    runs) and after the search: a link swapped in meanwhile withholds the answer."""
    from codegrep.service import LocalizeRequest, NotAllowedError

    repo = allowed / "billing-repo"
    objects = repo / ".git" / "objects"
    # a loose-object folder it does not have yet (a fixed name can be taken: ids follow the clock)
    free = next(n for n in (f"{i:02x}" for i in range(256)) if not (objects / n).exists())
    link = objects / free
    request = LocalizeRequest(repo=str(repo), issue=ISSUE)
    for target, says in ((outside, "outside the folders"), (allowed, "changed during the search")):
        during = LocalizeService(
            policy=SwappingPolicy(repo / ".git", target, free), allow_roots=[allowed]
        )
        with pytest.raises(NotAllowedError, match=says):
            asyncio.run(during.localize(request))
        link.unlink()
        assert during.health().failed == 1

    async def waited() -> None:
        held = HeldPolicy()
        service = LocalizeService(
            policy=held, allow_roots=[allowed], limits=ServiceLimits(max_concurrent=1)
        )
        first = asyncio.create_task(service.localize(request))
        while not held.entered.is_set():
            await asyncio.sleep(0.01)
        second = asyncio.create_task(service.localize(request))
        # the second waits for the slot, its layout checked already (in a thread: waited for)
        while service.queued < 1:
            await asyncio.sleep(0.01)
        link.symlink_to(allowed, target_is_directory=True)
        held.release.set()
        with pytest.raises(NotAllowedError, match="changed while the request waited"):
            await second
        with pytest.raises(NotAllowedError, match="changed during the search"):
            await first  # it was searching when the link came

    asyncio.run(waited())
