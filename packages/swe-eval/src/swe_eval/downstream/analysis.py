"""Downstream figures: resolve rates on a fixed denominator, paired comparisons, the case view.

The CodeGrep paper's Table 3 per configuration (resolve rate, rounds and tokens per resolved
instance, unresolved rounds) and what the paper left out: significance. A configuration is
compared with another on the same instances:

- McNemar's exact test on resolve: a two-sided binomial test (p = 1/2) on the discordant pairs
  (resolved by one configuration only);
- the resolve-rate delta with a paired bootstrap interval (instances resampled jointly);
- on the instances both resolve (co-resolved), the relative change of mean rounds and mean
  tokens, mean(B) / mean(A) − 1 (the paper's −15% / −19%), with bootstrap intervals.

The denominator is the instance list and nothing else: an instance without output is
unresolved and counted `missing`; every other failure (empty patch, harness error, timeout,
agent error, ...) is unresolved and counted by cause; none leaves the denominator.

Pure functions; the bootstrap is grpo-rewards' `ClusterBootstrap` (the one swe-eval's Table 2 and
codegrep-gate's calibration use), scipy (imported when a test is run) for the binomial.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from codegrep_records import GoldLabel, Prediction
from codegrep_records.stats import ClusterBootstrap, percentile_interval
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict

from swe_eval.downstream.power import (
    flip_rate,
    minimum_detectable_effect,
    pairwise_flip_rates,
    run_label_test,
)
from swe_eval.downstream.readers import classify_error
from swe_eval.downstream.records import (
    AgentOutputs,
    AgentRun,
    Failure,
    HarnessReport,
    TokenBasis,
)
from swe_eval.metrics import Estimate, evaluate

__all__ = [
    "CaseRow",
    "ConfigRun",
    "ConfigSummary",
    "InstanceOutcome",
    "PairedComparison",
    "PooledComparison",
    "PrecisionBenefit",
    "RelativeDelta",
    "Spread",
    "build_config",
    "case_rows",
    "compare",
    "compare_pooled",
    "failure_ids",
    "mcnemar_exact",
    "paired_bootstrap",
    "precision_benefit",
    "retrieval_precision",
    "summarize_config",
]


@dataclass(frozen=True, slots=True)
class InstanceOutcome:
    """One instance of one configuration: the verdict, why it failed, and the agent's run."""

    instance_id: str
    resolved: bool
    failure: Failure | None
    run: AgentRun | None
    injected: tuple[str, ...] | None = None

    @property
    def rounds(self) -> int | None:
        return self.run.rounds if self.run else None

    @property
    def tokens(self) -> int | None:
        return self.run.tokens.total if self.run and self.run.tokens else None


@dataclass(frozen=True)
class ConfigRun:
    """One configuration over the fixed denominator, in the denominator's order."""

    name: str
    outcomes: tuple[InstanceOutcome, ...]
    has_outputs: bool
    missing_known: bool  # False: a report of resolved ids only and no outputs
    earlier_attempts: int = 0
    duplicates: int = 0
    outside: tuple[str, ...] = ()  # ids in the outputs or report that the denominator lacks
    disagreements: tuple[str, ...] = ()  # the output's own verdict differs from the report's
    token_basis: TokenBasis | None = None
    matched: int = 0  # denominator ids that the outputs or the report name

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(o.instance_id for o in self.outcomes)


def _failure_of_run(run: AgentRun) -> Failure | None:
    if run.failure is not None:
        return run.failure
    if run.patch is not None and not run.patch.strip():
        return Failure.EMPTY_PATCH
    if run.error:
        return classify_error(run.error)
    return None


