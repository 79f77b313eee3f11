"""The learned candidate ranking of `LexicalPolicy`: features of each candidate file in, the
probability that it belongs to the fix out, and the answer cut (how many files to give).

A `Ranker` is a small JSON file (weights of a logistic regression over standardized features,
and the cut) that inference reads with the standard library alone. `fit` reproduces one from
`Example`s (a candidate's features and whether it is a gold file); `train-ranker` in the CLI
collects the examples from LexicalPolicy rollouts on real repositories and calls it.

Why a logistic regression: its output is a probability fitted by likelihood, so the per-file
scores it writes into the answer are what the precision gate needs (calibrated, then checked by
`codegrep calibrate`), and a few dozen weights cannot memorize a few hundred issues. The cut is
chosen on out-of-fold probabilities (folds by repository), never on the rows a fold was fitted
on, so it is not tuned to the training fit's own optimism.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from grpo_rewards import fbeta_from_counts

from codegrep_model.errors import CodegrepModelError
from codegrep_model.policies.lexical.selection import (
    ExpectedFCut,
    SelectionError,
    logit,
    missing_pmf,
    sigmoid,
)

__all__ = [
    "FEATURES",
    "RELATIVE",
    "SELECTIONS",
    "AnswerCut",
    "Example",
    "FitReport",
    "Ranker",
    "RankerError",
    "cut_from_dict",
    "cut_to_dict",
    "fit",
    "fit_platt",
    "fit_report",
]

# 2: the cut may be an expected-F0.5 selection (`"cut": {"kind": "expected_f", ...}`); a file of
# version 1 (a threshold cut, no kind) still reads as it always did.
SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)

# The features LexicalPolicy computes for each candidate (see `LexicalPolicy.candidates`); the
# order is the order of a ranker file's weights.
FEATURES: tuple[str, ...] = (
    "path_named",  # the issue names this path (1 / number of files it could mean)
    "frame",  # in the traceback
    "last_frame",  # the innermost repository frame of the traceback
    "module",  # a dotted module name of the issue resolves to it
    "def_strength",  # definitions of issue identifiers here, each weighted by rarity
    "def_names",  # how many issue identifiers it defines
    "def_unique",  # ... of which it is the only defining file
    "def_top",  # the strongest identifier it defines, relative to the strongest
    "def_prefixed",  # defines `*_name` forms (e.g. `_print_Foo` for `Foo`)
    "message",  # contains an error message of the issue (1 / files that contain it)
    "path_prior",  # issue words naming its path components, by rarity in the repository
    "test",  # a test file
    "docs",  # docs, examples, benchmarks, migrations, vendored code
    "other_ext",  # not a code file
    "init",  # a package `__init__`
    "confirmed",  # grepped in the second turn
    "coverage",  # share of the identifier weight it mentions
    "mentions",  # log(1 + grep matches in it, over every grep of the rollout)
    "read",  # read in the second turn
    "depth",  # folders above it
    "stem_in_issue",  # its file name (without extension) is a word of the issue
    "log_score",  # log(1 + the heuristic ranking score)
    "score_ratio",  # heuristic score / the best candidate's
    "rank_inv",  # 1 / its rank in the heuristic ranking (0: found by the usage greps only)
    "def_title",  # defines an identifier of the title
    "use_cov",  # share of the strongest identifiers' weight it uses (usage greps)
    "use_lines",  # log(1 + lines the usage greps matched in it)
    "use_title",  # uses an identifier of the title
    "ts_defs",  # issue identifiers its syntax tree defines (tree-sitter; 0 without the extra)
    "hist_bm25",  # BM25 of the issue against the messages of the commits that touched it
    "hist_rank_inv",  # 1 / (1 + its rank by hist_bm25 among the tree's files); 0: no match
    "churn",  # log(1 + commits that touched it, of the last 5000)
)
# Signals also given relative to the best candidate of the same issue: `<name>_gap` (its value
# minus the best's, <= 0) and `<name>_best` (1 when it has the best, non-zero, value). A linear
# model of absolute values cannot say "the most of any candidate"; these let it.
RELATIVE: tuple[str, ...] = (
    "def_strength",
    "def_names",
    "def_top",
    "coverage",
    "mentions",
    "path_prior",
    "path_named",
    "message",
    "use_cov",
    "use_lines",
    "ts_defs",
    "log_score",
    "hist_bm25",
    "hist_rank_inv",
    "churn",
)
FEATURES += tuple(f"{k}_{s}" for k in RELATIVE for s in ("gap", "best"))


class RankerError(CodegrepModelError):
    """A ranker file that cannot be used (missing, malformed, or for other features)."""


@dataclass(frozen=True)
class Example:
    """One candidate of one rollout: its features and whether it is a gold file."""

    group: str  # the instance id: candidates of one issue compete with each other
    path: str
    features: Mapping[str, float]
    gold: bool
    repo: str = ""  # folds are drawn by repository
    gold_total: int = 0  # gold files of the instance, found or not (for recall)


@dataclass(frozen=True)
class AnswerCut:
    """Which ranked files to answer: the first always (when any candidate exists), then each
    next one while its probability is at least `min_prob` and at least `ratio` times the
    first's, up to `max_files`."""

    min_prob: float = 0.3
    ratio: float = 0.5
    max_files: int = 3

    def __post_init__(self) -> None:
        if not 0 <= self.min_prob <= 1 or not 0 <= self.ratio <= 1 or self.max_files < 1:
            raise RankerError(
                f"answer cut out of range: min_prob {self.min_prob} and ratio {self.ratio} must "
                f"be in [0, 1], max_files {self.max_files} at least 1"
            )

    def take(self, probs: Sequence[float]) -> int:
        """How many of `probs` (sorted, highest first) to answer."""
        if not probs:
            return 0
        n = 1
        while (
            n < min(len(probs), self.max_files)
            and probs[n] >= self.min_prob
            and probs[n] >= self.ratio * probs[0]
        ):
            n += 1
        return n


