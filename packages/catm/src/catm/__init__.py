"""CATM: relevance labels mined from coding-agent trajectories.

Stage 1 finds every repository file an agent read and the reasoning that followed; stage 2 asks an
LLM judge whether that reasoning shows the file mattered; stage 3 weights files by reasoning length
and builds the gold set G = patch files ∪ {f : w(f) ≥ 0.15}. See the README for the rules.

The instance and label records (`Instance`, `LabelRecord`, `MinedFile`, `Verdict`) and the gold
rule (`GoldRule`) are codegrep-records' own, re-exported: `catm.Instance is
codegrep_records.Instance`.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from codegrep_records import GoldRule, Instance, LabelRecord, MinedFile, Verdict

from catm._instances import load_mining_instances
from catm._judge import (
    Judge,
    JudgeCache,
    JudgeRequest,
    JudgeResult,
    NoJudge,
    OpenAIJudge,
    default_template,
    parse_verdict,
)
from catm._mining import FileEvidence, TrajectoryMining, mine_trajectory
from catm._output import LabelReport, MinedExample, label_report, read_labels, write_labels
from catm._paths import (
    DropReason,
    guess_root,
    is_directory_listing,
    looks_like_directory,
    to_repo_relative,
    view_failed,
)
from catm._pipeline import (
    JudgeSpec,
    MiningConfig,
    MiningInputs,
    MiningProgress,
    MiningResult,
    iter_records,
    mine_labels,
    mine_to_file,
    prepare_mining,
)
from catm._readers import (
    EDITOR_ACTIONS,
    EDITOR_TOOLS,
    SHELL_ACTIONS,
    SHELL_TOOLS,
    json_arguments,
    parse_record,
    read_trajectories,
    record_steps,
    text_of,
)
from catm._records import (
    SCHEMA_VERSION,
    FileRead,
    MiningStats,
    Skip,
    Step,
    Trajectory,
    TrajectoryCall,
    TrajectoryFormat,
)
from catm._shell import ShellEffects, parse_shell
from catm._tokens import TOKENIZER_NAME, count_tokens
from catm._weights import GOLD_THRESHOLD, median_beta, normalized_weights, saturation_weight
from catm.errors import CatmError, InputError, JudgeError, MissingExtraError

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("catm")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

__all__ = [
    "EDITOR_ACTIONS",
    "EDITOR_TOOLS",
    "GOLD_THRESHOLD",
    "SCHEMA_VERSION",
    "SHELL_ACTIONS",
    "SHELL_TOOLS",
    "TOKENIZER_NAME",
    "CatmError",
    "DropReason",
    "FileEvidence",
    "FileRead",
    "GoldRule",
    "InputError",
    "Instance",
    "Judge",
    "JudgeCache",
    "JudgeError",
    "JudgeRequest",
    "JudgeResult",
    "JudgeSpec",
    "LabelRecord",
    "LabelReport",
    "MinedExample",
    "MinedFile",
    "MiningConfig",
    "MiningInputs",
    "MiningProgress",
    "MiningResult",
    "MiningStats",
    "MissingExtraError",
    "NoJudge",
    "OpenAIJudge",
    "ShellEffects",
    "Skip",
    "Step",
    "Trajectory",
    "TrajectoryCall",
    "TrajectoryFormat",
    "TrajectoryMining",
    "Verdict",
    "__version__",
    "count_tokens",
    "default_template",
    "guess_root",
    "is_directory_listing",
    "iter_records",
    "json_arguments",
    "label_report",
    "load_mining_instances",
    "looks_like_directory",
    "median_beta",
    "mine_labels",
    "mine_to_file",
    "mine_trajectory",
    "normalized_weights",
    "parse_record",
    "parse_shell",
    "parse_verdict",
    "prepare_mining",
    "read_labels",
    "read_trajectories",
    "record_steps",
    "saturation_weight",
    "text_of",
    "to_repo_relative",
    "view_failed",
    "write_labels",
]
