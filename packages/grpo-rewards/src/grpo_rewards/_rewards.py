"""The reward designs scored from a JSON answer: CodeGrep v1/v2/v3, Fβ_file and colgrep's
turn/format penalty (CodeScout's multi-level F1, scored from a finish call, is `_codescout`).

Each reward is a pure function of a parsed answer, a gold label and the rollout statistics, with
every constant a keyword parameter whose default is the paper's value. A reward returns a
`RewardResult`: the scalar, the parts it was built from (for logging), and a reason when the
rollout earned nothing for a format or degeneracy rule. The advantage-layer efficiency scale of
v2/v3 is not here: it lives in `_advantages`, because it must not change the reward's ranking.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from grpo_rewards._answer import LineRange, ParsedAnswer, RewardAnswer, coerce_line_ranges
from grpo_rewards._metrics import fbeta, fbeta_line_ranges
from grpo_rewards._paths import normalize_paths
from grpo_rewards._rollout import RolloutStats

__all__ = [
    "Gold",
    "RewardResult",
    "codegrep_v1",
    "codegrep_v2",
    "codegrep_v3",
    "colgrep_file_f1",
    "colgrep_reward",
    "fbeta_file_reward",
    "sigma_v1",
]


@dataclass(frozen=True)
class Gold:
    """The label of one instance: gold files and (optional) gold line ranges, normalized."""

    files: frozenset[str]
    line_ranges: Mapping[str, tuple[LineRange, ...]] = field(default_factory=dict)
    #: Gold line-range entries that could not be read (a dataset defect worth logging: they
    #: lower the line-range term of v1/v2 for every rollout of the instance).
    dropped_line_ranges: int = 0

    @classmethod
    def of(
        cls, files: Iterable[str], line_ranges: object = None, *, roots: Iterable[str] = ()
    ) -> Gold:
        """Build a label from raw dataset values (paths normalized, ranges in any accepted shape).

        >>> sorted(Gold.of(["/testbed/a.py", "a.py", "./b.py"]).files)
        ['a.py', 'b.py']
        """
        root_list = tuple(roots)
        ranges, dropped = coerce_line_ranges(line_ranges, roots=root_list)
        return cls(normalize_paths(files, roots=root_list), ranges, dropped)


@dataclass(frozen=True)
class RewardResult:
    """A scalar reward, its named parts, and why it is 0 (or penalized) when a rule fired."""

    reward: float
    parts: Mapping[str, float] = field(default_factory=dict)
    reason: str | None = None


def _resolve(answer: RewardAnswer | ParsedAnswer | None) -> tuple[RewardAnswer | None, str | None]:
    if isinstance(answer, ParsedAnswer):
        return answer.answer, answer.error
    if answer is None:
        return None, "no answer"
    return answer, None


def _base_parts(
    answer: RewardAnswer | None, gold: Gold, beta: float, with_lr: bool
) -> dict[str, float]:
    files = answer.files if answer is not None else ()
    parts = {"fbeta_file": fbeta(files, gold.files, beta=beta)}
    if with_lr:
        ranges = answer.line_ranges if answer is not None else {}
        parts["fbeta_lr"] = fbeta_line_ranges(ranges, gold.line_ranges, beta=beta)
    return parts


def sigma_v1(cbar: float, *, saturation: float = 4.0) -> float:
    """v1's reward-layer efficiency scale σ(c̄) = 1 / max(1, c̄ / 4)."""
    if not saturation > 0:
        raise ValueError(f"saturation must be > 0, got {saturation}")
    return 1.0 / max(1.0, cbar / saturation)


def codegrep_v1(
    answer: RewardAnswer | ParsedAnswer | None,
    gold: Gold,
    stats: RolloutStats,
    *,
    beta: float = 0.5,
    saturation: float = 4.0,
) -> RewardResult:
    """CodeGrep v1: R = ½(Fβ_file + Fβ_lr) · 1/max(1, c̄/4) (reward-layer efficiency).

    The paper's lesson: this scale distorts the sign structure of group advantages (KL 0.31 vs
    0.09 for v2). Kept for reproduction and ablations.
    """
    ans, error = _resolve(answer)
    parts = _base_parts(ans, gold, beta, with_lr=True)
    parts["cbar"] = stats.cbar
    parts["sigma"] = sigma_v1(stats.cbar, saturation=saturation)
    if ans is None:
        return RewardResult(0.0, parts, error)
    reward = 0.5 * (parts["fbeta_file"] + parts["fbeta_lr"]) * parts["sigma"]
    return RewardResult(reward, parts)