@dataclass(frozen=True)
class Ranker:
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    cut: AnswerCut | ExpectedFCut = field(default_factory=AnswerCut)
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.features)
        if not (len(self.mean) == len(self.scale) == len(self.weights) == n):
            raise RankerError(
                f"ranker has {n} features but {len(self.mean)} means, {len(self.scale)} scales "
                f"and {len(self.weights)} weights"
            )
        unknown = sorted(set(self.features) - set(FEATURES))
        if unknown:
            raise RankerError(
                f"ranker uses features this version does not compute: {', '.join(unknown)}"
            )
        if any(s <= 0 or not math.isfinite(s) for s in self.scale):
            raise RankerError("ranker scales must be positive and finite")
        if not all(math.isfinite(x) for x in (*self.mean, *self.weights, self.bias)):
            raise RankerError("ranker weights and means must be finite")

    # -- inference ------------------------------------------------------------------------------

    def logit(self, features: Mapping[str, float]) -> float:
        z = self.bias
        for name, m, s, w in zip(self.features, self.mean, self.scale, self.weights, strict=True):
            z += w * (features.get(name, 0.0) - m) / s
        return z

    def probability(self, features: Mapping[str, float]) -> float:
        return sigmoid(self.logit(features))

    # -- files ----------------------------------------------------------------------------------

    @property
    def digest(self) -> str:
        """sha256 of the canonical JSON: names this exact ranker in rollouts and calibrations."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {
            # a threshold cut is written as version 1 wrote it: older readers read it and
            # its digest is unchanged; an expected-F0.5 cut needs version 2
            "schema_version": SCHEMA_VERSION if isinstance(self.cut, ExpectedFCut) else 1,
            "kind": "logistic",
            "features": list(self.features),
            "mean": [round(x, 6) for x in self.mean],
            "scale": [round(x, 6) for x in self.scale],
            "weights": [round(x, 6) for x in self.weights],
            "bias": round(self.bias, 6),
            "cut": cut_to_dict(self.cut),
            "meta": dict(self.meta),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "ranker") -> Ranker:
        try:
            version = data.get("schema_version")
            if version not in READABLE_VERSIONS or data.get("kind") != "logistic":
                raise RankerError(
                    f"{source}: not a ranker file of schema_version "
                    f"{' or '.join(map(str, READABLE_VERSIONS))} (kind logistic); got "
                    f"schema_version {version!r}, kind {data.get('kind')!r}"
                )
            return cls(
                features=tuple(str(f) for f in data["features"]),
                mean=tuple(float(x) for x in data["mean"]),
                scale=tuple(float(x) for x in data["scale"]),
                weights=tuple(float(x) for x in data["weights"]),
                bias=float(data["bias"]),
                cut=cut_from_dict(data.get("cut") or {}, version),
                meta=dict(data.get("meta") or {}),
            )
        except (RankerError, SelectionError) as exc:
            if str(exc).startswith(source):
                raise
            raise RankerError(f"{source}: {exc}") from exc
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise RankerError(f"{source}: malformed ranker file ({exc!r})") from exc

    @classmethod
    def load(cls, path: str | Path) -> Ranker:
        from codegrep_records import RecordFileError
        from codegrep_records.io import read_json_object

        p = Path(path)
        try:  # missing, not UTF-8, too deep, 1e999, a list: one line naming the file
            data = read_json_object(p)
        except RecordFileError as exc:
            raise RankerError(f"cannot read ranker file {exc}") from None
        return cls.from_dict(data, source=str(p))

    @classmethod
    def shipped(cls) -> Ranker:
        """The ranker that ships with the package (`rankers/lexical.json`; see the README for
        the data it was trained on and how to reproduce it)."""
        shipped = resources.files("codegrep_model.policies.lexical") / "rankers" / "lexical.json"
        return cls.from_dict(
            json.loads(shipped.read_text()),
            source="codegrep_model/policies/lexical/rankers/lexical.json",
        )

    def dump(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")


def cut_to_dict(cut: AnswerCut | ExpectedFCut) -> dict[str, Any]:
    if isinstance(cut, ExpectedFCut):
        return cut.to_dict()
    return {  # no kind: a threshold, as in version 1
        "min_prob": cut.min_prob,
        "ratio": cut.ratio,
        "max_files": cut.max_files,
    }


def cut_from_dict(cut: Mapping[str, Any], version: object) -> AnswerCut | ExpectedFCut:
    kind = cut.get("kind", "threshold")
    if kind == "expected_f":
        if version == 1:
            raise RankerError("an expected_f answer cut needs schema_version 2, not 1")
        return ExpectedFCut.from_dict(cut)
    if kind != "threshold":
        raise RankerError(f"unknown answer cut kind {kind!r} (threshold or expected_f)")
    return AnswerCut(
        min_prob=float(cut.get("min_prob", 0.3)),
        ratio=float(cut.get("ratio", 0.5)),
        max_files=int(cut.get("max_files", 3)),
    )


# -- fitting --------------------------------------------------------------------------------------


def _standardize(
    rows: Sequence[Sequence[float]],
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    n, d = len(rows), len(rows[0])
    mean = [sum(r[j] for r in rows) / n for j in range(d)]
    scale = []
    for j in range(d):
        var = sum((r[j] - mean[j]) ** 2 for r in rows) / n
        scale.append(math.sqrt(var) if var > 1e-12 else 1.0)
    return tuple(mean), tuple(scale)


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (a is small and positive definite)."""
    n = len(b)
    m = [[*row[:], b[i]] for i, row in enumerate(a)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[piv] = m[piv], m[col]
        p = m[col][col]
        if abs(p) < 1e-12:
            continue
        for r in range(col + 1, n):
            f = m[r][col] / p
            if f:
                row, prow = m[r], m[col]
                for c in range(col, n + 1):
                    row[c] -= f * prow[c]
    x = [0.0] * n
    for i in range(n - 1, -1, -1):
        p = m[i][i]
        s = m[i][n] - sum(m[i][j] * x[j] for j in range(i + 1, n))
        x[i] = s / p if abs(p) >= 1e-12 else 0.0
    return x


def _penalized_loss(
    x: Sequence[Sequence[float]],
    y: Sequence[float],
    beta: Sequence[float],
    l2: float,
    penalize_bias: bool = False,
) -> float:
    d = len(beta) - 1
    loss = 0.5 * l2 * sum(b * b for b in beta[: d + 1 if penalize_bias else d])
    for row, t in zip(x, y, strict=True):
        z = beta[d] + sum(b * v for b, v in zip(beta, row, strict=False))
        # log(1 + e^z) - t z, stable for large |z|
        loss += (z if z > 0 else 0.0) + math.log1p(math.exp(-abs(z))) - t * z
    return loss


def _logistic(
    x: Sequence[Sequence[float]],
    y: Sequence[float],
    l2: float,
    iterations: int = 50,
    penalize_bias: bool = False,
) -> tuple[list[float], float]:
    """L2-penalized logistic regression by Newton's method with step halving (the bias is
    penalized only with `penalize_bias`); converges on any data, separable or not, as the
    penalty makes it convex."""
    d = len(x[0])
    beta = [0.0] * (d + 1)  # last: bias
    pos = sum(y) / len(y)
    beta[d] = math.log(max(pos, 1e-6) / max(1 - pos, 1e-6))
    loss = _penalized_loss(x, y, beta, l2, penalize_bias)
    for _ in range(iterations):
        grad = [0.0] * (d + 1)
        hess = [[0.0] * (d + 1) for _ in range(d + 1)]
        for row, t in zip(x, y, strict=True):
            xr = (*row, 1.0)
            p = sigmoid(sum(b * v for b, v in zip(beta, xr, strict=True)))
            w = p * (1 - p)
            e = p - t
            for i in range(d + 1):
                vi = xr[i]
                if vi == 0.0:
                    continue
                grad[i] += e * vi
                wi = w * vi
                hi = hess[i]
                for j in range(i, d + 1):
                    hi[j] += wi * xr[j]
        for i in range(d + 1):
            for j in range(i):
                hess[i][j] = hess[j][i]
        for i in range(d + 1 if penalize_bias else d):
            grad[i] += l2 * beta[i]
            hess[i][i] += l2
        hess[d][d] += 1e-9  # a bias with all-zero columns stays solvable
        step = _solve(hess, grad)
        t_step = 1.0
        while True:
            trial = [b - t_step * s for b, s in zip(beta, step, strict=True)]
            trial_loss = _penalized_loss(x, y, trial, l2, penalize_bias)
            if trial_loss <= loss or t_step < 1e-6:
                break
            t_step /= 2
        converged = loss - trial_loss < 1e-9 * max(1.0, abs(loss))
        if trial_loss <= loss:
            beta, loss = trial, trial_loss
        if converged:
            break
    return beta[:d], beta[d]


def _fit_model(
    examples: Sequence[Example], features: Sequence[str], l2: float
) -> tuple[tuple[float, ...], tuple[float, ...], list[float], float]:
    raw = [[e.features.get(f, 0.0) for f in features] for e in examples]
    mean, scale = _standardize(raw)
    z = [[(v - m) / s for v, m, s in zip(r, mean, scale, strict=True)] for r in raw]
    w, b = _logistic(z, [1.0 if e.gold else 0.0 for e in examples], l2)
    return mean, scale, w, b


def _groups(examples: Sequence[Example]) -> dict[str, list[Example]]:
    by: dict[str, list[Example]] = defaultdict(list)
    for e in examples:
        by[e.group].append(e)
    return by


def _fbeta(chosen: Sequence[Example], gold_total: int, beta: float = 0.5) -> float:
    # grpo-rewards' F-beta, the one every figure and reward uses; a gold total below the hits
    # (a candidate list holding gold files the instance's count missed) counts as the hits.
    tp = sum(e.gold for e in chosen)
    return fbeta_from_counts(tp, len(chosen), max(gold_total, tp), beta)


def _score_cut(
    ranked: Sequence[tuple[Sequence[Example], Sequence[float], int]],
    cut: AnswerCut | ExpectedFCut,
) -> float:
    total = 0.0
    for cands, probs, gold_total in ranked:
        total += _fbeta(cands[: cut.take(probs)], gold_total)
    return total / max(1, len(ranked))


CUT_MIN_PROB = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7)
CUT_RATIO = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
CUT_MAX_FILES = (1, 2, 3, 4)


