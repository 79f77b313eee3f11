"""`codegrep serve` under load: N concurrent POST /localize against a real server process.

Starts `codegrep serve --port 0` on a real repository (a folder as it is, or a repository at a
commit: a bare mirror is served as a folder at a commit), sends one cold request, then for each
concurrency of `--clients` (e.g. `1,4,16`) fires `--requests` requests with that many in
flight at once, and prints per concurrency the client-side latency (p50/p90/p99/max), the
throughput, the status codes (0: the connection dropped), the server's own queueing and
search times, the latency of `GET /health` asked every 0.1 s meanwhile (does the server stay
responsive), the server's peak RSS and the peak bytes of its checkouts in the default
workdir (/dev/shm: RAM that RSS does not show), and its /health afterwards. `--server` runs
another checkout's `codegrep` (to compare two versions on the same requests). Progress goes
to stderr, the figures to stdout and to `-o` as JSON. Not a timed test: figures depend on the
machine (say which when quoting).

Issues: by default one per request, made from the repository's own Python names (a function
or class named in a plausible bug report, drawn with `--seed`), so requests differ as real
ones do; or the problem statements of a SWE-bench file (`--issues FILE --issue-repo NAME`),
cycled, optionally each at its own base commit (`--base-commits`).

    uv run --all-packages --extra serve python apps/injector/benchmarks/serve_latency.py
    uv run --all-packages --extra serve python apps/injector/benchmarks/serve_latency.py \\
        --repo MIRRORS/psf+requests/repo \\
        --issues ../shared/data/swebench/lite.jsonl --issue-repo psf/requests
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

CHECKOUT = Path(__file__).resolve().parents[3]
_PROBLEMS = (
    "`{name}` raises a TypeError when it is given None; it should fail with a clear message.",
    "Calling `{name}` twice returns a different result the second time.",
    "`{name}` ignores its timeout argument and hangs on a slow server.",
    "The docs of `{name}` say it returns a list, but it returns a generator.",
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _git(repo: Path, *args: str) -> str:
    git_dir = ["--git-dir", str(repo)] if _is_bare(repo) else ["-C", str(repo)]
    return subprocess.run(
        ["git", *git_dir, *args], check=True, capture_output=True, text=True
    ).stdout


def _is_bare(repo: Path) -> bool:
    return (repo / "HEAD").is_file() and not (repo / ".git").exists()


def made_up_issues(repo: Path, commit: str | None, n: int, seed: int) -> list[str]:
    """`n` issue texts naming functions and classes that the repository defines."""
    where = [commit] if commit else []
    out = _git(repo, "grep", "-h", "-o", "-E", r"^(def|class) [A-Za-z_][A-Za-z0-9_]{3,}", *where)
    names = sorted({line.split()[1] for line in out.splitlines() if line.split()[1][0] != "_"})
    rng = random.Random(seed)
    picked = rng.sample(names, min(n, len(names)))
    return [rng.choice(_PROBLEMS).format(name=name) for name in picked]


def swebench_issues(path: Path, repo_name: str) -> list[tuple[str, str]]:
    """(problem statement, base commit) of one repository's instances."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [(r["problem_statement"], r["base_commit"]) for r in rows if r["repo"] == repo_name]


def start_server(args: argparse.Namespace, repo: Path) -> tuple[subprocess.Popen[str], str]:
    exe = args.server or Path(sys.executable).with_name("codegrep")
    argv = [str(exe), "serve", "--port", "0", "--allow-root", str(repo)]
    argv += ["--max-concurrent", str(args.max_concurrent)]
    argv += ["--max-queue", str(args.max_queue if args.max_queue is not None else args.requests)]
    argv += ["--timeout", str(args.timeout)]
    argv += ["--calibration", str(args.calibration)] if args.calibration else ["--no-calibration"]
    log(f"starting: {' '.join(argv)}")
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"http://[^ ]+:(\d+)", line)
    if not match:
        proc.kill()
        raise SystemExit(f"the server did not start: {line}{proc.stderr.read()}")
    log(line.rstrip())
    stderr = proc.stderr

    def relay() -> None:  # keep the pipe drained; the server's warnings stay visible
        for text in stderr:
            sys.stderr.write(f"  server: {text}")

    threading.Thread(target=relay, daemon=True).start()
    return proc, f"http://127.0.0.1:{match.group(1)}"


