"""The reward registry: each reward declared once, and what acts on a reward by its name.

A `RewardSpec` says everything the adapters and trainer hooks need to know about a reward: its
function, the label it reads (gold files, or CodeScout's `file_changes`), whether it reads the
rollout statistics and what it becomes without them, which layer carries its efficiency term,
and the class name of its ms-swift ORM. `REWARD_SPECS` is the one table of them; the ms-swift
ORMs (`grpo_rewards.swift_orm.SWIFT_ORMS`), `TRLReward`, verl's `compute_score`, the
missing-statistics warning and `REWARDS` are all read from it, so a reward added here (or with
`register_reward`) reaches every adapter and no second table can forget it.

CodeGrep's three designs differ less in their scores than in where the efficiency signal lives:
v1 scales the reward (σ(c̄) = 1/max(1, c̄/4)); v2 and v3 keep the reward clean (only a hard
mask 1[c̄ > 0] on degenerate rollouts) and scale the GRPO advantage by s(c̄) = √min(c̄/4, 1).
A trainer hook must therefore ask the reward whether to scale advantages; scaling v1's
advantages as well would apply the efficiency discount twice. `advantage_factors` is that
question answered per rollout (`grpo_rewards._advantages`, the rule's one home): s(c̄) for
a reward that declares the advantage layer, 1.0 for every other one. The reward functions
themselves are in `_rewards`; this module does not score beyond dispatching by name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from grpo_rewards._answer import ParsedAnswer, parse_answer
from grpo_rewards._codescout import codescout_multilevel
from grpo_rewards._rewards import (
    Gold,
    RewardResult,
    codegrep_v1,
    codegrep_v2,
    codegrep_v3,
    colgrep_file_f1,
    fbeta_file_reward,
)
from grpo_rewards._rollout import RolloutStats
from grpo_rewards.errors import (
    BatchShapeError,
    GrpoRewardsError,
    InvalidRolloutError,
    MissingRolloutStatsError,
    UnknownRewardError,
)

__all__ = [
    "REWARDS",
    "REWARD_SPECS",
    "CountsNeed",
    "EfficiencyLayer",
    "LabelKind",
    "RewardSpec",
    "register_reward",
    "reward_spec",
    "score_batch",
    "score_completion",
    "score_parsed",
]

#: Where a reward's efficiency term lives: in the reward itself, in the advantage, or nowhere.
EfficiencyLayer = Literal["reward", "advantage", "none"]
#: The label a reward scores against: gold files (+ line ranges) read from the JSON answer, or
#: CodeScout's `file_changes` read from the `localization_finish` call.
LabelKind = Literal["gold_files", "file_changes"]
#: Whether a reward reads the rollout statistics (T, C_total): always, never, or only when its
#: `turn_bonus_range` parameter is set (CodeScout).
CountsNeed = Literal["always", "never", "turn_bonus"]


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
    #: The reward function. For a "gold_files" reward: `f(parsed: ParsedAnswer, gold: Gold,
    #: stats: RolloutStats | None, **params) -> RewardResult`; for "file_changes":
    #: `codescout_multilevel`'s signature.
    function: Callable[..., RewardResult] = field(kw_only=True)
    label: LabelKind = field(default="gold_files", kw_only=True)
    counts: CountsNeed = field(default="always", kw_only=True)
    #: What the reward becomes when scored without statistics (T = 1, C = 0, so c̄ = 0): the
    #: adapters' missing-statistics warning says it. Required unless `counts` is "never".
    without_counts: str = field(default="", kw_only=True)
    #: The ms-swift ORM class name (`grpo_rewards.swift_orm`); default: the name in CamelCase.
    orm_class: str = field(default="", kw_only=True)

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise GrpoRewardsError(f"a reward name must be an identifier, got {self.name!r}")
        if self.counts != "never" and not self.without_counts.strip():
            raise GrpoRewardsError(
                f"reward {self.name!r} reads rollout statistics but its spec does not say what "
                "it becomes without them (without_counts): the adapters' warning needs it"
            )
        if not self.orm_class:
            camel = "".join(part.capitalize() for part in self.name.split("_"))
            object.__setattr__(self, "orm_class", f"{camel}ORM")

    def needs_counts(self, params: Mapping[str, object]) -> bool:
        """Whether scoring with `params` reads the rollout statistics."""
        if self.counts == "turn_bonus":
            return params.get("turn_bonus_range") is not None
        return self.counts == "always"


_COUNTS_ZERO_MASK = "1[c̄ > 0] = 0, so every rollout scores 0.0, a perfect answer included"

_SPECS: dict[str, RewardSpec] = {
    s.name: s
    for s in (
        RewardSpec(
            "codegrep_v1",
            "reward",
            False,
            True,
            "½(Fβ_file + Fβ_lr) · 1/max(1, c̄/4)",
            function=codegrep_v1,
            without_counts="σ(c̄) = 1, so the reward's efficiency term is off",
            orm_class="CodeGrepV1ORM",
        ),
        RewardSpec(
            "codegrep_v2",
            "advantage",
            True,
            True,
            "½(Fβ_file + Fβ_lr) · 1[c̄ > 0]; A_i · √min(c̄_i/4, 1)",
            function=codegrep_v2,
            without_counts=_COUNTS_ZERO_MASK,
            orm_class="CodeGrepV2ORM",
        ),
        RewardSpec(
            "codegrep_v3",
            "advantage",
            True,
            False,
            "Fβ_file · 1[c̄ > 0]; A_i · √min(c̄_i/4, 1)",
            function=codegrep_v3,
            without_counts=_COUNTS_ZERO_MASK,
            orm_class="CodeGrepV3ORM",
        ),
        RewardSpec(
            "colgrep_file_f1",
            "reward",
            False,
            False,
            "F1_file · [1 − min(p_max, λ·max(0, T − T0))] + R_format",
            function=colgrep_file_f1,
            without_counts="no search action, so every rollout takes the format penalty",
            orm_class="ColgrepFileF1ORM",
        ),
        RewardSpec(
            "fbeta_file",
            "none",
            False,
            False,
            "Fβ_file",
            function=fbeta_file_reward,
            counts="never",
            orm_class="FbetaFileORM",
        ),
        RewardSpec(
            "codescout_multilevel",
            "reward",
            False,
            False,
            "w_f·F1_file + w_m·F1_module + w_e·F1_entity (+ turn bonus)",
            function=codescout_multilevel,
            label="file_changes",
            counts="turn_bonus",
            without_counts="T = 1, so the turn bonus is scored for a one-turn rollout",
            orm_class="CodeScoutMultilevelORM",
        ),
    )
}

#: Every reward's declaration, by name: the built-in ones and any added by `register_reward`.
REWARD_SPECS: Mapping[str, RewardSpec] = MappingProxyType(_SPECS)


class _AnswerRewards(Mapping[str, Callable[..., RewardResult]]):
    """The functions of the "gold_files" rewards, read from the specs on each access."""

    def __getitem__(self, name: str) -> Callable[..., RewardResult]:
        spec = _SPECS[name]
        if spec.label != "gold_files":
            raise KeyError(name)
        return spec.function

    def __iter__(self) -> Iterator[str]:
        return iter([n for n, s in _SPECS.items() if s.label == "gold_files"])

    def __len__(self) -> int:
        return sum(s.label == "gold_files" for s in _SPECS.values())

    def __repr__(self) -> str:
        return f"REWARDS({', '.join(self)})"


#: Rewards scored from answer text + gold files + rollout statistics, by name (a view of the
#: specs whose label is "gold_files").
REWARDS: Mapping[str, Callable[..., RewardResult]] = _AnswerRewards()


def register_reward(spec: RewardSpec) -> RewardSpec:
    """Add `spec` to the registry, so that every adapter accepts its name; returns it.

    For a reward defined outside this package (in an ms-swift plugin file, a TRL script).
    A name already registered is a `GrpoRewardsError`: a spec is declared once.
    """
    if spec.name in _SPECS:
        raise GrpoRewardsError(f"reward {spec.name!r} is already registered")
    _SPECS[spec.name] = spec
    return spec


def reward_spec(name: str) -> RewardSpec:
    """The declaration of the reward `name`; `UnknownRewardError` for any other name.

    >>> reward_spec("codegrep_v1").efficiency_layer, reward_spec("codegrep_v3").efficiency_layer
    ('reward', 'advantage')
    """
    try:
        return _SPECS[name]
    except (KeyError, TypeError):
        raise UnknownRewardError(f"unknown reward {name!r}; known: {', '.join(_SPECS)}") from None


# ---------------------------------------------------------------- scoring a JSON answer by name


def _lookup(name: str) -> RewardSpec:
    spec = _SPECS.get(name) if isinstance(name, str) else None
    if spec is not None and spec.label == "gold_files":
        return spec
    hint = (
        f" ({name} scores a finish call, not a JSON answer: call it directly, "
        "or through an adapter)"
        if spec is not None
        else ""
    )
    raise UnknownRewardError(f"unknown reward {name!r}; known: {', '.join(sorted(REWARDS))}{hint}")


def score_completion(
    name: str,
    completion: object,
    gold: Gold,
    stats: RolloutStats | None,
    *,
    params: Mapping[str, object] | None = None,
    roots: Iterable[str] = (),
) -> RewardResult:
    """Parse one final assistant message and score it with the reward called `name`.

    `params` overrides the reward's constants (`{"beta": 1.0}`); `roots` are absolute checkout
    folders to strip from predicted paths. A malformed answer scores 0 (colgrep: −0.5) with
    `reason` set; missing statistics for a reward that needs them raise.
    """
    return score_parsed(name, parse_answer(completion, roots=roots), gold, stats, params=params)


def score_parsed(
    name: str,
    parsed: ParsedAnswer,
    gold: Gold,
    stats: RolloutStats | None,
    *,
    params: Mapping[str, object] | None = None,
) -> RewardResult:
    """`score_completion` for an answer already parsed (by `parse_answer`, e.g. recorded by the
    rollout driver in `rollout_infos`): the same reward, no second parse."""
    spec = _lookup(name)
    if stats is None and spec.counts != "never":
        raise MissingRolloutStatsError(
            f"reward {name!r} needs rollout statistics (turns, tool calls)"
        )
    result = spec.function(parsed, gold, stats, **(params or {}))
    if not math.isfinite(result.reward):
        raise InvalidRolloutError(f"reward {name!r} produced {result.reward}")
    return result


def score_batch(
    name: str,
    completions: Sequence[object],
    golds: Sequence[Gold],
    stats: Sequence[RolloutStats | None],
    *,
    params: Mapping[str, object] | None = None,
) -> list[RewardResult]:
    """`score_completion` over aligned sequences (one entry per rollout)."""
    if not len(completions) == len(golds) == len(stats):
        raise BatchShapeError(
            f"{len(completions)} completions, {len(golds)} labels, {len(stats)} stats"
        )
    _lookup(name)
    return [
        score_completion(name, c, g, s, params=params)
        for c, g, s in zip(completions, golds, stats, strict=True)
    ]