def _best_cut(ranked: Sequence[tuple[Sequence[Example], Sequence[float], int]]) -> AnswerCut:
    best, best_f = AnswerCut(), -1.0
    for k in CUT_MAX_FILES:
        for t in CUT_MIN_PROB:
            for r in CUT_RATIO:
                cut = AnswerCut(min_prob=t, ratio=r, max_files=k)
                f = _score_cut(ranked, cut)
                # ties go to the smaller answer (the earlier k), then the higher threshold
                if f > best_f + 1e-12:
                    best, best_f = cut, f
    return best


def fit_platt(
    probs: Sequence[float], gold: Sequence[bool], l2: float = 1e-3
) -> tuple[float, float]:
    """Slope and intercept of `sigmoid(slope * logit(p) + intercept)` fitted by likelihood:
    the regression above on one feature, logit(p), a tiny L2 on both so that separable data
    stays finite."""
    if not probs:
        return 1.0, 0.0
    w, b = _logistic(
        [[logit(p)] for p in probs], [1.0 if g else 0.0 for g in gold], l2, penalize_bias=True
    )
    return w[0], b


def _best_expected_cut(
    ranked: Sequence[tuple[Sequence[Example], Sequence[float], int]],
) -> ExpectedFCut:
    """The expected-F0.5 selection on out-of-fold probabilities: the recalibration fitted by
    likelihood on every candidate's, the missed-gold distribution counted per instance, then
    the largest answer size (1-4) by F0.5 on the same instances (ties to the smaller)."""
    probs = [p for _, ps, _ in ranked for p in ps]
    gold = [e.gold for cands, _, _ in ranked for e in cands]
    slope, intercept = fit_platt(probs, gold)
    missing = missing_pmf([max(0, gt - sum(e.gold for e in cands)) for cands, _, gt in ranked])
    best, best_f = ExpectedFCut(slope, intercept, missing, 1), -1.0
    for k in CUT_MAX_FILES:
        cut = ExpectedFCut(slope, intercept, missing, k)
        f = _score_cut(ranked, cut)
        if f > best_f + 1e-12:
            best, best_f = cut, f
    return best


