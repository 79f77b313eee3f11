"""Benchmark: file retrieval on the Multi-SWE-bench slice, by language.

Converts the slice in the shared data (`multi_swe_bench_partial.slim.jsonl.gz`: 433 rows, 30
repositories, 7 languages) into SWE-bench-style instances, keeps those whose repository and base
commit are at hand in a folder of local mirrors, runs `swe-eval predict` once per retriever,
cuts the full rankings of ranking baselines (BM25, dense) at the cut chosen on SWE-bench Lite,
scores everything with `swe-eval retrieval --paired` per language and overall, and prints one
markdown table. It is not a timed test: it prints figures and writes them under -o.

    uv run --all-packages python packages/swe-eval/benchmarks/multi_swe_bench.py \\
        --mirrors /path/to/mirrors -r lexical -r bm25 -j 2 -o bench-out/multi-swe-bench

--mirrors holds one bare clone per repository as `OWNER+NAME/repo` or `OWNER+NAME` (matched
without regard to case: the slice writes `fasterxml/jackson-core`, GitHub `FasterXML`). The first
-r is the reference of the paired differences (each other retriever minus it). Predictions
resume: rerun with one more -r and only that retriever is computed. What is left out, and why,
is written to `left-out.jsonl` and said on stderr; the gold rule is checked against the slice's
published `gold_files` in `gold-check.json`.

Not for: tuning. The BM25 cut is the one chosen on Lite, applied unchanged, so every figure
here is held out for the baselines; LexicalPolicy was tuned on Lite (Python only).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegrep_records import (
    ChangeKind,
    GoldRule,
    Instance,
    RecordFileError,
    RowProblem,
    is_test_path,
    parse_patch,
    read_rows,
)
from pydantic import ValidationError

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_SLICE = (
    ROOT
    / ".."
    / "shared"
    / "data"
    / "multi_swe_bench_partial"
    / "multi_swe_bench_partial.slim.jsonl.gz"
)
DEFAULT_OUT = ROOT / "bench-out" / "multi-swe-bench"
# The cut `swe-eval cut --best` chose for BM25 and dense on SWE-bench Lite (README, Results):
# applied unchanged here, so the baselines' figures on this slice are not tuned on it.
LITE_CUT = "--relative 0.95 --top-k 10"
DEFAULT_CUTS = {"bm25": LITE_CUT, "dense": LITE_CUT}
STATEMENTS = ("pr+issues", "issues")


class BenchError(Exception):
    """Bad input: the message is said as one `error:` line and the exit code is 2."""


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------- convert


def _issues(value: Any) -> list[Mapping[str, Any]]:
    """`resolved_issues` as a list of {number, title, body}; some exports hold its repr."""
    if isinstance(value, str):
        for parse in (json.loads, ast.literal_eval):
            try:
                value = parse(value)
                break
            except (ValueError, SyntaxError):
                continue
    if not isinstance(value, list):
        return []
    return [i for i in value if isinstance(i, Mapping)]


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def problem_statement(row: Mapping[str, Any], statement: str) -> str:
    """The issue text a retriever reads.

    `pr+issues`: the pull request's title and body, then each resolved issue's title and body.
    `issues`: the resolved issues only (the PR text was written by whoever wrote the fix and
    sometimes names the files it changes); the PR text stands in when there is no issue.
    """
    pr = "\n\n".join(t for t in (_text(row.get("title")), _text(row.get("body"))) if t)
    issues = []
    for issue in _issues(row.get("resolved_issues")):
        head = f"Issue #{issue.get('number')}" if issue.get("number") is not None else "Issue"
        title, body = _text(issue.get("title")), _text(issue.get("body"))
        issues.append("\n\n".join(t for t in (f"{head}: {title}" if title else head, body) if t))
    if statement == "issues" and issues:
        return "\n\n".join(issues)
    return "\n\n".join(t for t in (pr, *issues) if t)


def convert_row(row: Mapping[str, Any], statement: str) -> dict[str, Any]:
    """One slice row as a SWE-bench-style instance row (plus `language`); raises ValueError."""
    org, name = _text(row.get("org")), _text(row.get("repo"))
    if not org or not name or "/" in name:
        raise ValueError(f"org/repo must name one repository, got {org!r}/{name!r}")
    base = row.get("base")
    sha = base.get("sha") if isinstance(base, Mapping) else None
    iid = _text(row.get("instance_id")) or f"{org}__{name}-{row.get('number')}"
    out = {
        "instance_id": iid,
        "repo": f"{org}/{name}",
        "base_commit": sha if isinstance(sha, str) and sha else None,
        "problem_statement": problem_statement(row, statement),
        "patch": row.get("fix_patch") or "",
        "test_patch": row.get("test_patch") or "",
        "language": _text(row.get("language")) or "unknown",
        "gold_files": list(row.get("gold_files") or []),
    }
    if not out["patch"]:
        raise ValueError("no fix_patch")
    Instance.model_validate(out)  # the toolkit's reader must accept what is written
    return out


def convert(
    path: Path, statement: str
) -> tuple[list[dict[str, Any]], dict[str, Mapping[str, Any]], list[str]]:
    """The converted rows, the source row of each (by instance id), and the rows skipped."""
    rows, sources, problems = [], {}, []
    seen: set[str] = set()
    try:
        for line, value in read_rows(path):
            if isinstance(value, RowProblem):
                problems.append(f"{path}:{line}: {value.message}")
                continue
            if not isinstance(value, Mapping):
                problems.append(f"{path}:{line}: not a JSON object")
                continue
            try:
                inst = convert_row(value, statement)
            except (ValueError, ValidationError) as exc:
                problems.append(f"{path}:{line}: {str(exc).splitlines()[0]}")
                continue
            if inst["instance_id"] in seen:
                problems.append(f"{path}:{line}: duplicate instance_id {inst['instance_id']}")
                continue
            seen.add(inst["instance_id"])
            rows.append(inst)
            sources[inst["instance_id"]] = value
    except RecordFileError as exc:
        raise BenchError(str(exc)) from exc
    return rows, sources, problems


# ---------------------------------------------------------------------------------- gold check


def gold_check(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The project's gold rule (modified, deleted, renamed-old; no added, no tests) against the
    slice's published `gold_files` (every path of the diff headers), and why they differ."""
    rule, published_rule = (
        GoldRule(),
        GoldRule(include_added=True, exclude_tests=False, renames="new"),
    )
    why: Counter[str] = Counter()
    differ, empty, published_mismatch = [], [], []
    for r in rows:
        changes = parse_patch(r["patch"])
        gold = set(Instance.model_validate(r).gold_files_for(rule))
        published = set(r.get("gold_files") or [])
        full = {p for c in changes for p in published_rule.paths(c)}
        if published and full != published:
            published_mismatch.append(r["instance_id"])
        if not gold:
            empty.append(r["instance_id"])
        if gold == published:
            continue
        reasons = set()
        for c in changes:
            if c.kind is ChangeKind.ADDED:
                reasons.add("added file (not at the base commit)")
            elif c.kind is ChangeKind.RENAMED:
                reasons.add("renamed file (gold under its old path)")
            if is_test_path(c.path) or (c.new_path and is_test_path(c.new_path)):
                reasons.add("test file")
        why.update(reasons)
        differ.append(
            {
                "instance_id": r["instance_id"],
                "only_published": sorted(published - gold),
                "only_rule": sorted(gold - published),
                "why": sorted(reasons),
            }
        )
    return {
        "instances": len(rows),
        "rule": "codegrep_records.GoldRule() defaults",
        "same_as_published": len(rows) - len(differ),
        "differ": len(differ),
        "differ_why": dict(why),
        "empty_gold_under_rule": empty,
        "published_is_not_all_diff_paths": published_mismatch,
        "differences": differ,
    }


