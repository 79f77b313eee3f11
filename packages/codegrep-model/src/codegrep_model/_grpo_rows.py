"""GRPO rows: SWE-bench-style instances (CATM labels as gold where there are any) as the rows
`swift rlhf --rlhf_type grpo` reads, with the prompts exactly as `Episode.start` renders them for
the instance's tree, split into train and validation by repository.
Not for: SFT rows (`_sft_rows`), or reading and writing files (the CLI).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import codegrep_records as records
from codegrep_records.io import parse_json
from pydantic import Field
from worktree_sandbox import BareRepoCache, RepositoryNotFoundError, SandboxError, TreePool

from codegrep_model._dataset_rows import (
    _NO_GOLD,
    Dropped,
    GoldLineRange,
    _DropReport,
    _gold,
    _gold_line_ranges,
    _label_map,
    _Row,
    _VersionedRow,
)
from codegrep_model.episode import Episode, RolloutConfig
from codegrep_model.prompts import PromptSet
from codegrep_model.records import Instance
from codegrep_model.tools import openai_tools

__all__ = [
    "ROW_CONFIG_FIELDS",
    "TRAINING_CONFIG",
    "GrpoDataset",
    "GrpoDropReason",
    "GrpoReport",
    "GrpoRow",
    "PromptMessage",
    "ShortlistLine",
    "ShortlistRowEntry",
    "config_from_row",
    "grpo_rows",
    "row_config_json",
    "split_by_repo",
]

#: The training budget: strict answers, no rescue turn (a rollout is at most 3 + 1 turns). The
#: prompt depends on the turns and the call cap only, so any strict budget with the paper's
#: 3 turns and 8 calls renders the same rows.
TRAINING_CONFIG = RolloutConfig(strict=True, rescue_attempts=0)

GrpoDropReason = Literal["duplicate_id", "repo_filtered", "no_base_commit", "no_gold", "tree_error"]


class PromptMessage(_Row):
    role: Literal["system", "user"]
    content: str


class ShortlistLine(_Row):
    line: int
    text: str


class ShortlistRowEntry(_Row):
    """A shortlisted file as a row column (lists of objects: what a dataset library reads)."""

    path: str
    reason: str
    lines: tuple[ShortlistLine, ...] = ()


class GrpoRow(_VersionedRow):
    """One ms-swift GRPO row. Extra columns reach the rewards (as keyword arguments) and the
    multi-turn scheduler (`infer_request.data_dict`)."""

    messages: tuple[PromptMessage, ...]
    tools: str
    solution: tuple[str, ...]
    gold_files: tuple[str, ...] = Field(
        description="The same files: the column `grpo_rewards`' adapters read by default."
    )
    gold_source: str
    gold_line_ranges: tuple[GoldLineRange, ...] = Field(
        default=(),
        description="The gold files' line ranges from the patch's hunks (old-file start and "
        "length; a pure insertion is the line it follows): the column v1/v2's line-range term "
        "reads. Empty when the gold is a label: a label names files, not lines.",
    )
    shortlist: tuple[ShortlistRowEntry, ...] = Field(
        default=(),
        description="For an answer-task row (`dataset grpo --shortlist K`): the candidates its "
        "user message shows, in that order. Empty for the paper's episode rows.",
    )
    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    cache_dir: str
    source: str
    rollout_config: str = Field(
        default="",
        description="The episode's shape when it is not `TRAINING_CONFIG`'s: a JSON object of "
        "`RolloutConfig` fields (exploration_turns, max_calls_per_turn, max_issue_bytes) that the "
        "prompt was rendered with and the training scheduler runs the rollout with. Empty: "
        "`TRAINING_CONFIG`.",
    )


#: The `RolloutConfig` fields a row may carry: the ones that shape the prompt and the episode.
ROW_CONFIG_FIELDS = ("exploration_turns", "max_calls_per_turn", "max_issue_bytes")


def row_config_json(config: RolloutConfig) -> str:
    """The `rollout_config` column for rows rendered with `config` ("" for TRAINING_CONFIG)."""
    diff = {
        k: getattr(config, k)
        for k in ROW_CONFIG_FIELDS
        if getattr(config, k) != getattr(TRAINING_CONFIG, k)
    }
    return json.dumps(diff, sort_keys=True) if diff else ""


def config_from_row(value: object) -> RolloutConfig:
    """The episode config a row's `rollout_config` column names (`TRAINING_CONFIG` when it is
    empty or absent); ValueError saying what is wrong with any other value."""
    if value is None or value == "":
        return TRAINING_CONFIG
    if not isinstance(value, str):
        raise ValueError(f"rollout_config is a {type(value).__name__}, not a JSON string")
    try:
        fields = parse_json(value)
    except ValueError as exc:
        raise ValueError(f"rollout_config is not JSON: {exc}") from exc
    if not isinstance(fields, dict):
        raise ValueError("rollout_config is not a JSON object")
    unknown = sorted(set(fields) - set(ROW_CONFIG_FIELDS))
    if unknown:
        raise ValueError(
            f"rollout_config names {', '.join(unknown)}; a row may set only "
            f"{', '.join(ROW_CONFIG_FIELDS)}"
        )
    bad = [k for k, v in fields.items() if type(v) is not int]
    if bad:
        raise ValueError(f"rollout_config: {', '.join(sorted(bad))} must be integers")
    try:
        return RolloutConfig.model_validate({**TRAINING_CONFIG.model_dump(), **fields})
    except ValueError as exc:
        raise ValueError(f"rollout_config: {exc}") from exc


@dataclass
class GrpoReport(_DropReport):
    """What `grpo_rows` made of its input; every instance read is a row, a drop, or beyond
    `limit`: instances == train + val + len(dropped) + beyond_limit."""

    instances: int = 0
    bad_rows: list[str] = field(
        default_factory=list, metadata={"doc": "Input rows that did not read: file:line: why."}
    )
    dropped: list[Dropped] = field(default_factory=list)
    beyond_limit: int = 0
    candidates: int = field(default=0, metadata={"doc": "Instances that reached the trees."})
    trees: int = field(default=0, metadata={"doc": "Distinct (repo, commit) trees needed."})
    tree_errors: int = 0
    train: int = 0
    val: int = 0
    train_repos: list[str] = field(default_factory=list)
    val_repos: list[str] = field(default_factory=list)
    unknown_val_repos: list[str] = field(
        default_factory=list, metadata={"doc": "Asked-for val repositories with no row."}
    )
    per_repo: dict[str, dict[str, Any]] = field(
        default_factory=dict, metadata={"doc": "repo -> {split, rows, dropped}."}
    )
    gold_sources: dict[str, int] = field(default_factory=dict)
    labels: int = field(default=0, metadata={"doc": "Label rows given."})
    labels_unmatched: int = field(
        default=0, metadata={"doc": "Labels whose instance is not among the instances read."}
    )
    gold_not_in_tree: list[str] = field(
        default_factory=list,
        metadata={"doc": "Rows kept whose gold names a file the tree does not have."},
    )
    seed: int = 0
    val_fraction: float = 0.0
    dry_run: bool = False


@dataclass
class GrpoDataset:
    train: list[GrpoRow]
    val: list[GrpoRow]
    report: GrpoReport


# ---------------------------------------------------------------------------------- split


def split_by_repo(
    counts: Mapping[str, int],
    *,
    val_fraction: float,
    seed: int = 0,
    val_repos: Collection[str] | None = None,
) -> frozenset[str]:
    """The repositories that go to validation, whole.

    With `val_repos`, exactly those (of the ones in `counts`). Otherwise repositories are taken
    in an order shuffled by `seed`, each one added when that brings the validation instance count
    closer to `val_fraction` of the total; if that adds none while a fraction above 0 was asked
    for, the smallest repository is taken. At least one repository stays in train.
    """
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    if val_repos is not None:
        return frozenset(r for r in val_repos if r in counts)
    repos = sorted(counts)
    if val_fraction == 0.0 or len(repos) < 2:
        return frozenset()
    random.Random(seed).shuffle(repos)
    target = val_fraction * sum(counts.values())
    chosen: list[str] = []
    total = 0
    for repo in repos:
        if len(chosen) == len(repos) - 1:
            break
        if abs(total + counts[repo] - target) < abs(total - target):
            chosen.append(repo)
            total += counts[repo]
    if not chosen:
        chosen.append(min(repos, key=lambda r: counts[r]))  # stable: ties keep shuffled order
    return frozenset(chosen)


# ---------------------------------------------------------------------------------- GRPO


TreeKey = tuple[str, str]


async def _list_trees(
    keys: Sequence[TreeKey],
    cache: BareRepoCache,
    *,
    jobs: int,
    on_tree: Callable[[int, int], None] | None,
) -> dict[TreeKey, tuple[str, ...] | str]:
    """Each tree's files, or the error that kept it closed; each tree opened once."""
    out: dict[TreeKey, tuple[str, ...] | str] = {}
    missing: dict[str, str] = {}
    gate = asyncio.Semaphore(max(1, jobs))
    if on_tree is not None:
        on_tree(0, len(keys))
    # Listing needs git objects only: no checkout ("never"), so nothing is written per tree.
    async with TreePool(cache, materialize="never") as pool:

        async def one(key: TreeKey) -> None:
            repo, commit = key
            async with gate:
                if repo in missing:  # one failed clone says it for every commit of the repo
                    out[key] = missing[repo]
                else:
                    try:
                        # A row names a repository, never a folder that happens to be here.
                        async with pool.open(repo, commit, folders=False) as tree:
                            out[key] = await tree.files()
                    except RepositoryNotFoundError as exc:
                        out[key] = missing[repo] = f"{type(exc).__name__}: {exc}"
                    except (SandboxError, OSError) as exc:  # fetch, commit: infrastructure
                        out[key] = f"{type(exc).__name__}: {exc}"
            if on_tree is not None:
                on_tree(len(out), len(keys))

        await asyncio.gather(*(one(k) for k in keys))
    return out