Selection = Literal["threshold", "expected_f"]
SELECTIONS: tuple[Selection, ...] = ("threshold", "expected_f")


def _rank_groups(
    groups: Mapping[str, Sequence[Example]],
    prob: Any,
) -> list[tuple[list[Example], list[float], int]]:
    out = []
    for _, cands in sorted(groups.items()):
        scored = sorted(
            ((prob(e), e) for e in cands),
            key=lambda pe: (-pe[0], -pe[1].features.get("rank_inv", 0.0), pe[1].path),
        )
        gold_total = max((e.gold_total for e in cands), default=0)
        out.append(([e for _, e in scored], [p for p, _ in scored], gold_total))
    return out


@dataclass(frozen=True)
class FitReport:
    """What `fit` measured: out-of-fold F0.5 of the ranker with its cut, next to the heuristic
    answer (the policy without a ranker) on the same candidates, per repository."""

    instances: int
    candidates: int
    folds: int
    oof_fbeta: float
    heuristic_fbeta: float
    by_repo: dict[str, tuple[int, float, float]]  # repo -> (n, ranker, heuristic)
    # every selection's cut, fitted on the same out-of-fold probabilities, and its F0.5 there
    cuts: Mapping[str, AnswerCut | ExpectedFCut] = field(default_factory=dict)
    selection_fbeta: Mapping[str, float] = field(default_factory=dict)


