"""The plan's checks of its inputs: files that must exist, settings that contradict each
other, executables and nodes, as findings (`plan` prints them, `launch` stops on an error)."""

from __future__ import annotations

import shutil
from pathlib import Path

from train_launcher.config import RunConfig
from train_launcher.estimate import Finding
from train_launcher.fetch import is_commit, sidecar

__all__ = ["input_findings"]


def input_findings(config: RunConfig, plugin: Path) -> list[Finding]:
    """Every finding about the inputs `config` names and the node that runs it."""
    out: list[Finding] = []
    fetched = {f.output for f in config.fetched}

    def missing(what: str, path: Path) -> None:
        if path not in fetched and not path.exists():
            out.append(
                Finding(level="error", topic="inputs", message=f"{what}: {path} does not exist")
            )

    d, t, e = config.data, config.train, config.evaluation
    missing("data.instances", d.instances)
    for p in d.trajectories:
        missing("data.trajectories", p)
    if d.labels is not None:
        missing("data.labels", d.labels)
    if e.enabled and e.instances is not None:
        missing("evaluation.instances", e.instances)
    if e.enabled and e.labels is not None:
        missing("evaluation.labels", e.labels)
    if config.sft.enabled:
        for p in config.sft.rollouts:
            missing("sft.rollouts", p)
    if config.model.is_local:
        missing("model.path", Path(config.model.path))
    missing("the ms-swift plugin (train.plugin)", plugin)
    for f in d.fetch:
        if f not in config.fetched:
            out.append(
                Finding(
                    level="info",
                    topic="inputs",
                    message=f"data.fetch: {f.repo_id} is not fetched: nothing reads "
                    f"{f.output} (data.instances, data.trajectories and evaluation.instances "
                    "name other files)",
                )
            )
        elif not is_commit(f.revision):
            out.append(
                Finding(
                    level="warning",
                    topic="inputs",
                    message=f"{f.repo_id} at {f.revision!r} is not a commit id: the rows may "
                    f"change; the fetch records the commit it got in {sidecar(f.output).name}, "
                    "put that in data.fetch to pin it",
                )
            )
    if d.trajectories and config.mining.judge == "none":
        out.append(
            Finding(
                level="info",
                topic="labels",
                message="mining.judge is none: every mined file is kept "
                "(no LLM judge, CATM stage 2 off)",
            )
        )
    if not d.trajectories and d.labels is None:
        out.append(
            Finding(
                level="info",
                topic="labels",
                message="no trajectories and no labels: the gold is the patch files only",
            )
        )
    no_val = d.val_fraction == 0 and not d.val_repos
    if t.early_stopping is not None:
        if no_val:
            out.append(
                Finding(
                    level="error",
                    topic="early stopping",
                    message="early stopping watches the validation reward, "
                    "and data.val_fraction is 0",
                )
            )
        if t.eval_steps != t.save_steps:
            out.append(
                Finding(
                    level="warning",
                    topic="early stopping",
                    message=f"ms-swift counts patience at each save: eval_steps ({t.eval_steps}) "
                    f"should equal save_steps ({t.save_steps})",
                )
            )
    if e.enabled and e.instances is None and no_val:
        out.append(
            Finding(
                level="error",
                topic="evaluation",
                message="no held-out instances: set evaluation.instances, or a validation split "
                "(data.val_fraction or data.val_repos) whose instances are evaluated",
            )
        )
    wanted = [config.swift.executable]
    if e.enabled and e.server == "vllm":
        wanted.append(config.swift.vllm_executable)
    for exe in wanted:
        if shutil.which(exe) is None:
            out.append(
                Finding(
                    level="warning",
                    topic="executables",
                    message=f"{exe!r} is not on PATH here (needed by the training/eval stages)",
                )
            )
    c = config.cluster
    if c.nodes > 1:
        if c.master_addr in ("127.0.0.1", "localhost", "::1"):
            out.append(
                Finding(
                    level="error",
                    topic="nodes",
                    message=f"cluster.master_addr is {c.master_addr}: with {c.nodes} nodes "
                    "it must be "
                    "node 0's address the others can reach",
                )
            )
        out.append(
            Finding(
                level="info",
                topic="nodes",
                message=f"{c.nodes} nodes: output_dir and data.cache must be on a file "
                "system every "
                "node sees (the dataset rows name the cache); run `launch --node-rank N` on each",
            )
        )
        if config.server_mode:
            out.append(
                Finding(
                    level="info",
                    topic="nodes",
                    message=f"server mode: the rollout server uses GPUs of node 0 only; nodes 1.. "
                    f"leave {config.rollout.server.gpus} GPU(s) each idle",
                )
            )
    # TEST ONLY schedulers (codegrep_model.train.scheduler_with_test_policy) replace the replies
    args = [*config.swift.extra_args, *t.extra_args]
    test_policy = next((a for a in args if a.startswith("codegrep_tools_test_")), None)
    if test_policy:
        out.append(
            Finding(
                level="warning",
                topic="test only",
                message=f"--multi_turn_scheduler {test_policy}: the model's replies are "
                "replaced by a "
                "scripted policy's (for smoke runs of a random tiny model; never a real run)",
            )
        )
    return out