def statement_leaks(rows: Sequence[Mapping[str, Any]], slice_rows: Mapping[str, Any]) -> int:
    """Instances whose PR title/body names a gold file's base name and whose issues do not."""
    n = 0
    for r in rows:
        src = slice_rows[r["instance_id"]]
        pr = f"{_text(src.get('title'))}\n{_text(src.get('body'))}"
        issues = "\n".join(
            f"{_text(i.get('title'))}\n{_text(i.get('body'))}"
            for i in _issues(src.get("resolved_issues"))
        )
        names = {p.rsplit("/", 1)[-1] for p in Instance.model_validate(r).gold_files_for()}
        if any(b in pr and b not in issues for b in names):
            n += 1
    return n


# ---------------------------------------------------------------------------------- mirrors


def _is_git_dir(p: Path) -> bool:
    return (p / "HEAD").is_file() and (p / "objects").is_dir()


def find_mirrors(mirrors: Path) -> dict[str, Path]:
    """{"owner+name" (lower case): bare git dir} for `OWNER+NAME/repo` or `OWNER+NAME`."""
    found = {}
    for entry in sorted(mirrors.iterdir()):
        if "+" not in entry.name or not entry.is_dir():
            continue
        for cand in (entry / "repo", entry):
            if _is_git_dir(cand):
                found[entry.name.lower()] = cand.resolve()
                break
    return found


