"""verl custom reward: `compute_score(data_source, solution_str, ground_truth, extra_info=None)`.

Point verl at it with `custom_reward_function.path=<this file>` and
`custom_reward_function.name=compute_score`, or call it from your own reward file. verl calls it
once per response with the decoded response text and the row's `reward_model.ground_truth`
(a list of gold files, or `{"files": [...], "line_ranges": {...}}`; for `codescout_multilevel`,
`{"file_changes": [...]}`).

verl's own `num_turns` counts user, assistant and tool messages together, which is not the
paper's T. An agent loop that runs the RL environment puts its record in
`extra_info["rollout_info"]` (a `grpo_rewards.RolloutInfo`'s JSON form): T, C_total and the
parsed answer are read from it, and that answer is scored as it is (the response is parsed only
for a record that holds no answer). Otherwise rollout statistics are read from
`extra_info["assistant_turns"]` and `extra_info["tool_calls"]` (a count or per-turn counts), set
by your agent loop. The reward is
chosen by `extra_info["reward"]` or the `reward=` keyword (default `codegrep_v3`; any name in
`grpo_rewards.REWARD_SPECS`). Without statistics only `fbeta_file` and `codescout_multilevel`
(without its turn bonus) can be scored: for the others `on_missing_counts="raise"` (the default
here: verl has no other source for the counts, so a missing count is a configuration error) raises
`MissingRolloutStatsError`, and "warn" warns once per reward and scores with c̄ = 0. Keywords
can be set from verl's config, `custom_reward_function.reward_kwargs`.
The result is a dict with `score` and the reward's parts, the same keys for every call, and
`advantage_factor`: s(c̄) for a reward that declares the advantage-layer efficiency term (v2, v3),
1.0 for every other (v1's is inside its score). verl's stock advantage estimators do not read it;
a custom estimator multiplies each response's advantage by it.
"""

from __future__ import annotations

from collections.abc import Mapping

from grpo_rewards._advantages import advantage_factor
from grpo_rewards._missing_counts import (
    MissingCountsGuard,
    OnMissingCounts,
    check_on_missing_counts,
    needs_counts,
)
from grpo_rewards._rollout import RolloutStats
from grpo_rewards._rollout_infos import recorded_stats, rollout_record, score_row
from grpo_rewards._spec import reward_spec
from grpo_rewards._trainer_rows import (
    Label,
    check_reward_name,
    gold_from_values,
    stats_from_counts,
    targets_from_values,
)
from grpo_rewards.errors import GrpoRewardsError

__all__ = ["compute_score"]

# compute_score is one function serving every reward, so it warns once per reward name.
_MISSING = MissingCountsGuard("verl compute_score")


def compute_score(
    data_source: object,
    solution_str: str,
    ground_truth: object,
    extra_info: Mapping[str, object] | None = None,
    *,
    reward: str = "codegrep_v3",
    on_missing_counts: OnMissingCounts = "raise",
    **params: object,
) -> dict[str, float]:
    """Score one verl response; returns `{"score": r, <parts>..., "zeroed_by_rule": 0|1}`.

    >>> out = compute_score("codegrep", '{"files": ["a.py", "b.py"]}', ["a.py"],
    ...                     {"assistant_turns": 3, "tool_calls": [4, 2]})
    >>> round(out["score"], 4), out["cbar"]
    (0.5556, 2.0)
    """
    info = extra_info or {}
    name = check_reward_name(info.get("reward", reward))
    policy = check_on_missing_counts(on_missing_counts)
    codescout = reward_spec(name).label == "file_changes"
    label: Label | None = (
        targets_from_values(ground_truth) if codescout else gold_from_values(ground_truth)
    )
    if label is None:
        what = "file_changes" if codescout else "gold files"
        raise GrpoRewardsError(f"no {what} in ground_truth for data source {data_source!r}")
    record = rollout_record(info.get("rollout_info"))
    stats = recorded_stats(record) or stats_from_counts(
        info.get("assistant_turns"), info.get("tool_calls")
    )
    if stats is None and needs_counts(name, params):
        absent = [k for k in ("assistant_turns", "tool_calls") if info.get(k) is None]
        _MISSING.report(
            name,
            policy,
            f"extra_info has no {' / '.join(map(repr, absent))}",
            "Have the agent loop put 'assistant_turns' and 'tool_calls' into extra_info",
        )
        stats = RolloutStats(turns=1, tool_calls=0)
    result = score_row(name, solution_str, label, stats, record, params)
    # no statistics only for rewards without an advantage-layer term, whose factor is 1.0
    factor = advantage_factor(name, stats if stats is not None else 0.0)
    return {
        "score": result.reward,
        **result.parts,
        "zeroed_by_rule": float(result.reason is not None),
        "advantage_factor": factor,
    }
