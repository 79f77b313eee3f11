"""What each adapter reward declares: which layer carries its efficiency term, its mask, its label.

CodeGrep's three designs differ less in their scores than in where the efficiency signal lives:
v1 scales the reward (σ(c̄) = 1/max(1, c̄/4)); v2 and v3 keep the reward clean (only a hard
mask 1[c̄ > 0] on degenerate rollouts) and scale the GRPO advantage by s(c̄) = √min(c̄/4, 1).
A trainer hook must therefore ask the reward whether to scale advantages; scaling v1's
advantages as well would apply the efficiency discount twice. `advantage_factors` is that
question answered per rollout: s(c̄) for a reward that declares the advantage layer, 1.0 for
every other one. Not for scoring: the rewards are in `_rewards`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from grpo_rewards._advantages import efficiency_scale
from grpo_rewards._rollout import RolloutStats
from grpo_rewards.errors import BatchShapeError, UnknownRewardError

__all__ = [
    "REWARD_SPECS",
    "EfficiencyLayer",
    "RewardSpec",
    "advantage_factor",
    "advantage_factors",
    "reward_spec",
    "scale_advantages_for",
]

#: Where a reward's efficiency term lives: in the reward itself, in the advantage, or nowhere.
EfficiencyLayer = Literal["reward", "advantage", "none"]


@dataclass(frozen=True)
class RewardSpec:
    """One reward's declaration; the adapters and trainer hooks act on it, not on its name."""

    name: str
    #: "advantage": multiply the group-normalized advantage by s(c̄) (v2, v3). "reward": the
    #: efficiency term is inside the reward (v1's σ, colgrep's turn penalty, CodeScout's turn
    #: bonus); the advantage is left alone. "none": no efficiency term.
    efficiency_layer: EfficiencyLayer
    #: The reward is 0 for a degenerate rollout (no tool call, c̄ = 0): the hard mask 1[c̄ > 0].
    masks_degenerate: bool
    #: The reward reads gold line ranges (the `gold_line_ranges` column).
    uses_line_ranges: bool
    #: The definition, for logs and documentation.
    formula: str


#: Every adapter reward's declaration, by name (the keys are `ADAPTER_REWARDS`).
REWARD_SPECS: Mapping[str, RewardSpec] = MappingProxyType(
    {
        s.name: s
        for s in (
            RewardSpec("codegrep_v1", "reward", False, True, "½(Fβ_file + Fβ_lr) · 1/max(1, c̄/4)"),
            RewardSpec(
                "codegrep_v2",
                "advantage",
                True,
                True,
                "½(Fβ_file + Fβ_lr) · 1[c̄ > 0]; A_i · √min(c̄_i/4, 1)",
            ),
            RewardSpec(
                "codegrep_v3", "advantage", True, False, "Fβ_file · 1[c̄ > 0]; A_i · √min(c̄_i/4, 1)"
            ),
            RewardSpec(
                "colgrep_file_f1",
                "reward",
                False,
                False,
                "F1_file · [1 − min(p_max, λ·max(0, T − T0))] + R_format",
            ),
            RewardSpec("fbeta_file", "none", False, False, "Fβ_file"),
            RewardSpec(
                "codescout_multilevel",
                "reward",
                False,
                False,
                "w_f·F1_file + w_m·F1_module + w_e·F1_entity (+ turn bonus)",
            ),
        )
    }
)


def reward_spec(name: str) -> RewardSpec:
    """The declaration of the adapter reward `name`; `UnknownRewardError` for any other name.

    >>> reward_spec("codegrep_v1").efficiency_layer, reward_spec("codegrep_v3").efficiency_layer
    ('reward', 'advantage')
    """
    try:
        return REWARD_SPECS[name]
    except (KeyError, TypeError):
        raise UnknownRewardError(
            f"unknown reward {name!r}; known: {', '.join(REWARD_SPECS)}"
        ) from None


def _cbar(value: float | RolloutStats) -> float:
    return value.cbar if isinstance(value, RolloutStats) else float(value)


def advantage_factor(name: str, cbar: float | RolloutStats, *, saturation: float = 4.0) -> float:
    """The factor reward `name` puts on one rollout's advantage: s(c̄) or 1.0.

    >>> advantage_factor("codegrep_v2", 1.0), advantage_factor("codegrep_v1", 1.0)
    (0.5, 1.0)
    """
    if reward_spec(name).efficiency_layer != "advantage":
        return 1.0
    return efficiency_scale(_cbar(cbar), saturation=saturation)


def advantage_factors(
    name: str, cbars: Sequence[float | RolloutStats], *, saturation: float = 4.0
) -> list[float]:
    """`advantage_factor` per rollout."""
    return [advantage_factor(name, c, saturation=saturation) for c in cbars]


def scale_advantages_for(
    name: str,
    advantages: Sequence[float],
    cbars: Sequence[float | RolloutStats],
    *,
    saturation: float = 4.0,
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
