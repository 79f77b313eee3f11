"""Advantages by hand, and the properties the CodeGrep paper relies on."""

from __future__ import annotations

import math

import pytest
from grpo_rewards import (
    RolloutStats,
    dr_grpo_advantages,
    filter_informative_groups,
    group_advantages,
    grpo_advantages,
    scale_by_efficiency,
)
from grpo_rewards._advantages import degenerate_mask, efficiency_scale, informative_groups
from grpo_rewards._rewards import sigma_v1
from grpo_rewards.errors import BatchShapeError, InvalidRolloutError
from hypothesis import given
from hypothesis import strategies as st

EPS = 1e-4


def test_grpo_by_hand() -> None:
    # group 1: mean 0.5, sample std sqrt(0.5); group 2: all equal -> 0
    adv = grpo_advantages([1.0, 0.0, 0.5, 0.5], group_size=2)
    s = math.sqrt(0.5)
    assert adv == pytest.approx([0.5 / (s + EPS), -0.5 / (s + EPS), 0.0, 0.0])


def test_population_std_on_request() -> None:
    adv = group_advantages([1.0, 0.0], group_size=2, ddof=0)
    assert adv == pytest.approx([0.5 / (0.5 + EPS), -0.5 / (0.5 + EPS)])


def test_dr_grpo_has_no_std() -> None:
    assert dr_grpo_advantages([1.0, 0.0, 0.2, 0.6], group_size=2) == pytest.approx(
        [0.5, -0.5, -0.2, 0.2]
    )


def test_batch_scaling_uses_the_batch_std() -> None:
    rewards = [1.0, 0.0, 0.5, 0.5]
    batch_std = math.sqrt((0.25 + 0.25) / 3)
    adv = group_advantages(rewards, group_size=2, scale="batch")
    assert adv == pytest.approx([0.5 / (batch_std + EPS), -0.5 / (batch_std + EPS), 0.0, 0.0])


def test_group_ids_need_not_be_contiguous() -> None:
    adv = dr_grpo_advantages([1.0, 0.2, 0.0, 0.6], group_ids=["x", "y", "x", "y"])
    assert adv == pytest.approx([0.5, -0.2, -0.5, 0.2])


def test_masked_and_none_rewards_leave_the_statistics() -> None:
    masked = grpo_advantages([1.0, 0.0, 0.7], group_size=3, mask=[True, True, False])
    skipped = grpo_advantages([1.0, 0.0, None], group_size=3)
    alone = grpo_advantages([1.0, 0.0], group_size=2)
    assert masked == pytest.approx([*alone, 0.0])
    assert skipped == pytest.approx([*alone, 0.0])


def test_degenerate_mask() -> None:
    stats = [RolloutStats(2, 3), RolloutStats(1, 0), RolloutStats(3, 6)]
    assert degenerate_mask(stats) == [True, False, True]
    assert degenerate_mask(stats, truncated=[False, False, True]) == [True, False, False]


def test_shape_errors() -> None:
    with pytest.raises(BatchShapeError):
        grpo_advantages([1.0, 0.0, 1.0], group_size=2)
    with pytest.raises(BatchShapeError):
        grpo_advantages([1.0, 0.0], group_size=2, group_ids=[0, 0])
    with pytest.raises(BatchShapeError):
        scale_by_efficiency([1.0], [1.0, 2.0])


def test_bad_rewards_raise_naming_the_rollout() -> None:
    with pytest.raises(InvalidRolloutError, match="reward 1 is inf"):
        grpo_advantages([0.0, math.inf], group_size=2)
    with pytest.raises(TypeError, match="reward 0 is not a number"):
        grpo_advantages(["0.5", 0.0], group_size=2)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="saturation"):
        efficiency_scale(1.0, saturation=0.0)
    with pytest.raises(ValueError, match="saturation"):
        sigma_v1(1.0, saturation=0.0)


def test_efficiency_scale_paper_values() -> None:
    # s(c̄) = sqrt(min(c̄/4, 1)); the ms-swift smoke run logged 0.707 and 0.866 for c̄ = 2, 3
    assert efficiency_scale(2.0) == pytest.approx(0.70710678)
    assert efficiency_scale(3.0) == pytest.approx(0.8660254)
    assert efficiency_scale(0.0) == 0.0
    assert efficiency_scale(6.0) == 1.0  # the full 24-call budget is not discounted
    stats = [RolloutStats(4, 4), RolloutStats(4, 24)]
    assert scale_by_efficiency([2.0, -2.0], stats) == pytest.approx([1.0, -2.0])


def test_zero_advantage_group_filtering() -> None:
    rewards = [1.0, 1.0, 0.0, 1.0, 0.3, None]
    assert informative_groups(rewards, group_size=2) == [False, False, True, True, False, False]
    assert filter_informative_groups(rewards, group_size=2) == [2, 3]


def test_numpy_backend_matches_python() -> None:
    pytest.importorskip("numpy", reason="numpy is optional (grpo-rewards[numpy])")
    rewards = [0.1 * (i % 7) for i in range(64)]
    rewards[5] = None  # type: ignore[call-overload]
    for scale in ("group", "batch", "none"):
        py = group_advantages(rewards, group_size=8, scale=scale)  # type: ignore[arg-type]
        np_ = group_advantages(rewards, group_size=8, scale=scale, backend="numpy")  # type: ignore[arg-type]
        assert np_ == pytest.approx(py, abs=1e-12)


rewards_st = st.lists(st.floats(min_value=-1.0, max_value=2.0), min_size=2, max_size=8)


@given(st.lists(rewards_st, min_size=1, max_size=4), st.sampled_from(["group", "batch", "none"]))
def test_group_advantages_have_zero_mean(groups: list[list[float]], scale: str) -> None:
    flat = [r for g in groups for r in g]
    ids = [i for i, g in enumerate(groups) for _ in g]
    adv = group_advantages(flat, group_ids=ids, scale=scale)  # type: ignore[arg-type]
    for gid in range(len(groups)):
        members = [a for a, i in zip(adv, ids, strict=True) if i == gid]
        assert abs(math.fsum(members)) <= 1e-9 * max(1.0, max(abs(a) for a in members))


@given(
    st.lists(st.floats(min_value=-50.0, max_value=50.0), min_size=1, max_size=16),
    st.lists(st.floats(min_value=0.0, max_value=8.0), min_size=16, max_size=16),
)
def test_efficiency_scale_never_flips_a_sign(adv: list[float], cbars: list[float]) -> None:
    scaled = scale_by_efficiency(adv, cbars[: len(adv)])
    for a, s in zip(adv, scaled, strict=True):
        assert a * s >= 0.0
        assert abs(s) <= abs(a)


@given(
    rewards_st,
    st.lists(st.floats(min_value=4.0, max_value=8.0), min_size=8, max_size=8),
)
def test_efficiency_scale_keeps_group_order_when_cbar_saturates(
    rewards: list[float], cbars: list[float]
) -> None:
    adv = grpo_advantages(rewards, group_size=len(rewards))
    scaled = scale_by_efficiency(adv, cbars[: len(rewards)])
    order = sorted(range(len(adv)), key=lambda i: adv[i])
    assert [scaled[i] for i in order] == sorted(scaled)