def build_config(
    name: str,
    instance_ids: Sequence[str],
    outputs: AgentOutputs | None = None,
    report: HarnessReport | None = None,
    *,
    injected: Mapping[str, tuple[str, ...]] | None = None,
) -> ConfigRun:
    """Join a configuration's outputs and report on the fixed list of instances.

    The verdict is the report's when there is one, else the output's own (`resolved` of raw
    completions, `test_result.report` of OpenHands). `injected` (instance -> files) overrides
    the candidate files the outputs carry. Raises `ValueError` when an instance with an output
    has no verdict anywhere (give the harness report).
    """
    if outputs is None and report is None:
        raise ValueError(f"run {name}: neither outputs nor a report")
    runs: Mapping[str, AgentRun] = outputs.runs if outputs else {}
    denominator = set(instance_ids)
    outcomes: list[InstanceOutcome] = []
    no_verdict: list[str] = []
    disagreements: list[str] = []
    for iid in instance_ids:
        run = runs.get(iid)
        verdict = report.verdicts.get(iid) if report else None
        failure: Failure | None = None
        if verdict is not None:
            resolved = verdict.resolved
            failure = verdict.failure
            if failure is Failure.MISSING and run is not None:
                failure = Failure.NOT_EVALUATED  # an output the harness did not evaluate
            elif failure is Failure.NOT_EVALUATED and outputs is not None and run is None:
                failure = Failure.MISSING  # nothing to evaluate: no agent output
            if run is not None and run.resolved is not None and run.resolved != resolved:
                disagreements.append(iid)
        elif report is not None and report.covers_all:
            resolved = False
            failure = Failure.MISSING if run is None else Failure.NOT_EVALUATED
        elif report is not None:  # a list of resolved ids: an absent id is unresolved
            resolved = False
            failure = Failure.MISSING if outputs is not None and run is None else None
        elif run is not None and run.resolved is not None:
            resolved = run.resolved
        elif run is not None:
            no_verdict.append(iid)
            resolved = False
        else:
            resolved, failure = False, Failure.MISSING
        if not resolved and failure is None and run is not None:
            failure = _failure_of_run(run)
        if resolved:
            failure = None
        files = injected.get(iid) if injected is not None else None
        if files is None and run is not None:
            files = run.injected
        outcomes.append(InstanceOutcome(iid, resolved, failure, run, files))
    if no_verdict:
        raise ValueError(
            f"run {name}: {len(no_verdict)} instance(s) have an output but no verdict "
            f"(e.g. {no_verdict[0]}); give the harness report with report=PATH"
        )
    seen = set(runs) | (set(report.verdicts) if report else set())
    bases = {r.tokens.basis for r in runs.values() if r.tokens is not None}
    if len(bases) > 1:
        raise ValueError(f"run {name}: its outputs mix token bases ({', '.join(sorted(bases))})")
    return ConfigRun(
        name=name,
        outcomes=tuple(outcomes),
        has_outputs=outputs is not None,
        missing_known=outputs is not None or report is None or report.covers_all,
        earlier_attempts=outputs.earlier_attempts if outputs else 0,
        duplicates=outputs.duplicates if outputs else 0,
        outside=tuple(sorted(seen - denominator)),
        disagreements=tuple(disagreements),
        token_basis=bases.pop() if bases else None,
        matched=len(seen & denominator),
    )


def failure_ids(cfg: ConfigRun) -> dict[str, list[str]]:
    """The unresolved instances whose cause is known (missing included), by cause: every id."""
    out: dict[str, list[str]] = {}
    for o in cfg.outcomes:
        if not o.resolved and o.failure is not None:
            out.setdefault(o.failure.value, []).append(o.instance_id)
    return dict(sorted(out.items()))


# -- one configuration --------------------------------------------------------------------------


class Spread(BaseModel):
    """Mean and median of a per-instance figure over `n` instances."""

    model_config = ConfigDict(frozen=True)

    mean: float
    median: float
    n: int


def _spread(values: Sequence[float]) -> Spread | None:
    if not values:
        return None
    arr = np.asarray(values, dtype=float)
    return Spread(mean=float(arr.mean()), median=float(np.median(arr)), n=len(arr))


