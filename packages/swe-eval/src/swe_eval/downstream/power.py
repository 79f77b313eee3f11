"""Power of a paired resolve-rate comparison: the flip rate, the minimum detectable effect, and
how many repeated runs per arm a target effect needs; and the test that pools repeats.

The model (the README's "Power" section says the same). Two runs of the *same* arm disagree on
a fraction `f` of instances (the flip rate: resolved by one run only). Comparing arm B with
arm A, each with K runs on the same N instances, the statistic is the mean over instances of
d_i = (share of B's runs resolving i) − (share of A's runs resolving i).

- K = 1 in both arms: the test is McNemar's exact test. Under an effect δ the two runs still
  disagree on a fraction f of instances, of which (f + δ) / 2 favour B. The number of
  discordant instances is Binomial(N, f), B's share of them Binomial(D, (f + δ) / (2f)); the
  power is the chance the exact two-sided binomial test rejects at α, summed exactly (no
  simulation). δ cannot exceed f in this model.
- K ≥ 2 (or unequal K): per instance, var(d_i) = p_i(1 − p_i)(1/K_A + 1/K_B), and the mean
  over instances of 2 p_i(1 − p_i) is f, so var(mean d) = (f / 2)(1/K_A + 1/K_B) / N; the
  test is the paired run-label permutation test on d_i, taken as normal:
  power = Φ(δ/se − z_{1−α/2}) + Φ(−δ/se − z_{1−α/2}), and MDE = (z_{1−α/2} + z_power) · se.

With one run per arm and no repeats measured, the flip rate used for a reported difference is
the discordance between the two arms themselves, which includes any effect: an upper bound on
f, so the MDE stated is conservative.

Pure functions; scipy is imported when a figure is computed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "FlipRate",
    "flip_rate",
    "minimum_detectable_effect",
    "pairwise_flip_rates",
    "power_at",
    "repeats_needed",
    "run_label_test",
    "sign_flip_test",
]


@dataclass(frozen=True, slots=True)
class FlipRate:
    """How often two runs of one arm disagree on an instance."""

    a: str
    b: str
    n: int
    discordant: int

    @property
    def value(self) -> float:
        return self.discordant / self.n if self.n else math.nan


def pairwise_flip_rates(runs: Sequence[tuple[str, Sequence[bool]]]) -> list[FlipRate]:
    """The flip rate of every pair of runs (name, resolved per instance in one order)."""
    out = []
    for i, (na, ra) in enumerate(runs):
        for nb, rb in runs[i + 1 :]:
            if len(ra) != len(rb):
                raise ValueError(f"{na} and {nb} are not on the same instances")
            out.append(FlipRate(na, nb, len(ra), sum(x != y for x, y in zip(ra, rb, strict=True))))
    return out


def flip_rate(rates: Sequence[FlipRate]) -> float:
    """The pooled flip rate of several pairs: all their discordant instances over all pairs."""
    n = sum(r.n for r in rates)
    if not n:
        raise ValueError("no pair of runs to measure a flip rate from")
    return sum(r.discordant for r in rates) / n


def _check(n: int, f: float, alpha: float, k_a: int, k_b: int) -> None:
    if n < 1:
        raise ValueError(f"the number of instances must be >= 1, got {n}")
    if not 0 < f <= 1:
        raise ValueError(f"the flip rate must be in (0, 1], got {f}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if k_a < 1 or k_b < 1:
        raise ValueError("repeats must be >= 1")


def _se(n: int, f: float, k_a: int, k_b: int) -> float:
    return math.sqrt(f / 2 * (1 / k_a + 1 / k_b) / n)


def _mcnemar_power(n: int, f: float, effect: float, alpha: float) -> float:
    from scipy.stats import binom  # type: ignore[import-untyped, unused-ignore]

    effect = abs(effect)
    if effect > f:
        raise ValueError(
            f"an effect of {effect:.4f} exceeds the flip rate {f:.4f}: with one run per arm the "
            "arms cannot differ on more instances than they disagree on"
        )
    q = (f + effect) / (2 * f)
    total = 0.0
    discordant = np.arange(1, n + 1)
    weights = binom.pmf(discordant, n, f)
    for d, w in zip(discordant.tolist(), weights.tolist(), strict=True):
        if w < 1e-15:
            continue
        ks = np.arange(d + 1)
        # the exact two-sided binomial p at 1/2 (symmetric): min(1, 2·min(P(X<=k), P(X>=k)))
        p = np.minimum(1.0, 2 * np.minimum(binom.cdf(ks, d, 0.5), binom.sf(ks - 1, d, 0.5)))
        total += w * float(binom.pmf(ks[p <= alpha], d, q).sum())
    return total


def power_at(
    n: int, f: float, effect: float, *, k_a: int = 1, k_b: int = 1, alpha: float = 0.05
) -> float:
    """The chance the comparison finds `effect` (a difference of resolve rates) significant."""
    _check(n, f, alpha, k_a, k_b)
    if k_a == k_b == 1:
        return _mcnemar_power(n, f, effect, alpha)
    from scipy.stats import norm  # type: ignore[import-untyped, unused-ignore]

    z = norm.ppf(1 - alpha / 2)
    ratio = abs(effect) / _se(n, f, k_a, k_b)
    return float(norm.cdf(ratio - z) + norm.cdf(-ratio - z))


def minimum_detectable_effect(
    n: int, f: float, *, k_a: int = 1, k_b: int = 1, power: float = 0.8, alpha: float = 0.05
) -> float | None:
    """The smallest difference of resolve rates found significant with chance `power`.

    None when no effect the model allows reaches that power (one run per arm: an effect
    cannot exceed the flip rate).
    """
    _check(n, f, alpha, k_a, k_b)
    if not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1), got {power}")
    if not (k_a == k_b == 1):
        from scipy.stats import norm  # type: ignore[import-untyped, unused-ignore]

        return float((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * _se(n, f, k_a, k_b))
    if _mcnemar_power(n, f, f, alpha) < power:
        return None
    low, high = 0.0, f
    while high - low > 1e-5:  # the exact power climbs with the effect, in small steps
        mid = (low + high) / 2
        if _mcnemar_power(n, f, mid, alpha) >= power:
            high = mid
        else:
            low = mid
    return high


def repeats_needed(
    n: int,
    f: float,
    effect: float,
    *,
    power: float = 0.8,
    alpha: float = 0.05,
    max_repeats: int = 1000,
) -> int | None:
    """The fewest runs per arm (the same K in both) that find `effect` with chance `power`;
    None when more than `max_repeats` would be needed."""
    if effect == 0:
        raise ValueError("the target effect must not be 0")
    for k in range(1, max_repeats + 1):
        try:
            reached = power_at(n, f, effect, k_a=k, k_b=k, alpha=alpha)
        except ValueError:  # K = 1 cannot hold an effect above the flip rate
            continue
        if reached >= power:
            return k
    return None


def _exact_sign_flip(values: NDArray[np.int64]) -> float:
    """P(|sum of ±v_i| >= |sum of v_i|) over all sign patterns, by convolution (integers)."""
    total = int(np.abs(values).sum())
    dist = np.zeros(2 * total + 1)
    dist[total] = 1.0
    for v in np.abs(values).tolist():
        new = np.zeros_like(dist)
        new[v:] += 0.5 * dist[: len(dist) - v]
        new[: len(dist) - v] += 0.5 * dist[v:]
        dist = new
    observed = abs(int(values.sum()))
    sums = np.abs(np.arange(-total, total + 1))
    return float(min(1.0, dist[sums >= observed].sum()))


def run_label_test(
    runs_a: Sequence[Sequence[bool]] | NDArray[np.bool_],
    runs_b: Sequence[Sequence[bool]] | NDArray[np.bool_],
) -> float:
    """Two-sided exact permutation test that arm B's runs resolve as often as arm A's: within
    each instance, the K_A + K_B run labels are permuted (every assignment of K_B of the runs
    to B equally likely under the null), the instances kept as the unit.

    The statistic is the sum over instances of B's share minus A's share; scaled by K_A·K_B it
    is an integer, and its null distribution is the convolution of each instance's
    hypergeometric law, so the p-value is exact for any K_A and K_B (the sign flip of the
    shares is exact only when K_A = K_B). With one run per arm it is McNemar's exact test.
    """
    a = np.asarray(runs_a, dtype=np.int64)
    b = np.asarray(runs_b, dtype=np.int64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError("runs_a and runs_b must be (runs x instances) on the same instances")
    k_a, k_b = a.shape[0], b.shape[0]
    k = k_a + k_b
    resolved = a.sum(axis=0) + b.sum(axis=0)  # s_i, of k runs
    in_b = b.sum(axis=0)
    # D_i = K_A·x_B − K_B·(s_i − x_B) = K·x_B − K_B·s_i, for x_B runs of B resolving it
    observed = int((k * in_b - k_b * resolved).sum())
    laws: dict[int, tuple[int, NDArray[np.float64]]] = {}  # s -> (lowest D, pmf over D)
    for s_i in np.unique(resolved).tolist():
        if s_i in (0, k):
            continue  # every relabeling gives the same D: it shifts nothing
        xs = range(max(0, s_i - k_a), min(k_b, s_i) + 1)
        weights = np.array([math.comb(s_i, x) * math.comb(k - s_i, k_b - x) for x in xs], float)
        pmf = np.zeros(k * (xs[-1] - xs[0]) + 1)
        pmf[[k * (x - xs[0]) for x in xs]] = weights / weights.sum()
        laws[s_i] = (k * xs[0] - k_b * s_i, pmf)
    low, dist = 0, np.ones(1)
    for s_i in resolved.tolist():
        if s_i in laws:
            start, pmf = laws[s_i]
            low, dist = low + start, np.convolve(dist, pmf)
    values = np.arange(low, low + len(dist))
    return float(min(1.0, dist[np.abs(values) >= abs(observed) - 1e-9].sum()))


def sign_flip_test(
    differences: Sequence[float] | NDArray[np.float64],
    *,
    scale: int = 1,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> float:
    """Two-sided paired permutation test of mean(d) = 0: each instance's arm labels swapped
    at random (the sign of d_i flipped), the instances kept as the unit.

    Exact when every d_i times `scale` is a whole number (shares of K_A and K_B runs: scale
    K_A·K_B) and their sum stays below a million; else `n_resamples` random patterns with the
    (1 + hits) / (1 + resamples) correction. With one run per arm it is McNemar's exact test.
    """
    d = np.asarray(differences, dtype=float)
    d = d[d != 0]
    if not len(d):
        return 1.0
    scaled = d * scale
    whole = np.rint(scaled)
    if np.all(np.abs(scaled - whole) < 1e-6) and np.abs(whole).sum() < 1_000_000:
        return _exact_sign_flip(whole.astype(np.int64))
    observed = abs(float(d.sum()))
    tol = 1e-9 * max(1.0, observed)
    rng = np.random.default_rng(seed)
    hits = 0
    done = 0
    batch = max(1, 2_000_000 // len(d))
    while done < n_resamples:
        size = min(batch, n_resamples - done)
        signs = rng.integers(0, 2, size=(size, len(d))) * 2 - 1
        hits += int((np.abs(signs @ d) >= observed - tol).sum())
        done += size
    return (1 + hits) / (1 + n_resamples)