def _pct(values: list[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def _shm_bytes(pid: int) -> int:
    """Bytes of the checkout folders of process `pid` in the sandbox's default workdir."""
    from worktree_sandbox._liveness import dir_bytes
    from worktree_sandbox.pool import default_workdir

    workdir = default_workdir()
    if not workdir.is_dir():
        return 0
    return sum(dir_bytes(p) for p in workdir.iterdir() if p.name.startswith(f"{pid}-"))


def _rss_bytes(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else 0


class Sampler:
    """Samples the server's RSS and checkout bytes every 0.1 s, in a thread, until stopped."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.rss_peak = self.shm_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.rss_peak = max(self.rss_peak, _rss_bytes(self.pid))
            self.shm_peak = max(self.shm_peak, _shm_bytes(self.pid))
            self._stop.wait(0.1)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def fire(
    url: str, bodies: list[dict[str, Any]], clients: int, timeout: float
) -> tuple[list[tuple[float, int, dict[str, Any]]], float, list[float]]:
    gate = asyncio.Semaphore(clients)
    done = 0
    health: list[float] = []
    health_errors = [0]  # /health asks whose connection dropped
    limits = httpx.Limits(max_connections=clients + 1, max_keepalive_connections=clients + 1)
    async with httpx.AsyncClient(timeout=timeout + 30, limits=limits) as client:
        finished = asyncio.Event()

        async def probe() -> None:  # is the server still answering while it searches?
            while not finished.is_set():
                t0 = time.perf_counter()
                try:
                    await client.get(f"{url}/health")
                    health.append(time.perf_counter() - t0)
                except httpx.TransportError:
                    health_errors[0] += 1
                await asyncio.sleep(0.1)

        async def one(body: dict[str, Any]) -> tuple[float, int, dict[str, Any]]:
            nonlocal done
            async with gate:
                t0 = time.perf_counter()
                try:
                    r = await client.post(f"{url}/localize", json=body)
                except httpx.TransportError as exc:  # the connection dropped: counted, not fatal
                    r = None
                    error = type(exc).__name__
                dt = time.perf_counter() - t0
            done += 1
            if done % max(1, len(bodies) // 8) == 0 or done == len(bodies):
                log(f"  {done}/{len(bodies)} answered")
            if r is None:
                return dt, 0, {"transport_error": error}
            try:
                return dt, r.status_code, r.json()
            except ValueError:
                return dt, r.status_code, {}

        started = time.perf_counter()
        prober = asyncio.ensure_future(probe())
        results = await asyncio.gather(*(one(b) for b in bodies))
        wall = time.perf_counter() - started
        finished.set()
        await prober
        if health_errors[0]:
            log(f"  /health: {health_errors[0]} connection(s) dropped")
        return list(results), wall, health


def phase_figures(
    results: list[tuple[float, int, dict[str, Any]]],
    wall: float,
    health: list[float],
    clients: int,
    sampler: Sampler,
) -> dict[str, Any]:
    latencies = sorted(dt for dt, _, _ in results)
    ok = [body for _, status, body in results if status == 200]
    return {
        "clients": clients,
        "requests": len(results),
        "statuses": dict(Counter(str(status) for _, status, _ in results)),
        "p50_s": round(_pct(latencies, 50), 3),
        "p90_s": round(_pct(latencies, 90), 3),
        "p99_s": round(_pct(latencies, 99), 3),
        "max_s": round(latencies[-1], 3),
        "throughput_rps": round(len(results) / wall, 2),
        "wall_s": round(wall, 2),
        "health_p50_s": round(_pct(sorted(health), 50), 4) if health else None,
        "health_p95_s": round(_pct(sorted(health), 95), 4) if health else None,
        "rss_peak_mb": round(sampler.rss_peak / 2**20, 1),
        "shm_peak_mb": round(sampler.shm_peak / 2**20, 2),
        "server_search_p50_s": round(
            statistics.median(b["latency_s"] - b["queue_s"] for b in ok), 3
        )
        if ok
        else None,
        "server_queue_p50_s": round(statistics.median(b["queue_s"] for b in ok), 3) if ok else None,
        "files_per_answer": round(statistics.mean(len(b["files"]) for b in ok), 2) if ok else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, default=CHECKOUT, help="default: this checkout")
    parser.add_argument("--commit", help="search at this commit (a bare repo: default HEAD)")
    parser.add_argument("--requests", type=int, default=32, help="per concurrency")
    parser.add_argument(
        "--clients", default="32", help="requests in flight at once; a list runs each: 1,4,16"
    )
    parser.add_argument("--server", type=Path, help="the codegrep to run (default: this one's)")
    parser.add_argument("--max-concurrent", type=int, default=2, help="the server's searches")
    parser.add_argument("--max-queue", type=int, help="the server's queue (default: --requests)")
    parser.add_argument("--timeout", type=float, default=120.0, help="the server's, per request")
    parser.add_argument("--calibration", type=Path, help="serve gated with this calibration")
    parser.add_argument("--issues", type=Path, help="a SWE-bench JSONL file of issues")
    parser.add_argument("--issue-repo", help="take --issues of this repository (owner/name)")
    parser.add_argument("--base-commits", action="store_true", help="each at its base commit")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", type=Path, default=Path("bench-out/serve_latency.json"))
    args = parser.parse_args()
    concurrency = [int(c) for c in str(args.clients).split(",")]
    total = args.requests * len(concurrency)

    repo = args.repo.resolve()
    commit = args.commit or (_git(repo, "rev-parse", "HEAD").strip() if _is_bare(repo) else None)
    if args.issues:
        if not args.issue_repo:
            parser.error("--issues needs --issue-repo")
        pairs = swebench_issues(args.issues, args.issue_repo)
        if not pairs:
            parser.error(f"no instance of {args.issue_repo} in {args.issues}")
        bodies = [
            {
                "repo": str(repo),
                "issue": text,
                "commit": base if args.base_commits else commit,
                "gate": bool(args.calibration),
            }
            for text, base in (pairs[i % len(pairs)] for i in range(total + 1))
        ]
    else:
        texts = made_up_issues(repo, commit, total + 1, args.seed)
        bodies = [
            {"repo": str(repo), "issue": texts[i % len(texts)], "commit": commit}
            for i in range(total + 1)
        ]
    where = f"{repo} at {commit[:12]}" if commit else f"{repo} (working tree)"
    if args.base_commits:
        where = f"{repo} at each issue's base commit"
    proc, url = start_server(args, repo)
    phases: list[dict[str, Any]] = []
    try:
        log(f"cold request on {where}")
        cold = asyncio.run(fire(url, bodies[:1], 1, args.timeout))
        cold_s, cold_status, cold_body = cold[0][0]
        if cold_status != 200:
            raise SystemExit(f"the cold request failed: {cold_status} {cold_body}")
        log(f"  cold: {cold_s:.2f} s")
        for i, clients in enumerate(concurrency):
            log(f"  {args.requests} requests, {clients} at once")
            chunk = bodies[1 + i * args.requests : 1 + (i + 1) * args.requests]
            with Sampler(proc.pid) as sampler:
                results, wall, health_s = asyncio.run(fire(url, chunk, clients, args.timeout))
            phases.append(phase_figures(results, wall, health_s, clients, sampler))
        health = httpx.get(f"{url}/health", timeout=10).json()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    figures: dict[str, Any] = {
        "repo": where,
        "server": str(args.server or "this checkout"),
        "files_in_tree": None,
        "server_max_concurrent": args.max_concurrent,
        "cold_s": round(cold_s, 3),
        "phases": phases,
        "health_after": health,
    }
    listing = ["ls-tree", "-r", "--name-only", commit] if commit else ["ls-files"]
    if not args.base_commits:
        figures["files_in_tree"] = len(_git(repo, *listing).splitlines())
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(figures, indent=2) + "\n")
    print(
        f"{where}: server {figures['server']}, --max-concurrent {args.max_concurrent}; "
        f"cold {figures['cold_s']} s"
    )
    for f in phases:
        print(
            f"  c={f['clients']}: {f['requests']} requests, statuses {f['statuses']}; "
            f"p50 {f['p50_s']} s, p99 {f['p99_s']} s, max {f['max_s']} s; "
            f"{f['throughput_rps']} req/s; /health p50 {f['health_p50_s']} s, p95 "
            f"{f['health_p95_s']} s; RSS peak {f['rss_peak_mb']} MB; checkouts peak "
            f"{f['shm_peak_mb']} MB; search p50 {f['server_search_p50_s']} s"
        )
    print(f"  /health after: {json.dumps(health)}\n  wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
