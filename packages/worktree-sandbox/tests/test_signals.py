"""SIGTERM and SIGHUP remove what a pool made: a real child process, killed by the signal.

`atexit` handlers do not run when a signal with the default action ends a process, so a pool's
checkouts (tmpfs: RAM) stayed behind until some later pool pruned them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

CHILD = textwrap.dedent(
    """
    import asyncio, signal, sys
    from worktree_sandbox import TreePool

    async def main(repo, workdir, own_handler):
        if own_handler == "own":  # a program with its own handler keeps it
            signal.signal(signal.SIGTERM, lambda *a: print("own handler", flush=True))
        async with TreePool(workdir=workdir) as pool, pool.tree_at(repo, "HEAD") as tree:
            print(await tree.wait_checkout(), flush=True)
            await asyncio.sleep(120)

    asyncio.run(main(*sys.argv[1:]))
    """
)


def _default_signals() -> None:
    # A runner started under `nohup` hands its children SIGHUP ignored, and the pool rightly
    # leaves an ignored signal alone: the child starts as a program normally does.
    for sig in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def _start(
    repo: Any, workdir: Path, handler: str = "default"
) -> tuple[subprocess.Popen[str], Path]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(repo.path), str(workdir), handler],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=_default_signals,
    )
    assert child.stdout is not None
    checkout = Path(child.stdout.readline().strip())
    assert (checkout / "README.md").is_file()  # the checkout is there while the child lives
    return child, checkout


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_removes_the_checkouts(repo: Any, workdir: Path, sig: int) -> None:
    child, checkout = _start(repo, workdir)
    child.send_signal(sig)
    assert child.wait(timeout=30) == -sig  # still ends as killed by the signal
    assert not checkout.exists()
    assert os.listdir(workdir) == []  # the pool's own folder went too


def test_a_handler_of_the_program_is_left_alone(repo: Any, workdir: Path) -> None:
    child, checkout = _start(repo, workdir, "own")
    try:
        child.send_signal(signal.SIGTERM)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "own handler"
        time.sleep(0.2)
        assert child.poll() is None
        assert checkout.exists()
    finally:
        child.kill()
        child.wait(timeout=30)