def _folds(groups: Mapping[str, Sequence[Example]], k: int, seed: int) -> list[set[str]]:
    """Repositories dealt into k folds, biggest first (balanced by instance count)."""
    size: dict[str, int] = defaultdict(int)
    repo_of: dict[str, str] = {}
    for g, cands in groups.items():
        repo = cands[0].repo or g
        size[repo] += 1
        repo_of[g] = repo
    repos = sorted(size, key=lambda r: (-size[r], r))
    rng = random.Random(seed)
    rng.shuffle(repos)
    repos.sort(key=lambda r: -size[r])
    bins: list[set[str]] = [set() for _ in range(min(k, len(repos)))]
    load = [0] * len(bins)
    for r in repos:
        i = min(range(len(bins)), key=lambda j: load[j])
        bins[i].add(r)
        load[i] += size[r]
    return [{g for g in groups if repo_of[g] in b} for b in bins]


def fit(
    examples: Sequence[Example],
    *,
    features: Sequence[str] = FEATURES,
    l2: float = 10.0,
    folds: int = 5,
    seed: int = 0,
    meta: Mapping[str, Any] | None = None,
    heuristic_cut: tuple[float, int] = (0.9, 2),
    selection: Selection = "threshold",
) -> tuple[Ranker, FitReport]:
    """Fit the ranker and its cut; report out-of-fold quality (folds by repository) beside
    the heuristic answer on the same candidates (`heuristic_cut`: LexicalConfig's keep_ratio
    and max_files). `selection`: the cut the ranker answers with, `threshold` (`AnswerCut`)
    or `expected_f` (`ExpectedFCut`); the report holds both, fitted on the same out-of-fold
    probabilities."""
    if selection not in SELECTIONS:
        raise RankerError(f"selection must be one of {', '.join(SELECTIONS)}, got {selection!r}")
    if not examples:
        raise RankerError("no training examples: every rollout had no candidates")
    # one order whatever order the rollouts finished in (`-j 2`): the solver's sums, and so the
    # file's last digits, would otherwise follow it
    examples = sorted(examples, key=lambda e: (e.group, e.path))
    groups = _groups(examples)
    if not any(e.gold for e in examples):
        raise RankerError("no gold file among the candidates: nothing to learn from")
    fold_sets = _folds(groups, folds, seed)
    oof: dict[int, float] = {}
    for held in fold_sets:
        train = [e for e in examples if e.group not in held]
        if not train or not any(e.gold for e in train):
            continue
        mean, scale, w, b = _fit_model(train, features, l2)
        r = Ranker(tuple(features), mean, scale, tuple(w), b)
        for e in examples:
            if e.group in held:
                oof[id(e)] = r.probability(e.features)
    ranked_oof = _rank_groups(groups, lambda e: oof.get(id(e), 0.0))
    cuts: dict[str, AnswerCut | ExpectedFCut] = {
        "threshold": _best_cut(ranked_oof),
        "expected_f": _best_expected_cut(ranked_oof),
    }
    cut = cuts[selection]
    mean, scale, w, b = _fit_model(examples, features, l2)
    report = replace(
        _report(groups, ranked_oof, cut, len(fold_sets), heuristic_cut),
        cuts=cuts,
        selection_fbeta={k: _score_cut(ranked_oof, c) for k, c in cuts.items()},
    )
    info = dict(meta or {})
    info.update(
        l2=l2,
        folds=len(fold_sets),
        seed=seed,
        instances=report.instances,
        candidates=report.candidates,
        positives=sum(e.gold for e in examples),
        oof_fbeta=round(report.oof_fbeta, 4),
        heuristic_fbeta=round(report.heuristic_fbeta, 4),
        selection=selection,
    )
    return Ranker(tuple(features), mean, scale, tuple(w), b, cut=cut, meta=info), report


