"""Group-relative advantages and the advantage-layer efficiency scale (CodeGrep v2/v3).

- GRPO: A_i = (r_i − mean_g) / (std_g + ε), std over the rollout's group.
- Dr. GRPO: A_i = r_i − mean_g (no std normalization; colgrep and CodeScout train this way).
- batch scaling: A_i = (r_i − mean_g) / (std_batch + ε) (TRL/ms-swift `scale_rewards="batch"`).
- CodeGrep's efficiency discount at the advantage layer: A_i · s(c̄_i), s(c̄) = sqrt(min(c̄/4, 1)).
  s is in [0, 1], so it shrinks a rollout's step without flipping its sign or re-ranking the
  rewards of the group — the paper's reason for moving efficiency out of the reward.
- Masks drop degenerate rollouts from the group statistics (their advantage is 0); `None`
  rewards are treated the same way, as TRL does with a `None` from a reward function.
- DAPO-style dynamic sampling: groups whose rewards are all equal carry no gradient; find them.

The std is the sample std (ddof = 1) like `torch.Tensor.std`, which TRL and ms-swift use; pass
`ddof=0` for the population std. Pure Python by default; `group_advantages(...,
backend="numpy")` vectorizes large batches when numpy is installed (`pip install
grpo-rewards[numpy]`). No torch here: a trainer hook calls these functions and moves the result
to its tensors (codegrep-model's ms-swift plugin has such a GRPOTrainer subclass; the
training-tier test shows a TRL one in a few lines).

The advantage scale (`advantage_scale`, `advantage_scales`, `advantage_factor`,
`scale_advantages_for`) is defined here once. CodeGrep v2/v3 keep the reward clean and move the
efficiency discount to the advantage, A_i · s(c̄_i) (`efficiency_scale`, the formula); a reward
whose `RewardSpec.efficiency_layer` is anything but "advantage" (v1, whose σ(c̄) is in the
reward already, or any other) trains with factor 1.0, and so does a trainer whose reward
functions name no known reward (`reward=None`). Every caller reads it from here:
`scale_advantages_for` (a TRL or hand-written trainer), verl's `compute_score`
(`advantage_factor`), and codegrep-model's ms-swift GRPOTrainer, which calls `advantage_scales`
on the batch's `rollout_infos` and multiplies its tensor by each `factor`.

A rollout in which no call ran has c̄ = 0 and so factor 0 under v2/v3. A rollout that called
tools and gave no answer keeps A_i · s(c̄) (its reward 0 below a group that did better trains as
a negative advantage: the paper's penalty for not answering); `zero_unanswered=True` zeroes it
instead, which is not the paper's rule. A rollout whose `rollout_infos` hold no tool-call counts
is a setup error (`MissingRolloutStatsError`), not c̄ = 0: a trainer that silently zeroed every
advantage would train nothing and say nothing.
"""

from __future__ import annotations

import importlib
import math
import numbers
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from grpo_rewards._rollout import RolloutStats
from grpo_rewards._rollout_infos import RolloutInfo
from grpo_rewards._spec import reward_spec
from grpo_rewards.errors import (
    BatchShapeError,
    InvalidRolloutError,
    MissingFrameworkError,
    MissingRolloutStatsError,
)

__all__ = [
    "EFFICIENCY_SATURATION",
    "AdvantageScale",
    "Scale",
    "advantage_factor",
    "advantage_factors",
    "advantage_scale",
    "advantage_scales",
    "degenerate_mask",
    "dr_grpo_advantages",
    "efficiency_scale",
    "filter_informative_groups",
    "group_advantages",
    "grpo_advantages",
    "informative_groups",
    "scale_advantages_for",
    "scale_by_efficiency",
]

Scale = Literal["group", "batch", "none"]
#: The c̄ at which s(c̄) reaches 1 (the paper's 4 calls per turn): the one default of every
#: function that takes `saturation`.
EFFICIENCY_SATURATION = 4.0
Backend = Literal["python", "numpy"]


