"""The localizer judged the way users meet it: on repositories it was never fitted or tuned on.

`cross_validate` leaves one repository out at a time: the ranker and every cut are fitted on
the other repositories' instances (`ranker.fit`, whose own folds by repository choose the cuts),
then the left-out repository's instances are answered from their recorded candidates, as
`LexicalPolicy` answers them (the ranker's order and cut). Every answer selection is fitted on
the same training folds and scored on the same left-out instances, so they compare paired.

`pick_test_repositories` fixes the test set: whole repositories picked by a salted hash of their
names, read once per release and never by cross-validation or tuning (the rule is in the
README; the ids it gave are committed with the benchmark).

`summarize` gives, per repository and pooled, the mean F0.5 of each selection with 95%
intervals from codegrep-records' `ClusterBootstrap`: within a repository over its instances;
pooled over repositories (a repository is a cluster: a new user meets a repository, not an
instance), instance-weighted and as the macro mean of the repositories' means; and each
selection minus the first, paired.

Pure functions over examples rows (`ranker_train.read_examples`); no rollouts, no I/O.
"""

from __future__ import annotations

import functools
import hashlib
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from codegrep_records.stats import ClusterBootstrap, Ratio, percentile_interval, two_sided_p
from grpo_rewards import fbeta

from codegrep_model.policies.lexical.policy import LexicalConfig, LexicalPolicy
from codegrep_model.policies.lexical.ranker import Ranker, RankerError, cut_to_dict, fit
from codegrep_model.policies.lexical.ranker_train import InstanceCandidates, examples_of

__all__ = [
    "FAILURE_KINDS",
    "METHODS",
    "TEST_SALT",
    "InstanceScore",
    "answer_heuristic",
    "answer_ranked",
    "cross_validate",
    "failure_kinds",
    "pick_test_repositories",
    "ranked_answer",
    "score_instance",
    "summarize",
]

#: The answer selections compared: the policy without a ranker (version 0.1's hand-weighted
#: order and cut), the ranker with today's threshold cut, the ranker with the expected-F0.5
#: selection.
METHODS: tuple[str, ...] = ("heuristic", "threshold", "expected_f")
TEST_SALT = "codegrep-localizer-test-v1"


def pick_test_repositories(
    counts: Mapping[str, int], *, salt: str = TEST_SALT, modulus: int = 5, max_share: float = 0.2
) -> list[str]:
    """The test repositories: those whose sha256(salt + "/" + name) is 0 modulo `modulus`
    (about one in `modulus`), leaving out any holding more than `max_share` of the instances
    (cross-validation would lose too much). Sorted.

    >>> pool = {"astropy/astropy": 24, "sympy/sympy": 84, "psf/requests": 6, "pydata/xarray": 50}
    >>> pick_test_repositories(pool)  # sympy's hash would not pick it; it is too big anyway
    ['astropy/astropy']
    >>> pick_test_repositories({"astropy/astropy": 24, "sympy/sympy": 84})  # over 20% now
    []
    """
    total = sum(counts.values())
    out = []
    for repo, n in counts.items():
        h = int(hashlib.sha256(f"{salt}/{repo}".encode()).hexdigest(), 16)
        if h % modulus == 0 and n <= max_share * total:
            out.append(repo)
    return sorted(out)


def answer_heuristic(
    row: InstanceCandidates, keep_ratio: float = 0.9, max_files: int = 2
) -> tuple[str, ...]:
    """The heuristic policy's answer from the candidates' heuristic scores
    (`LexicalPolicy(heuristic=True)`'s choice, with LexicalConfig's keep_ratio and
    max_files)."""
    policy = _heuristic_policy(keep_ratio, max_files)
    return tuple(policy._choose({c.path: c.score for c in row.candidates}))


@functools.cache
def _heuristic_policy(keep_ratio: float, max_files: int) -> LexicalPolicy:
    return LexicalPolicy(LexicalConfig(keep_ratio=keep_ratio, max_files=max_files), heuristic=True)


def ranked_answer(
    row: InstanceCandidates, ranker: Ranker
) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """The ranked policy's answer from the candidates (`LexicalPolicy`'s order and cut) and
    its scores (the ranker's probabilities, as LexicalPolicy gives them)."""
    files, scores = LexicalPolicy._choose_ranked(list(row.candidates), ranker)
    return tuple(files), tuple(scores)


def answer_ranked(row: InstanceCandidates, ranker: Ranker) -> tuple[str, ...]:
    """The ranked policy's answer from the candidates (`LexicalPolicy`'s order and cut)."""
    return ranked_answer(row, ranker)[0]


