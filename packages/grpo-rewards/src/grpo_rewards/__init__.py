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
    EFFICIENCY_SATURATION,
    AdvantageScale,
    Scale,
    advantage_factor,
    advantage_factors,
    advantage_scale,
    advantage_scales,
    degenerate_mask,
    dr_grpo_advantages,
    efficiency_scale,
    filter_informative_groups,
    group_advantages,
    grpo_advantages,
    informative_groups,
    scale_advantages_for,
    scale_by_efficiency,
)
from grpo_rewards._answer import (
    LineRange,
    ParsedAnswer,
    RewardAnswer,
    coerce_line_ranges,
    parse_answer,
)
from grpo_rewards._codescout import (
    CodeLocation,
    MultiLevelScores,
    MultiLevelTargets,
    codescout_last_turn_ok,
    codescout_multilevel,
    multilevel_f1,
    targets_from_file_changes,
)
from grpo_rewards._formats import (
    HermesCall,
    hermes_calls,
    loads_strict,
    split_reasoning,
    tool_call_bodies,
    without_tool_calls,
)
from grpo_rewards._metrics import (
    SetScores,
    fbeta,
    fbeta_from_counts,
    fbeta_line_ranges,
    line_range_scores,
    precision,
    recall,
    set_scores,
)
from grpo_rewards._missing_counts import OnMissingCounts
from grpo_rewards._patch_ranges import gold_line_ranges_from_patch
from grpo_rewards._paths import DEFAULT_MOUNT_PREFIXES, normalize_paths
from grpo_rewards._rewards import (
    Gold,
    RewardResult,
    codegrep_v1,
    codegrep_v2,
    codegrep_v3,
    colgrep_file_f1,
    colgrep_reward,
    fbeta_file_reward,
    sigma_v1,
)
from grpo_rewards._rollout import (
    MAX_CALLS_PER_TURN,
    RolloutStats,
    check_calls_per_turn,
    rollout_stats_from_messages,
)
from grpo_rewards._rollout_infos import (
    ROLLOUT_INFO_SCHEMA_VERSION,
    RolloutInfo,
    score_rollout,
)
from grpo_rewards._scoring import (
    Accounting,
    AnswerStatus,
    RankedScore,
    account,
    answer_status,
    score_ranked,
)
from grpo_rewards._spec import (
    REWARD_SPECS,
    REWARDS,
    CountsNeed,
    EfficiencyLayer,
    LabelKind,
    RewardSpec,
    register_reward,
    reward_spec,
    score_batch,
    score_completion,
    score_parsed,
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
    "EFFICIENCY_SATURATION",
    "MAX_CALLS_PER_TURN",
    "REWARDS",
    "REWARD_SPECS",
    "ROLLOUT_INFO_SCHEMA_VERSION",
    "Accounting",
    "AdvantageScale",
    "AnswerStatus",
    "BatchShapeError",
    "CodeLocation",
    "CountsNeed",
    "EfficiencyLayer",
    "Gold",
    "GrpoRewardsError",
    "HermesCall",
    "InvalidRolloutError",
    "LabelKind",
    "LineRange",
    "MissingFrameworkError",
    "MissingRolloutStatsError",
    "MissingRolloutStatsWarning",
    "MultiLevelScores",
    "MultiLevelTargets",
    "OnMissingCounts",
    "ParsedAnswer",
    "RankedScore",
    "RewardAnswer",
    "RewardResult",
    "RewardSpec",
    "RolloutInfo",
    "RolloutStats",
    "Scale",
    "SetScores",
    "UnknownRewardError",
    "__version__",
    "account",
    "advantage_factor",
    "advantage_factors",
    "advantage_scale",
    "advantage_scales",
    "answer_status",
    "check_calls_per_turn",
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
    "hermes_calls",
    "informative_groups",
    "line_range_scores",
    "loads_strict",
    "multilevel_f1",
    "normalize_paths",
    "parse_answer",
    "precision",
    "recall",
    "register_reward",
    "reward_spec",
    "rollout_stats_from_messages",
    "scale_advantages_for",
    "scale_by_efficiency",
    "score_batch",
    "score_completion",
    "score_parsed",
    "score_ranked",
    "score_rollout",
    "set_scores",
    "sigma_v1",
    "split_reasoning",
    "targets_from_file_changes",
    "tool_call_bodies",
    "without_tool_calls",
]