def fit_report(examples: Sequence[Example], ranker: Ranker) -> float:
    """Mean F0.5 of `ranker` (with its cut) on `examples` (in-sample when they trained it)."""
    ranked = _rank_groups(_groups(examples), lambda e: ranker.probability(e.features))
    return _score_cut(ranked, ranker.cut)


def _report(
    groups: Mapping[str, Sequence[Example]],
    ranked_oof: Sequence[tuple[Sequence[Example], Sequence[float], int]],
    cut: AnswerCut | ExpectedFCut,
    n_folds: int,
    heuristic_cut: tuple[float, int],
) -> FitReport:
    heuristic = _rank_groups(groups, lambda e: e.features.get("rank_inv", 0.0))
    keep_ratio, keep_max = heuristic_cut
    by_repo: dict[str, list[tuple[float, float]]] = defaultdict(list)
    total_r = total_h = 0.0
    for (cands, probs, gt), (hc, _, _) in zip(ranked_oof, heuristic, strict=True):
        fr = _fbeta(cands[: cut.take(probs)], gt)
        fh = _fbeta(
            [e for e in hc[:keep_max] if e.features.get("score_ratio", 0.0) >= keep_ratio], gt
        )
        repo = cands[0].repo if cands else ""
        by_repo[repo].append((fr, fh))
        total_r += fr
        total_h += fh
    n = max(1, len(ranked_oof))
    return FitReport(
        instances=len(ranked_oof),
        candidates=sum(len(c) for c, _, _ in ranked_oof),
        folds=n_folds,
        oof_fbeta=total_r / n,
        heuristic_fbeta=total_h / n,
        by_repo={
            r: (len(v), sum(a for a, _ in v) / len(v), sum(b for _, b in v) / len(v))
            for r, v in sorted(by_repo.items())
        },
    )