@dataclass(frozen=True)
class InstanceScore:
    """One left-out instance: its gold, what its candidates held, each selection's answer."""

    instance_id: str
    repo: str
    gold: tuple[str, ...]
    candidates: int
    gold_in_candidates: int
    answers: Mapping[str, tuple[str, ...]]
    gold_rank: int = 0  # the best gold file's rank by the fold's ranker; 0: not a candidate
    kinds: tuple[str, ...] = ()  # what went wrong with the ranker's first file (`failure_kinds`)

    def fbeta(self, method: str) -> float:
        return fbeta(self.answers[method], self.gold)

    def to_dict(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "repo": self.repo,
            "gold": list(self.gold),
            "candidates": self.candidates,
            "gold_in_candidates": self.gold_in_candidates,
            "gold_rank": self.gold_rank,
            "kinds": list(self.kinds),
            "answers": {m: list(a) for m, a in self.answers.items()},
            "f05": {m: round(self.fbeta(m), 6) for m in self.answers},
        }


#: The failure kinds `failure_kinds` names, in the order the error analysis prints them.
FAILURE_KINDS: tuple[str, ...] = (
    "gold not a candidate",
    "gold ranked 2nd",
    "gold ranked 3rd-5th",
    "gold ranked below 5th",
    "first file: a traceback frame",
    "first file: named in the issue",
    "first file: in the gold file's folder",
    "first file: test, docs or not code",
    "first file: a package __init__",
    "missed gold: not code (docs, config, data)",
    "missed gold: a package __init__",
    "missed gold: named in the issue",
)


def _kind_of_path(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    if name == "__init__.py":
        return "init"
    if not name.endswith((".py", ".pyi", ".pyx")):
        return "not code"
    return "code"


def failure_kinds(
    row: InstanceCandidates, first: str | None, gold_rank: int, issue_paths: frozenset[str]
) -> tuple[str, ...]:
    """What went wrong when the ranker's first file is not gold (empty when it is): where the
    gold file ranked, what the first file was (its features: a traceback frame, a test or docs
    file, a path the issue names...), and for gold outside the candidates, what kind of file
    it is. `issue_paths`: files the issue names (candidates with `path_named`)."""
    gold = set(row.gold)
    if first is not None and first in gold:
        return ()
    out: list[str] = []
    if gold_rank == 0:
        out.append("gold not a candidate")
        for g in sorted(gold):
            kind = _kind_of_path(g)
            if kind == "not code":
                out.append("missed gold: not code (docs, config, data)")
            elif kind == "init":
                out.append("missed gold: a package __init__")
    elif gold_rank == 2:
        out.append("gold ranked 2nd")
    elif gold_rank <= 5:
        out.append("gold ranked 3rd-5th")
    else:
        out.append("gold ranked below 5th")
    if gold & issue_paths and gold_rank == 0:
        out.append("missed gold: named in the issue")
    if first is not None:
        f = next((c.features for c in row.candidates if c.path == first), {})
        if f.get("frame"):
            out.append("first file: a traceback frame")
        if f.get("path_named"):
            out.append("first file: named in the issue")
        if any(first.rsplit("/", 1)[0] == g.rsplit("/", 1)[0] for g in gold):
            out.append("first file: in the gold file's folder")
        if f.get("test") or f.get("docs") or f.get("other_ext"):
            out.append("first file: test, docs or not code")
        if f.get("init"):
            out.append("first file: a package __init__")
    return tuple(dict.fromkeys(out))


def score_instance(row: InstanceCandidates, rankers: Mapping[str, Ranker]) -> InstanceScore:
    """`row` answered by the heuristic and by each of `rankers` (a ranker per selection in
    METHODS[1:]), with the gold file's rank and the failure kinds under the first ranker."""
    gold = set(row.gold)
    answers = {"heuristic": answer_heuristic(row)}
    answers.update({m: answer_ranked(row, rankers[m]) for m in METHODS[1:]})
    ranker = rankers[METHODS[1]]
    order = sorted(
        ((ranker.probability(c.features), i, c.path) for i, c in enumerate(row.candidates)),
        key=lambda t: (-t[0], t[1]),
    )
    gold_rank = next((n for n, (_, _, p) in enumerate(order, 1) if p in gold), 0)
    named = frozenset(c.path for c in row.candidates if c.features.get("path_named"))
    first = answers[METHODS[1]][0] if answers[METHODS[1]] else None
    return InstanceScore(
        instance_id=row.instance_id,
        repo=row.repo,
        gold=row.gold,
        candidates=len(row.candidates),
        gold_in_candidates=sum(c.path in gold for c in row.candidates),
        answers=answers,
        gold_rank=gold_rank,
        kinds=failure_kinds(row, first, gold_rank, named),
    )


def cross_validate(
    rows: Sequence[InstanceCandidates],
    *,
    l2: float = 10.0,
    inner_folds: int = 5,
    seed: int = 0,
    on_fold: Callable[[str, int, int], None] | None = None,
    on_ranked: Callable[[InstanceCandidates, Mapping[str, Ranker]], None] | None = None,
) -> tuple[list[InstanceScore], dict[str, dict[str, Any]]]:
    """Leave-one-repository-out scores of every selection in METHODS, and per left-out
    repository the cuts fitted without it (`{repo: {"threshold": {...}, "expected_f": {...}}}`).

    `on_fold(repo, done, total)` is called as each repository's fold finishes, and
    `on_ranked(row, rankers)` with each left-out row and its fold's rankers (a ranker per
    selection in METHODS[1:]). Raises `RankerError` when fewer than two repositories are
    given."""
    repos = sorted({r.repo for r in rows})
    if len(repos) < 2:
        raise RankerError(f"cross-validation by repository needs two or more, got {repos}")
    out: list[InstanceScore] = []
    cuts: dict[str, dict[str, Any]] = {}
    for n, repo in enumerate(repos, 1):
        train = examples_of(r for r in rows if r.repo != repo)
        ranker, report = fit(train, l2=l2, folds=inner_folds, seed=seed)
        rankers = {m: replace(ranker, cut=c) for m, c in report.cuts.items()}
        cuts[repo] = {m: cut_to_dict(c) for m, c in report.cuts.items()}
        for row in rows:
            if row.repo == repo:
                out.append(score_instance(row, rankers))
                if on_ranked:
                    on_ranked(row, rankers)
        if on_fold:
            on_fold(repo, n, len(repos))
    return out, cuts


@dataclass(frozen=True)
class Figure:
    """A mean with its 95% interval; `p` for a paired difference."""

    n: int
    mean: float
    low: float
    high: float
    p: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "n": self.n,
            "mean": round(self.mean, 4),
            "ci95": [round(self.low, 4), round(self.high, 4)],
        }
        if self.p is not None:
            d["p"] = round(self.p, 4)
        return d