def _group_keys(
    n: int, group_size: int | None, group_ids: Sequence[Hashable] | None
) -> list[Hashable]:
    if (group_size is None) == (group_ids is None):
        raise BatchShapeError("pass exactly one of group_size= or group_ids=")
    if group_ids is not None:
        if len(group_ids) != n:
            raise BatchShapeError(f"{len(group_ids)} group ids for {n} rewards")
        return list(group_ids)
    assert group_size is not None
    if group_size < 1 or n % group_size:
        raise BatchShapeError(f"{n} rewards do not split into groups of {group_size}")
    return [i // group_size for i in range(n)]


def _valid(rewards: Sequence[float | None], mask: Sequence[bool] | None) -> list[float | None]:
    if mask is not None and len(mask) != len(rewards):
        raise BatchShapeError(f"{len(mask)} mask entries for {len(rewards)} rewards")
    out: list[float | None] = []
    for i, r in enumerate(rewards):
        if r is None:
            out.append(None)
            continue
        if isinstance(r, bool) or not isinstance(r, numbers.Real):
            raise TypeError(f"reward {i} is not a number: {r!r}")
        if math.isinf(r):
            raise InvalidRolloutError(
                f"reward {i} is {r}: it would make its group's advantages NaN"
            )
        keep = not math.isnan(r) and (mask is None or mask[i])
        out.append(float(r) if keep else None)
    return out


def _check_saturation(saturation: float) -> None:
    if not saturation > 0:
        raise ValueError(f"saturation must be > 0, got {saturation}")


def _mean_std(values: list[float], ddof: int) -> tuple[float, float]:
    n = len(values)
    mean = math.fsum(values) / n
    if n - ddof <= 0:
        return mean, 0.0
    var = math.fsum((v - mean) ** 2 for v in values) / (n - ddof)
    return mean, math.sqrt(var)


def group_advantages(
    rewards: Sequence[float | None],
    *,
    group_size: int | None = None,
    group_ids: Sequence[Hashable] | None = None,
    scale: Scale = "group",
    eps: float = 1e-4,
    ddof: int = 1,
    mask: Sequence[bool] | None = None,
    backend: Backend = "python",
) -> list[float]:
    """Group-relative advantages, one per rollout, in input order.

    Groups are either consecutive blocks of `group_size` (how TRL and ms-swift lay out
    `num_generations`) or given by `group_ids`. Rollouts with `mask[i] = False` or a `None`/NaN
    reward are left out of the statistics and get advantage 0.

    >>> [round(a, 4) for a in group_advantages([1.0, 0.0, 0.5, 0.5], group_size=2)]
    [0.707, -0.707, 0.0, 0.0]
    >>> group_advantages([1.0, 0.0, 0.5, 0.5], group_size=2, scale="none")
    [0.5, -0.5, 0.0, 0.0]
    """
    if scale not in ("group", "batch", "none"):
        raise ValueError(f"scale must be 'group', 'batch' or 'none', got {scale!r}")
    keys = _group_keys(len(rewards), group_size, group_ids)
    values = _valid(rewards, mask)
    if backend == "numpy":
        return _group_advantages_numpy(values, keys, scale, eps, ddof)
    if backend != "python":
        raise ValueError(f"backend must be 'python' or 'numpy', got {backend!r}")
    members: dict[Hashable, list[float]] = {}
    for k, v in zip(keys, values, strict=True):
        if v is not None:
            members.setdefault(k, []).append(v)
    stats = {k: _mean_std(vs, ddof) for k, vs in members.items()}
    batch_std = 1.0
    if scale == "batch":
        every = [v for v in values if v is not None]
        batch_std = _mean_std(every, ddof)[1] if every else 0.0
    out: list[float] = []
    for k, v in zip(keys, values, strict=True):
        if v is None:
            out.append(0.0)
            continue
        mean, std = stats[k]
        centred = v - mean
        if scale == "group":
            out.append(centred / (std + eps))
        elif scale == "batch":
            out.append(centred / (batch_std + eps))
        else:
            out.append(centred)
    return out


def _numpy() -> Any:
    try:
        return importlib.import_module("numpy")
    except ImportError as exc:
        raise MissingFrameworkError(
            "backend='numpy' needs numpy: pip install 'grpo-rewards[numpy]'"
        ) from exc


def _group_advantages_numpy(
    values: list[float | None], keys: list[Hashable], scale: Scale, eps: float, ddof: int
) -> list[float]:
    np = _numpy()
    r = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    valid = ~np.isnan(r)
    index: dict[Hashable, int] = {}
    inverse = np.array([index.setdefault(k, len(index)) for k in keys], dtype=np.int64)
    n_groups = len(index)
    rz = np.where(valid, r, 0.0)
    counts = np.bincount(inverse, weights=valid.astype(np.float64), minlength=n_groups)
    sums = np.bincount(inverse, weights=rz, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)
        centred = np.where(valid, r - means[inverse], 0.0)
        sq = np.bincount(inverse, weights=centred * centred, minlength=n_groups)
        dof = counts - ddof
        stds = np.where(dof > 0, np.sqrt(sq / np.where(dof > 0, dof, 1)), 0.0)
    if scale == "group":
        adv = centred / (stds[inverse] + eps)
    elif scale == "batch":
        every = r[valid]
        batch_std = float(np.std(every, ddof=ddof)) if every.size - ddof > 0 else 0.0
        adv = centred / (batch_std + eps)
    else:
        adv = centred
    return [float(a) for a in np.where(valid, adv, 0.0)]


def grpo_advantages(
    rewards: Sequence[float | None],
    *,
    group_size: int | None = None,
    group_ids: Sequence[Hashable] | None = None,
    eps: float = 1e-4,
    mask: Sequence[bool] | None = None,
) -> list[float]:
    """GRPO (Shao et al., 2024): (r − mean_g) / (std_g + ε)."""
    return group_advantages(
        rewards, group_size=group_size, group_ids=group_ids, scale="group", eps=eps, mask=mask
    )


def dr_grpo_advantages(
    rewards: Sequence[float | None],
    *,
    group_size: int | None = None,
    group_ids: Sequence[Hashable] | None = None,
    mask: Sequence[bool] | None = None,
) -> list[float]:
    """Dr. GRPO (Liu et al., 2025): r − mean_g, no std normalization."""
    return group_advantages(
        rewards, group_size=group_size, group_ids=group_ids, scale="none", mask=mask
    )


def efficiency_scale(cbar: float, *, saturation: float = EFFICIENCY_SATURATION) -> float:
    """CodeGrep's advantage-layer discount s(c̄) = sqrt(min(c̄ / 4, 1)).

    >>> efficiency_scale(1.0), efficiency_scale(4.0), efficiency_scale(8.0)
    (0.5, 1.0, 1.0)
    """
    if cbar < 0 or math.isnan(cbar):
        raise InvalidRolloutError(f"c̄ must be >= 0, got {cbar}")
    _check_saturation(saturation)
    return math.sqrt(min(cbar / saturation, 1.0))


def scale_by_efficiency(
    advantages: Sequence[float],
    cbars: Sequence[float | RolloutStats],
    *,
    saturation: float = EFFICIENCY_SATURATION,
) -> list[float]:
    """A_i^v2 = A_i · s(c̄_i); `cbars` may be numbers or `RolloutStats`."""
    if len(advantages) != len(cbars):
        raise BatchShapeError(f"{len(advantages)} advantages for {len(cbars)} rollouts")
    out: list[float] = []
    for a, c in zip(advantages, cbars, strict=True):
        cbar = c.cbar if isinstance(c, RolloutStats) else float(c)
        out.append(a * efficiency_scale(cbar, saturation=saturation))
    return out


def degenerate_mask(
    stats: Sequence[RolloutStats], *, truncated: Sequence[bool] | None = None
) -> list[bool]:
    """True for rollouts that may enter the group statistics: c̄ > 0 and not truncated."""
    if truncated is not None and len(truncated) != len(stats):
        raise BatchShapeError(f"{len(truncated)} truncation flags for {len(stats)} rollouts")
    return [
        s.cbar > 0 and not (truncated is not None and truncated[i]) for i, s in enumerate(stats)
    ]


def informative_groups(
    rewards: Sequence[float | None],
    *,
    group_size: int | None = None,
    group_ids: Sequence[Hashable] | None = None,
    atol: float = 0.0,
    mask: Sequence[bool] | None = None,
) -> list[bool]:
    """Per rollout: does its group have any reward spread (max − min > atol)?

    A group whose valid rewards are all equal has zero advantage everywhere (DAPO's dynamic
    sampling drops and re-samples it); a group with fewer than two valid rollouts likewise.
    """
    keys = _group_keys(len(rewards), group_size, group_ids)
    values = _valid(rewards, mask)
    spread: dict[Hashable, tuple[float, float]] = {}
    for k, v in zip(keys, values, strict=True):
        if v is None:
            continue
        lo, hi = spread.get(k, (v, v))
        spread[k] = (min(lo, v), max(hi, v))
    return [k in spread and spread[k][1] - spread[k][0] > atol for k in keys]


def filter_informative_groups(
    rewards: Sequence[float | None],
    *,
    group_size: int | None = None,
    group_ids: Sequence[Hashable] | None = None,
    atol: float = 0.0,
    mask: Sequence[bool] | None = None,
) -> list[int]:
    """Indices of the rollouts to keep after zero-advantage group filtering."""
    keep = informative_groups(
        rewards, group_size=group_size, group_ids=group_ids, atol=atol, mask=mask
    )
    return [i for i, k in enumerate(keep) if k]


# ------------------------------------------------------ the advantage scale: the rule, once


@dataclass(frozen=True)
class AdvantageScale:
    """The factor one rollout's group-normalized advantage is multiplied by, and why."""

    #: T: assistant turns, the answer turn included.
    turns: int
    #: C_total: the calls that ran.
    tool_calls: int
    #: c̄ = C_total / T.
    cbar: float
    #: s(c̄) = √min(c̄ / saturation, 1).
    efficiency: float
    #: What the advantage is multiplied by: `efficiency` for a reward that declares the
    #: advantage-layer term (v2, v3), 1.0 for any other (v1) or for no known reward.
    factor: float
    #: Why the rollout is degenerate ("no tool call ran", "no answer[: why]"), or None.
    degenerate: str | None = None


def _scaled(reward: str | None) -> bool:
    """Whether reward `reward` carries its efficiency term in the advantage (the one test)."""
    return reward is not None and reward_spec(reward).efficiency_layer == "advantage"


def advantage_factor(
    name: str | None, cbar: float | RolloutStats, *, saturation: float = EFFICIENCY_SATURATION
) -> float:
    """The factor reward `name` puts on one rollout's advantage: s(c̄) or 1.0.

    >>> advantage_factor("codegrep_v2", 1.0), advantage_factor("codegrep_v1", 1.0)
    (0.5, 1.0)
    """
    value = cbar.cbar if isinstance(cbar, RolloutStats) else float(cbar)
    efficiency = efficiency_scale(value, saturation=saturation)
    return efficiency if _scaled(name) else 1.0


def advantage_factors(
    name: str | None,
    cbars: Sequence[float | RolloutStats],
    *,
    saturation: float = EFFICIENCY_SATURATION,
) -> list[float]:
    """`advantage_factor` per rollout."""
    return [advantage_factor(name, c, saturation=saturation) for c in cbars]


def scale_advantages_for(
    name: str | None,
    advantages: Sequence[float],
    cbars: Sequence[float | RolloutStats],
    *,
    saturation: float = EFFICIENCY_SATURATION,
) -> list[float]:
    """The advantages reward `name` trains with: A_i · s(c̄_i) for v2/v3, A_i unchanged otherwise.

    Every rollout keeps its advantage, whatever its answer: one that called tools and gave no
    answer scored 0, sits below a group that did better, and gets the negative A_i · s(c̄_i) the
    formula gives it.
    """
    if len(advantages) != len(cbars):
        raise BatchShapeError(f"{len(advantages)} advantages for {len(cbars)} rollouts")
    factors = advantage_factors(name, cbars, saturation=saturation)
    return [a * f for a, f in zip(advantages, factors, strict=True)]


def _degenerate(stats: RolloutStats, info: RolloutInfo) -> str | None:
    if stats.tool_calls == 0:
        return "no tool call ran"
    parsed = info.answer
    if parsed is None or parsed.answer is not None:
        return None
    why = parsed.error if parsed.error and parsed.error != "no answer" else None
    return f"no answer: {why}" if why else "no answer"


def advantage_scale(
    info: RolloutInfo | Mapping[str, object] | None,
    *,
    reward: str | None = "codegrep_v3",
    saturation: float = EFFICIENCY_SATURATION,
    zero_unanswered: bool = False,
) -> AdvantageScale:
    """The scale of one rollout trained with `reward`, from its `RolloutInfo` (or the
    `rollout_infos` dict ms-swift carries it as); `reward=None`: factor 1.0. The tool-call
    counts are needed only where they decide the factor (v2, v3, `zero_unanswered`): a rollout
    without them raises `MissingRolloutStatsError` there, and has factor 1.0 otherwise.

    >>> info = {"num_turns": 4, "tool_calls_per_turn": [2, 2, 0, 0]}
    >>> advantage_scale(info).factor, advantage_scale(info, reward="codegrep_v1").factor
    (0.5, 1.0)
    >>> advantage_scale({"num_turns": 2, "tool_calls_per_turn": [0, 0]}).degenerate
    'no tool call ran'
    """
    record = info if isinstance(info, RolloutInfo) else RolloutInfo.from_infos(info)
    if record.tool_calls_per_turn is None and record.num_tool_calls is None:
        if not _scaled(reward) and not zero_unanswered:
            # a reward without the advantage-layer term (fbeta_file on a task without tools,
            # trained with no multi-turn scheduler) needs no counts: the factor is 1.0 whatever
            # they are, and none are made up (c̄ 0, efficiency 1.0: nothing is discounted)
            return AdvantageScale(
                turns=record.num_turns or 1, tool_calls=0, cbar=0.0, efficiency=1.0, factor=1.0
            )
        raise MissingRolloutStatsError(
            "rollout_infos holds no 'tool_calls_per_turn' or 'num_tool_calls': "
            "the advantage scale needs the rollout's tool-call counts"
        )
    stats = record.stats() or RolloutStats(turns=1, tool_calls=0)
    efficiency = efficiency_scale(stats.cbar, saturation=saturation)
    degenerate = _degenerate(stats, record)
    factor = efficiency if _scaled(reward) else 1.0
    if zero_unanswered and degenerate is not None and degenerate.startswith("no answer"):
        factor = 0.0
    return AdvantageScale(
        turns=stats.turns,
        tool_calls=stats.tool_calls,
        cbar=stats.cbar,
        efficiency=efficiency,
        factor=factor,
        degenerate=degenerate,
    )


def advantage_scales(
    infos: Iterable[RolloutInfo | Mapping[str, object] | None],
    *,
    reward: str | None,
    saturation: float = EFFICIENCY_SATURATION,
    zero_unanswered: bool = False,
) -> list[AdvantageScale]:
    """`advantage_scale` for each rollout of a batch, in order (what a GRPO trainer calls)."""
    return [
        advantage_scale(i, reward=reward, saturation=saturation, zero_unanswered=zero_unanswered)
        for i in infos
    ]