async def grpo_rows(
    instances: Iterable[Instance],
    cache: BareRepoCache | None,
    *,
    labels: Iterable[records.GoldLabel] = (),
    rule: records.GoldRule | None = None,
    val_fraction: float = 0.1,
    val_repos: Collection[str] | None = None,
    seed: int = 0,
    repos: Collection[str] | None = None,
    limit: int | None = None,
    jobs: int = 4,
    config: RolloutConfig | None = None,
    prompts: PromptSet | None = None,
    bad_rows: Iterable[records.RowProblem | str] = (),
    dry_run: bool = False,
    on_tree: Callable[[int, int], None] | None = None,
) -> GrpoDataset:
    """ms-swift GRPO rows for `instances`, split into train and validation by repository.

    Gold is the instance's label when `labels` has one (`gold_source` "label"), else its patch
    under `rule` (`gold_source` "patch", or "gold_files" for rows without a patch). The
    messages are `Episode.start(...).messages` for the instance and its tree's files, with
    `config` (default `TRAINING_CONFIG`): the rendering the rollout itself uses, which the
    training scheduler checks row by row. Each (repo, base_commit) tree is opened once, `jobs`
    at a time, from `cache`; its root and source template are the `cache_dir` and `source`
    columns (`cache` may be None only for a dry run). `solution` and `gold_files` both hold
    the gold files (`gold_files` is the column `grpo_rewards`' ms-swift ORM reads).

    In input order, an instance is dropped (and named in the report) when its id repeats an
    earlier one, its repository is not in `repos`, it has no base commit, it has no gold, or
    its tree cannot be opened; after the `repos` filter and the duplicates, only the first
    `limit` are considered (the rest are counted, `beyond_limit`). `bad_rows` (the reader's
    problems) are carried into the report. `dry_run` opens no tree and makes no row; the
    report then says how many instances and trees would be used. `on_tree(done, total)` is
    called as trees are listed (first with done = 0).
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    if cache is None and not dry_run:
        raise ValueError("grpo_rows needs a cache to open trees (None only with dry_run)")
    cfg = config or TRAINING_CONFIG
    ps = prompts or PromptSet.load()
    label_map = _label_map(labels)
    report = GrpoReport(
        bad_rows=[str(p) for p in bad_rows],
        seed=seed,
        val_fraction=val_fraction,
        labels=len(label_map),
        dry_run=dry_run,
    )

    def drop(inst: Instance, reason: GrpoDropReason, detail: str = "") -> None:
        report.dropped.append(Dropped(inst.instance_id, inst.repo, reason, detail))

    seen: set[str] = set()
    considered: list[Instance] = []
    ids: set[str] = set()
    for inst in instances:
        report.instances += 1
        ids.add(inst.instance_id)
        if inst.instance_id in seen:
            drop(inst, "duplicate_id", "the id repeats an earlier row's; the first is kept")
            continue
        seen.add(inst.instance_id)
        if repos is not None and inst.repo not in repos:
            drop(inst, "repo_filtered")
            continue
        if limit is not None and len(considered) >= limit:
            report.beyond_limit += 1
            continue
        considered.append(inst)
    report.labels_unmatched = sum(i not in ids for i in label_map)

    candidates: list[tuple[Instance, str, tuple[str, ...], str]] = []
    for inst in considered:
        if not inst.base_commit:
            drop(inst, "no_base_commit")
            continue
        gold, source = _gold(inst.instance_id, inst, label_map, rule)
        if not gold:
            drop(inst, "no_gold", _NO_GOLD[source])
            continue
        candidates.append((inst, inst.base_commit, gold, source))
    report.candidates = len(candidates)
    keys = list(dict.fromkeys((inst.repo, commit) for inst, commit, _, _ in candidates))
    report.trees = len(keys)
    if cache is None or dry_run:
        _fill_repos(report, [], frozenset())
        return GrpoDataset([], [], report)

    trees = await _list_trees(keys, cache, jobs=jobs, on_tree=on_tree)
    report.tree_errors = sum(isinstance(v, str) for v in trees.values())
    tools = json.dumps(openai_tools())
    shape = row_config_json(cfg)
    rows: list[GrpoRow] = []
    for inst, commit, gold, source in candidates:
        files = trees[(inst.repo, commit)]
        if isinstance(files, str):
            drop(inst, "tree_error", files)
            continue
        start = Episode.start(inst, files, policy="dataset", config=cfg, prompts=ps)
        if not set(gold) <= set(files):
            report.gold_not_in_tree.append(inst.instance_id)
        rows.append(
            GrpoRow(
                messages=tuple(PromptMessage.model_validate(m.to_openai()) for m in start.messages),
                tools=tools,
                solution=gold,
                gold_files=gold,
                gold_source=source,
                gold_line_ranges=_gold_line_ranges(inst, gold, source),
                instance_id=inst.instance_id,
                repo=inst.repo,
                base_commit=commit,
                problem_statement=inst.problem_statement,
                cache_dir=str(cache.root),
                source=cache.source,
                rollout_config=shape,
            )
        )
    counts = Counter(r.repo for r in rows)
    val_set = split_by_repo(counts, val_fraction=val_fraction, seed=seed, val_repos=val_repos)
    if val_repos is not None:
        report.unknown_val_repos = sorted(set(val_repos) - set(counts))
    train = [r for r in rows if r.repo not in val_set]
    val = [r for r in rows if r.repo in val_set]
    report.train, report.val = len(train), len(val)
    report.gold_sources = dict(sorted(Counter(r.gold_source for r in rows).items()))
    _fill_repos(report, rows, val_set)
    return GrpoDataset(train, val, report)


def _fill_repos(report: GrpoReport, rows: Sequence[GrpoRow], val_set: frozenset[str]) -> None:
    counts = Counter(r.repo for r in rows)
    dropped = Counter(d.repo for d in report.dropped if d.reason != "repo_filtered")
    report.train_repos = sorted(r for r in counts if r not in val_set)
    report.val_repos = sorted(r for r in counts if r in val_set)
    report.per_repo = {
        repo: {
            "split": None if repo not in counts else "val" if repo in val_set else "train",
            "rows": counts.get(repo, 0),
            "dropped": dropped.get(repo, 0),
        }
        for repo in sorted(set(counts) | set(dropped))
    }
