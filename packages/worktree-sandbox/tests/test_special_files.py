"""FIFOs, sockets and device files where git or the layout check reads: refused before anything
opens them, never waited on. A call that would wait is run in a thread with a time limit; the
FIFO is then given a writer that leaves, so that nothing of the test stays blocked."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from worktree_sandbox import TreePool, repository_locations
from worktree_sandbox import _git as sandbox_git
from worktree_sandbox.errors import RepositoryLayoutError


def _within(seconds: float, work: Callable[[], Any], fifos: list[Path]) -> Any:
    """`work()`'s result or exception, failing the test when it takes over `seconds`."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = work()
        except BaseException as exc:  # handed to the test below
            out["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    start = time.monotonic()
    worker.start()
    worker.join(seconds)
    waited = time.monotonic() - start
    if worker.is_alive():
        for fifo in fifos:  # let it go: a writer comes and leaves
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(30)
        pytest.fail(f"still waiting after {waited:.1f} s")
    if "error" in out:
        raise out["error"]
    return out.get("value")


def _replace_with_fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    os.mkfifo(path)
    return path


async def _open_head(repo: Path) -> str:
    async with TreePool(materialize="never") as pool, pool.tree_at(repo, "HEAD") as tree:
        return tree.commit


@pytest.mark.parametrize(
    "place",
    ["objects/info/alternates", "config", "packed-refs", "info/grafts", "shallow", "HEAD"],
)
def test_a_fifo_in_the_git_dir_is_refused_at_once(repo: Any, place: str) -> None:
    fifo = _replace_with_fifo(repo.path / ".git" / place)
    with pytest.raises(RepositoryLayoutError, match="FIFO"):
        _within(10, lambda: repository_locations(repo.path), [fifo])
    with pytest.raises(RepositoryLayoutError, match="FIFO"):
        _within(10, lambda: asyncio.run(_open_head(repo.path)), [fifo])


def test_links_to_a_fifo_or_a_device_are_refused(repo: Any, tmp_path: Path) -> None:
    fifo = _replace_with_fifo(tmp_path / "fifo")
    link = repo.path / ".git" / "info" / "exclude"
    link.unlink(missing_ok=True)
    link.symlink_to(fifo)
    with pytest.raises(RepositoryLayoutError, match="FIFO"):
        _within(10, lambda: repository_locations(repo.path), [fifo])
    link.unlink()
    link.symlink_to("/dev/zero")
    with pytest.raises(RepositoryLayoutError, match="device"):
        _within(10, lambda: repository_locations(repo.path), [])


def test_a_socket_in_the_git_dir_is_refused(repo: Any, tmp_path: Path) -> None:
    # AF_UNIX paths are short: bound in a short folder, then moved into the git dir
    where = Path(os.environ.get("TMPDIR", "/tmp")) / f"s{os.getpid()}"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(where))
        try:
            os.rename(where, repo.path / ".git" / "objects" / "sock")
        except OSError:
            where.unlink()
            raise
        with pytest.raises(RepositoryLayoutError, match="socket"):
            repository_locations(repo.path)


def test_a_config_include_naming_a_fifo_stops_git_from_running(
    repo: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # outside the git dir, where no walk looks: git itself opens it when it reads the config
    fifo = _replace_with_fifo(tmp_path / "included")
    with (repo.path / ".git" / "config").open("a") as fh:
        fh.write(f"[include]\n\tpath = {fifo}\n")
    monkeypatch.setattr(sandbox_git, "_CONFIG_LIST_TIMEOUT_S", 1.0)
    with pytest.raises(RepositoryLayoutError, match="config"):
        _within(20, lambda: asyncio.run(_open_head(repo.path)), [fifo])
    # and the refusal is remembered: asked again, at once
    start = time.monotonic()
    with pytest.raises(RepositoryLayoutError, match="config"):
        sandbox_git.git_env(repo.path / ".git")
    assert time.monotonic() - start < 0.5


def test_a_fifo_gitignore_in_a_folder_holds_no_thread(repo: Any) -> None:
    # The work tree is the user's folder: git opens every .gitignore of the folders it walks.
    fifo = _replace_with_fifo(repo.path / "src" / ".gitignore")
    from worktree_sandbox import DirectoryTree, SandboxLimits, ToolErrorKind
    from worktree_sandbox._runtime import Runtime

    # more trees than asyncio's default pool has threads (min(32, cores + 4))
    count = min(32, (os.cpu_count() or 1) + 4) + 1

    async def main() -> tuple[list[Any], float]:
        runtime = Runtime(SandboxLimits(timeout_s=1.0))
        trees = [DirectoryTree(repo.path, runtime) for _ in range(count)]
        results = await asyncio.gather(*(t.call("glob", {"pattern": "*.py"}) for t in trees))
        start = time.perf_counter()
        await asyncio.to_thread(lambda: None)  # a thread is free for other work
        return results, time.perf_counter() - start

    results, waited = _within(30, lambda: asyncio.run(main()), [fifo])
    assert {r.error for r in results} == {ToolErrorKind.TIMEOUT}
    assert waited < 1.0, waited
