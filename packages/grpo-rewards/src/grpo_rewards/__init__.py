"""grpo-rewards: file-retrieval rewards and GRPO advantages, standard library only.

Metrics over file paths and line ranges, the CodeGrep reward designs (v1, v2, v3), CodeScout's
multi-level F1 and colgrep's turn/format penalty, group-relative advantages with CodeGrep's
advantage-layer efficiency scale, and thin adapters for ms-swift (`grpo_rewards.swift_orm`),
TRL (`grpo_rewards.trl_reward`) and verl (`grpo_rewards.verl_score`). Importing this package
imports no trainer framework.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from grpo_rewards._advantages import (
    AdvantageScale,
    advantage_factor,
    advantage_scale,
    advantage_scales,
    dr_grpo_advantages,
    filter_informative_groups,
    group_advantages,
    grpo_advantages,
    scale_advantages_for,
    scale_by_efficiency,
)
from grpo_rewards._answer import LineRange, ParsedAnswer, RewardAnswer, parse_answer
from grpo_rewards._codescout import (
    CodeLocation,
    MultiLevelTargets,
    codescout_multilevel,
    multilevel_f1,
    targets_from_file_changes,
)
from grpo_rewards._formats import (
    hermes_calls,
    loads_strict,
    record_text,
    split_reasoning,
    without_tool_calls,
)
from grpo_rewards._metrics import (
    fbeta,
    fbeta_from_counts,
    fbeta_line_ranges,
    precision,
    recall,
    set_scores,
)
from grpo_rewards._patch_ranges import gold_line_ranges_from_patch
from grpo_rewards._paths import normalize_paths
from grpo_rewards._rewards import (
    Gold,
    RewardResult,
    codegrep_v1,
    codegrep_v2,
    codegrep_v3,
    colgrep_reward,
    fbeta_file_reward,
)
from grpo_rewards._rollout import MAX_CALLS_PER_TURN, RolloutStats
from grpo_rewards._rollout_infos import (
    ROLLOUT_INFO_SCHEMA_VERSION,
    RolloutInfo,
    score_rollout,
)
from grpo_rewards._scoring import account, answer_status, score_ranked
from grpo_rewards._spec import (
    REWARD_SPECS,
    REWARDS,
    RewardSpec,
    register_reward,
    reward_spec,
    score_completion,
    score_parsed,
)
from grpo_rewards._trainer_rows import ADAPTER_REWARDS
from grpo_rewards.errors import (
    GrpoRewardsError,
    InvalidRolloutError,
    MissingRolloutStatsError,
    UnknownRewardError,
)

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("grpo-rewards")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

__all__ = [
    "ADAPTER_REWARDS",
    "MAX_CALLS_PER_TURN",
    "REWARDS",
    "REWARD_SPECS",
    "ROLLOUT_INFO_SCHEMA_VERSION",
    "AdvantageScale",
    "CodeLocation",
    "Gold",
    "GrpoRewardsError",
    "InvalidRolloutError",
    "LineRange",
    "MissingRolloutStatsError",
    "MultiLevelTargets",
    "ParsedAnswer",
    "RewardAnswer",
    "RewardResult",
    "RewardSpec",
    "RolloutInfo",
    "RolloutStats",
    "UnknownRewardError",
    "__version__",
    "account",
    "advantage_factor",
    "advantage_scale",
    "advantage_scales",
    "answer_status",
    "codegrep_v1",
    "codegrep_v2",
    "codegrep_v3",
    "codescout_multilevel",
    "colgrep_reward",
    "dr_grpo_advantages",
    "fbeta",
    "fbeta_file_reward",
    "fbeta_from_counts",
    "fbeta_line_ranges",
    "filter_informative_groups",
    "gold_line_ranges_from_patch",
    "group_advantages",
    "grpo_advantages",
    "hermes_calls",
    "loads_strict",
    "multilevel_f1",
    "normalize_paths",
    "parse_answer",
    "precision",
    "recall",
    "record_text",
    "register_reward",
    "reward_spec",
    "scale_advantages_for",
    "scale_by_efficiency",
    "score_completion",
    "score_parsed",
    "score_ranked",
    "score_rollout",
    "set_scores",
    "split_reasoning",
    "targets_from_file_changes",
    "without_tool_calls",
]
