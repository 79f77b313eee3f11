"""The processes of a stage's commands: the `Runner` seam, the real one, and the waits.

`SubprocessRunner` runs each command as a process of its own group (`start_new_session`), so
that a stop reaches every child, and appends its output to the stage's log; a background
command (a rollout or evaluation server) is a `Service`, polled until it answers over HTTP
(`urllib`). Not for: which commands run, or when (`train_launcher.launch`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Literal, Protocol

from codegrep_records.io import open_appending, parse_json

from train_launcher._plan_records import NodeCommand

__all__ = ["Runner", "Service", "SubprocessRunner"]


class Service(Protocol):
    """A background command that was started."""

    def ready(self) -> bool:
        """Whether it answers yet (one poll)."""

    def alive(self) -> bool:
        """Whether its process still runs."""

    def stop(self) -> None:
        """Stop it and wait for it to end."""


class Runner(Protocol):
    def run(self, command: NodeCommand, log: Path) -> int:
        """Run `command` to its end, output appended to `log`; its exit status."""

    def start(self, command: NodeCommand, log: Path) -> Service:
        """Start a background `command`, output appended to `log`."""


def _header(fh: IO[str], command: NodeCommand) -> None:
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    fh.write(f"\n==== {stamp} $ {command.shell()}\n")
    fh.flush()


def _group_alive(pgid: int) -> bool:
    """Whether any process of group `pgid` is left (a zombie counts until it is reaped)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_group(
    proc: subprocess.Popen[bytes],
    grace: float = 30.0,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """SIGTERM the process group (torchrun's workers, a server's own children), wait until no
    process of it is left, SIGKILL what still is after `grace`.

    The group, not the leader: a launcher (`swift deploy`) may exit on SIGTERM while the server
    it started shuts down slowly or not at all, and waiting on the leader alone left that server
    running, holding its port and its memory, after the stage had failed."""
    pgid = proc.pid  # started with start_new_session: the leader's pid is the group's id
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)

    def gone() -> bool:
        proc.poll()  # reap the leader, or its zombie keeps the group alive
        return not _group_alive(pgid)

    if _poll(gone, timeout=grace, every=0.2, sleep=sleep, clock=clock) == "done":
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    proc.wait()


def _http_ready(url: str, model: str | None, timeout: float = 5.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # our own URL
            if resp.status != 200:
                return False
            if model is None:
                return True
            body = parse_json((resp.read() or b"{}").decode("utf-8"))
    except (OSError, ValueError, urllib.error.URLError):  # UnicodeDecodeError is a ValueError
        return False
    data = body.get("data") if isinstance(body, dict) else None
    ids = [m.get("id") for m in data if isinstance(m, dict)] if isinstance(data, list) else []
    return model in ids


class _Process:
    def __init__(self, proc: subprocess.Popen[bytes], command: NodeCommand, fh: IO[str]) -> None:
        self.proc, self.command, self.fh = proc, command, fh

    def ready(self) -> bool:
        url = self.command.ready_url
        return url is None or _http_ready(url, self.command.ready_model)

    def alive(self) -> bool:
        self.proc.poll()
        return _group_alive(self.proc.pid)

    def stop(self) -> None:
        _kill_group(self.proc)
        self.fh.close()


class SubprocessRunner:
    """Runs commands as processes of their own group (so a stop reaches every child).

    Logs are appended to, never through a link planted at their name; with `within` (the
    run's output folder), a log folder that resolves outside it is refused."""

    def __init__(self, within: Path | None = None) -> None:
        self.within = within

    def _popen(self, command: NodeCommand, fh: IO[str]) -> subprocess.Popen[bytes]:
        _header(fh, command)
        return subprocess.Popen(
            list(command.argv),
            env={**os.environ, **command.env},
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def run(self, command: NodeCommand, log: Path) -> int:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open_appending(log, within=self.within) as fh:
            try:
                proc = self._popen(command, fh)
            except OSError as exc:
                fh.write(f"cannot start {command.argv[0]}: {exc}\n")
                return 127
            try:
                return proc.wait()
            except BaseException:  # KeyboardInterrupt: take the whole group down with us
                _kill_group(proc)
                raise

    def start(self, command: NodeCommand, log: Path) -> Service:
        log.parent.mkdir(parents=True, exist_ok=True)
        fh = open_appending(log, within=self.within)
        try:
            proc = self._popen(command, fh)
        except OSError:
            fh.close()
            raise
        return _Process(proc, command, fh)


def _poll(
    done: Callable[[], bool],
    *,
    timeout: float,
    every: float,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
    dead: Callable[[], bool] = lambda: False,
) -> Literal["done", "dead", "late"]:
    """Ask `done` every `every` seconds until it says yes, `dead` says the wait is over, or
    `timeout` has passed."""
    deadline = clock() + timeout
    while not done():
        if dead():
            return "dead"
        if clock() > deadline:
            return "late"
        sleep(every)
    return "done"


def _wait_ready(
    service: Service,
    command: NodeCommand,
    *,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> None:
    outcome = _poll(
        service.ready,
        timeout=command.ready_timeout,
        every=5.0,
        sleep=sleep,
        clock=clock,
        dead=lambda: not service.alive(),
    )
    if outcome == "dead":
        raise RuntimeError(f"{command.argv[0]} exited before it answered at {command.ready_url}")
    if outcome == "late":
        raise RuntimeError(f"{command.ready_url} did not answer within {command.ready_timeout:g} s")
