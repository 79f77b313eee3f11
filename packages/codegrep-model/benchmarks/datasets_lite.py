"""Training rows from SWE-bench Lite: GRPO rows (patch gold, then CATM label gold) and SFT rows
from LexicalPolicy rollouts, with every count the reports give.

Lite only (the held-out protocol: the Verified dev slice is never used to tune). GRPO rows are
built for the Lite repositories at hand (the mirrors), split by repository; labels come from
`catm mine` over the GLM-4.6 OpenHands sessions (`--judge none`), made here when missing; SFT
rows come from `codegrep-model batch` LexicalPolicy rollouts (psf/requests and pallets/flask),
made here when missing. Prints the figures and writes them, and the rows, under -o.

    uv run --all-packages python packages/codegrep-model/benchmarks/datasets_lite.py \\
        --cache bench-out/cache --source "MIRRORS/{owner}+{name}/repo" -o bench-out/datasets-lite

(MIRRORS: a folder with a local clone per repository; or --source "https://github.com/{repo}.git").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import codegrep_records as records
from codegrep_model.datasets import (
    GrpoDataset,
    grpo_rows,
    load_rollouts,
    sft_rows,
    split_by_repo,
)
from codegrep_records.io import load_records, write_records
from worktree_sandbox import BareRepoCache

DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
FETCHABLE = (
    "astropy/astropy",
    "pallets/flask",
    "pylint-dev/pylint",
    "pytest-dev/pytest",
    "psf/requests",
    "mwaskom/seaborn",
    "sphinx-doc/sphinx",
    "sympy/sympy",
    "pydata/xarray",
)
SFT_REPOS = ("psf/requests", "pallets/flask")


def run(cmd: list[str]) -> None:
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SystemExit(f"{name} is not on PATH: run this with `uv run --all-packages`")
    return path


def grpo(args: argparse.Namespace, labels: tuple[records.GoldLabel, ...]) -> GrpoDataset:
    loaded = load_records(args.instances, records.Instance, key=None)
    cache = BareRepoCache(args.cache, source=args.source)
    return asyncio.run(
        grpo_rows(
            loaded.records,
            cache,
            labels=labels,
            repos=FETCHABLE,
            val_fraction=args.val_fraction,
            seed=args.seed,
            jobs=args.jobs,
            bad_rows=loaded.problems,
        )
    )


def show_grpo(title: str, ds: GrpoDataset) -> dict[str, Any]:
    r = ds.report
    print(f"\n## GRPO rows, {title}")
    print(
        f"{r.instances} instances read; train {r.train} rows ({len(r.train_repos)} repos), "
        f"val {r.val} rows ({', '.join(r.val_repos)}); {r.trees} trees, {r.tree_errors} failed"
    )
    print(f"dropped by reason: {r.dropped_by_reason or 'none'}; bad rows: {len(r.bad_rows)}")
    print(f"gold sources: {r.gold_sources}; gold files absent from the tree: {r.gold_not_in_tree}")
    label_rows = Counter(x.repo for x in ds.train + ds.val if x.gold_source == "label")
    print("| repo | split | rows | label-gold rows | dropped |")
    print("|---|---|---|---|---|")
    for repo, info in r.per_repo.items():
        print(
            f"| {repo} | {info['split']} | {info['rows']} | {label_rows.get(repo, 0)} "
            f"| {info['dropped']} |"
        )
    return r.to_dict() | {"label_rows_per_repo": dict(sorted(label_rows.items()))}


def write(folder: Path, ds: GrpoDataset) -> None:
    def dump(row: Any) -> str:
        return str(row.model_dump_json(exclude_none=True))

    write_records(folder / "train.jsonl", ds.train, dump=dump)
    write_records(folder / "val.jsonl", ds.val, dump=dump)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--instances", type=Path, default=DATA / "swebench" / "lite.jsonl")
    parser.add_argument(
        "--sessions", type=Path, default=DATA / "openhands_glm46_lite" / "sessions.jsonl.gz"
    )
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--source", required=True, help="clone template, e.g. a mirror pattern")
    parser.add_argument("-o", "--output", type=Path, default=Path("bench-out/datasets-lite"))
    parser.add_argument("--labels", type=Path, help="CATM labels (default: made under -o)")
    parser.add_argument("--rollouts", type=Path, help="batch rollouts (default: made under -o)")
    parser.add_argument("--val-fraction", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("-j", "--jobs", type=int, default=4)
    args = parser.parse_args()
    out: Path = args.output
    out.mkdir(parents=True, exist_ok=True)

    labels_path: Path = args.labels or out / "labels.jsonl"
    if not labels_path.exists():
        run(
            [tool("catm"), "mine", str(args.sessions), "-i", str(args.instances),
             "-o", str(labels_path), "--judge", "none"]
        )  # fmt: skip
    labels = records.load_labels(labels_path)
    print(f"{len(labels.records)} labels ({len(labels.problems)} bad rows) from {labels_path}")

    figures: dict[str, Any] = {}
    plain = grpo(args, ())
    figures["grpo_patch_gold"] = show_grpo("patch gold", plain)
    write(out / "grpo", plain)
    labelled = grpo(args, labels.records)
    figures["grpo_label_gold"] = show_grpo(
        f"label gold where a label exists ({labels_path})", labelled
    )
    write(out / "grpo-labels", labelled)
    counts = Counter(x.repo for x in plain.train + plain.val)
    splits = {
        seed: sorted(split_by_repo(counts, val_fraction=args.val_fraction, seed=seed))
        for seed in range(5)
    }
    print("\nvalidation repositories by seed:", splits)
    figures["val_repos_by_seed"] = splits

    rollouts_path: Path = args.rollouts or out / "lex.pred.rollouts.jsonl"
    if not rollouts_path.exists():
        pred = rollouts_path.with_name(rollouts_path.name.replace(".rollouts", ""))
        repos = [x for r in SFT_REPOS for x in ("--repo", r)]
        run(
            [tool("codegrep-model"), "batch", str(args.instances), "-o", str(pred),
             "--cache", str(args.cache), "--source", args.source, *repos, "-j", "2",
             "--rollouts", str(rollouts_path)]
        )  # fmt: skip
    loaded = load_rollouts([rollouts_path])
    instances = records.load_instances(args.instances).records
    print(f"\n## SFT rows from {rollouts_path} ({len(loaded.records)} rollouts)")
    print("| gold | threshold | kept | dropped by reason | mean weight |")
    print("|---|---|---|---|---|")
    figures["sft"] = {}
    for gold_name, gold_labels in (("patch", ()), ("label", labels.records)):
        for threshold in sorted({0.0, args.threshold, 0.8}):
            ds = sft_rows(
                loaded.records,
                instances,
                labels=gold_labels,
                threshold=threshold,
                bad_rows=loaded.problems,
            )
            r = ds.report
            mean = f"{r.mean_weight:.3f}" if r.mean_weight is not None else "-"
            print(f"| {gold_name} | {threshold} | {r.kept} | {r.dropped_by_reason} | {mean} |")
            figures["sft"][f"{gold_name}@{threshold}"] = r.to_dict()
            if gold_name == "patch" and threshold == args.threshold:
                write_records(
                    out / "sft.jsonl", ds.rows, dump=lambda x: x.model_dump_json(exclude_none=True)
                )
    (out / "figures.json").write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n")
    print(f"\nfigures -> {out / 'figures.json'}")


if __name__ == "__main__":
    main()
