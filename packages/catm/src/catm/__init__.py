"""CATM: relevance labels mined from coding-agent trajectories.

Stage 1 finds every repository file an agent read and the reasoning that followed; stage 2 asks an
LLM judge whether that reasoning shows the file mattered; stage 3 weights files by reasoning length
and builds the gold set G = patch files ∪ {f : w(f) ≥ 0.15}. See the README for the rules.

The instance and label records (`Instance`, `LabelRecord`, `MinedFile`, `Verdict`) and the gold
rule (`GoldRule`) are codegrep-records' own: import them from `codegrep_records`.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from catm._instances import load_mining_instances
from catm._judge import Judge, JudgeRequest, JudgeResult, NoJudge, OpenAIJudge
from catm._output import read_labels, write_labels
from catm._paths import guess_root, is_directory_listing, looks_like_directory, view_failed
from catm._pipeline import MiningConfig, iter_records, mine_labels
from catm._readers import record_steps
from catm._shell import parse_shell
from catm.errors import CatmError

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("catm")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

__all__ = [
    "CatmError",
    "Judge",
    "JudgeRequest",
    "JudgeResult",
    "MiningConfig",
    "NoJudge",
    "OpenAIJudge",
    "__version__",
    "guess_root",
    "is_directory_listing",
    "iter_records",
    "load_mining_instances",
    "looks_like_directory",
    "mine_labels",
    "parse_shell",
    "read_labels",
    "record_steps",
    "view_failed",
    "write_labels",
]
