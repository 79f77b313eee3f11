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

The processes (the `Runner` seam, `SubprocessRunner`, a server's readiness) are
`train_launcher._processes`'s.

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
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from codegrep_records import RecordError
from codegrep_records.io import open_appending, read_json_object, write_atomically

from train_launcher._processes import Runner, Service, SubprocessRunner, _poll, _wait_ready
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


@dataclass
class _Launch:
    """One launch: its settings, its records and where it says what happens."""

    config: RunConfig
    layout: Layout
    runner: Runner
    state: _State | None  # None: a dry run
    result: LaunchResult
    node_rank: int
    force: bool
    wait_timeout: float
    on_event: Callable[[Event], None]
    sleep: Callable[[float], None]
    clock: Callable[[], float]
    check: StageCheckFn | None
    total: int

    def say(
        self,
        kind: EventKind,
        stage: str,
        index: int,
        message: str = "",
        seconds: float | None = None,
        commands: tuple[NodeCommand, ...] = (),
    ) -> None:
        self.on_event(Event(kind, stage, index, self.total, message, seconds, commands))


def _run_stage(run: _Launch, stage: Stage, index: int) -> None:
    log = run.layout.logs / f"{stage.name.replace(':', '_')}.log"
    services: list[Service] = []
    try:
        for command in stage.commands:
            if command.node_rank != run.node_rank:
                continue
            if command.background:
                services.append(run.runner.start(command, log))
                run.say("server", stage.name, index, f"waiting for {command.ready_url}")
                try:
                    _wait_ready(services[-1], command, sleep=run.sleep, clock=run.clock)
                except RuntimeError as exc:
                    with open_appending(log, within=run.layout.root) as fh:
                        fh.write(f"launcher: {exc}\n")
                    raise StageFailed(stage.name, 1, log) from exc
                continue
            rc = run.runner.run(command, log)
            if rc != 0:
                raise StageFailed(stage.name, rc, log)
    finally:
        for service in reversed(services):
            service.stop()


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

    def plans() -> tuple[NodePlan, NodePlan]:
        """This node's plan, and node 0's, which has every stage (those another node waits
        for among them)."""
        plan = build_plan(config, config_file, node=node, node_rank=node_rank)
        every = plan if node_rank == 0 else build_plan(config, config_file, node=node, node_rank=0)
        return plan, every

    plan, every = plans()
    chosen = select_stages(every, only=only, from_stage=from_stage)
    if plan.errors and not force and not dry_run:
        raise PlanError(
            "the checks found errors (see `codegrep-train plan`): "
            + "; ".join(f.message for f in plan.errors)
            + " (--force runs anyway)"
        )
    result = LaunchResult(plan=plan)
    with contextlib.ExitStack() as stack:
        if not dry_run:
            layout.root.mkdir(parents=True, exist_ok=True)
            stack.enter_context(_lock(layout.lock, layout.root))
            write_atomically(
                layout.plan_file, plan.model_dump_json(indent=2) + "\n", within=layout.root
            )
        run = _Launch(
            config=config,
            layout=layout,
            runner=runner or SubprocessRunner(within=layout.root),
            state=None if dry_run else _State(layout),
            result=result,
            node_rank=node_rank,
            force=force,
            wait_timeout=wait_timeout,
            on_event=on_event,
            sleep=sleep,
            clock=clock,
            check=check,
            total=len(chosen),
        )
        for index, name in enumerate(chosen, start=1):
            plan, every = plans()  # again: a stage sees what the ones before it wrote
            result.plan = plan
            stages = [s for s in plan.stages if base_stage(s.name) == name]
            if not stages:
                run.say("elsewhere", name, index, f"runs on node 0, not {node_rank}")
                continue
            for stage in stages:
                _one_stage(run, stage, every, index)
    return result


def _wait_for(requirement: Stage, run: _Launch) -> bool:
    """Whether node 0 made `requirement`'s outputs within the wait (polled every 30 s)."""
    made = _poll(
        lambda: stage_validity(requirement, run.config).ok,
        timeout=run.wait_timeout,
        every=30.0,
        sleep=run.sleep,
        clock=run.clock,
    )
    return made == "done"


def _one_stage(run: _Launch, stage: Stage, plan: NodePlan, index: int) -> None:
    config, layout, node_rank = run.config, run.layout, run.node_rank
    mine = tuple(c for c in stage.commands if c.node_rank == node_rank)
    validity = stage_validity(stage, config)
    if validity.ok:
        note = validity.reason
        if _stale(layout, stage):
            note += "; NOTE: made by other commands than this config's (delete them to redo)"
        kind: EventKind = "would-skip" if run.state is None else "skip"
        run.say(kind, stage.name, index, note, commands=mine)
        run.result.skipped.append(stage.name)
        return
    state = run.state
    if state is None:  # a dry run
        why = validity.reason
        if stage.resume_from is not None:
            why += f"; resumes from {stage.resume_from}"
        run.say("would-run", stage.name, index, why, commands=mine)
        run.result.ran.append(stage.name)
        return
    for required in stage.requires:
        req = plan.stage(required)
        if stage_validity(req, config).ok:
            continue
        if node_rank == 0:
            raise PlanError(
                f"stage {stage.name} reads the outputs of {required}, which are not there or "
                f"not valid ({stage_validity(req, config).reason}): run {required} first"
            )
        run.say("wait", stage.name, index, f"waiting for node 0's {required}")
        if not _wait_for(req, run):
            raise PlanError(f"{required} was not ready within {run.wait_timeout:g} s")
    if stage.late:
        raise PlanError(f"stage {stage.name} cannot run yet: it needs {', '.join(stage.late)}")
    if run.check is not None and stage.name in TRAIN_STAGES:
        verdict = run.check([stage])
        if verdict.status == "failed" and not run.force:
            raise PlanError(
                f"stage {stage.name} not started: the trainer's own check refused its command "
                "line: " + "; ".join(verdict.problems) + " (--force runs anyway)"
            )
        said = verdict.reason if verdict.status == "cannot" else verdict.status
        run.say("check", stage.name, index, said)
    message = validity.reason
    if stage.resume_from is not None:
        message = f"resuming from {stage.resume_from}"
    run.say("start", stage.name, index, message, commands=mine)
    started = run.clock()
    state.record(stage.name, status="running", started=_now())
    try:
        _run_stage(run, stage, index)
    except StageFailed as exc:
        state.record(stage.name, status="failed", returncode=exc.returncode, finished=_now())
        run.say("fail", stage.name, index, str(exc), run.clock() - started)
        raise
    except BaseException:
        state.record(stage.name, status="interrupted", finished=_now())
        raise
    seconds = run.clock() - started
    after = stage_validity(stage, config)
    if not after.ok and node_rank == 0:
        state.record(stage.name, status="failed", finished=_now(), reason=after.reason)
        log = layout.logs / f"{stage.name.replace(':', '_')}.log"
        run.say("fail", stage.name, index, f"outputs not valid: {after.reason}", seconds)
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
    run.say("done", stage.name, index, after.reason, seconds)
    run.result.ran.append(stage.name)
