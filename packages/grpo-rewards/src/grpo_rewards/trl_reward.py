"""TRL reward functions: `f(prompts, completions, **kwargs) -> list[float | None]`.

TRL's `GRPOTrainer(reward_funcs=[...])` calls each function with the batch's prompts and
completions (text, or chat messages when the dataset is conversational or tools are used) and
every other dataset column as a keyword list; `None` skips a row. It logs a function under its
`__name__`. `TRLReward` follows that contract without importing TRL.

Rollout statistics come from explicit columns when the rollout function provides them
(`num_turns` + `num_tool_calls`), else from the completion's messages (assistant turns and their
tool calls). The advantage-layer efficiency scale belongs in a trainer subclass that calls
`grpo_rewards.scale_by_efficiency`; no such subclass is in this repository yet (it is planned).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from grpo_rewards._rewards import REWARDS, score_completion
from grpo_rewards._trainer_rows import (
    DEFAULT_FILES_COLUMN,
    DEFAULT_LINE_RANGES_COLUMN,
    column,
    final_text,
    gold_from_values,
    stats_from_completion,
    stats_from_counts,
)
from grpo_rewards.errors import UnknownRewardError

__all__ = ["TRLReward"]


class TRLReward:
    """A TRL reward function scoring one of `grpo_rewards.REWARDS` by name.

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
        turns_column: str = "num_turns",
        tool_calls_column: str = "num_tool_calls",
        **params: float,
    ) -> None:
        if reward not in REWARDS:
            raise UnknownRewardError(f"unknown reward {reward!r}; known: {', '.join(REWARDS)}")
        self.reward = reward
        self.files_column = files_column
        self.line_ranges_column = line_ranges_column
        self.turns_column = turns_column
        self.tool_calls_column = tool_calls_column
        self.params = params
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
        files = column(kwargs, self.files_column, n, required=True)
        ranges = column(kwargs, self.line_ranges_column, n, required=False)
        turns = column(kwargs, self.turns_column, n, required=False)
        calls = column(kwargs, self.tool_calls_column, n, required=False)
        out: list[float | None] = []
        malformed = 0
        for i, completion in enumerate(completions):
            gold = gold_from_values(files[i], ranges[i])
            if gold is None:
                out.append(None)
                continue
            stats = stats_from_counts(turns[i], calls[i]) or stats_from_completion(completion)
            result = score_completion(
                self.reward, final_text(completion), gold, stats, params=self.params
            )
            malformed += result.reason is not None
            out.append(result.reward)
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and n:
            _log(log_metric, f"{self.reward}/zeroed_by_rule_frac", malformed / n)
        return out


def _log(log_metric: Callable[..., object], name: str, value: float) -> None:
    log_metric(name, value)
