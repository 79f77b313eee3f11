"""`codegrep serve` over HTTP: a real uvicorn server on 127.0.0.1 (a free port, in a thread)
over real git repositories made here, driven with httpx."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="needs the 'serve' extra")
pytest.importorskip("starlette", reason="needs the 'serve' extra")

import httpx
from codegrep.cli import app
from codegrep.serve_http import build_app, serve_in_thread
from codegrep.service import LocalizeResponse, LocalizeService, ServiceConfigError, ServiceLimits
from codegrep_gate import Calibration, Retriever, calibrate, write_calibration
from codegrep_gate._records import DataRef
from codegrep_model import PolicyError, PolicyReply, PolicyRequest
from codegrep_model import __version__ as model_version
from codegrep_records import Prediction
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
    ),
    "billing/tax.py": "def vat_rate(country):\n    return {'de': 0.19}.get(country, 0.0)\n",
}
ISSUE = (
    "Refunds fail: `Invoice.add_line(-5)` raises\n\n"
    "    ValueError: negative amounts are not allowed on an invoice\n\n"
    "Credit notes need negative lines."
)
JSON = {"Content-Type": "application/json"}

MakeRepo = Callable[[Path, dict[str, str]], Path]


@pytest.fixture
def allowed(tmp_path: Path, make_repo: MakeRepo) -> Path:
    """The one allowed root; the billing repository inside it."""
    root = tmp_path / "allowed"
    make_repo(root / "billing-repo", FILES)
    return root


@pytest.fixture
def repo(allowed: Path) -> Path:
    return allowed / "billing-repo"


@pytest.fixture
def outside(tmp_path: Path, make_repo: MakeRepo) -> Path:
    """A repository that no request may read, next to the allowed root."""
    return make_repo(
        tmp_path / "outside" / "secret",
        {"secret.py": "class Invoice: pass\n\ndef outside_secret_marker():\n    pass\n"},
    )


@pytest.fixture
def mirror_source(repo: Path, tmp_path: Path, git: Callable[..., str]) -> str:
    """A clone source template under which `repo` is the repository acme/billing."""
    mirrors = tmp_path / "mirrors"
    git(repo.parent, "clone", "-q", "--bare", str(repo), str(mirrors / "acme+billing"))
    return str(mirrors / "{owner}+{name}")


def _calibration(retriever: str) -> Calibration:
    """A calibration measured on 40 in-memory predictions: the first file always gold, the
    second never (precision by rank 1.0, then 0.0)."""
    predictions = [
        Prediction(instance_id=f"i{i}", files=("a.py", "b.py"), retriever=retriever)
        for i in range(40)
    ]
    gold = {f"i{i}": frozenset({"a.py"}) for i in range(40)}
    return calibrate(
        predictions,
        gold,
        retriever=Retriever(name=retriever, version=model_version, package="codegrep-model"),
        data=DataRef(name="in-memory test predictions"),
        resamples=200,
    )


class AnswerPolicy:
    """Answers at once with fixed files; `wait` (a threading.Event) holds each reply until set;
    `fail` raises instead (a PolicyError is the model's failure, anything else a bug)."""

    def __init__(
        self,
        files: list[str],
        *,
        name: str = "fixed",
        wait: threading.Event | None = None,
        fail: BaseException | None = None,
    ) -> None:
        self.files = files
        self._name = name
        self.wait = wait
        self.fail = fail
        self.entered = threading.Event()

    @property
    def name(self) -> str:
        return self._name

    async def reply(self, request: PolicyRequest) -> PolicyReply:
        self.entered.set()
        while self.wait is not None and not self.wait.is_set():
            await asyncio.sleep(0.01)
        if self.fail is not None:
            raise self.fail
        return PolicyReply(content=json.dumps({"files": self.files}))


@contextmanager
def serving(service: LocalizeService, *, max_body_bytes: int = 1 << 20) -> Iterator[str]:
    """A real uvicorn server on a free port of 127.0.0.1, in a thread; yields its base URL."""
    with serve_in_thread(build_app(service, max_body_bytes=max_body_bytes)) as url:
        yield url


def _post(url: str, body: object, **kw: object) -> httpx.Response:
    return httpx.post(f"{url}/localize", json=body, timeout=30, **kw)  # type: ignore[arg-type]


# --- answers ---------------------------------------------------------------------------------


def test_files_match_codegrep_localize(repo: Path, allowed: Path) -> None:
    res = CliRunner().invoke(
        app, ["localize", "--repo", str(repo), "--issue", "-", "--json"], input=ISSUE
    )
    assert res.exit_code == 0, res.output
    cli = json.loads(res.output)
    with serving(LocalizeService(allow_roots=[allowed])) as url:
        for commit in (None, "HEAD"):
            r = _post(url, {"repo": str(repo), "issue": ISSUE, "commit": commit})
            assert r.status_code == 200, r.text
            data = r.json()
            assert data["files"] == cli["files"] == ["billing/invoice.py"]
            assert data["scores"] == cli["scores"]
            assert data["reasons"] == cli["reasons"]
            assert data["status"] == "answered"
            assert data["policy"] == "lexical"
            assert data["gate"] is None  # no calibration: not gated
            assert data["injected"] == data["files"]
            assert data["injection"] is None
            assert data["latency_s"] >= data["queue_s"] >= 0


def test_cli_json_and_http_are_one_record_with_crlf_kept(
    repo: Path, allowed: Path, tmp_path: Path
) -> None:
    issue = ISSUE.replace("\n", "\r\n")
    (tmp_path / "issue.txt").write_bytes(issue.encode())
    res = CliRunner().invoke(
        app,
        ["localize", "--repo", str(repo), "--commit", "HEAD", "--issue",
         str(tmp_path / "issue.txt"), "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    cli = json.loads(res.output)
    piped = CliRunner().invoke(
        app, ["localize", "--repo", str(repo), "--issue", "-", "--json"], input=issue.encode()
    )
    with serving(LocalizeService(allow_roots=[allowed])) as url:
        r = _post(url, {"repo": str(repo), "issue": issue, "commit": "HEAD"})
    assert r.status_code == 200, r.text
    served = r.json()
    assert list(cli) == list(served) == list(LocalizeResponse.model_fields)
    assert cli["issue_bytes"] == served["issue_bytes"] == len(issue.encode())
    assert json.loads(piped.output)["issue_bytes"] == len(issue.encode())
    timing = ("latency_s", "queue_s")
    assert {k: v for k, v in cli.items() if k not in timing} == {
        k: v for k, v in served.items() if k not in timing
    }


def test_gate_and_injection(repo: Path, allowed: Path) -> None:
    policy = AnswerPolicy(["billing/invoice.py", "billing/tax.py", "README.md"])
    service = LocalizeService(
        policy=policy, allow_roots=[allowed], calibration=_calibration("fixed"), version="0.1.0"
    )
    with serving(service) as url:
        # gated by default (a calibration is loaded): rank 1 measured 1.0, ranks 2+ 0.0
        data = _post(url, {"repo": str(repo), "issue": ISSUE, "inject": "openhands"}).json()
        assert data["files"] == ["billing/invoice.py", "billing/tax.py", "README.md"]
        assert data["injected"] == ["billing/invoice.py"]
        decisions = data["gate"]["files"]
        assert [d["kept"] for d in decisions] == [True, False, False]
        assert "not injected" in decisions[1]["reason"]
        assert data["gate"]["summary"].startswith("1 of 3 files injected")
        assert data["injection"].startswith("<candidate_files>")
        assert "- billing/invoice.py\n" in data["injection"]
        assert "billing/tax.py" not in data["injection"]
        # a threshold of 0 keeps all; gate: false skips the gate; max_files cuts either way
        data = _post(url, {"repo": str(repo), "issue": ISSUE, "gate": 0.0}).json()
        assert data["injected"] == data["files"]
        assert data["gate"]["config"]["threshold"] == 0.0
        data = _post(
            url,
            {"repo": str(repo), "issue": ISSUE, "gate": False, "max_files": 2, "inject": "json"},
        ).json()
        assert data["gate"] is None
        assert data["injected"] == ["billing/invoice.py", "billing/tax.py"]
        assert json.loads(data["injection"]) == {"candidate_files": data["injected"]}
        assert data["top"] is None  # not asked for
        # top: the policy's best files with their scores, as `localize --top`; the answer and
        # the gate unchanged; out of bounds is a 422 naming the field
        data = _post(url, {"repo": str(repo), "issue": ISSUE, "top": 2}).json()
        assert [t["path"] for t in data["top"]] == ["billing/invoice.py", "billing/tax.py"]
        assert data["files"] == ["billing/invoice.py", "billing/tax.py", "README.md"]
        assert data["injected"] == ["billing/invoice.py"]
        for bad in (0, 101, "2"):
            r = _post(url, {"repo": str(repo), "issue": ISSUE, "top": bad})
            assert r.status_code == 422, (bad, r.text)
            assert "top" in r.text
        # /calibration: the record and the gate settings
        r = httpx.get(f"{url}/calibration")
        assert r.status_code == 200
        body = r.json()
        assert body["calibration"]["retriever"]["name"] == "fixed"
        assert body["gate"]["threshold"] == 0.45
        assert body["gate_by_default"] is True


def test_health_and_calibration_without_one(repo: Path, allowed: Path) -> None:
    with serving(LocalizeService(allow_roots=[allowed])) as url:
        assert _post(url, {"repo": str(repo), "issue": ISSUE}).status_code == 200
        r = httpx.get(f"{url}/health")
        assert r.status_code == 200
        health = r.json()
        assert health["status"] == "ok"
        assert health["policy"] == "lexical"
        assert health["version"]
        assert (health["in_flight"], health["queued"], health["served"]) == (0, 0, 1)
        assert health["max_concurrent"] == 2
        assert {"open_trees", "trees_opened", "trees_closed"} <= set(health["pool"])
        assert health["pool"]["max_checkout_bytes"] == 512 << 20
        assert (health["abandoned"], health["fetches"], health["allow_fetch"]) == (0, 0, False)
        assert health["calibration"] is None
        r = httpx.get(f"{url}/calibration")
        assert r.status_code == 404
        assert r.json()["error"]["code"] == "not_found"
        # gating asked of a server without a calibration: said, not ignored
        r = _post(url, {"repo": str(repo), "issue": ISSUE, "gate": True})
        assert r.status_code == 400
        assert "no calibration" in r.json()["error"]["message"]
        assert httpx.get(f"{url}/nope").status_code == 404
        assert httpx.get(f"{url}/localize").status_code == 405


# --- bad requests ----------------------------------------------------------------------------


def test_malformed_json_and_wrong_types(repo: Path, allowed: Path) -> None:
    with serving(LocalizeService(allow_roots=[allowed])) as url:
        r = httpx.post(f"{url}/localize", content=b'{"repo": "x", "issue": ', headers=JSON)
        assert r.status_code == 400
        error = r.json()["error"]
        assert error["code"] == "malformed_json"
        assert "not JSON" in error["message"]
        assert "line 1" in error["message"]
        r = httpx.post(f"{url}/localize", content=b"\xff\xfe", headers=JSON)
        assert r.status_code == 400
        r = httpx.post(f"{url}/localize", content=b"[1, 2]", headers=JSON)
        assert r.status_code == 422
        # numbers JSON's grammar allows and Python should not hold: refused as not JSON, with the
        # reason, not a 500 with the interpreter's own message
        for number, reason in (("9" * 5000, "too long"), ("1e999", "out of range")):
            body = f'{{"repo": "x", "issue": "y", "max_files": {number}}}'.encode()
            r = httpx.post(f"{url}/localize", content=body, headers=JSON)
            assert r.status_code == 400, r.text
            assert r.json()["error"]["code"] == "malformed_json"
            assert reason in r.json()["error"]["message"]
        for body, field in (
            ({"repo": 5, "issue": ISSUE}, "repo"),
            ({"repo": str(repo)}, "issue"),
            ({"repo": str(repo), "issue": "  \n"}, "issue"),
            ({"repo": str(repo), "issue": ISSUE, "gate": "yes"}, "gate"),
            ({"repo": str(repo), "issue": ISSUE, "gate": 1.5}, "gate"),
            ({"repo": str(repo), "issue": ISSUE, "max_files": "3"}, "max_files"),
            ({"repo": str(repo), "issue": ISSUE, "inject": "html"}, "inject"),
            ({"repo": str(repo), "issue": ISSUE, "surprise": 1}, "surprise"),
        ):
            r = _post(url, body)
            assert r.status_code == 422, (body, r.text)
            error = r.json()["error"]
            assert any(f["field"].split(".")[0] == field for f in error["fields"]), error
            assert field in error["message"]


def test_paths_outside_the_allowed_roots_are_refused(
    repo: Path, allowed: Path, outside: Path, tmp_path: Path
) -> None:
    (allowed / "link").symlink_to(outside, target_is_directory=True)
    (allowed / "billing-repo" / "escape").symlink_to(outside, target_is_directory=True)
    with serving(LocalizeService(allow_roots=[allowed])) as url:
        for path in (
            str(outside),  # an absolute path elsewhere
            f"{allowed}/../outside/secret",  # `..` out of the root
            f"{allowed}/billing-repo/../../outside/secret",
            str(allowed / "link"),  # a symlink in the root pointing out
            str(allowed / "billing-repo" / "escape"),
            "/",
            str(tmp_path),  # the root's parent
        ):
            for commit in (None, "HEAD"):
                r = _post(url, {"repo": path, "issue": ISSUE, "commit": commit})
                assert r.status_code == 403, (path, r.text)
                assert r.json()["error"]["code"] == "not_allowed"
                assert "secret.py" not in r.text
        # relative paths, ~ and NUL bytes are not folders a server can place
        for path in ("../outside/secret", "billing-repo", "~/x", "./x/y", "/tmp/a\x00b"):
            r = _post(url, {"repo": path, "issue": ISSUE, "commit": "HEAD"})
            assert r.status_code in (400, 403), (path, r.text)
        # a folder inside the root is fine, and so is a symlink that stays inside
        (allowed / "alias").symlink_to(repo, target_is_directory=True)
        r = _post(url, {"repo": str(allowed / "alias"), "issue": ISSUE})
        assert r.status_code == 200, r.text
        assert r.json()["files"] == ["billing/invoice.py"]
        # inside an allowed folder, the sandbox does not follow a link out either
        # (its name is listed, as any file of the folder; what it points to is never read)
        (repo / "leak.py").symlink_to(outside / "secret.py")
        r = _post(url, {"repo": str(repo), "issue": "`outside_secret_marker()` is broken"})
        assert r.status_code == 200, r.text
        assert "marker" not in json.dumps(r.json()["reasons"])
        assert not {"leak.py", "escape/secret.py"} & set(r.json()["files"])


def test_missing_and_not_allowed_repositories(
    repo: Path, allowed: Path, tmp_path: Path, mirror_source: str
) -> None:
    service = LocalizeService(
        allow_roots=[allowed],
        allow_repos=["acme/billing", "acme/gone"],
        cache_dir=tmp_path / "cache",
        source=mirror_source,
        allow_fetch=True,  # the clone on first use and each missing commit are fetches
        limits=ServiceLimits(fetch_burst=10),
    )
    with serving(service) as url:
        # an allowed name, cloned from the source on first use
        r = _post(url, {"repo": "acme/billing", "issue": ISSUE, "commit": "HEAD"})
        assert r.status_code == 200, r.text
        assert r.json()["files"] == ["billing/invoice.py"]
        for body, status in (
            ({"repo": "acme/other", "commit": "HEAD"}, 403),  # not on the allow-list
            ({"repo": "psf/requests", "commit": "HEAD"}, 403),
            ({"repo": "acme/gone", "commit": "HEAD"}, 404),  # allowed, but no such repository
            ({"repo": "acme/billing", "commit": "0" * 40}, 404),  # no such commit
            ({"repo": "acme/billing"}, 400),  # a name needs a commit
            ({"repo": str(allowed / "nope")}, 404),  # no such folder inside the root
            ({"repo": str(repo), "commit": "not-a-commit"}, 404),
            ({"repo": str(allowed), "commit": "HEAD"}, 404),  # a folder, not a repository
        ):
            r = _post(url, {"issue": ISSUE, **body})
            assert r.status_code == status, (body, r.text)
            message = r.json()["error"]["message"]
            assert "\n" not in message
            assert "Traceback" not in message
        r = _post(url, {"repo": "acme/other", "issue": ISSUE, "commit": "HEAD"})
        assert "allow-list" in r.json()["error"]["message"]


def test_a_name_is_never_read_as_a_folder(
    repo: Path,
    allowed: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    make_repo: MakeRepo,
    mirror_source: str,
) -> None:
    # A folder named like an allowed repository, relative to the server's working directory,
    # must not be what a request for that name reads.
    make_repo(tmp_path / "cwd" / "acme" / "billing", {"secret.py": "class Invoice: pass\n"})
    monkeypatch.chdir(tmp_path / "cwd")
    service = LocalizeService(
        allow_repos=["acme/billing"],
        cache_dir=tmp_path / "cache",
        source=mirror_source,
        allow_fetch=True,
    )
    with serving(service) as url:
        r = _post(url, {"repo": "acme/billing", "issue": ISSUE, "commit": "HEAD"})
        assert r.status_code == 200, r.text
        assert r.json()["files"] == ["billing/invoice.py"]
        # and a server with no --allow-root reads no folder at all
        r = _post(url, {"repo": str(repo), "issue": ISSUE})
        assert r.status_code == 403


def test_oversized_bodies_and_issues(repo: Path, allowed: Path) -> None:
    limits = ServiceLimits(max_issue_bytes=2000)
    with serving(LocalizeService(allow_roots=[allowed], limits=limits), max_body_bytes=4096) as url:
        big = {"repo": str(repo), "issue": "x" * 5000}
        r = _post(url, big)  # Content-Length over the limit
        assert r.status_code == 413
        assert r.json()["error"]["code"] == "too_large"
        assert "--max-body-bytes" in r.json()["error"]["message"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield json.dumps(big).encode()[:3000]
            yield json.dumps(big).encode()[3000:]

        r = httpx.post(f"{url}/localize", content=chunks(), timeout=30, headers=JSON)
        assert r.status_code == 413
        assert "more than 4096 bytes sent" in r.json()["error"]["message"]
        # under the body limit, over the issue limit
        r = _post(url, {"repo": str(repo), "issue": "é" * 1500})
        assert r.status_code == 413
        assert "3000 bytes" in r.json()["error"]["message"]
        assert _post(url, {"repo": str(repo), "issue": ISSUE}).status_code == 200


# --- load ------------------------------------------------------------------------------------


def test_32_concurrent_requests_share_one_pool_and_one_tree(repo: Path, allowed: Path) -> None:
    service = LocalizeService(
        allow_roots=[allowed], limits=ServiceLimits(max_concurrent=2, max_queue=32)
    )
    with serving(service) as url:

        def one(_: int) -> httpx.Response:
            return _post(url, {"repo": str(repo), "issue": ISSUE, "commit": "HEAD"})

        with ThreadPoolExecutor(32) as ex:
            responses = list(ex.map(one, range(32)))
        assert [r.status_code for r in responses] == [200] * 32
        assert {tuple(r.json()["files"]) for r in responses} == {("billing/invoice.py",)}
        health = httpx.get(f"{url}/health").json()
        assert health["served"] == 32
        assert health["pool"]["trees_opened"] == 1  # one commit, one tree, for all 32
        assert (health["in_flight"], health["queued"]) == (0, 0)
    assert service.pool.stats.trees_closed == 1  # closed with the server


def test_a_full_queue_answers_503_with_retry_after(repo: Path, allowed: Path) -> None:
    release = threading.Event()
    policy = AnswerPolicy(["billing/invoice.py"], wait=release)
    service = LocalizeService(
        policy=policy,
        allow_roots=[allowed],
        limits=ServiceLimits(max_concurrent=1, max_queue=1, timeout_s=30),
    )
    with serving(service) as url, ThreadPoolExecutor(2) as ex:
        body = {"repo": str(repo), "issue": ISSUE}
        running = ex.submit(_post, url, body)
        assert policy.entered.wait(10)
        waiting = ex.submit(_post, url, body)
        deadline = time.monotonic() + 10
        while httpx.get(f"{url}/health").json()["queued"] != 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        r = _post(url, body)
        assert r.status_code == 503
        assert int(r.headers["retry-after"]) >= 1
        assert r.json()["error"]["code"] == "busy"
        release.set()
        assert running.result().status_code == 200
        assert waiting.result().status_code == 200
        assert httpx.get(f"{url}/health").json()["rejected_busy"] == 1


def test_timeout_is_504_and_failures_are_one_line(repo: Path, allowed: Path) -> None:
    never = threading.Event()
    slow = LocalizeService(
        policy=AnswerPolicy(["x"], wait=never),
        allow_roots=[allowed],
        limits=ServiceLimits(timeout_s=0.5),
    )
    with serving(slow) as url:
        started = time.monotonic()
        r = _post(url, {"repo": str(repo), "issue": ISSUE})
        assert r.status_code == 504
        assert time.monotonic() - started < 10
        assert "0.5 s" in r.json()["error"]["message"]
        assert httpx.get(f"{url}/health").json()["in_flight"] == 0
    never.set()
    broken = LocalizeService(
        policy=AnswerPolicy(["x"], fail=RuntimeError("boom\nwith a second line")),
        allow_roots=[allowed],
    )
    with serving(broken) as url:
        r = _post(url, {"repo": str(repo), "issue": ISSUE})
        assert r.status_code == 500
        message = r.json()["error"]["message"]
        assert "RuntimeError: boom with a second line" in message
        assert "Traceback" not in r.text
        assert "\n" not in message
    upstream = LocalizeService(
        policy=AnswerPolicy(["x"], fail=PolicyError("endpoint said 500")), allow_roots=[allowed]
    )
    with serving(upstream) as url:
        r = _post(url, {"repo": str(repo), "issue": ISSUE})
        assert r.status_code == 502
        assert "endpoint said 500" in r.json()["error"]["message"]


# --- the service's own checks and the command ------------------------------------------------


def test_service_refuses_bad_configurations(allowed: Path, tmp_path: Path) -> None:
    with pytest.raises(ServiceConfigError, match="nothing to serve"):
        LocalizeService()
    with pytest.raises(ServiceConfigError, match="allow-root"):
        LocalizeService(allow_roots=[tmp_path / "missing"])
    with pytest.raises(ServiceConfigError, match="owner/name"):
        LocalizeService(allow_repos=["../etc"])
    # a calibration measured for another retriever than the policy
    with pytest.raises(ServiceConfigError, match=r"'fixed'.*'lexical'"):
        LocalizeService(allow_roots=[allowed], calibration=_calibration("fixed"))
    with pytest.raises(ServiceConfigError, match="calibration"):
        LocalizeService(allow_roots=[allowed], gate_by_default=True)


def test_serve_command_checks_before_serving(
    allowed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    assert "serve" in runner.invoke(app, ["--help"]).output
    res = runner.invoke(app, ["serve"])
    assert res.exit_code == 2
    assert "nothing to serve" in " ".join(res.output.split())
    res = runner.invoke(
        app, ["serve", "--allow-root", str(allowed), "--calibration", str(tmp_path / "no.json")]
    )
    assert res.exit_code == 2
    assert "no such calibration file" in res.output
    bad = write_calibration(tmp_path / "cal.json", _calibration("openai:other"))
    res = runner.invoke(app, ["serve", "--allow-root", str(allowed), "--calibration", str(bad)])
    assert res.exit_code == 2
    assert "'openai:other'" in res.output
    res = runner.invoke(app, ["serve", "--allow-root", str(allowed), "--no-calibration", "--gate"])
    assert res.exit_code == 2
    assert "--gate needs a calibration" in " ".join(res.output.split())
    # without the extra: exit 2 and the install line
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    res = runner.invoke(app, ["serve", "--allow-root", str(allowed)])
    assert res.exit_code == 2
    assert "pip install 'codegrep[serve]'" in " ".join(res.output.split())


def test_serve_command_runs_a_server(repo: Path, allowed: Path, tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "codegrep"
    cal = write_calibration(tmp_path / "cal.json", _calibration("lexical"))
    argv = [str(exe), "serve", "--port", "0", "--allow-root", str(allowed)]
    argv += ["--calibration", str(cal), "--max-concurrent", "3"]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        assert match, line
        url = f"http://127.0.0.1:{match.group(1)}"
        assert "gated by default" in line
        health = httpx.get(f"{url}/health", timeout=10).json()
        assert health["max_concurrent"] == 3
        assert health["calibration"] == "in-memory test predictions"
        r = _post(url, {"repo": str(repo), "issue": ISSUE, "inject": "markdown"})
        assert r.status_code == 200, r.text
        data = r.json()
        assert data["injected"] == ["billing/invoice.py"]  # rank 1: measured 1.0
        assert "`billing/invoice.py`" in data["injection"]
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=15)
    # uvicorn shuts down cleanly on SIGTERM, then ends by the signal it caught
    assert proc.returncode in (0, -15), err
    assert "Traceback" not in err
    assert out == ""  # HTTP mode prints nothing on stdout