def _masked(parts: dict[str, float], value: float, stats: RolloutStats) -> RewardResult:
    parts["cbar"] = stats.cbar
    if stats.cbar > 0:
        return RewardResult(value, parts)
    return RewardResult(0.0, parts, "degenerate rollout: no tool call (c̄ = 0)")


def codegrep_v2(
    answer: RewardAnswer | ParsedAnswer | None,
    gold: Gold,
    stats: RolloutStats,
    *,
    beta: float = 0.5,
) -> RewardResult:
    """CodeGrep v2: R = ½(Fβ_file + Fβ_lr) · 1[c̄ > 0]; efficiency moves to the advantage."""
    ans, error = _resolve(answer)
    parts = _base_parts(ans, gold, beta, with_lr=True)
    if ans is None:
        parts["cbar"] = stats.cbar
        return RewardResult(0.0, parts, error)
    return _masked(parts, 0.5 * (parts["fbeta_file"] + parts["fbeta_lr"]), stats)


def codegrep_v3(
    answer: RewardAnswer | ParsedAnswer | None,
    gold: Gold,
    stats: RolloutStats,
    *,
    beta: float = 0.5,
) -> RewardResult:
    """CodeGrep v3 (the paper's final design): R = Fβ_file · 1[c̄ > 0], line ranges ignored.

    >>> from grpo_rewards import parse_answer
    >>> gold = Gold.of(["config.py"])
    >>> ans = parse_answer('{"files": ["config.py", "main.py"]}')
    >>> round(codegrep_v3(ans, gold, RolloutStats(turns=3, tool_calls=6)).reward, 4)
    0.5556
    >>> codegrep_v3(ans, gold, RolloutStats(turns=1, tool_calls=0)).reason
    'degenerate rollout: no tool call (c̄ = 0)'
    """
    ans, error = _resolve(answer)
    parts = _base_parts(ans, gold, beta, with_lr=False)
    if ans is None:
        parts["cbar"] = stats.cbar
        return RewardResult(0.0, parts, error)
    return _masked(parts, parts["fbeta_file"], stats)


def fbeta_file_reward(
    answer: RewardAnswer | ParsedAnswer | None,
    gold: Gold,
    stats: RolloutStats | None = None,
    *,
    beta: float = 0.5,
) -> RewardResult:
    """Plain file-level F-beta, no mask: for evaluation, or trainers without rollout statistics."""
    ans, error = _resolve(answer)
    parts = _base_parts(ans, gold, beta, with_lr=False)
    if ans is None:
        return RewardResult(0.0, parts, error)
    return RewardResult(parts["fbeta_file"], parts)


# ---------------------------------------------------------------- colgrep (section 4.2)


def colgrep_reward(
    task_reward: float,
    *,
    turns: int,
    searched: bool,
    submitted: bool,
    t0: int = 2,
    lam: float = 0.01,
    p_max: float = 0.08,
    format_penalty: float = -0.5,
) -> float:
    """colgrep eq. 2: R = R_task · [1 − min(p_max, λ·max(0, T − T0))] + R_format.

    R_format is `format_penalty` (−0.5) when the rollout performed no search action or did not
    submit; 0 otherwise. `p_max=0` turns the turn penalty off (colgrep's non-efficiency runs).

    >>> colgrep_reward(1.0, turns=5, searched=True, submitted=True)
    0.97
    >>> colgrep_reward(1.0, turns=30, searched=True, submitted=True)
    0.92
    """
    penalty = min(p_max, lam * max(0, turns - t0))
    r_format = 0.0 if (searched and submitted) else format_penalty
    return task_reward * (1.0 - penalty) + r_format


def colgrep_file_f1(
    answer: RewardAnswer | ParsedAnswer | None,
    gold: Gold,
    stats: RolloutStats,
    *,
    beta: float = 1.0,
    t0: int = 2,
    lam: float = 0.01,
    p_max: float = 0.08,
    format_penalty: float = -0.5,
) -> RewardResult:
    """colgrep's file-F1 run with the turn penalty: R_task = file F1; a search = a tool call.

    A malformed answer counts as "failed to submit": R_task = 0 and the format penalty applies.
    """
    ans, error = _resolve(answer)
    parts = _base_parts(ans, gold, beta, with_lr=False)
    searched = stats.tool_calls > 0
    reward = colgrep_reward(
        parts["fbeta_file"],
        turns=stats.turns,
        searched=searched,
        submitted=ans is not None,
        t0=t0,
        lam=lam,
        p_max=p_max,
        format_penalty=format_penalty,
    )
    parts["turn_factor"] = 1.0 - min(p_max, lam * max(0, stats.turns - t0))
    reason = error if ans is None else (None if searched else "no search action")
    return RewardResult(reward, parts, reason)