def _mean_figure(values: Sequence[float], resamples: int, seed: int) -> Figure:
    n = len(values)
    point = sum(values) / n if n else 0.0
    boot = ClusterBootstrap(n, resamples, seed)
    (dist,) = boot.distributions([list(values)], [Ratio(0, None)])
    low, high = percentile_interval(point, dist, 0.95)
    return Figure(n, point, low, high)


def summarize(
    scores: Sequence[InstanceScore],
    methods: Sequence[str] = METHODS,
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Per repository and pooled F0.5 of each method, and each method minus the first
    (paired): `{"by_repo": {repo: {method: Figure}}, "pooled": {...}, "macro": {...},
    "paired": {method: {"pooled": Figure, "macro": Figure}}}` as plain dicts.

    The figures do not depend on the order of `scores` (the resamples draw instances in id
    order), so rollouts collected in any order (`-j 2`) give the same intervals."""
    by_repo: dict[str, list[InstanceScore]] = defaultdict(list)
    for s in sorted(scores, key=lambda s: (s.repo, s.instance_id)):
        by_repo[s.repo].append(s)
    repos = sorted(by_repo)
    per_repo = {
        repo: {
            m: _mean_figure([s.fbeta(m) for s in by_repo[repo]], resamples, seed).to_dict()
            for m in methods
        }
        for repo in repos
    }
    # clusters: one column of F0.5 sums and one of counts per repository
    counts = [float(len(by_repo[r])) for r in repos]
    boot = ClusterBootstrap(len(repos), resamples, seed)

    def pooled(values_of: Callable[[InstanceScore], float]) -> tuple[Figure, Figure]:
        sums = [sum(values_of(s) for s in by_repo[r]) for r in repos]
        means = [sums[i] / counts[i] for i in range(len(repos))]
        point = sum(sums) / sum(counts)
        macro_point = sum(means) / len(means)
        dist_p, dist_m = boot.distributions([sums, counts, means], [Ratio(0, 1), Ratio(2, None)])
        lo, hi = percentile_interval(point, list(dist_p), 0.95)
        mlo, mhi = percentile_interval(macro_point, list(dist_m), 0.95)
        return (
            Figure(len(scores), point, lo, hi, two_sided_p(dist_p, resamples)),
            Figure(len(repos), macro_point, mlo, mhi, two_sided_p(dist_m, resamples)),
        )

    out_pooled: dict[str, Any] = {}
    out_macro: dict[str, Any] = {}

    def of(m: str) -> Callable[[InstanceScore], float]:
        return lambda s: s.fbeta(m)

    def minus_first(m: str) -> Callable[[InstanceScore], float]:
        return lambda s: s.fbeta(m) - s.fbeta(methods[0])

    for m in methods:
        fp, fm = pooled(of(m))
        out_pooled[m] = {k: v for k, v in fp.to_dict().items() if k != "p"}
        out_macro[m] = {k: v for k, v in fm.to_dict().items() if k != "p"}
    paired: dict[str, Any] = {}
    for m in methods[1:]:
        fp, fm = pooled(minus_first(m))
        paired[f"{m} - {methods[0]}"] = {"pooled": fp.to_dict(), "macro": fm.to_dict()}
    return {
        "resamples": resamples,
        "seed": seed,
        "by_repo": per_repo,
        "pooled": out_pooled,
        "macro": out_macro,
        "paired": paired,
    }
