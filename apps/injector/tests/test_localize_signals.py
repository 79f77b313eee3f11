"""`timeout` (SIGTERM) or a closed terminal (SIGHUP) during `codegrep localize --commit` leaves
no checkout behind: a real `codegrep` process, killed while its on-demand checkout exists.

The policy here greps a pattern git grep's PCRE2 refuses (`(?u)\\w+`), so the tree makes its
checkout on demand (in the default workdir, tmpfs), then says it is ready and waits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from worktree_sandbox.pool import default_workdir

POLICY = textwrap.dedent(
    """
    import asyncio, json, os
    from pathlib import Path
    from codegrep_model import PolicyReply, ToolCall

    class GrepThenWait:
        name = "grep-then-wait"

        async def reply(self, request):
            if not (request.history or request.observations):
                args = json.dumps({"pattern": r"(?u)\\w+"})
                call = ToolCall(id="c0", name="grep", arguments=args)
                return PolicyReply(content=None, tool_calls=(call,))
            Path(os.environ["READY_FILE"]).write_text("ready")
            await asyncio.sleep(600)
            return PolicyReply(content=json.dumps({"files": []}))
    """
)


def _default_signals() -> None:
    # A runner started under `nohup` hands its children SIGHUP ignored, and the pool rightly
    # leaves an ignored signal alone: the child starts as a program normally does.
    for sig in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def _own_folders(pid: int) -> list[Path]:
    """The pool folders process `pid` made in the default workdir (named by its owner tag)."""
    work = default_workdir()
    return sorted(work.glob(f"{pid}-*")) if work.is_dir() else []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_localize_leaves_no_checkout(
    tmp_path: Path, make_repo: Callable[[Path, dict[str, str]], Path], sig: int
) -> None:
    repo = make_repo(tmp_path / "repo", {"src/app.py": "def main():\n    return 1\n"})
    (tmp_path / "probe_policy.py").write_text(POLICY)
    ready = tmp_path / "ready"
    issue = tmp_path / "issue.md"
    issue.write_text("main returns 1\n")
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "READY_FILE": str(ready)}
    exe = Path(sys.executable).parent / "codegrep"
    child = subprocess.Popen(
        [str(exe), "localize", "--repo", str(repo), "--commit", "HEAD", "--issue", str(issue),
         "--policy", "probe_policy:GrepThenWait"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_default_signals,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the policy never got its answer"
            time.sleep(0.05)
        folders = _own_folders(child.pid)
        assert folders, "no checkout was made: the test would prove nothing"
        assert any(p.name == "tree" for f in folders for p in f.rglob("tree"))
        child.send_signal(sig)
        assert child.wait(timeout=30) == -sig
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert _own_folders(child.pid) == []