def missing_commits(git_dir: Path, shas: Iterable[str]) -> set[str]:
    shas = sorted(set(shas))
    proc = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch-check"],
        input="".join(f"{s}^{{commit}}\n" for s in shas),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise BenchError(f"{git_dir}: git cat-file failed: {proc.stderr.strip()}")
    lines = proc.stdout.splitlines()
    return {s for s, out in zip(shas, lines, strict=True) if out.endswith(" missing")}


def newest_commit_date(git_dir: Path) -> str:
    proc = subprocess.run(
        ["git", "--git-dir", str(git_dir), "log", "-1", "--all", "--format=%cs"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or "unknown date"


def link_mirrors(farm: Path, wanted: Mapping[str, Path]) -> None:
    """One link per repository named as the instances spell it, so that the clone template
    `{farm}/{owner}+{name}` finds a mirror whose folder is spelled in another case."""
    farm.mkdir(parents=True, exist_ok=True)
    for key, target in wanted.items():
        link = farm / key
        if link.is_symlink() and Path(os.readlink(link)) == target:
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target, target_is_directory=True)


@dataclass
class Selection:
    kept: list[dict[str, Any]]
    left_out: list[dict[str, str]]
    links: dict[str, Path]


def select(
    rows: Sequence[dict[str, Any]],
    mirrors: Path,
    *,
    repos: Sequence[str],
    exclude: Sequence[str],
    languages: Sequence[str],
    limit_per_repo: int | None,
) -> Selection:
    known_repos = {r["repo"].lower() for r in rows}
    for name in [*repos, *exclude]:
        if name.lower() not in known_repos:
            raise BenchError(f"--repo/--exclude-repo {name}: no instance of the slice has it")
    known_langs = {r["language"] for r in rows}
    for lang in languages:
        if lang not in known_langs:
            raise BenchError(f"--language {lang}: not one of {', '.join(sorted(known_langs))}")
    at_hand = find_mirrors(mirrors)
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    left: list[dict[str, str]] = []

    def leave(r: Mapping[str, Any], reason: str) -> None:
        left.append({"instance_id": r["instance_id"], "repo": r["repo"], "reason": reason})

    for r in rows:
        if repos and r["repo"].lower() not in {x.lower() for x in repos}:
            continue
        if r["repo"].lower() in {x.lower() for x in exclude}:
            leave(r, "--exclude-repo")
            continue
        if languages and r["language"] not in languages:
            continue
        by_repo[r["repo"]].append(r)
    kept, links = [], {}
    for repo, insts in by_repo.items():
        owner, name = repo.split("/")
        key = f"{owner}+{name}"
        git_dir = at_hand.get(key.lower())
        if git_dir is None:
            for r in insts:
                leave(r, f"no mirror {key} in {mirrors}")
            continue
        gone = missing_commits(git_dir, [r["base_commit"] for r in insts if r["base_commit"]])
        newest = newest_commit_date(git_dir) if gone else ""
        good = []
        for r in insts:
            if not r["base_commit"]:
                leave(r, "no base.sha")
            elif r["base_commit"] in gone:
                leave(
                    r,
                    f"base commit {r['base_commit'][:12]} not in the mirror "
                    f"(its newest commit is of {newest}: the snapshot may predate it)",
                )
            else:
                good.append(r)
        if limit_per_repo is not None:
            for r in good[limit_per_repo:]:
                leave(r, f"--limit-per-repo {limit_per_repo}")
            good = good[:limit_per_repo]
        if good:
            links[key] = git_dir
        kept.extend(good)
    return Selection(kept, left, links)


# ---------------------------------------------------------------------------------- running


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
            n += 1
    return n


def swe_eval_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("swe-eval")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("swe-eval")
    if found is None:
        raise BenchError("swe-eval is not installed here: run with `uv run --all-packages`")
    return [found]


def run(cmd: Sequence[str], *, capture: bool = False) -> subprocess.CompletedProcess[str]:
    say("$ " + shlex.join(cmd))
    if capture:
        proc = subprocess.run(cmd, stderr=subprocess.PIPE, text=True, check=False)
        sys.stderr.write(proc.stderr)
        return proc
    return subprocess.run(cmd, text=True, check=False)


def parse_assignments(values: Sequence[str], flag: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for v in values:
        name, sep, args = v.partition("=")
        if not sep or not name:
            raise BenchError(f'{flag} {v!r}: expected RETRIEVER=ARGS, e.g. "bm25={LITE_CUT}"')
        out[name].extend(shlex.split(args))
    return out


def package_digest(name: str) -> dict[str, str]:
    """Where `name` is imported from in this environment (PYTHONPATH included: the predict
    subprocesses inherit it) and a digest of its modules, so a run says which code it ran."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return {"path": "not importable"}
    folder = Path(spec.origin).parent
    digest = hashlib.sha256()
    for p in sorted(folder.rglob("*.py")):
        digest.update(p.relative_to(folder).as_posix().encode() + b"\0" + p.read_bytes())
    return {"path": str(folder), "sha256": digest.hexdigest()[:16]}


# Retrievers that do not run through codegrep-model's rollout engine.
BASELINES = ("bm25", "dense")


def check_resume(raw: Path, name: str, code: Mapping[str, Mapping[str, str]]) -> None:
    """`swe-eval predict` resumes by instance id, so a file begun by other code is extended
    as if nothing had changed. The code digests are kept beside the file when it is begun.
    A policy run through codegrep-model refuses to resume when that package changed: one name
    can mean another policy across versions (`lexical` gains a learned ranker). Any other
    change (a CLI edit, a sandbox fix) is said and resumed."""
    stamp = raw.with_name(raw.name + ".code.json")
    used = {k: v for k, v in code.items() if name not in BASELINES or k != "codegrep_model"}
    begun = raw.exists() and raw.stat().st_size > 0
    if not begun:
        stamp.write_text(json.dumps(used, indent=2) + "\n")
        return
    if not stamp.exists():
        say(f"warning: {raw} has no code stamp; resuming it as it is")
        return
    before = json.loads(stamp.read_text())
    changed = [
        k for k, v in used.items() if k in before and before[k].get("sha256") != v.get("sha256")
    ]
    if "codegrep_model" in changed:
        raise BenchError(
            f"{raw} was begun by another codegrep_model ({before['codegrep_model']['sha256']}, "
            f"now {used['codegrep_model']['sha256']}): use another -o, or delete the file to "
            "predict again"
        )
    if changed:
        say(f"warning: resuming {raw.name}, begun before {', '.join(changed)} changed")


# ---------------------------------------------------------------------------------- tables


def _cell(est: Mapping[str, Any] | None) -> str:
    if not est or est.get("value") is None:
        return "–"
    v, lo, hi, n = est["value"], est["low"], est["high"], est["n"]
    if v != v:  # NaN
        return "–"
    return f"{v:.3f}" if n < 2 else f"{v:.3f} [{lo:.3f}, {hi:.3f}]"


def summary_markdown(groups: Sequence[tuple[str, dict[str, Any]]], cuts: Mapping[str, str]) -> str:
    head = (
        "| language | retriever | n | F0.5 [95% CI] | precision [95% CI] | recall [95% CI] "
        "| files | missing | empty | no gold |"
    )
    out = [head, "|" + "---|" * 10]
    for label, table in groups:
        for s in table["systems"]:
            m = s["metrics"]
            files = m.get("n_files", {}).get("value")
            out.append(
                f"| {label} | {s['name']} | {s['n']} | {_cell(m.get('fbeta'))} "
                f"| {_cell(m.get('precision'))} | {_cell(m.get('recall'))} "
                f"| {files:.2f} | {s['missing']} | {s['empty']} | {s['no_gold']} |"
                if files is not None
                else f"| {label} | {s['name']} | {s['n']} | – | – | – | – | {s['missing']} "
                f"| {s['empty']} | {s['no_gold']} |"
            )
    paired = [(label, d) for label, t in groups for d in t.get("paired", [])]
    if paired:
        out += [
            "",
            "| language | a − b | metric | n | mean diff [95% CI] | p (two-sided) |",
            "|" + "---|" * 6,
        ]
        for label, d in paired:
            out.append(
                f"| {label} | {d['a']} − {d['b']} | {d['metric']} | {d['n']} "
                f"| {_cell(d['diff'])} | {d['p_value']:.4f} |"
            )
    if cuts:
        out += [
            "",
            "Cuts of full rankings: "
            + "; ".join(f"{k}: `swe-eval cut {v}`" for k, v in cuts.items()),
        ]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example: multi_swe_bench.py --mirrors MIRRORS -r lexical -r bm25 -j 2",
    )
    ap.add_argument(
        "-i",
        "--instances",
        type=Path,
        default=DEFAULT_SLICE,
        help="the Multi-SWE-bench rows (default: the shared slice)",
    )
    ap.add_argument(
        "--mirrors",
        type=Path,
        required=True,
        help="folder of bare clones: OWNER+NAME/repo or OWNER+NAME",
    )
    ap.add_argument(
        "-o",
        "--output",
        type=Path,
        default=DEFAULT_OUT,
        help=f"output folder (default {DEFAULT_OUT.relative_to(ROOT)})",
    )
    ap.add_argument(
        "-r",
        "--retriever",
        action="append",
        default=None,
        help="a `swe-eval predict -r` name; repeat; the first is the paired "
        "reference (default: lexical, bm25)",
    )
    ap.add_argument(
        "--cache", type=Path, default=None, help="worktree-sandbox clone cache (default: OUT/cache)"
    )
    ap.add_argument("-j", "--jobs", type=int, default=2, help="rollouts at a time (agents)")
    ap.add_argument("--repo", action="append", default=[], help="keep only this repository")
    ap.add_argument("--exclude-repo", action="append", default=[], help="leave this one out")
    ap.add_argument("--language", action="append", default=[], help="keep only this language")
    ap.add_argument(
        "--limit-per-repo",
        type=int,
        default=None,
        help="at most N instances per repository (the first in the slice)",
    )
    ap.add_argument(
        "--statement",
        choices=STATEMENTS,
        default="pr+issues",
        help="problem statement: PR title+body+resolved issues, or the issues only",
    )
    ap.add_argument(
        "--cut",
        action="append",
        default=[],
        metavar="RETRIEVER=ARGS",
        help=f"`swe-eval cut` options for a ranking retriever (default bm25 and "
        f"dense: {LITE_CUT!r}, Lite's choice); RETRIEVER=none: score uncut",
    )
    ap.add_argument(
        "--predict-args",
        action="append",
        default=[],
        metavar="RETRIEVER=ARGS",
        help="extra `swe-eval predict` options for one retriever ('*' for all), "
        "e.g. 'agent=--base-url http://127.0.0.1:8000/v1 --model codegrep'",
    )
    ap.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
    ap.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    ap.add_argument(
        "--score-only",
        action="store_true",
        help="run no prediction: score the prediction files already in OUT",
    )
    ap.add_argument(
        "--dry-run", action="store_true", help="convert and select, say what would run, run nothing"
    )
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error("-j must be >= 1")
    if args.limit_per_repo is not None and args.limit_per_repo < 0:
        ap.error("--limit-per-repo must be >= 0")
    args.retriever = args.retriever or ["lexical", "bm25"]
    if len(set(args.retriever)) != len(args.retriever):
        ap.error("a retriever is named twice in -r")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.time()
    out: Path = args.output.resolve()
    if out.exists() and not out.is_dir():
        raise BenchError(f"-o {out}: exists and is not a folder")
    if not args.mirrors.is_dir():
        raise BenchError(f"--mirrors {args.mirrors}: not a folder")
    cuts = dict(DEFAULT_CUTS)
    for name, opts in parse_assignments(args.cut, "--cut").items():
        cuts[name] = shlex.join(opts)
    cuts = {k: v for k, v in cuts.items() if k in args.retriever and v != "none"}
    extra = parse_assignments(args.predict_args, "--predict-args")
    for name in extra:
        if name != "*" and name not in args.retriever:
            raise BenchError(f"--predict-args {name}=...: {name} is not among the -r retrievers")
    cache = (args.cache or out / "cache").resolve()

    # 1. convert, check the gold rule
    rows, sources, problems = convert(args.instances, args.statement)
    for p in problems:
        say(f"skipped row: {p}")
    if not rows:
        raise BenchError(f"{args.instances}: no row converts")
    say(f"converted {len(rows)} rows of {args.instances.name} ({len(problems)} skipped)")
    check = gold_check(rows)
    check["pr_text_names_a_gold_file_the_issues_do_not"] = statement_leaks(rows, sources)
    say(
        f"gold rule vs published gold_files: {check['same_as_published']} same, "
        f"{check['differ']} differ ({check['differ_why']}); "
        f"{len(check['empty_gold_under_rule'])} with no gold under the rule (counted no_gold)"
    )

    # 2. what is at hand
    sel = select(
        rows,
        args.mirrors,
        repos=args.repo,
        exclude=args.exclude_repo,
        languages=args.language,
        limit_per_repo=args.limit_per_repo,
    )
    if not sel.kept:
        raise BenchError(f"no instance has its repository and base commit in {args.mirrors}")
    why = Counter(
        x["reason"].split(" (")[0]
        if "not in the mirror" not in x["reason"]
        else "base commit not in the mirror"
        for x in sel.left_out
    )
    say(
        f"kept {len(sel.kept)} instances of {len({r['repo'] for r in sel.kept})} repositories; "
        f"left out {len(sel.left_out)}: {dict(why)}"
    )
    for x in sel.left_out:
        if not x["reason"].startswith("--"):
            say(f"  left out {x['instance_id']}: {x['reason']}")
    out.mkdir(parents=True, exist_ok=True)
    farm = out / "mirrors"
    link_mirrors(farm, sel.links)
    source = f"{farm}/{{owner}}+{{name}}"
    instances = out / "instances.jsonl"
    write_jsonl(instances, sel.kept)
    write_jsonl(out / "left-out.jsonl", sel.left_out)
    (out / "gold-check.json").write_text(json.dumps(check, indent=2) + "\n")
    by_lang: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in sel.kept:
        by_lang[r["language"]].append(r)
    langs = sorted(by_lang, key=lambda k: (-len(by_lang[k]), k))
    for lang in langs:
        write_jsonl(out / f"instances.{lang}.jsonl", by_lang[lang])

    se = swe_eval_cmd()
    code = {n: package_digest(n) for n in ("codegrep_model", "worktree_sandbox", "swe_eval")}
    pred_dir = out / "predictions"
    preds: dict[str, Path] = {}
    timings: dict[str, float] = {}
    failed: list[str] = []

    def predict(name: str, output: Path, *more: str) -> list[str]:
        """`swe-eval predict -r NAME` on the kept instances, with its pass-through options."""
        argv = [*se, "predict", "-r", name, "-i", str(instances), "--cache", str(cache)]
        argv += ["--source", source, *more, "-o", str(output)]
        return [*argv, *extra.get("*", []), *extra.get(name, [])]

    # 3. predict, one retriever at a time (each resumes from its own file)
    if not args.score_only and not args.dry_run:
        # a retriever name this swe-eval does not know fails here, before hours of the others
        for name in args.retriever:
            probe = subprocess.run(
                predict(name, out / f".probe-{name}.jsonl", "--dry-run"),
                capture_output=True,
                text=True,
                check=False,
            )
            if probe.returncode == 2:
                sys.stderr.write(probe.stderr)
                raise BenchError(f"swe-eval predict -r {name} refuses its options (see above)")
    for name in args.retriever:
        raw = pred_dir / f"{name}.jsonl"
        cmd = predict(name, raw, "-j", str(args.jobs))
        if args.dry_run:
            say("would run: " + shlex.join(cmd))
            continue
        if not args.score_only:
            pred_dir.mkdir(parents=True, exist_ok=True)
            check_resume(raw, name, code)
            t = time.perf_counter()
            proc = run(cmd)
            timings[f"predict {name}"] = round(time.perf_counter() - t, 1)
            if proc.returncode == 2:
                raise BenchError(f"swe-eval predict -r {name} refused its input (see above)")
            if proc.returncode != 0:
                failed.append(name)
                say(
                    f"predict -r {name}: some instances failed (exit {proc.returncode}); "
                    "they score 0 as missing"
                )
        if not raw.exists():
            raise BenchError(f"{raw}: no predictions for {name} (run without --score-only)")
        preds[name] = raw
        if name in cuts:
            cut_file = pred_dir / f"{name}@cut.jsonl"
            proc = run(
                [
                    *se,
                    "cut",
                    "-i",
                    str(instances),
                    "-p",
                    str(raw),
                    *shlex.split(cuts[name]),
                    "--name",
                    name,
                    "-o",
                    str(cut_file),
                ],
                capture=True,
            )
            if proc.returncode != 0:
                raise BenchError(f"swe-eval cut failed for {name} (exit {proc.returncode})")
            # the sweep on this slice is in-sample: kept for reference, never applied
            (pred_dir / f"{name}.sweep.txt").write_text(proc.stderr)
            preds[name] = cut_file
    if args.dry_run:
        say(
            f"would score {', '.join(args.retriever)} on {len(sel.kept)} instances; "
            f"languages: {', '.join(f'{k} {len(by_lang[k])}' for k in langs)}"
        )
        return 0

    # 4. score: overall and per language, each with the paired bootstrap
    tables_dir = out / "tables"
    tables_dir.mkdir(parents=True, exist_ok=True)
    p_args = [a for name in args.retriever for a in ("-p", str(preds[name]), "--name", name)]
    common = ["--resamples", str(args.resamples), "--seed", str(args.seed)]
    no_gold = set(check["empty_gold_under_rule"])
    scorable = {r["instance_id"] for r in sel.kept if r["instance_id"] not in no_gold}
    rows_of = {**by_lang, "all": sel.kept}
    groups: list[tuple[str, dict[str, Any]]] = []
    t = time.perf_counter()
    for label, inst_file in [
        *((k, out / f"instances.{k}.jsonl") for k in langs),
        ("all", instances),
    ]:
        target = tables_dir / f"{label}.json"
        # a paired bootstrap needs two instances with gold, and one retriever to pair with
        n_gold = sum(1 for r in rows_of[label] if r["instance_id"] in scorable)
        paired = ["--paired"] if n_gold >= 2 and len(args.retriever) >= 2 else []
        proc = run(
            [
                *se,
                "retrieval",
                "-i",
                str(inst_file),
                *p_args,
                *common,
                *paired,
                "-f",
                "json",
                "-o",
                str(target),
            ]
        )
        if proc.returncode != 0:
            raise BenchError(f"swe-eval retrieval failed on {label} (exit {proc.returncode})")
        groups.append((label, json.loads(target.read_text())))
    run(
        [
            *se,
            "retrieval",
            "-i",
            str(instances),
            *p_args,
            *common,
            *(["--paired"] if len(scorable) >= 2 and len(args.retriever) >= 2 else []),
            "--by-repo",
            "-f",
            "markdown",
            "--title",
            "Multi-SWE-bench slice, by repository",
            "-o",
            str(tables_dir / "by-repo.md"),
        ]
    )
    timings["score"] = round(time.perf_counter() - t, 1)

    table = summary_markdown(groups, cuts)
    (tables_dir / "by-language.md").write_text(table)
    meta = {
        "command": shlex.join([sys.executable, *sys.argv]),
        "slice": str(args.instances),
        "statement": args.statement,
        "retrievers": args.retriever,
        "cuts": cuts,
        "kept": len(sel.kept),
        "left_out": dict(why),
        "by_language": {k: len(by_lang[k]) for k in langs},
        "repositories": sorted({r["repo"] for r in sel.kept}),
        "timings_s": timings,
        "wall_s": round(time.time() - started, 1),
        "predict_failed": failed,
        "code": code,
    }
    (out / "run.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(table)
    say(
        f"wrote {tables_dir}/by-language.md, by-repo.md and the JSON tables; "
        f"wall {meta['wall_s']} s"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
