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
from train_launcher.errors import ConfigError, PlanError, StageFailed, TrainLauncherError
from train_launcher.launch import Event, LaunchResult, launch
from train_launcher.node import NodeInfo, probe_node
from train_launcher.plan import NodePlan, Stage, build_plan
from train_launcher.swift_check import check_stages

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("train-launcher")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

# What a user of the launcher needs; the parts (the runner seam, the output layout, the
# estimate's records, the monitor) are imported from their modules: `train_launcher.launch`,
# `.outputs`, `.plan`, `.estimate`, `.monitor`.
__all__ = [
    "ConfigError",
    "Event",
    "LaunchResult",
    "NodeInfo",
    "NodePlan",
    "PlanError",
    "RunConfig",
    "Stage",
    "StageFailed",
    "TrainLauncherError",
    "__version__",
    "build_plan",
    "check_stages",
    "launch",
    "load_config",
    "probe_node",
]