def paired_bootstrap(
    columns: Sequence[Sequence[float] | NDArray[np.float64]],
    statistic: Callable[..., float],
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Estimate:
    """A percentile interval of `statistic(mean of column 0, mean of column 1, ...)`.

    Rows (instances) are resampled jointly across the columns, so the pairing is kept: grpo-rewards'
    `ClusterBootstrap` and `percentile_interval` (the interval is widened to hold the point). The
    statistic is called with one resample's column means (floats); a resample where it divides by
    zero or is not finite is left out. With fewer than two rows or no resamples the interval is
    the point value.
    """
    arrays = [[float(v) for v in c] for c in columns]
    if not arrays or len({len(a) for a in arrays}) != 1:
        raise ValueError("paired_bootstrap wants columns of one length")
    n = len(arrays[0])
    if n == 0:
        return Estimate(value=math.nan, low=math.nan, high=math.nan, n=0)
    value = float(statistic(*(float(np.mean(a)) for a in arrays)))
    if n < 2 or n_resamples <= 0:
        return Estimate(value=value, low=value, high=value, n=n)

    def of_means(drawn: Sequence[Sequence[float]]) -> float | None:
        try:
            return float(statistic(*(math.fsum(col) / n for col in drawn)))
        except ZeroDivisionError:
            return None

    dist = ClusterBootstrap(n, n_resamples, seed).distribution(arrays, of_means)
    if not dist:
        return Estimate(value=value, low=math.nan, high=math.nan, n=n)
    low, high = percentile_interval(value, dist, confidence)
    return Estimate(value=value, low=low, high=high, n=n)


class ConfigSummary(BaseModel):
    """The Table 3 row of one configuration, with its accounting."""

    model_config = ConfigDict(frozen=True)

    name: str
    n: int  # the denominator
    resolved: int
    resolve_rate: Estimate  # with a bootstrap interval over instances
    with_output: int | None  # instances with an agent output (None: no outputs given)
    missing: int | None  # None: cannot be known (a resolved-ids-only report, no outputs)
    failures: dict[str, int]  # unresolved instances by cause (missing not included)
    rounds_resolved: Spread | None
    tokens_resolved: Spread | None
    rounds_unresolved: Spread | None
    tokens_unresolved: Spread | None
    token_basis: TokenBasis | None
    cost_total: float | None
    cost_per_resolved: float | None  # mean cost of a resolved instance's run
    no_prompt_tokens: int  # outputs whose usage reports 0 prompt tokens (server did not count)
    not_finished: int  # outputs that did not end with `finish` (a budget, a crash)
    earlier_attempts: int
    duplicates: int
    outside: int
    disagreements: int
    #: runs with more LLM calls than the manifest's total round cap (None: no cap known)
    over_round_cap: int | None = None


def summarize_config(
    cfg: ConfigRun, *, n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> ConfigSummary:
    """Resolve rate (with a bootstrap interval) and rounds/tokens per resolved instance."""
    outcomes = cfg.outcomes
    resolved = [o for o in outcomes if o.resolved]
    unresolved = [o for o in outcomes if not o.resolved]
    failures: dict[str, int] = {}
    for o in unresolved:
        if o.failure is not None and o.failure is not Failure.MISSING:
            failures[o.failure.value] = failures.get(o.failure.value, 0) + 1
    missing = sum(1 for o in outcomes if o.failure is Failure.MISSING)
    runs = [o.run for o in outcomes if o.run is not None]
    costs = [r.cost for r in runs if r.cost is not None]
    resolved_costs = [o.run.cost for o in resolved if o.run and o.run.cost is not None]
    rate = paired_bootstrap(
        [[1.0 if o.resolved else 0.0 for o in outcomes]],
        lambda m: m,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )

    def figures(group: list[InstanceOutcome], what: str) -> Spread | None:
        values = [getattr(o, what) for o in group]
        return _spread([v for v in values if v is not None])

    return ConfigSummary(
        name=cfg.name,
        n=len(outcomes),
        resolved=len(resolved),
        resolve_rate=rate,
        with_output=len(runs) if cfg.has_outputs else None,
        missing=missing if cfg.missing_known else None,
        failures=dict(sorted(failures.items())),
        rounds_resolved=figures(resolved, "rounds"),
        tokens_resolved=figures(resolved, "tokens"),
        rounds_unresolved=figures(unresolved, "rounds"),
        tokens_unresolved=figures(unresolved, "tokens"),
        token_basis=cfg.token_basis,
        cost_total=float(sum(costs)) if costs else None,
        cost_per_resolved=float(np.mean(resolved_costs)) if resolved_costs else None,
        no_prompt_tokens=sum(
            1 for r in runs if r.tokens is not None and r.tokens.prompt == 0 and r.tokens.completion
        ),
        not_finished=sum(1 for r in runs if r.finished is False),
        earlier_attempts=cfg.earlier_attempts,
        duplicates=cfg.duplicates,
        outside=len(cfg.outside),
        disagreements=len(cfg.disagreements),
    )


# -- two configurations -------------------------------------------------------------------------


def mcnemar_exact(b: int, c: int) -> float:
    """McNemar's exact test: two-sided binomial p of `b` vs `c` discordant pairs (p = 1/2).

    b = resolved by A only, c = resolved by B only. No discordant pair: p = 1.
    """
    if b < 0 or c < 0:
        raise ValueError("discordant counts cannot be negative")
    if b + c == 0:
        return 1.0
    from scipy.stats import binomtest  # type: ignore[import-untyped, unused-ignore]

    return float(binomtest(min(b, c), b + c, 0.5, alternative="two-sided").pvalue)


class RelativeDelta(BaseModel):
    """mean(B) / mean(A) − 1 over the co-resolved instances with the figure in both."""

    model_config = ConfigDict(frozen=True)

    mean_a: float
    mean_b: float
    relative: Estimate


class PairedComparison(BaseModel):
    """B against A on the same instances."""

    model_config = ConfigDict(frozen=True)

    a: str
    b: str
    n: int
    both: int
    a_only: int
    b_only: int
    neither: int
    mcnemar_p: float
    delta: Estimate  # resolve rate of B − resolve rate of A, paired bootstrap
    co_resolved: int
    rounds: RelativeDelta | None
    tokens: RelativeDelta | None
    note: str | None = None
    # the smallest delta this comparison finds with 80% power at alpha 0.05, from the flip
    # rate of the two runs' own discordance (an upper bound on the flip rate: conservative)
    mde: float | None = None


def _relative(
    pairs: list[tuple[float, float]], n_resamples: int, confidence: float, seed: int
) -> RelativeDelta | None:
    if not pairs:
        return None
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    if float(np.mean(a)) == 0:
        return None
    rel = paired_bootstrap(
        [a, b],
        lambda ma, mb: mb / ma - 1,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )
    return RelativeDelta(mean_a=float(np.mean(a)), mean_b=float(np.mean(b)), relative=rel)


def compare(
    a: ConfigRun,
    b: ConfigRun,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedComparison:
    """B vs A: McNemar on resolve, the rate delta, and co-resolved rounds/tokens deltas."""
    if a.ids != b.ids:
        raise ValueError(f"{a.name} and {b.name} are not on the same instances")
    ra = np.array([o.resolved for o in a.outcomes], dtype=float)
    rb = np.array([o.resolved for o in b.outcomes], dtype=float)
    both = int(((ra == 1) & (rb == 1)).sum())
    a_only = int(((ra == 1) & (rb == 0)).sum())
    b_only = int(((ra == 0) & (rb == 1)).sum())
    delta = paired_bootstrap(
        [ra, rb],
        lambda ma, mb: mb - ma,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )
    co = [(x, y) for x, y in zip(a.outcomes, b.outcomes, strict=True) if x.resolved and y.resolved]
    note = None
    rounds_pairs = [
        (float(x.rounds), float(y.rounds))
        for x, y in co
        if x.rounds is not None and y.rounds is not None
    ]
    tokens_pairs: list[tuple[float, float]] = []
    if a.token_basis is not None and b.token_basis is not None and a.token_basis != b.token_basis:
        note = (
            f"tokens not compared: {a.name} counts {a.token_basis.value}, "
            f"{b.name} counts {b.token_basis.value}"
        )
    else:
        tokens_pairs = [
            (float(x.tokens), float(y.tokens))
            for x, y in co
            if x.tokens is not None and y.tokens is not None
        ]
    discordant = a_only + b_only
    mde = (
        minimum_detectable_effect(len(ra), discordant / len(ra)) if discordant and len(ra) else None
    )
    return PairedComparison(
        mde=mde,
        a=a.name,
        b=b.name,
        n=len(ra),
        both=both,
        a_only=a_only,
        b_only=b_only,
        neither=len(ra) - both - a_only - b_only,
        mcnemar_p=mcnemar_exact(a_only, b_only),
        delta=delta,
        co_resolved=both,
        rounds=_relative(rounds_pairs, n_resamples, confidence, seed),
        tokens=_relative(tokens_pairs, n_resamples, confidence, seed),
        note=note,
    )


class PooledComparison(BaseModel):
    """Arm B against arm A, each with one or more runs (repeats) on the same instances.

    Per instance, the share of an arm's runs that resolve it; `delta` is the mean of B's share
    minus A's, with a bootstrap interval over instances (all repeats of an instance drawn
    together: a cluster bootstrap); `p_value` is the exact run-label permutation test
    (`run_label_test`: each instance's runs relabeled; McNemar's exact test when both arms have
    one run).
    """

    model_config = ConfigDict(frozen=True)

    a: str
    b: str
    repeats_a: int
    repeats_b: int
    n: int
    resolved_a: list[int]  # per run
    resolved_b: list[int]
    rate_a: float
    rate_b: float
    delta: Estimate
    p_value: float
    instances_differ: int  # instances whose shares differ
    flip_rate: float | None
    flip_source: str
    mde: float | None  # 80% power, alpha 0.05, from flip_rate


def compare_pooled(
    a: Sequence[ConfigRun],
    b: Sequence[ConfigRun],
    *,
    names: tuple[str, str] | None = None,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PooledComparison:
    """Arm B's runs vs arm A's runs: pooled per instance, tested with the pairing kept.

    The flip rate behind the MDE is measured between the repeats within each arm when an arm
    has two or more; with one run per arm, the discordance between the arms (an upper bound).
    """
    if not a or not b:
        raise ValueError("each arm needs at least one run")
    ids = a[0].ids
    for run in (*a, *b):
        if run.ids != ids:
            raise ValueError(f"{run.name} and {a[0].name} are not on the same instances")
    name_a, name_b = names or (a[0].name, b[0].name)
    share_a = np.mean([[o.resolved for o in r.outcomes] for r in a], axis=0, dtype=float)
    share_b = np.mean([[o.resolved for o in r.outcomes] for r in b], axis=0, dtype=float)
    diff = share_b - share_a
    delta = paired_bootstrap(
        [share_a, share_b],
        lambda ma, mb: mb - ma,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )
    within = [
        rate
        for arm in (a, b)
        for rate in pairwise_flip_rates([(r.name, [o.resolved for o in r.outcomes]) for r in arm])
    ]
    n = len(ids)
    if within:
        f: float | None = flip_rate(within)
        source = f"within-arm repeats ({len(within)} pair(s))"
    else:
        between = pairwise_flip_rates(
            [(r.name, [o.resolved for o in r.outcomes]) for r in (a[0], b[0])]
        )
        f = flip_rate(between)
        source = "between the arms (an upper bound: no repeats measured)"
    mde = minimum_detectable_effect(n, f, k_a=len(a), k_b=len(b)) if f and n else None
    return PooledComparison(
        a=name_a,
        b=name_b,
        repeats_a=len(a),
        repeats_b=len(b),
        n=n,
        resolved_a=[sum(o.resolved for o in r.outcomes) for r in a],
        resolved_b=[sum(o.resolved for o in r.outcomes) for r in b],
        rate_a=float(share_a.mean()) if n else math.nan,
        rate_b=float(share_b.mean()) if n else math.nan,
        delta=delta,
        p_value=run_label_test(
            [[o.resolved for o in r.outcomes] for r in a],
            [[o.resolved for o in r.outcomes] for r in b],
        ),
        instances_differ=int((diff != 0).sum()),
        flip_rate=f if f else None,
        flip_source=source,
        mde=mde,
    )


# -- the case view and the precision-benefit table ----------------------------------------------


class CaseRow(BaseModel):
    """One instance under one configuration, for reading cases side by side."""

    model_config = ConfigDict(frozen=True)

    instance_id: str
    config: str
    resolved: bool
    failure: Failure | None
    rounds: int | None
    tokens: int | None
    tools: dict[str, int]
    files_opened_before_edit: tuple[str, ...]
    injected: tuple[str, ...] | None
    injected_opened: bool | None  # an injected file was opened at some point of the run
    injected_opened_before_edit: bool | None


def case_rows(configs: Sequence[ConfigRun]) -> list[CaseRow]:
    """Every instance under every configuration, instance by instance."""
    if not configs:
        return []
    rows: list[CaseRow] = []
    for i, iid in enumerate(configs[0].ids):
        for cfg in configs:
            o = cfg.outcomes[i]
            run = o.run
            inj = o.injected
            opened = set(run.files_opened) if run else set()
            before = set(run.files_opened_before_edit) if run else set()
            rows.append(
                CaseRow(
                    instance_id=iid,
                    config=cfg.name,
                    resolved=o.resolved,
                    failure=o.failure,
                    rounds=o.rounds,
                    tokens=o.tokens,
                    tools=run.tools() if run else {},
                    files_opened_before_edit=run.files_opened_before_edit if run else (),
                    injected=inj,
                    injected_opened=bool(opened & set(inj)) if inj and run else None,
                    injected_opened_before_edit=bool(before & set(inj)) if inj and run else None,
                )
            )
    return rows


def retrieval_precision(
    gold: Mapping[str, GoldLabel], predictions: Sequence[Prediction]
) -> Estimate:
    """Macro precision of the injected predictions (swe-eval's Table 2 definition), no interval."""
    ev = evaluate(gold, predictions, name="injected")
    col = ev.column("precision")
    value = float(col.mean()) if len(col) else math.nan
    return Estimate(value=value, low=value, high=value, n=len(col))


class PrecisionBenefit(BaseModel):
    """A configuration's retrieval precision beside its downstream deltas vs the baseline."""

    model_config = ConfigDict(frozen=True)

    config: str
    precision: float | None
    precision_source: str | None  # "predictions" (measured here) or "given"
    resolve_delta: Estimate
    mde: float | None = None  # of the comparison behind resolve_delta
    mcnemar_p: float
    rounds_relative: Estimate | None
    tokens_relative: Estimate | None


def precision_benefit(
    comparisons: Sequence[PairedComparison],
    precisions: Mapping[str, tuple[float, str]],
) -> list[PrecisionBenefit]:
    """One row per comparison against the baseline (`comparisons` are B-vs-baseline)."""
    rows = []
    for c in comparisons:
        prec = precisions.get(c.b)
        rows.append(
            PrecisionBenefit(
                config=c.b,
                precision=prec[0] if prec else None,
                precision_source=prec[1] if prec else None,
                resolve_delta=c.delta,
                mde=c.mde,
                mcnemar_p=c.mcnemar_p,
                rounds_relative=c.rounds.relative if c.rounds else None,
                tokens_relative=c.tokens.relative if c.tokens else None,
            )
        )
    return sorted(rows, key=lambda r: (r.precision is None, r.precision or 0.0))
