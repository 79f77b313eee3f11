"""train-launcher: `codegrep-train`, one command from trajectories to an evaluated adapter.

`load_config` reads a run config (YAML; the CodeGrep paper's run by default), `build_plan` turns
it into stages of exact commands with disk, GPU and time estimates and the checks against this
node, `check_stages` judges the training stages' command lines with the installed ms-swift's
own argument classes (`plan --check`), and `launch` runs them in order, skipping stages whose
outputs are valid and resuming GRPO from its last checkpoint. The command line is
`train_launcher.cli`.
"""

from importlib import metadata as _metadata

from train_launcher.config import RunConfig, load_config
from train_launcher.errors import (
    ConfigError,
    ConfigProblem,
    PlanError,
    StageFailed,
    TrainLauncherError,
)
from train_launcher.estimate import Estimates, Finding
from train_launcher.launch import Event, LaunchResult, Runner, Service, SubprocessRunner, launch
from train_launcher.node import GpuInfo, NodeInfo, probe_node
from train_launcher.outputs import Layout, Validity, latest_checkpoint
from train_launcher.plan import (
    STAGE_ORDER,
    NodeCommand,
    NodePlan,
    Stage,
    build_plan,
    stage_validity,
)
from train_launcher.swift_check import StageCheck, SwiftCheck, check_stages

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("train-launcher")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

# The names before 0.2: `NodeCommand` and `NodePlan` say what they are (one process of the node
# job, the node job's plan) apart from swe-eval's downstream `Command` and `Plan`.
Command = NodeCommand
Plan = NodePlan

__all__ = [
    "STAGE_ORDER",
    "Command",
    "ConfigError",
    "ConfigProblem",
    "Estimates",
    "Event",
    "Finding",
    "GpuInfo",
    "LaunchResult",
    "Layout",
    "NodeCommand",
    "NodeInfo",
    "NodePlan",
    "Plan",
    "PlanError",
    "RunConfig",
    "Runner",
    "Service",
    "Stage",
    "StageCheck",
    "StageFailed",
    "SubprocessRunner",
    "SwiftCheck",
    "TrainLauncherError",
    "Validity",
    "__version__",
    "build_plan",
    "check_stages",
    "latest_checkpoint",
    "launch",
    "load_config",
    "probe_node",
    "stage_validity",
]
