"""The plan's records: a node command, a stage, the node plan, and the stage order.

Kept apart from `train_launcher.plan` (which builds them) so that the output checks and the
stage selection (`train_launcher._plan_select`) read them without the stage builders.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from train_launcher.estimate import Estimates, Finding

__all__ = [
    "NODE_PLAN_SCHEMA_VERSION",
    "STAGE_ORDER",
    "NodeCommand",
    "NodePlan",
    "Stage",
    "base_stage",
]

#: The layout of `NodePlan` as written to plan.json.
NODE_PLAN_SCHEMA_VERSION = 1

#: The stages in the order they run; `eval` stands for every `eval:*` stage and `eval-summary`.
STAGE_ORDER = ("fetch", "labels", "prepare", "datasets", "sft-data", "sft", "grpo", "eval")


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class NodeCommand(_Record):
    """One process of the node job: its argv, the environment it adds to the launcher's, which
    node runs it, and whether it is a server the next commands wait for. (Not swe-eval's
    downstream `Command`, a step of an evaluation run written into its plan.json.)"""

    argv: tuple[str, ...]
    env: dict[str, str] = Field(default_factory=dict)
    node_rank: int = 0
    background: bool = Field(False, description="A server the next commands use; stopped after.")
    ready_url: str | None = Field(None, description="Polled until it answers (background).")
    ready_model: str | None = Field(None, description="A model /v1/models must list.")
    ready_timeout: float = 0.0

    def shell(self) -> str:
        """The command as one shell line, environment first."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        line = shlex.join(self.argv)
        return f"{env} {line}" if env else line


class Stage(_Record):
    name: str
    title: str
    commands: tuple[NodeCommand, ...]
    outputs: tuple[Path, ...]
    check: str = Field(description="When the outputs count as there and valid, in words.")
    nodes: Literal["first", "all"] = "first"
    requires: tuple[str, ...] = Field((), description="Stages whose outputs this one reads.")
    late: tuple[str, ...] = Field((), description="Values not known until earlier stages ran.")
    resume_from: Path | None = None


class NodePlan(_Record):
    """The training node job: its stages in order, with outputs, checks and estimates. (Not
    swe-eval's downstream `Plan`, the plan.json of an evaluation run.)"""

    schema_version: int = Field(
        NODE_PLAN_SCHEMA_VERSION,
        ge=1,
        description="The layout of the plan as `launch` writes it (plan.json); 1 without it.",
    )
    config_file: Path
    run: str
    output_dir: Path
    node_rank: int | None
    nodes: int
    plugin: Path
    stages: tuple[Stage, ...]
    estimates: Estimates
    findings: tuple[Finding, ...]

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(name)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "error"]


def base_stage(name: str) -> str:
    """`eval:checkpoint-50` and `eval-summary` -> `eval`; other names as they are."""
    return "eval" if name.startswith("eval") else name
