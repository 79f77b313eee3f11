"""What a pool made is removed when the process is told to stop (SIGTERM, SIGHUP), not only at a
normal exit.

A pool's own folder of checkouts (on tmpfs: RAM) is removed by `close`, and by an `atexit`
handler when nobody closed it; but Python runs neither on a signal whose action is the default:
`timeout 5 codegrep localize --commit ...` left the checkout in `/dev/shm` until some later pool
pruned it. So the first pool that makes a folder installs a handler for SIGTERM and SIGHUP,
where their action is still the default (a program that set its own, such as a server that
shuts down gracefully and closes its pool, keeps it). The handler removes the folders this
process's pools made and still hold (marked folders only, as every removal here), then restores
the default action and sends the signal again, so the process still ends as killed by it (exit
status 143 for SIGTERM) and whoever sent it sees what it expects. Not for: SIGKILL (nothing
runs; the next pool or `gc` removes what a dead process left) or SIGINT (KeyboardInterrupt
already unwinds through `close`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path
from types import FrameType

from worktree_sandbox._owned import remove_owned

__all__ = ["SIGNALS", "forget_on_signal", "remove_on_signal"]

SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_LOCK = threading.Lock()
_HELD: dict[Path, int] = {}  # folder -> pid of the process that made it
_INSTALLED: set[int] = set()  # pids that installed the handler (a forked child installs anew)


def remove_on_signal(folder: Path) -> None:
    """Remove `folder` (a marked folder of this process) if SIGTERM or SIGHUP ends it."""
    with _LOCK:
        _HELD[folder] = os.getpid()
    _install()


def forget_on_signal(folder: Path) -> None:
    """`folder` is removed already (or no longer this process's to remove)."""
    with _LOCK:
        _HELD.pop(folder, None)


def _install() -> None:
    pid = os.getpid()
    if pid in _INSTALLED or threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be set from the main thread
    _INSTALLED.add(pid)
    for sig in SIGNALS:
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(sig) is signal.SIG_DFL:
                signal.signal(sig, _on_signal)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    pid = os.getpid()
    with contextlib.suppress(Exception):
        # Not under _LOCK: the signal may have come while this thread held it.
        held = [folder for folder, owner in list(_HELD.items()) if owner == pid]
        for _ in range(3):  # a checkout still being written may gain a file meanwhile
            for folder in held:
                with contextlib.suppress(OSError):
                    remove_owned(folder)
            held = [folder for folder in held if folder.exists()]
            if not held:
                break
            time.sleep(0.02)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(pid, signum)
