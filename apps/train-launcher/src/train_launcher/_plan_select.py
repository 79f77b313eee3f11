"""Which stages are done and which to run: each stage's output check, and `--only` /
`--from-stage` turned into the stage names to run."""

from __future__ import annotations

from collections.abc import Sequence

from train_launcher._plan_records import STAGE_ORDER, NodePlan, Stage, base_stage
from train_launcher.config import RunConfig
from train_launcher.errors import PlanError
from train_launcher.outputs import (
    Layout,
    Validity,
    check_eval,
    check_fetch,
    check_grpo_data,
    check_labels,
    check_prepare,
    check_sft_data,
    check_summary,
    check_training,
)

__all__ = ["select_stages", "stage_validity"]


def stage_validity(stage: Stage, config: RunConfig) -> Validity:
    """Whether `stage`'s outputs are there and valid (see `train_launcher.outputs`)."""
    layout = Layout(config.output_dir)
    name = stage.name
    if stage.late:
        return Validity(False, f"waits for {', '.join(stage.late)}")
    if name == "fetch":
        return check_fetch([(f.output, f.repo_id, f.revision, f.split) for f in config.data.fetch])
    if name == "labels":
        return check_labels(layout.labels, layout.labels_stats)
    if name == "prepare":
        return check_prepare(list(stage.outputs))
    if name == "datasets":
        found = check_grpo_data(
            layout.grpo_data, {"train": layout.train_instances, "val": layout.val_instances}
        )
        if found.ok and config.train.val_limit is not None and not layout.val_eval.is_file():
            return Validity(False, f"{layout.val_eval}: no such file")
        return found
    if name == "sft-data":
        return check_sft_data(layout.sft_data, layout.sft_report)
    if name == "sft":
        return check_training(layout.sft_dir)
    if name == "grpo":
        return check_training(layout.grpo_dir)
    if name.startswith("eval:"):
        checkpoint = name.split(":", 1)[1]
        return check_eval(layout.eval_predictions(checkpoint), layout.eval_scores(checkpoint))
    if name == "eval-summary":
        return check_summary(layout.eval_summary, [r.split(":", 1)[1] for r in stage.requires])
    raise PlanError(f"no output check for stage {name!r}")


def select_stages(
    plan: NodePlan, *, only: Sequence[str] = (), from_stage: str | None = None
) -> list[str]:
    """The base stage names to run, in order; `PlanError` for a name this run does not have."""
    present = [n for n in STAGE_ORDER if any(base_stage(s.name) == n for s in plan.stages)]

    def known(name: str, flag: str) -> str:
        base = base_stage(name)
        if base not in STAGE_ORDER:
            raise PlanError(f"{flag} {name}: no such stage; stages: {', '.join(STAGE_ORDER)}")
        if base not in present:
            raise PlanError(f"{flag} {name}: not a stage of this run (it has {', '.join(present)})")
        return base

    chosen = present
    if from_stage is not None:
        start = known(from_stage, "--from-stage")
        chosen = chosen[chosen.index(start) :]
    if only:
        wanted = {known(n, "--only") for n in only}
        chosen = [n for n in chosen if n in wanted]
    return chosen
