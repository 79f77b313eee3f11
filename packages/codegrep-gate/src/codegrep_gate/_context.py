"""The context model's fit: a logistic model of "this file is gold" on what the gate knows.

A score curve pools every repository: the same probability can mean 0.4 on one repository and
0.7 on another, and a bin of 46 files has an interval too wide to clear a threshold it deserves.
The context model reads every file of the calibration data at once, conditioned on the file's
score (log-odds), its rank and its answer's size (`context_features`), and its interval comes
from refitting it on resamples of the data's *repositories*: the spread of the promise from one
set of repositories to another, which is what a user's repository meets.

The fit is penalised maximum likelihood (Newton's method; an L2 penalty on the non-intercept
coefficients, so that a feature no file varies stays finite). The draws start from the full
fit, which makes each a few Newton steps. Pure Python: five coefficients, a few hundred files.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

from codegrep_gate._records import CONTEXT_FEATURES, ContextModel, context_features
from codegrep_gate._scored import Scored
from codegrep_gate.errors import GateError, GateInputError

__all__ = ["fit_context_model", "fit_logistic"]

_MAX_STEPS = 50
_TOLERANCE = 1e-10


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Solve a small symmetric positive-definite system by Gaussian elimination with pivoting."""
    n = len(b)
    m = [[*row, rhs] for row, rhs in zip(a, b, strict=True)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-300:
            raise GateError("context model: singular system (no file varies this feature?)")
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            if f:
                for c in range(col, n + 1):
                    m[r][c] -= f * m[col][c]
    out = [0.0] * n
    for r in range(n - 1, -1, -1):
        out[r] = (m[r][n] - sum(m[r][c] * out[c] for c in range(r + 1, n))) / m[r][r]
    return out


def fit_logistic(
    rows: Sequence[tuple[tuple[float, ...], float, float]],
    *,
    penalty: float,
    start: Sequence[float] | None = None,
) -> list[float]:
    """Coefficients maximising the weighted log-likelihood of `rows` (features with the
    intercept first, outcome 0/1, weight) minus `penalty`/2 times the squared non-intercept
    coefficients.

    >>> rows = [((1.0, x), float(x > 0), 1.0) for x in (-2.0, -1.0, 1.0, 2.0)]
    >>> [round(c, 3) for c in fit_logistic(rows, penalty=1.0)]
    [0.0, 1.116]
    """
    if not rows:
        raise GateError("context model: no files to fit")
    n = len(rows[0][0])
    beta = list(start) if start is not None else [0.0] * n
    for _ in range(_MAX_STEPS):
        grad = [0.0] * n
        hess = [[0.0] * n for _ in range(n)]
        for x, y, w in rows:
            if not w:
                continue
            z = math.fsum(b * v for b, v in zip(beta, x, strict=True))
            p = 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))
            r = w * (y - p)
            q = w * p * (1 - p)
            for i in range(n):
                grad[i] += r * x[i]
                if x[i]:
                    qi = q * x[i]
                    row = hess[i]
                    for j in range(i, n):
                        row[j] += qi * x[j]
        for i in range(1, n):
            grad[i] -= penalty * beta[i]
            hess[i][i] += penalty
        for i in range(n):
            for j in range(i):
                hess[i][j] = hess[j][i]
        step = _solve(hess, grad)
        beta = [b + s for b, s in zip(beta, step, strict=True)]
        if max(abs(s) for s in step) < _TOLERANCE:
            break
    return beta


def fit_context_model(
    scored: Sequence[Scored],
    groups: Mapping[str, str] | None,
    *,
    resamples: int,
    seed: int,
    level: float,
    penalty: float = 1.0,
) -> ContextModel:
    """The context model of the answered, scored files of `scored`.

    `groups` maps an instance id to its repository: the draws then resample repositories (a
    cluster bootstrap by repository), else instances. An instance missing from `groups` is its
    own group. `GateInputError` when an answered file has no score.
    """
    rows: list[tuple[str, tuple[float, ...], float]] = []
    instances = 0
    for s in scored:
        if not s.answered:
            continue
        instances += 1
        size = len(s.files)
        for rank, score, hit in s.files:
            if score is None:
                raise GateInputError(
                    f"context model: {s.instance_id} has a file without a score; the context "
                    "model needs every answered file scored"
                )
            group = groups.get(s.instance_id, s.instance_id) if groups else s.instance_id
            rows.append((group, context_features(score, rank, size), float(hit)))
    if not rows:
        raise GateError("context model: no answered file to fit")
    unit = "repository" if groups else "instance"
    names = sorted({g for g, _, _ in rows})
    index = {g: i for i, g in enumerate(names)}
    member = [index[g] for g, _, _ in rows]
    full = fit_logistic([(x, y, 1.0) for _, x, y in rows], penalty=penalty)
    rng = random.Random(seed)
    draws: list[tuple[float, ...]] = []
    for _ in range(resamples):
        counts = [0] * len(names)
        for k in rng.choices(range(len(names)), k=len(names)):
            counts[k] += 1
        weighted = [(x, y, float(counts[member[i]])) for i, (_, x, y) in enumerate(rows)]
        draws.append(tuple(fit_logistic(weighted, penalty=penalty, start=full)))
    hits = int(sum(y for _, _, y in rows))
    return ContextModel(
        features=CONTEXT_FEATURES,
        coefficients=tuple(full),
        draws=tuple(tuple(round(c, 6) for c in d) for d in draws),
        level=level,
        unit=unit,
        groups=len(names),
        instances=instances,
        files=len(rows),
        hits=hits,
        penalty=penalty,
        seed=seed,
    )
