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
    Scale,
    degenerate_mask,
    dr_grpo_advantages,
    efficiency_scale,
    filter_informative_groups,
    group_advantages,
    grpo_advantages,
    informative_groups,
    scale_by_efficiency,
)
from grpo_rewards._answer import Answer, LineRange, ParsedAnswer, coerce_line_ranges, parse_answer
from grpo_rewards._metrics import (
    CodeLocation,
    MultiLevelScores,
    MultiLevelTargets,
    SetScores,
    fbeta,
    fbeta_from_counts,
    fbeta_line_ranges,
    line_range_scores,
    multilevel_f1,
    precision,
    recall,
    set_scores,
    targets_from_file_changes,
)
from grpo_rewards._missing_counts import OnMissingCounts
from grpo_rewards._patch_ranges import gold_line_ranges_from_patch
from grpo_rewards._paths import DEFAULT_MOUNT_PREFIXES, normalize_path, normalize_paths
from grpo_rewards._rewards import (
    REWARDS,
    Gold,
    RewardResult,
    codegrep_v1,
    codegrep_v2,
    codegrep_v3,
    codescout_last_turn_ok,
    codescout_multilevel,
    colgrep_file_f1,
    colgrep_reward,
    fbeta_file_reward,
    score_batch,
    score_completion,
    score_parsed,
    sigma_v1,
)
from grpo_rewards._rollout import MAX_CALLS_PER_TURN, RolloutStats, rollout_stats_from_messages
from grpo_rewards._rollout_infos import (
    INFO_ANSWER_ERROR,
    INFO_ANSWER_FILES,
    INFO_ANSWER_LINE_RANGES,
    INFO_NUM_TOOL_CALLS,
    INFO_NUM_TURNS,
    INFO_TOOL_CALLS_PER_TURN,
    answer_from_infos,
    answer_infos,
)
from grpo_rewards._scoring import (
    Accounting,
    AnswerStatus,
    ClusterBootstrap,
    RankedScore,
    Ratio,
    account,
    answer_status,
    percentile,
    percentile_interval,
    score_ranked,
)
from grpo_rewards._spec import (
    REWARD_SPECS,
    EfficiencyLayer,
    RewardSpec,
    advantage_factor,
    advantage_factors,
    reward_spec,
    scale_advantages_for,
)
from grpo_rewards._trainer_rows import ADAPTER_REWARDS
from grpo_rewards.errors import (
    BatchShapeError,
    GrpoRewardsError,
    InvalidRolloutError,
    MissingFrameworkError,
    MissingRolloutStatsError,
    MissingRolloutStatsWarning,
    UnknownRewardError,
)

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("grpo-rewards")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

__all__ = [
    "ADAPTER_REWARDS",
    "DEFAULT_MOUNT_PREFIXES",
    "INFO_ANSWER_ERROR",
    "INFO_ANSWER_FILES",
    "INFO_ANSWER_LINE_RANGES",
    "INFO_NUM_TOOL_CALLS",
    "INFO_NUM_TURNS",
    "INFO_TOOL_CALLS_PER_TURN",
    "MAX_CALLS_PER_TURN",
    "REWARDS",
    "REWARD_SPECS",
    "Accounting",
    "Answer",
    "AnswerStatus",
    "BatchShapeError",
    "ClusterBootstrap",
    "CodeLocation",
    "EfficiencyLayer",
    "Gold",
    "GrpoRewardsError",
    "InvalidRolloutError",
    "LineRange",
    "MissingFrameworkError",
    "MissingRolloutStatsError",
    "MissingRolloutStatsWarning",
    "MultiLevelScores",
    "MultiLevelTargets",
    "OnMissingCounts",
    "ParsedAnswer",
    "RankedScore",
    "Ratio",
    "RewardResult",
    "RewardSpec",
    "RolloutStats",
    "Scale",
    "SetScores",
    "UnknownRewardError",
    "__version__",
    "account",
    "advantage_factor",
    "advantage_factors",
    "answer_from_infos",
    "answer_infos",
    "answer_status",
    "codegrep_v1",
    "codegrep_v2",
    "codegrep_v3",
    "codescout_last_turn_ok",
    "codescout_multilevel",
    "coerce_line_ranges",
    "colgrep_file_f1",
    "colgrep_reward",
    "degenerate_mask",
    "dr_grpo_advantages",
    "efficiency_scale",
    "fbeta",
    "fbeta_file_reward",
    "fbeta_from_counts",
    "fbeta_line_ranges",
    "filter_informative_groups",
    "gold_line_ranges_from_patch",
    "group_advantages",
    "grpo_advantages",
    "informative_groups",
    "line_range_scores",
    "multilevel_f1",
    "normalize_path",
    "normalize_paths",
    "parse_answer",
    "percentile",
    "percentile_interval",
    "precision",
    "recall",
    "reward_spec",
    "rollout_stats_from_messages",
    "scale_advantages_for",
    "scale_by_efficiency",
    "score_batch",
    "score_completion",
    "score_parsed",
    "score_ranked",
    "set_scores",
    "sigma_v1",
    "targets_from_file_changes",
]
