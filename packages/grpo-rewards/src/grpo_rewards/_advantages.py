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
"""

from __future__ import annotations

import importlib
import math
import numbers
from collections.abc import Hashable, Sequence
from typing import Any, Literal

from grpo_rewards._rollout import RolloutStats
from grpo_rewards.errors import BatchShapeError, InvalidRolloutError, MissingFrameworkError

__all__ = [
    "Scale",
    "degenerate_mask",
    "dr_grpo_advantages",
    "efficiency_scale",
    "filter_informative_groups",
    "group_advantages",
    "grpo_advantages",
    "informative_groups",
    "scale_by_efficiency",
]

Scale = Literal["group", "batch", "none"]
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


def efficiency_scale(cbar: float, *, saturation: float = 4.0) -> float:
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
    saturation: float = 4.0,
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
