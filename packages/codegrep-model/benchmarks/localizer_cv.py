"""The localizer's held-out protocol: cross-validation by repository, and a test set read once.

    python benchmarks/localizer_cv.py splits INSTANCES... -o localizer_splits.json
    python benchmarks/localizer_cv.py cv EXAMPLES --splits localizer_splits.json -o OUT
    python benchmarks/localizer_cv.py test EXAMPLES --splits localizer_splits.json -o OUT
    python benchmarks/localizer_cv.py test-repos localizer_splits.json

`splits` pools every labelled instance file given (SWE-bench Lite and Verified dev, CodeScout's
SWE-Gym rows, LocBench at hand; repeats of an earlier file's instance once), and fixes the test
repositories by `ranker_cv.pick_test_repositories` (a salted hash of the name, about one in five,
none holding over 20% of the pool). It writes the ids of both parts; commit that file before
any result is read.

`cv` reads EXAMPLES (`codegrep-model train-ranker --examples`: LexicalPolicy's candidates of
every pooled instance with their features; `localizer_cv.sh` makes it) and leaves one
cross-validation repository out at a time: the ranker and the cuts are fitted on the others,
the left-out instances answered as LexicalPolicy answers. It writes OUT/cv.jsonl (one row per
instance: its answers and F0.5 under every selection), OUT/cv.summary.json (per repository,
pooled and macro, with intervals; each selection minus the heuristic, paired), OUT/cv.md, and
OUT/cv.predictions.jsonl: each instance's answer under the shipped selection (ranker +
threshold) with the fold ranker's probabilities as scores, a predictions file the gate's
`gate_effect.py` reads (the gate on probabilities of repositories the ranker never saw).

`test` fits on every cross-validation instance and answers the test instances: the figure a
release reports, read once per release (OUT/test.jsonl, OUT/test.summary.json, OUT/test.md).
It refuses to run again over an existing OUT/test.summary.json unless --again says why.

`test-repos` prints the test repositories (OWNER/NAME, one a line), from the test ids
(SWE-bench's OWNER__NAME-NUMBER): `train_ranker.sh` leaves them out of the shipped ranker's fit.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from codegrep_model.policies.lexical.ranker import Ranker, RankerError, fit
from codegrep_model.policies.lexical.ranker_cv import (
    FAILURE_KINDS,
    METHODS,
    InstanceScore,
    cross_validate,
    pick_test_repositories,
    ranked_answer,
    score_instance,
    summarize,
)
from codegrep_model.policies.lexical.ranker_train import (
    InstanceCandidates,
    examples_of,
    load_training_instances,
    read_examples,
)
from codegrep_records import Prediction, RecordFileError
from codegrep_records.io import read_json_object, write_records

EXCLUDED = (  # too large to fetch here: left out of the pool
    "django/django",
    "matplotlib/matplotlib",
    "scikit-learn/scikit-learn",
    "pandas-dev/pandas",
    "bokeh/bokeh",
)
LABELS = {
    "heuristic": "heuristic (no ranker)",
    "threshold": "ranker + threshold cut",
    "expected_f": "ranker + expected-F0.5 selection",
}


def _fig(d: dict[str, Any]) -> str:
    lo, hi = d["ci95"]
    p = f", p {d['p']:.3f}" if "p" in d else ""
    return f"{d['mean']:.3f} [{lo:.3f}, {hi:.3f}]{p}"


def _table(summary: dict[str, Any], title: str, sizes: dict[str, float]) -> str:
    methods = list(summary["pooled"])
    lines = [
        f"## {title}",
        "",
        "| repository | n | " + " | ".join(LABELS[m] for m in methods) + " |",
    ]
    lines.append("|---|---:|" + "---|" * len(methods))
    for repo, figs in summary["by_repo"].items():
        n = next(iter(figs.values()))["n"]
        lines.append(f"| {repo} | {n} | " + " | ".join(_fig(figs[m]) for m in methods) + " |")
    n = summary["pooled"][methods[0]]["n"]
    lines.append(
        f"| **pooled** (instances) | {n} | "
        + " | ".join(_fig(summary["pooled"][m]) for m in methods)
        + " |"
    )
    r = summary["macro"][methods[0]]["n"]
    lines.append(
        f"| **macro** ({r} repositories) | {n} | "
        + " | ".join(_fig(summary["macro"][m]) for m in methods)
        + " |"
    )
    lines.append("| files per answer | | " + " | ".join(f"{sizes[m]:.2f}" for m in methods) + " |")
    lines += ["", "Paired, each minus the first (intervals over repositories as clusters):", ""]
    for name, figs in summary["paired"].items():
        lines.append(f"- {name}: pooled {_fig(figs['pooled'])}; macro {_fig(figs['macro'])}")
    return "\n".join(lines) + "\n"


def _failures(scores: list[InstanceScore]) -> str:
    """The error analysis: per repository, how often each failure kind of the ranker's first
    file occurs (an instance can have several), and the F0.5 each selection gets there."""
    repos = sorted({s.repo for s in scores})
    counts = {r: Counter(k for s in scores if s.repo == r for k in s.kinds) for r in repos}
    wrong = Counter(s.repo for s in scores if s.kinds)
    head = "| kind | all | " + " | ".join(r.split("/")[-1] for r in repos) + " |"
    lines = [
        "## Where the first file goes wrong (threshold cut; counts of instances)",
        "",
        head,
        "|---|---:|" + "---:|" * len(repos),
        f"| first file wrong | {sum(wrong.values())} | "
        + " | ".join(f"{wrong[r]}/{sum(s.repo == r for s in scores)}" for r in repos)
        + " |",
    ]
    for kind in FAILURE_KINDS:
        total = sum(c[kind] for c in counts.values())
        if total:
            lines.append(
                f"| {kind} | {total} | " + " | ".join(str(counts[r][kind]) for r in repos) + " |"
            )
    return "\n".join(lines) + "\n"


def _write(out: Path, stem: str, scores: list[InstanceScore], title: str, extra: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / f"{stem}.jsonl").open("w", encoding="utf-8") as fh:
        for s in sorted(scores, key=lambda s: (s.repo, s.instance_id)):  # any collection order
            fh.write(json.dumps(s.to_dict(), sort_keys=True) + "\n")
    summary = summarize(scores)
    sizes = {m: sum(len(s.answers[m]) for s in scores) / max(1, len(scores)) for m in METHODS}
    summary.update(extra, files_per_answer={m: round(v, 4) for m, v in sizes.items()})
    (out / f"{stem}.summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    text = _table(summary, title, sizes) + "\n" + _failures(scores)
    (out / f"{stem}.md").write_text(text)
    print(text)


def cmd_splits(a: argparse.Namespace) -> int:
    try:
        pool = load_training_instances(a.instances, exclude_repos=EXCLUDED).rows
    except RankerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    counts = Counter(r.repo for r in pool)
    test = set(pick_test_repositories(counts))
    spec = {
        "rule": "test: repositories whose sha256('codegrep-localizer-test-v1/' + name) is 0 "
        "modulo 5, none holding over 20% of the pool (ranker_cv.pick_test_repositories); "
        "cv: the rest",
        "sources": [p.name for p in a.instances],
        "excluded_repos": list(EXCLUDED),
        "repos": {
            r: {"n": n, "part": "test" if r in test else "cv"} for r, n in sorted(counts.items())
        },
        "test_ids": sorted(r.instance_id for r in pool if r.repo in test),
        "cv_ids": sorted(r.instance_id for r in pool if r.repo not in test),
    }
    a.output.write_text(json.dumps(spec, indent=1) + "\n")
    print(f"{len(spec['cv_ids'])} cv instances, {len(spec['test_ids'])} test ({sorted(test)})")
    return 0


def _rows(a: argparse.Namespace, part: str) -> list[InstanceCandidates] | None:
    """The examples rows of the splits' `part`; None (said why) when any is missing or a file
    cannot be read: an instance is never dropped or scored 0 in silence."""
    try:
        ids = set(read_json_object(a.splits)[f"{part}_ids"])
        rows = [r for r in read_examples(a.examples) if r.instance_id in ids]
    except (RecordFileError, RankerError, KeyError, TypeError) as exc:
        print(f"error: {exc!r}" if isinstance(exc, KeyError) else f"error: {exc}", file=sys.stderr)
        return None
    missing = sorted(ids - {r.instance_id for r in rows})
    if missing:
        print(
            f"{len(missing)} {part} instance(s) have no examples row (their rollout failed?): "
            f"{missing[:10]}; run localizer_cv.sh again",
            file=sys.stderr,
        )
        return None
    return rows


def cmd_cv(a: argparse.Namespace) -> int:
    rows = _rows(a, "cv")
    if rows is None:
        return 2
    predictions: list[Prediction] = []

    def predict(row: InstanceCandidates, rankers: Mapping[str, Ranker]) -> None:
        files, probs = ranked_answer(row, rankers["threshold"])
        predictions.append(
            Prediction(instance_id=row.instance_id, files=files, scores=probs, retriever="lexical")
        )

    scores, cuts = cross_validate(
        rows,
        on_fold=lambda r, n, t: print(f"fold {n}/{t}: {r} left out", file=sys.stderr),
        on_ranked=predict,
    )
    predictions.sort(key=lambda p: p.instance_id)
    write_records(a.output / "cv.predictions.jsonl", predictions)
    _write(
        a.output,
        "cv",
        scores,
        f"Cross-validated by repository ({len(rows)} instances, {len({r.repo for r in rows})} "
        "repositories; each left out of its own fit and cuts)",
        {"cuts_by_left_out_repo": cuts},
    )
    return 0


def cmd_test(a: argparse.Namespace) -> int:
    done = a.output / "test.summary.json"
    if done.exists() and not a.again:
        print(
            f"{done} exists: the test set is read once per release; --again REASON to "
            "read it again (the reason is recorded)",
            file=sys.stderr,
        )
        return 2
    cv_rows, test_rows = _rows(a, "cv"), _rows(a, "test")
    if cv_rows is None or test_rows is None:
        return 2
    ranker, report = fit(examples_of(cv_rows))
    rankers = {m: replace(ranker, cut=c) for m, c in report.cuts.items()}
    scores = [score_instance(row, rankers) for row in test_rows]
    _write(
        a.output,
        "test",
        scores,
        f"Test set, read once ({len(scores)} instances of {sorted({s.repo for s in scores})})",
        {"again": a.again},
    )
    return 0


def test_repositories(ids: list[str]) -> list[str]:
    """OWNER/NAME of each OWNER__NAME-NUMBER id, once each, sorted.

    >>> test_repositories(["astropy__astropy-7", "sphinx-doc__sphinx-8", "astropy__astropy-1"])
    ['astropy/astropy', 'sphinx-doc/sphinx']
    """
    return sorted({i.rsplit("-", 1)[0].replace("__", "/", 1) for i in ids})


def cmd_test_repos(a: argparse.Namespace) -> int:
    try:
        ids = read_json_object(a.splits)["test_ids"]
        if not isinstance(ids, list) or not all(isinstance(i, str) and "__" in i for i in ids):
            raise TypeError("test_ids must be a list of OWNER__NAME-NUMBER ids")
    except (RecordFileError, KeyError, TypeError) as exc:
        print(
            f"error: {a.splits}: {exc!r}" if isinstance(exc, KeyError) else f"error: {exc}",
            file=sys.stderr,
        )
        return 2
    print("\n".join(test_repositories(ids)))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("splits")
    s.add_argument("instances", nargs="+", type=Path)
    s.add_argument("-o", "--output", type=Path, required=True)
    for name in ("cv", "test"):
        c = sub.add_parser(name)
        c.add_argument("examples", type=Path)
        c.add_argument("--splits", type=Path, required=True)
        c.add_argument("-o", "--output", type=Path, required=True)
        if name == "test":
            c.add_argument("--again", default=None, help="why the test set is read again")
    t = sub.add_parser("test-repos")
    t.add_argument("splits", type=Path)
    a = p.parse_args(argv)
    commands = {"splits": cmd_splits, "cv": cmd_cv, "test": cmd_test, "test-repos": cmd_test_repos}
    return commands[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
