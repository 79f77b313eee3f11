"""Does the ranker's training objective matter? Three objectives, the same features, the same
leave-one-repository-out folds, one answered file (the top of each ranking):

- `pointwise`: the shipped one, a logistic regression per candidate (is it a gold file?);
- `listwise`: a softmax over each issue's candidates, fitted to put probability on its gold
  files (the conditional logit: a top-1 surrogate);
- `expected_f05`: the same softmax as a policy that answers one file, fitted to maximize its
  expected F0.5 (exact: the sum over candidates of probability x F0.5 of answering that file,
  grpo-rewards' F-beta), i.e. trained on the score it is judged by.

    uv run --all-packages python packages/codegrep-model/benchmarks/ranker_objectives.py \\
        EXAMPLES --splits packages/codegrep-model/benchmarks/localizer_splits.json

EXAMPLES: `localizer_cv.sh`'s examples file. Only the splits' cv part is read. Needs numpy and
scipy (L-BFGS), which the workspace has; an experiment, not the shipped fit.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from codegrep_model.policies.lexical.ranker import FEATURES
from codegrep_model.policies.lexical.ranker_train import read_examples
from grpo_rewards import fbeta_from_counts
from scipy.optimize import minimize

OBJECTIVES = {
    "pointwise": (10.0,),
    "listwise": (1.0, 10.0, 30.0),
    "expected_f05": (1.0, 10.0, 30.0),
}


def _instances(examples: Path, ids: set[str]) -> list[tuple[str, Any, Any]]:
    """(repo, features matrix, F0.5 of answering each candidate alone); no candidates: None."""
    out = []
    for row in read_examples(examples):
        if row.instance_id not in ids:
            continue
        gold = set(row.gold)
        if not row.candidates:
            out.append((row.repo, None, None))
            continue
        x = np.array([[c.features.get(f, 0.0) for f in FEATURES] for c in row.candidates])
        r = np.array(
            [fbeta_from_counts(int(c.path in gold), 1, len(gold), 0.5) for c in row.candidates]
        )
        out.append((row.repo, x, r))
    return out


def _fit(train: list, objective: str, l2: float) -> tuple[Any, Any, Any]:
    stacked = np.vstack([x for _, x, _ in train if x is not None])
    mu, sd = stacked.mean(0), stacked.std(0)
    sd[sd < 1e-6] = 1.0
    data = [((x - mu) / sd, r) for _, x, r in train if x is not None]
    d = len(FEATURES)

    def loss(w: Any) -> tuple[float, Any]:
        total = 0.5 * l2 * float(w[:d] @ w[:d])
        grad = np.zeros_like(w)
        grad[:d] = l2 * w[:d]
        for z, r in data:
            if objective == "pointwise":
                s = z @ w[:d] + w[d]
                y = (r > 0).astype(float)
                total += float(np.sum(np.logaddexp(0, s) - y * s))
                e = 1 / (1 + np.exp(-s)) - y
                grad[:d] += z.T @ e
                grad[d] += e.sum()
                continue
            s = z @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            if objective == "listwise":
                gold = r > 0
                if not gold.any():
                    continue
                q = p[gold].sum()
                total -= float(np.log(q))
                grad -= z[gold].T @ (p[gold] / q) - z.T @ p
            else:
                expected = float(p @ r)
                total -= expected
                grad -= z.T @ (p * (r - expected))
        return total, grad

    start = np.zeros(d + (1 if objective == "pointwise" else 0))
    res = minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": 300})
    return mu, sd, res.x


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("examples", type=Path)
    ap.add_argument("--splits", type=Path, required=True)
    ap.add_argument("-o", "--output", type=Path)
    a = ap.parse_args()
    ids = set(json.loads(a.splits.read_text())["cv_ids"])
    inst = _instances(a.examples, ids)
    repos = sorted({repo for repo, _, _ in inst})
    results: dict[str, Any] = {}
    for objective, l2s in OBJECTIVES.items():
        for l2 in l2s:
            per: dict[str, list[float]] = defaultdict(list)
            for repo in repos:
                mu, sd, w = _fit([i for i in inst if i[0] != repo], objective, l2)
                for r, x, f in inst:
                    if r == repo:
                        top = (
                            None
                            if x is None
                            else int(np.argmax(((x - mu) / sd) @ w[: len(FEATURES)]))
                        )
                        per[repo].append(0.0 if top is None else float(f[top]))
            pooled = statistics.fmean(v for vs in per.values() for v in vs)
            macro = statistics.fmean(statistics.fmean(v) for v in per.values())
            results[f"{objective} l2={l2:g}"] = {
                "pooled": round(pooled, 4),
                "macro": round(macro, 4),
            }
            print(f"{objective:13} l2 {l2:>4g}: top-1 F0.5 pooled {pooled:.4f}, macro {macro:.4f}")
    if a.output:
        a.output.write_text(json.dumps({"n": len(inst), "repos": len(repos), **results}, indent=1))


if __name__ == "__main__":
    main()
