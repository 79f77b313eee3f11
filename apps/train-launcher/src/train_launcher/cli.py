"""The `codegrep-train` command: `plan`, `launch` (and `monitor`, when its module is there).

The toolkit's flag convention: `--dry-run` (say what would run, run nothing), `--timeout`
(seconds), `--version`. Exit 0 done; 1 a stage failed (its log named); 2 bad input (a config
that does not validate, named by file, line and field; a stage name this run does not have;
errors found by the checks before anything runs). Errors are `error: ...` lines on stderr.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from codegrep_cli import EXIT_FAILED, dry_run_option, fail, timeout_option, version_option

from train_launcher.config import RunConfig, load_config
from train_launcher.errors import ConfigError, PlanError, StageFailed
from train_launcher.estimate import Estimates, Finding, duration
from train_launcher.launch import Event, launch
from train_launcher.node import NodeInfo, probe_node
from train_launcher.plan import NodeCommand, NodePlan, Stage, build_plan, stage_validity
from train_launcher.swift_check import SwiftCheck, check_stages

__all__ = ["app", "main"]

DIST = "train-launcher"

app = typer.Typer(
    no_args_is_help=True,
    help="CodeGrep training on a GPU node: labels -> datasets -> SFT/GRPO -> evaluation.\n\n"
    "Example: codegrep-train plan --config configs/paper-8xb200.yaml\n\n"
    "Exit codes: 0 done; 1 a stage failed; 2 bad input.",
)

ConfigOpt = Annotated[
    Path, typer.Option("--config", "-c", help="The run config (YAML).", show_default=False)
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Override a config field, KEY=VALUE with VALUE read as YAML (train.max_steps=10); "
        "repeatable.",
        show_default=False,
    ),
]


def _bad_input(*messages: str) -> NoReturn:
    """One `error:` line per message (a config can be wrong in several places), then exit 2."""
    *before, last = messages or ("bad input",)
    for m in before:
        fail(m)  # says the line; the last message's exit is the one raised
    raise fail(last)


@app.callback()
def _root(version: Annotated[bool, version_option(DIST, "train_launcher")] = False) -> None:
    """CodeGrep training on a GPU node: labels -> datasets -> SFT/GRPO -> evaluation.

    Example: codegrep-train launch --config configs/cpu-smoke.yaml --dry-run
    """


def _load(config: Path, overrides: list[str] | None) -> RunConfig:
    try:
        return load_config(config, overrides or ())
    except ConfigError as exc:
        _bad_input(*exc.lines())


def _node(config: RunConfig) -> NodeInfo:
    return probe_node([config.data.cache, config.output_dir, Path("/dev/shm")])


# --- printing ---------------------------------------------------------------------------------


def _wrapped(command: NodeCommand, indent: str = "    ") -> list[str]:
    """The command as shell lines: one variable of its environment per line, then the argv
    with one flag (and its values) per line, joined by backslashes."""
    import shlex

    chunks: list[list[str]] = [[f"{k}={shlex.quote(v)}"] for k, v in command.env.items()]
    chunks.append([])
    for i, token in enumerate(command.argv):
        is_flag = token.startswith("-") and not token.lstrip("-").replace(".", "").isdigit()
        if is_flag and i > 1 and chunks[-1]:
            chunks.append([])
        chunks[-1].append(shlex.quote(token))
    lines: list[str] = []
    for j, chunk in enumerate(chunks):
        tail = " \\" if j < len(chunks) - 1 else ""
        lines.append(f"{indent}{'$ ' if j == 0 else '    '}{' '.join(chunk)}{tail}")
    if command.background:
        ready = command.ready_url or "-"
        lines.append(
            f"{indent}  (in the background until the stage ends; ready when {ready} answers)"
        )
    return lines


def _stage_lines(stage: Stage, index: int, total: int, status: str) -> list[str]:
    out = [f"[{index}/{total}] {stage.name}: {stage.title}"]
    ranks = sorted({c.node_rank for c in stage.commands})
    for rank in ranks:
        if len(ranks) > 1 or rank != 0:
            out.append(f"  node {rank}:")
        for command in stage.commands:
            if command.node_rank == rank:
                out += _wrapped(command)
    out.append("  outputs: " + ", ".join(str(p) for p in stage.outputs))
    out.append(f"  valid when: {stage.check}")
    if stage.requires:
        out.append(f"  reads: {', '.join(stage.requires)}")
    if stage.late:
        out.append(f"  filled in at launch: {', '.join(stage.late)}")
    out.append(f"  now: {status}")
    return out


def _estimate_lines(est: Estimates) -> list[str]:
    out = ["estimates:"]
    m = est.model
    size = "unknown" if m.params_b is None else f"{m.params_b:g}B parameters"
    weights = "" if m.weights_gib is None else f", weights {m.weights_gib:g} GiB"
    lora = "" if m.lora_params_m is None else f", LoRA {m.lora_params_m:g}M parameters"
    out.append(f"  model: {size}{weights}{lora} ({m.source})")
    if est.disk is not None:
        d = est.disk
        if not d.repos:
            out.append(f"  clones: unknown ({d.note})")
        else:
            out.append(
                f"  clones: {len(d.repos)} repositories, {d.clones_gib:g} GiB "
                f"({d.clones_to_fetch_gib:g} GiB still to fetch); {d.trees} trees, up to "
                f"{d.trees_peak_gib:g} GiB of checkouts on tmpfs at once"
            )
        for r in d.repos[:12]:
            out.append(
                f"    {r.repo}: {r.instances} instances, {r.commits} commits, bare "
                f"{r.bare_mib:g} MiB ({r.how}), tree {r.tree_mib:g} MiB"
            )
        if len(d.repos) > 12:
            out.append(f"    ... and {len(d.repos) - 12} more repositories")
        out.append(
            f"  outputs: {d.checkpoints} checkpoint(s) x {d.checkpoint_gib:g} GiB, "
            f"about {d.outputs_gib:g} GiB in all"
        )
    if est.gpu is not None:
        g = est.gpu
        vllm = (
            ""
            if g.vllm_gib is None
            else f"; vLLM {g.vllm_gib:g} GiB for {g.vllm_need_gib:g} GiB of weights (+15%)"
        )
        evals = "" if g.eval_need_gib is None else f"; eval server {g.eval_need_gib:g} GiB"
        out.append(
            f"  gpu memory: {g.gpu_memory_gib:g} GiB per GPU ({g.memory_from}){vllm}; trainer "
            f"needs ~{g.trainer_need_gib:g} of {g.trainer_gib:g} GiB{evals}"
        )
        if g.trainer_parts_gib:
            parts = ", ".join(f"{k} {v:g}" for k, v in g.trainer_parts_gib.items())
            fits = (
                ""
                if g.fits_sequence_tokens is None
                else f"; sequences up to {g.fits_sequence_tokens} tokens fit"
            )
            out.append(f"    the update, GiB per GPU: {parts}{fits}")
            if g.validation_need_gib is not None:
                out.append(f"    validation's batch at max_length: ~{g.validation_need_gib:g} GiB")
            out.append(f"    rule: {g.rule}")
    if est.host is not None:
        h = est.host
        have = "" if h.memory_gib is None else f" of {h.memory_gib:g} GiB"
        parts = ", ".join(f"{k} {v:g}" for k, v in h.parts_gib.items())
        out.append(f"  host memory: ~{h.need_gib:g} GiB per node{have} ({h.memory_from}): {parts}")
    if est.time is not None:
        t = est.time
        out.append(
            f"  time: {t.seconds_per_step:g} s/step -> {duration(t.hours_at_max_steps * 3600)} at "
            f"max_steps, {duration(t.hours_at_paper_stop * 3600)} at the paper's stop (897/2000)"
        )
        out.append(f"    rule: {t.rule}")
        if t.by_construction:
            out.append("    (the paper's own 27 h / 897 steps: by construction, not a prediction)")
        out.append(
            f"  with evaluation: {duration(t.total_hours_at_max_steps * 3600)} at max_steps, "
            f"{duration(t.total_hours_at_paper_stop * 3600)} at the paper's stop"
        )
        if t.eval_rule:
            out.append(f"    evaluation: {t.eval_rule}")
    return out


def _finding_lines(findings: tuple[Finding, ...]) -> list[str]:
    if not findings:
        return ["findings: none"]
    order = {"error": 0, "warning": 1, "info": 2}
    out = ["findings:"]
    for f in sorted(findings, key=lambda f: order[f.level]):
        out.append(f"  {f.level:<7} {f.topic}: {f.message}")
    return out


def _status(stage: Stage, config: RunConfig) -> str:
    v = stage_validity(stage, config)
    if v.ok:
        return f"there and valid, would be skipped ({v.reason})"
    extra = f"; resumes from {stage.resume_from}" if stage.resume_from is not None else ""
    return f"to run ({v.reason}){extra}"


def _print_plan(plan: NodePlan, config: RunConfig) -> None:
    nodes = "every node's commands" if plan.node_rank is None else f"node {plan.node_rank}"
    lines = [
        f"run {plan.run}: {plan.config_file}",
        f"output: {plan.output_dir}",
        f"nodes: {plan.nodes} ({nodes}); plugin: {plan.plugin}",
        "",
    ]
    total = len(plan.stages)
    for i, stage in enumerate(plan.stages, start=1):
        lines += _stage_lines(stage, i, total, _status(stage, config))
        lines.append("")
    lines += _estimate_lines(plan.estimates)
    lines.append("")
    lines += _finding_lines(plan.findings)
    typer.echo("\n".join(lines))


# --- commands ---------------------------------------------------------------------------------


@app.command()
def plan(
    config: ConfigOpt,
    node_rank: Annotated[
        int | None,
        typer.Option(min=0, help="Only this node's commands (default: every node's)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Judge each training stage's command line with the installed ms-swift's own "
            "argument classes at the configured world size; exit 2 when it cannot (ms-swift "
            "not importable) or a rule is broken.",
        ),
    ] = False,
    overrides: SetOpt = None,
) -> None:
    """Print every stage's commands with their environment, the estimates and the checks.

    No stage is run; the trainer check runs ms-swift's argument code (the plugin imported) in
    the trainer's Python, writing only in a scratch folder of its own. Exits 2 when a
    check finds an error (a missing input, too few GPUs on this node, too little disk, a rule of
    ms-swift that a training stage's command line breaks), after printing the plan. Without
    --check, the trainer check runs when ms-swift is importable, and says so when it is not.

    Example: codegrep-train plan --config configs/paper-8xb200.yaml --check
    """
    cfg = _load(config, overrides)
    try:
        built = build_plan(cfg, config, node=_node(cfg), node_rank=node_rank)
    except PlanError as exc:
        _bad_input(str(exc))
    verdict = check_stages(cfg, built.stages)
    if as_json:
        data: dict[str, Any] = built.model_dump(mode="json")
        data["status"] = {
            s.name: {"valid": v.ok, "reason": v.reason}
            for s in built.stages
            for v in [stage_validity(s, cfg)]
        }
        data["trainer_check"] = verdict.model_dump(mode="json")
        typer.echo(json.dumps(data, indent=2))
    else:
        _print_plan(built, cfg)
        typer.echo("")
        typer.echo("\n".join(verdict.lines()))
    errors = [f"{f.topic}: {f.message}" for f in built.errors]
    if verdict.status == "failed" or (check and verdict.status == "cannot"):
        errors += _check_errors(verdict)
    if errors:
        _bad_input(*errors)


def _check_errors(verdict: SwiftCheck) -> list[str]:
    """`trainer check: STAGE: FLAGS: RULE [SOURCE]`, or the one-line reason it cannot."""
    if verdict.status == "cannot":
        return [verdict.reason]
    return [f"trainer check: {p}" for p in verdict.problems]


def _default_rank() -> int:
    for var in ("NODE_RANK", "SLURM_NODEID"):
        value = os.environ.get(var, "")
        if value.isascii() and value.isdigit() and len(value) <= 6:  # isdigit() alone takes '²'
            return int(value)
    return 0


def _printer(dry_run: bool) -> Any:
    def on_event(e: Event) -> None:
        head = f"[{e.index}/{e.total}] {e.stage}"
        took = "" if e.seconds is None else f" in {e.seconds:.1f} s"
        if e.kind in ("would-run", "would-skip"):
            verb = "would run" if e.kind == "would-run" else "would skip"
            typer.echo(f"{head}: {verb} ({e.message})")
            for command in e.commands:
                typer.echo("\n".join(_wrapped(command)))
            return
        words = {
            "start": "running",
            "done": f"done{took}",
            "skip": "skipped, outputs there and valid",
            "fail": f"FAILED{took}",
            "wait": "waiting",
            "server": "server starting",
            "elsewhere": "not on this node",
            "check": "trainer check",
        }
        typer.echo(f"{head}: {words[e.kind]}" + (f" ({e.message})" if e.message else ""))

    return on_event


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@app.command(name="launch")
def launch_command(
    config: ConfigOpt,
    dry_run: Annotated[
        bool, dry_run_option("Print every command and what would be skipped.")
    ] = False,
    from_stage: Annotated[
        str | None,
        typer.Option(
            "--from-stage",
            help="Start at this stage (labels, prepare, datasets, sft-data, sft, grpo, eval).",
        ),
    ] = None,
    only: Annotated[
        list[str] | None, typer.Option("--only", help="Run only this stage (repeatable).")
    ] = None,
    node_rank: Annotated[
        int | None,
        typer.Option(min=0, help="This node's rank (default: $NODE_RANK, $SLURM_NODEID, else 0)."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Run even when the checks found errors.")
    ] = False,
    timeout: Annotated[
        float,
        timeout_option("Seconds a node other than 0 waits for node 0's datasets.", min=0.0),
    ] = 24 * 3600.0,
    overrides: SetOpt = None,
) -> None:
    """Run the stages in order, skipping those whose outputs are valid; resumable.

    Logs go to OUTPUT/logs/<stage>.log; a killed run launched again continues (GRPO from its
    last complete checkpoint). Exit 1 when a stage fails, 2 on bad input.

    Example: codegrep-train launch --config configs/paper-8xb200.yaml --from-stage grpo
    """
    cfg = _load(config, overrides)
    rank = _default_rank() if node_rank is None else node_rank
    node = _node(cfg)
    try:
        checked = build_plan(cfg, config, node=node, node_rank=rank)
    except PlanError as exc:
        _bad_input(str(exc))
    for f in checked.findings:
        if f.level == "warning":
            typer.echo(f"warning: {f.topic}: {f.message}", err=True)
    # SIGTERM (kill, timeout, a scheduler ending the job) stops the stage's process group as
    # Ctrl-C does: a training process left running would race the next launch.
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        result = launch(
            cfg,
            config,
            node=node,
            node_rank=rank,
            only=only or (),
            from_stage=from_stage,
            dry_run=dry_run,
            force=force,
            wait_timeout=timeout,
            on_event=_printer(dry_run),
            check=lambda stages: check_stages(cfg, stages),
        )
    except PlanError as exc:
        _bad_input(str(exc))
    except StageFailed as exc:
        raise fail(str(exc), code=EXIT_FAILED) from None
    except OSError as exc:  # an output that cannot be written (or is refused: see launch.py)
        where = f"{exc.filename}: " if exc.filename else ""
        raise fail(f"cannot write {where}{exc.strerror or exc}", code=EXIT_FAILED) from None
    except KeyboardInterrupt:
        raise fail("interrupted: launch the same command again to continue", code=130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    if dry_run:
        typer.echo(f"dry run: {len(result.ran)} stage(s) would run, {len(result.skipped)} skipped")
        if checked.errors:  # a dry run checks the inputs too: what a launch would refuse
            _bad_input(*(f"{f.topic}: {f.message}" for f in checked.errors))
    else:
        typer.echo(f"done: {len(result.ran)} stage(s) ran, {len(result.skipped)} skipped")


def _register_monitor() -> None:
    """`codegrep-train monitor` lives in `train_launcher.monitor.cli` (written apart)."""
    try:
        module = importlib.import_module("train_launcher.monitor.cli")
    except ModuleNotFoundError as exc:
        if exc.name in ("train_launcher.monitor", "train_launcher.monitor.cli"):
            return  # not there: no monitor command
        reason = str(exc)
    except ImportError as exc:
        reason = str(exc)
    else:
        module.register(app)
        return

    @app.command(
        name="monitor", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
    )
    def monitor_unavailable() -> None:
        """(unavailable here: see the error)"""
        _bad_input(f"the monitor cannot be imported: {reason}")


_register_monitor()


def main() -> None:
    app(prog_name="codegrep-train")


if __name__ == "__main__":
    main()
