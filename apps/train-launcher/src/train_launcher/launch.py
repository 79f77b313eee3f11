"""`launch`: run a plan's stages in order, skipping those whose outputs are already valid.

For each stage (in `STAGE_ORDER`, as selected by `only` / `from_stage`) the plan is built again,
so that a stage sees what the ones before it wrote (the SFT checkpoint, the GRPO checkpoints).
Then:

- outputs valid (`stage_validity`) -> skipped;
- a stage it reads (`requires`) not valid -> on node 0 a `PlanError` (run the earlier stages);
  on another node the launcher waits for node 0 to make it, up to `wait_timeout` seconds;
- else its commands run one after another through the `Runner`, each appending to
  `<output_dir>/logs/<stage>.log`; a background command (a rollout or evaluation server) is
  started, polled until it answers, and stopped when the stage's other commands are done;
- a command that exits non-zero, or outputs still invalid after the stage, -> `StageFailed`.

GRPO resumes by itself: its plan adds `--resume_from_checkpoint` with the last complete
`checkpoint-N` of an unfinished run, so a killed launch re-launched continues there. One launch
at a time holds `<output_dir>/.launch.lock`; `<output_dir>/launch-state.json` records each
stage's outcome and `<output_dir>/stamps/<stage>.json` the commands that made its outputs.

The `Runner` is the seam tests use: `SubprocessRunner` runs real processes; a fake records the
argv and writes outputs. The library never prints: progress goes to `on_event`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal, Protocol

from codegrep_records import (
    RecordError,
    open_appending,
    parse_json,
    read_json_object,
    write_atomically,
)

from train_launcher.config import RunConfig
from train_launcher.errors import PlanError, StageFailed
from train_launcher.node import NodeInfo
from train_launcher.outputs import Layout
from train_launcher.plan import (
    NodeCommand,
    NodePlan,
    Stage,
    base_stage,
    build_plan,
    select_stages,
    stage_validity,
)
from train_launcher.swift_check import TRAIN_STAGES, SwiftCheck

__all__ = [
    "Event",
    "LaunchResult",
    "Runner",
    "Service",
    "SubprocessRunner",
    "launch",
]

EventKind = Literal[
    "start",
    "done",
    "skip",
    "fail",
    "wait",
    "would-run",
    "would-skip",
    "server",
    "elsewhere",
    "check",
]

#: `check([stage])`: the trainer's own verdict on a training stage (`swift_check.check_stages`).
StageCheckFn = Callable[[Sequence[Stage]], SwiftCheck]


@dataclass(frozen=True)
class Event:
    """One line of progress: which stage, what happened, and the details."""

    kind: EventKind
    stage: str
    index: int
    total: int
    message: str = ""
    seconds: float | None = None
    commands: tuple[NodeCommand, ...] = ()


@dataclass
class LaunchResult:
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    plan: NodePlan | None = None


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


# --- the real runner ------------------------------------------------------------------------


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
    deadline = clock() + grace
    while clock() < deadline:
        proc.poll()  # reap the leader, or its zombie keeps the group alive
        if not _group_alive(pgid):
            return
        sleep(0.2)
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


# --- the launch -----------------------------------------------------------------------------


@contextlib.contextmanager
def _lock(path: Path, within: Path | None = None) -> Iterator[None]:
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        opened = open_appending(path, within=within)
    except OSError as exc:
        raise PlanError(f"cannot open the launch lock {path}: {exc.strerror or exc}") from None
    with opened as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise PlanError(f"another launch holds {path}: one launch per output folder") from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _fingerprint(stage: Stage) -> str:
    """The commands of a stage, less what changes on a resume (the checkpoint it resumes
    from, and the SFT adapter a resumed run takes from that checkpoint instead)."""
    parts = []
    for c in stage.commands:
        argv = list(c.argv)
        for flag in ("--resume_from_checkpoint", "--adapters"):
            if flag in argv:
                i = argv.index(flag)
                del argv[i : i + 2]
        parts.append(json.dumps([argv, sorted(c.env.items())]))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _our_json(path: Path) -> dict[str, Any] | None:
    """A JSON object the launcher wrote (state, stamp), or None when there is none yet.

    One that is there but unreadable (cut short, too deep, `1e999`, a list, a link) is a
    `PlanError` naming it: what the launch would do next depends on it, so it stops.
    """
    if not os.path.lexists(path):
        return None
    try:
        return read_json_object(path, refuse_links=True)
    except RecordError as exc:
        raise PlanError(f"{exc} (remove it to start its record afresh)") from None


#: The layout of `launch-state.json` and of each stamp; one without `schema_version` (written
#: before it) is version 1, and one of a later version stops the launch (this launcher cannot
#: tell what it recorded).
LAUNCH_RECORD_SCHEMA_VERSION = 1


def _versioned(path: Path, data: dict[str, Any] | None) -> dict[str, Any] | None:
    """`data` as this launcher reads it; `PlanError` for a record of a later layout."""
    if data is None:
        return None
    version = data.get("schema_version", 1)
    if type(version) is not int or not 1 <= version <= LAUNCH_RECORD_SCHEMA_VERSION:
        raise PlanError(
            f"{path}: schema_version {version!r}; this launcher reads "
            f"{LAUNCH_RECORD_SCHEMA_VERSION} (remove it to start its record afresh)"
        )
    return data


class _State:
    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.data = _versioned(layout.state, _our_json(layout.state)) or {}
        self.data["schema_version"] = LAUNCH_RECORD_SCHEMA_VERSION
        stages = self.data.setdefault("stages", {})
        if not isinstance(stages, dict) or not all(isinstance(v, dict) for v in stages.values()):
            raise PlanError(f"{layout.state}: stages is not an object of objects")

    def record(self, stage: str, **fields: object) -> None:
        self.data["stages"].setdefault(stage, {}).update(fields)
        self.layout.root.mkdir(parents=True, exist_ok=True)
        write_atomically(
            self.layout.state,
            json.dumps(self.data, indent=2, default=str) + "\n",
            within=self.layout.root,
        )


def _stamp_path(layout: Layout, stage: Stage) -> Path:
    return layout.stamps / f"{stage.name.replace(':', '_')}.json"


def _stale(layout: Layout, stage: Stage) -> bool:
    path = _stamp_path(layout, stage)
    old = _versioned(path, _our_json(path))
    if old is None:
        return False
    return bool(old.get("fingerprint") != _fingerprint(stage))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _wait_ready(
    service: Service,
    command: NodeCommand,
    *,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> None:
    deadline = clock() + command.ready_timeout
    while not service.ready():
        if not service.alive():
            raise RuntimeError(
                f"{command.argv[0]} exited before it answered at {command.ready_url}"
            )
        if clock() > deadline:
            raise RuntimeError(
                f"{command.ready_url} did not answer within {command.ready_timeout:g} s"
            )
        sleep(5.0)


def _run_stage(
    stage: Stage,
    *,
    node_rank: int,
    layout: Layout,
    runner: Runner,
    on_event: Callable[[Event], None],
    index: int,
    total: int,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> None:
    log = layout.logs / f"{stage.name.replace(':', '_')}.log"
    services: list[Service] = []
    try:
        for command in stage.commands:
            if command.node_rank != node_rank:
                continue
            if command.background:
                services.append(runner.start(command, log))
                on_event(
                    Event("server", stage.name, index, total, f"waiting for {command.ready_url}")
                )
                try:
                    _wait_ready(services[-1], command, sleep=sleep, clock=clock)
                except RuntimeError as exc:
                    with open_appending(log, within=layout.root) as fh:
                        fh.write(f"launcher: {exc}\n")
                    raise StageFailed(stage.name, 1, log) from exc
                continue
            rc = runner.run(command, log)
            if rc != 0:
                raise StageFailed(stage.name, rc, log)
    finally:
        for service in reversed(services):
            service.stop()


def _wait_for(
    requirement: Stage,
    config: RunConfig,
    *,
    timeout: float,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> bool:
    deadline = clock() + timeout
    while not stage_validity(requirement, config).ok:
        if clock() > deadline:
            return False
        sleep(30.0)
    return True


def launch(
    config: RunConfig,
    config_file: Path,
    *,
    node: NodeInfo,
    runner: Runner | None = None,
    node_rank: int = 0,
    only: Sequence[str] = (),
    from_stage: str | None = None,
    dry_run: bool = False,
    force: bool = False,
    wait_timeout: float = 24 * 3600.0,
    on_event: Callable[[Event], None] = lambda event: None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    check: StageCheckFn | None = None,
) -> LaunchResult:
    """Run the selected stages in order (see the module docstring); what ran and was skipped.

    Raises `PlanError` (bad selection, missing inputs, errors found by the checks unless
    `force`) before anything runs, and `StageFailed` when a stage fails. With `check`
    (`codegrep-train launch` passes `swift_check.check_stages`), a training stage (`sft`,
    `grpo`) about to start is first judged by it: a stage it refuses is not started
    (`PlanError`, unless `force`); one it cannot judge starts, with a `check` event saying so.
    """
    layout = Layout(config.output_dir)
    plan = build_plan(config, config_file, node=node, node_rank=node_rank)
    every = plan if node_rank == 0 else build_plan(config, config_file, node=node, node_rank=0)
    chosen = select_stages(every, only=only, from_stage=from_stage)
    if plan.errors and not force and not dry_run:
        raise PlanError(
            "the checks found errors (see `codegrep-train plan`): "
            + "; ".join(f.message for f in plan.errors)
            + " (--force runs anyway)"
        )
    result = LaunchResult(plan=plan)
    total = len(chosen)
    runner = runner or SubprocessRunner(within=layout.root)
    with contextlib.ExitStack() as stack:
        if not dry_run:
            layout.root.mkdir(parents=True, exist_ok=True)
            stack.enter_context(_lock(layout.lock, layout.root))
            write_atomically(
                layout.plan_file, plan.model_dump_json(indent=2) + "\n", within=layout.root
            )
        state = None if dry_run else _State(layout)
        for index, name in enumerate(chosen, start=1):
            plan = build_plan(config, config_file, node=node, node_rank=node_rank)
            # node 0's plan has every stage: the ones another node waits for are there
            every = (
                plan if node_rank == 0 else build_plan(config, config_file, node=node, node_rank=0)
            )
            result.plan = plan
            stages = [s for s in plan.stages if base_stage(s.name) == name]
            if not stages:
                on_event(Event("elsewhere", name, index, total, f"runs on node 0, not {node_rank}"))
                continue
            for stage in stages:
                _one_stage(
                    stage,
                    plan=every,
                    config=config,
                    layout=layout,
                    runner=runner,
                    state=state,
                    result=result,
                    node_rank=node_rank,
                    dry_run=dry_run,
                    wait_timeout=wait_timeout,
                    on_event=on_event,
                    index=index,
                    total=total,
                    sleep=sleep,
                    clock=clock,
                    check=check,
                    force=force,
                )
    return result


def _one_stage(
    stage: Stage,
    *,
    plan: NodePlan,
    config: RunConfig,
    layout: Layout,
    runner: Runner,
    state: _State | None,
    result: LaunchResult,
    node_rank: int,
    dry_run: bool,
    wait_timeout: float,
    on_event: Callable[[Event], None],
    index: int,
    total: int,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
    check: StageCheckFn | None = None,
    force: bool = False,
) -> None:
    mine = tuple(c for c in stage.commands if c.node_rank == node_rank)
    validity = stage_validity(stage, config)
    if validity.ok:
        note = validity.reason
        if _stale(layout, stage):
            note += "; NOTE: made by other commands than this config's (delete them to redo)"
        kind: EventKind = "would-skip" if dry_run else "skip"
        on_event(Event(kind, stage.name, index, total, note, commands=mine))
        result.skipped.append(stage.name)
        return
    if dry_run:
        why = validity.reason
        if stage.resume_from is not None:
            why += f"; resumes from {stage.resume_from}"
        on_event(Event("would-run", stage.name, index, total, why, commands=mine))
        result.ran.append(stage.name)
        return
    assert state is not None
    for required in stage.requires:
        req = plan.stage(required)
        if stage_validity(req, config).ok:
            continue
        if node_rank == 0:
            raise PlanError(
                f"stage {stage.name} reads the outputs of {required}, which are not there or "
                f"not valid ({stage_validity(req, config).reason}): run {required} first"
            )
        on_event(Event("wait", stage.name, index, total, f"waiting for node 0's {required}"))
        if not _wait_for(req, config, timeout=wait_timeout, sleep=sleep, clock=clock):
            raise PlanError(f"{required} was not ready within {wait_timeout:g} s")
    if stage.late:
        raise PlanError(f"stage {stage.name} cannot run yet: it needs {', '.join(stage.late)}")
    if check is not None and stage.name in TRAIN_STAGES:
        verdict = check([stage])
        if verdict.status == "failed" and not force:
            raise PlanError(
                f"stage {stage.name} not started: the trainer's own check refused its command "
                "line: " + "; ".join(verdict.problems) + " (--force runs anyway)"
            )
        said = verdict.reason if verdict.status == "cannot" else verdict.status
        on_event(Event("check", stage.name, index, total, said))
    message = validity.reason
    if stage.resume_from is not None:
        message = f"resuming from {stage.resume_from}"
    on_event(Event("start", stage.name, index, total, message, commands=mine))
    started = clock()
    state.record(stage.name, status="running", started=_now())
    try:
        _run_stage(
            stage,
            node_rank=node_rank,
            layout=layout,
            runner=runner,
            on_event=on_event,
            index=index,
            total=total,
            sleep=sleep,
            clock=clock,
        )
    except StageFailed as exc:
        state.record(stage.name, status="failed", returncode=exc.returncode, finished=_now())
        on_event(Event("fail", stage.name, index, total, str(exc), clock() - started))
        raise
    except BaseException:
        state.record(stage.name, status="interrupted", finished=_now())
        raise
    seconds = clock() - started
    after = stage_validity(stage, config)
    if not after.ok and node_rank == 0:
        state.record(stage.name, status="failed", finished=_now(), reason=after.reason)
        log = layout.logs / f"{stage.name.replace(':', '_')}.log"
        on_event(
            Event("fail", stage.name, index, total, f"outputs not valid: {after.reason}", seconds)
        )
        raise StageFailed(stage.name, 0, log, reason=f"its outputs are not valid: {after.reason}")
    state.record(stage.name, status="done", finished=_now(), seconds=round(seconds, 1))
    stamp = _stamp_path(layout, stage)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(
        stamp,
        json.dumps(
            {
                "schema_version": LAUNCH_RECORD_SCHEMA_VERSION,
                "fingerprint": _fingerprint(stage),
                "finished": _now(),
                "commands": [c.shell() for c in stage.commands],
            },
            indent=2,
        )
        + "\n",
        within=layout.root,
    )
    on_event(Event("done", stage.name, index, total, after.reason, seconds))
    result.ran.append(stage.name)
