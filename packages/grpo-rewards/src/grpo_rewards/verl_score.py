"""verl custom reward: `compute_score(data_source, solution_str, ground_truth, extra_info=None)`.

Point verl at it with `custom_reward_function.path=<this file>` and
`custom_reward_function.name=compute_score`, or call it from your own reward file. verl calls it
once per response with the decoded response text and the row's `reward_model.ground_truth`
(a list of gold files, or `{"files": [...], "line_ranges": {...}}`).

verl's own `num_turns` counts user, assistant and tool messages together, which is not the
paper's T, so rollout statistics are read from `extra_info["assistant_turns"]` and
`extra_info["tool_calls"]` (a count or per-turn counts), set by your agent loop. The reward is
chosen by `extra_info["reward"]` or the `reward=` keyword (default `codegrep_v3`); without
statistics only `fbeta_file` can be scored, and the others raise instead of guessing.
The result is a dict with `score` and the reward's parts, the same keys for every call.
"""

from __future__ import annotations

from collections.abc import Mapping

from grpo_rewards._rewards import score_completion
from grpo_rewards._trainer_rows import gold_from_values, stats_from_counts
from grpo_rewards.errors import GrpoRewardsError

__all__ = ["compute_score"]


def compute_score(
    data_source: object,
    solution_str: str,
    ground_truth: object,
    extra_info: Mapping[str, object] | None = None,
    *,
    reward: str = "codegrep_v3",
    **params: float,
) -> dict[str, float]:
    """Score one verl response; returns `{"score": r, <parts>..., "zeroed_by_rule": 0|1}`.

    >>> out = compute_score("codegrep", '{"files": ["a.py", "b.py"]}', ["a.py"],
    ...                     {"assistant_turns": 3, "tool_calls": [4, 2]})
    >>> round(out["score"], 4), out["cbar"]
    (0.5556, 2.0)
    """
    info = extra_info or {}
    name = info.get("reward", reward)
    if not isinstance(name, str):
        raise GrpoRewardsError(f"extra_info['reward'] must be a reward name, got {name!r}")
    gold = gold_from_values(ground_truth)
    if gold is None:
        raise GrpoRewardsError(f"no gold files in ground_truth for data source {data_source!r}")
    stats = stats_from_counts(info.get("assistant_turns"), info.get("tool_calls"))
    result = score_completion(name, solution_str, gold, stats, params=params)
    return {
        "score": result.reward,
        **result.parts,
        "zeroed_by_rule": float(result.reason is not None),
    }
