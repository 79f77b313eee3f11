"""The launcher's exceptions: one base, `TrainLauncherError`, and what the CLI turns into exit 2.

- `ConfigError`: a run config that cannot be used (unreadable, not YAML, or fields that do not
  validate); it names the file and every bad field, with the line where YAML knows it.
- `PlanError`: a plan that cannot be carried out as asked (an unknown stage name, a stage whose
  inputs are missing, a node rank outside the cluster).
- `StageFailed`: a stage's command ran and exited non-zero (the CLI's exit 1).
- `MonitorError`: the run monitor's base; `MonitorInputError` (the run cannot be read: exit 2),
  `MissingPlotExtraError` (matplotlib is not installed; also an `ImportError`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ConfigError",
    "ConfigProblem",
    "MissingPlotExtraError",
    "MonitorError",
    "MonitorInputError",
    "PlanError",
    "StageFailed",
    "TrainLauncherError",
]


class TrainLauncherError(Exception):
    """Base of every error the launcher raises on purpose."""


@dataclass(frozen=True)
class ConfigProblem:
    """One bad field: where it is (`train.num_generations`; empty for the whole file), the YAML
    line when known, and what is wrong."""

    field: str
    message: str
    line: int | None = None

    def describe(self, path: Path) -> str:
        where = f"{path}:{self.line}" if self.line is not None else str(path)
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


class ConfigError(TrainLauncherError):
    """The config file `path` cannot be used; `problems` lists every reason."""

    def __init__(self, path: Path, problems: list[ConfigProblem]) -> None:
        self.path = path
        self.problems = problems
        super().__init__("; ".join(p.describe(path) for p in problems))

    def lines(self) -> list[str]:
        """One line per problem, each naming the file (and line) and the field."""
        return [p.describe(self.path) for p in self.problems]


class PlanError(TrainLauncherError):
    """The plan cannot be carried out as asked (bad stage name, missing inputs, bad node rank)."""


class StageFailed(TrainLauncherError):
    """A command of stage `stage` exited with `returncode` (or, with `reason`, the stage ran and
    its outputs are still not valid); its log is `log`."""

    def __init__(self, stage: str, returncode: int, log: Path, reason: str | None = None) -> None:
        self.stage = stage
        self.returncode = returncode
        self.log = log
        why = reason or f"exit {returncode}"
        super().__init__(f"stage {stage} failed ({why}); log: {log}")


class MonitorError(TrainLauncherError):
    """Base of the monitor's errors."""


class MonitorInputError(MonitorError):
    """The run cannot be read: no folder, no metrics file, an unreadable file (exit 2)."""


class MissingPlotExtraError(MonitorError, ImportError):
    """matplotlib is not installed: the PNGs need the `plot` extra."""

    def __init__(self) -> None:
        from importlib.metadata import packages_distributions

        dist = (packages_distributions().get(__name__.split(".")[0]) or ["train-launcher"])[0]
        super().__init__(
            f"the PNG plots need matplotlib: install the `plot` extra (pip install "
            f"'{dist}[plot]', or uv sync --extra plot)"
        )
