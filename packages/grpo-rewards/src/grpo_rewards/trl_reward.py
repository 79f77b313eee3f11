"""TRL reward functions: `f(prompts, completions, **kwargs) -> list[float | None]`.

TRL's `GRPOTrainer(reward_funcs=[...])` calls each function with the batch's prompts and
completions (text, or chat messages when the dataset is conversational or tools are used) and
every other dataset column as a keyword list; `None` skips a row. It logs a function under its
`__name__`. `TRLReward` follows that contract without importing TRL.

A rollout function that runs the RL environment can hand over its record instead: a
`rollout_infos` column of `grpo_rewards.RolloutInfo`s (or their JSON form) gives T, C_total and
the parsed answer, which is scored as it is (`score_rollout`: the completion is parsed only for a
record that holds no answer). Otherwise rollout statistics come from explicit columns when the
rollout function provides them (`num_turns` + `num_tool_calls`), else from the completion's
messages (assistant turns and their
tool calls). When neither gives any — plain TRL without tools or count columns — a reward that
needs them (CodeGrep v1/v2/v3, colgrep) would see c̄ = 0 everywhere, so `TRLReward` warns once
(`MissingRolloutStatsWarning`) or, with `on_missing_counts="raise"`, raises. `fbeta_file` needs no
statistics. `codescout_multilevel` reads the `localization_finish` call from the completion and
its gold from the `file_changes` column.

The advantage-layer efficiency scale belongs in a trainer subclass; `TRLReward.spec` says
whether the reward declares it (`spec.efficiency_layer == "advantage"`: v2, v3), and
`grpo_rewards.scale_advantages_for(reward, advantages, stats)` applies it only then (v1 and the
others are returned unchanged). No such subclass ships here; the README shows one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from grpo_rewards._codescout import DEFAULT_FILE_CHANGES_COLUMN
from grpo_rewards._missing_counts import (
    MissingCountsGuard,
    OnMissingCounts,
    check_on_missing_counts,
    needs_counts,
)
from grpo_rewards._rollout_infos import recorded_stats, rollout_record, score_row
from grpo_rewards._spec import RewardSpec, reward_spec
from grpo_rewards._trainer_rows import (
    DEFAULT_FILES_COLUMN,
    DEFAULT_LINE_RANGES_COLUMN,
    check_reward_name,
    column,
    labels_from_columns,
    stats_from_completion,
    stats_from_counts,
    stats_per_row,
)

__all__ = ["TRLReward"]


class TRLReward:
    """A TRL reward function scoring one of `grpo_rewards.REWARD_SPECS` by name.

    `params` override the reward's constants (`beta=1.0`, CodeScout's `turn_bonus_range=(4, 4)`).
    `on_missing_counts` says what happens when a reward that needs the turn and tool-call counts
    finds none in a batch: "warn" (once per object) or "raise" (`MissingRolloutStatsError`).

    >>> reward = TRLReward("codegrep_v3")
    >>> completion = [
    ...     {"role": "assistant", "content": "", "tool_calls": [{"id": "1"}, {"id": "2"}]},
    ...     {"role": "tool", "content": "..."},
    ...     {"role": "tool", "content": "..."},
    ...     {"role": "assistant", "content": '{"files": ["a.py"]}'},
    ... ]
    >>> reward(prompts=["issue"], completions=[completion], gold_files=[["a.py"]])
    [1.0]
    """

    def __init__(
        self,
        reward: str = "codegrep_v3",
        *,
        files_column: str = DEFAULT_FILES_COLUMN,
        line_ranges_column: str = DEFAULT_LINE_RANGES_COLUMN,
        file_changes_column: str = DEFAULT_FILE_CHANGES_COLUMN,
        turns_column: str = "num_turns",
        tool_calls_column: str = "num_tool_calls",
        info_column: str = "rollout_infos",
        on_missing_counts: OnMissingCounts = "warn",
        **params: object,
    ) -> None:
        self.reward = check_reward_name(reward)
        #: Which layer carries the reward's efficiency term (see `grpo_rewards.RewardSpec`).
        self.spec: RewardSpec = reward_spec(self.reward)
        self.files_column = files_column
        self.line_ranges_column = line_ranges_column
        self.file_changes_column = file_changes_column
        self.turns_column = turns_column
        self.tool_calls_column = tool_calls_column
        self.info_column = info_column
        self.on_missing_counts = check_on_missing_counts(on_missing_counts)
        self.params = params
        self._missing = MissingCountsGuard(f"TRLReward({reward!r})")
        # TRL names the logged metric after __name__ (rewards/<name>/mean).
        self.__name__ = reward

    def __call__(
        self,
        prompts: Sequence[object] | None = None,
        completions: Sequence[object] = (),
        completion_ids: object = None,
        **kwargs: object,
    ) -> list[float | None]:
        n = len(completions)
        labels = labels_from_columns(kwargs, n, self.reward, self)
        turns = column(kwargs, self.turns_column, n, required=False)
        calls = column(kwargs, self.tool_calls_column, n, required=False)
        infos = column(kwargs, self.info_column, n, required=False)
        # the environment's records, where the rollout function handed them over
        records = [None if labels[i] is None else rollout_record(infos[i]) for i in range(n)]
        stats, uncounted = stats_per_row(
            labels,
            recorded=lambda i: recorded_stats(records[i]) or stats_from_counts(turns[i], calls[i]),
            derived=lambda i: stats_from_completion(completions[i]),
        )
        if uncounted and needs_counts(self.reward, self.params):
            names = (self.turns_column, self.tool_calls_column)
            absent = [c for c in names if c not in kwargs]
            if absent:
                what = f"the batch has no {' / '.join(map(repr, absent))} column"
            else:
                what = f"the {' / '.join(map(repr, names))} columns hold no counts"
            self._missing.report(
                self.reward,
                self.on_missing_counts,
                f"{what}, and no completion records a tool call",
                f"Add the {names[0]!r} and {names[1]!r} columns (e.g. from a rollout_func), or "
                f"train with tools=[...] so that the completions carry the calls",
            )
        out: list[float | None] = []
        malformed = 0
        for completion, label, row_stats, record in zip(
            completions, labels, stats, records, strict=True
        ):
            if label is None:
                out.append(None)
                continue
            result = score_row(self.reward, completion, label, row_stats, record, self.params)
            malformed += result.reason is not None
            out.append(result.reward)
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and n:
            _log(log_metric, f"{self.reward}/zeroed_by_rule_frac", malformed / n)
        return out


def _log(log_metric: Callable[..., object], name: str, value: float) -> None:
    log_metric(name, value)
