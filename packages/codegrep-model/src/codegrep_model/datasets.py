"""Training data for the agent: ms-swift GRPO rows and rejection-sampled agent SFT rows.

`grpo_rows` turns SWE-bench-style instances (with CATM labels as gold where there are any) into
the rows `swift rlhf --rlhf_type grpo` reads: the system and user messages exactly as
`Episode.start` renders them for the instance's tree, the tool schemas, the gold files and the
coordinates the multi-turn scheduler needs to reopen the same tree. It splits them into train
and validation by repository, so that no repository is in both.

`sft_rows` turns rollout records (`codegrep-model batch`, any policy) into ms-swift agent-format
SFT rows, keeping the answered rollouts whose reward clears a threshold, weighted by that reward
(rejection-sampling fine-tuning, the warm start before GRPO). What follows each assistant reply
(tool results, the episode's prompts) is one user message made by `fold_follow_up`, the function
the GRPO scheduler (`codegrep_model.train`) appends with: SFT and GRPO show the model one format.

Both account for every input they leave out: a report names each dropped instance or rollout
and why. Reading and writing files is the caller's (`codegrep_records` readers and
`write_records`); opening trees is here, because the prompt lists the tree's top levels.
Not for: running rollouts (`batch`), evaluation (swe-eval), or training (the launcher).
"""

from __future__ import annotations

import asyncio
import json
import math
import random
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import codegrep_records as records
import grpo_rewards as rewards
from pydantic import BaseModel, ConfigDict, Field
from worktree_sandbox import BareRepoCache, RepositoryNotFoundError, SandboxError, TreePool

from codegrep_model.episode import Episode, RolloutConfig
from codegrep_model.prompts import PromptSet
from codegrep_model.records import ChatMessage, Instance, RolloutRecord
from codegrep_model.tools import openai_tools, tool_names

__all__ = [
    "CHATML_TURN_BREAK",
    "GOLD_FROM_LABEL",
    "TRAINING_CONFIG",
    "Dropped",
    "GoldLineRange",
    "GrpoDataset",
    "GrpoReport",
    "GrpoRow",
    "PromptMessage",
    "SftDataset",
    "SftMessage",
    "SftReport",
    "SftRow",
    "agent_messages",
    "fold_follow_up",
    "grpo_rows",
    "load_rollouts",
    "reward_name",
    "sft_rows",
    "split_by_repo",
]

#: `gold_source` of a row whose gold came from a label file (else "patch" or "gold_files").
GOLD_FROM_LABEL = "label"

#: The training budget: strict answers, no rescue turn (a rollout is at most 3 + 1 turns). The
#: prompt depends on the turns and the call cap only, so any strict budget with the paper's
#: 3 turns and 8 calls renders the same rows.
TRAINING_CONFIG = RolloutConfig(strict=True, rescue_attempts=0)

#: Between two user turns of a ChatML template (Qwen): what `fold_follow_up` puts between the
#: tool results and each prompt that follows them.
CHATML_TURN_BREAK = "<|im_end|>\n<|im_start|>user\n"

GrpoDropReason = Literal["duplicate_id", "repo_filtered", "no_base_commit", "no_gold", "tree_error"]
SftDropReason = Literal[
    "error", "fallback", "unanswered", "no_gold", "bad_calls", "below_threshold"
]
UserAfterTools = Literal["chat", "keep"]

# The pydantic row models below are what the trainer reads, so their JSON is the contract.
# `tools` is a JSON *string* because ms-swift parses it so (OnPolicySample.to_infer_request,
# the agent template's `_parse_json`): an external format, not a choice of ours.


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PromptMessage(_Row):
    role: Literal["system", "user"]
    content: str


class GoldLineRange(_Row):
    """One gold line range, `[start, end]` inclusive and 1-based, in the file before the patch.

    Records rather than a `{path: ranges}` mapping, so that the column is one Arrow type for
    every row (a mapping's keys would become struct fields that differ from row to row).
    """

    path: str
    start: int
    end: int


class GrpoRow(_Row):
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
    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    cache_dir: str
    source: str


class SftMessage(_Row):
    role: Literal["system", "user", "assistant", "tool_call", "tool_response"]
    content: str
    loss: bool | None = None
    loss_scale: float | None = None


class SftRow(_Row):
    """One ms-swift agent-format SFT row (see `agent_messages` for the mapping)."""

    messages: tuple[SftMessage, ...]
    tools: str
    weight: float
    gold_files: tuple[str, ...]
    gold_source: str
    instance_id: str
    repo: str
    base_commit: str | None
    policy: str


@dataclass(frozen=True)
class Dropped:
    """An instance (or rollout) left out, and why; `detail` says more (the error, the reward)."""

    instance_id: str
    repo: str
    reason: str
    detail: str = ""


def _by_reason(dropped: Iterable[Dropped]) -> dict[str, int]:
    return dict(sorted(Counter(d.reason for d in dropped).items()))


@dataclass
class GrpoReport:
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

    @property
    def dropped_by_reason(self) -> dict[str, int]:
        return _by_reason(self.dropped)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["dropped_by_reason"] = self.dropped_by_reason
        return out


@dataclass
class GrpoDataset:
    train: list[GrpoRow]
    val: list[GrpoRow]
    report: GrpoReport


@dataclass
class SftReport:
    """What `sft_rows` made of its rollouts: rollouts == kept + len(dropped)."""

    rollouts: int = 0
    kept: int = 0
    bad_rows: list[str] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    reward: str = "codegrep_v3"
    threshold: float = 0.5
    kept_per_repo: dict[str, int] = field(default_factory=dict)
    gold_sources: dict[str, int] = field(default_factory=dict)
    mean_weight: float | None = None

    @property
    def dropped_by_reason(self) -> dict[str, int]:
        return _by_reason(self.dropped)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["dropped_by_reason"] = self.dropped_by_reason
        return out


@dataclass
class SftDataset:
    rows: list[SftRow]
    report: SftReport


# ---------------------------------------------------------------------------------- gold


def _gold(
    instance_id: str,
    inst: Instance | None,
    labels: Mapping[str, records.GoldLabel],
    rule: records.GoldRule | None,
) -> tuple[tuple[str, ...], str]:
    """The gold files of an instance and where they came from: its label when there is one
    (it replaces the patch), else its patch under `rule`; ((), "none") when neither is known."""
    label = labels.get(instance_id)
    if label is not None:
        return tuple(sorted(label.files)), GOLD_FROM_LABEL
    if inst is None:
        return (), "none"
    return inst.gold_files_for(rule), "patch" if inst.patch else "gold_files"


def _gold_line_ranges(
    inst: Instance | None, gold: tuple[str, ...], source: str
) -> tuple[GoldLineRange, ...]:
    """The hunks of the gold files in the instance's patch, when the patch is the gold."""
    if inst is None or source != "patch" or not inst.patch:
        return ()
    keep = set(gold)
    ranges = rewards.gold_line_ranges_from_patch(inst.patch)
    return tuple(
        GoldLineRange(path=path, start=r.start, end=r.end)
        for path in sorted(ranges)
        if path in keep
        for r in ranges[path]
    )


def _line_range_records(ranges: tuple[GoldLineRange, ...]) -> list[dict[str, object]]:
    return [r.model_dump() for r in ranges]


_NO_GOLD = {
    GOLD_FROM_LABEL: "the label has no gold file",
    "patch": "the patch has no gold file under the gold rule",
    "gold_files": "no patch and no gold_files",
    "none": "the instance is in neither the instances nor the labels",
}


def _label_map(labels: Iterable[records.GoldLabel]) -> dict[str, records.GoldLabel]:
    out: dict[str, records.GoldLabel] = {}
    for label in labels:
        out.setdefault(label.instance_id, label)  # first kept, as the readers do
    return out


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


# ---------------------------------------------------------------------------------- SFT


def load_rollouts(paths: Iterable[str | Path]) -> records.Loaded[RolloutRecord]:
    """Rollout records from `codegrep-model batch` rollout files, every bad row reported with
    its file and line. Raises `codegrep_records.RecordFileError` for a file it cannot read."""
    rows: list[RolloutRecord] = []
    problems: list[records.RowProblem] = []
    for path in paths:
        # One instance may have several rollouts (samples, reruns): no key, all kept.
        loaded = records.load_records(path, RolloutRecord, key=None)
        rows.extend(loaded.records)
        problems.extend(loaded.problems)
    return records.Loaded(tuple(rows), tuple(problems))


def reward_name(name: str) -> str:
    """`v1`/`v2`/`v3` as CodeGrep's rewards, or any name of `grpo_rewards.REWARDS`; raises
    `grpo_rewards.UnknownRewardError` for anything else."""
    full = f"codegrep_{name}" if name in ("v1", "v2", "v3") else name
    if full not in rewards.REWARDS:
        raise rewards.UnknownRewardError(
            f"unknown reward {name!r}; known: v1, v2, v3, {', '.join(sorted(rewards.REWARDS))}"
        )
    return full


def _bad_calls(record: RolloutRecord) -> str | None:
    """Why the rollout's calls cannot be written in the agent format (or taught), or None."""
    for turn in record.turns:
        for c in turn.calls:
            if c.status in ("malformed", "refused"):
                return f"turn {turn.index}: a {c.status} call to {c.call.name or '?'}"
    known = tool_names()
    msgs = record.messages
    for i, m in enumerate(msgs):
        if m.role != "assistant" or not m.tool_calls:
            continue
        answers = msgs[i + 1 : i + 1 + len(m.tool_calls)]
        # ms-swift pairs calls and results by position: the results must follow in call order.
        if [r.tool_call_id for r in answers if r.role == "tool"] != [c.id for c in m.tool_calls]:
            return f"message {i + 1}: tool results do not follow the calls in order"
        for tc in m.tool_calls:
            if tc.name not in known:
                return f"message {i + 1}: unknown tool {tc.name!r}"
            try:  # too deep, 1e999, not JSON: the row is dropped with the reason, not a crash
                args = records.parse_json(tc.arguments) if tc.arguments.strip() else {}
            except ValueError:
                return f"message {i + 1}: arguments of {tc.name} are not JSON"
            if not isinstance(args, dict):
                return f"message {i + 1}: arguments of {tc.name} are not a JSON object"
    return None


def fold_follow_up(
    messages: Sequence[Mapping[str, Any]], *, turn_break: str = CHATML_TURN_BREAK
) -> dict[str, str] | None:
    """What follows one assistant reply (tool results, then the episode's prompts), as the one
    user message ms-swift's encoder accepts there.

    ms-swift 4.6 encodes a conversation as (query, reply) pairs, and a `tool` turn followed by a
    `user` turn has no pair (`AssertionError: response_role: "user"`). So the tool results are
    written as the hermes `<tool_response>` blocks the Qwen chat template writes, and each prompt
    after them opens a new user turn with `turn_break` (the template's end-of-turn and
    user-turn opening, `CHATML_TURN_BREAK` for Qwen): the tokens are those the model's own chat
    template makes of the episode's messages at inference. None when there is nothing to fold.

    The GRPO scheduler appends this after every reply, and `agent_messages` writes SFT rows
    with it. Raises ValueError unless the messages are tool results, then user prompts.
    """
    roles = [m.get("role") for m in messages]
    n_tools = roles.count("tool")
    if roles != ["tool"] * n_tools + ["user"] * (len(roles) - n_tools):
        raise ValueError(f"tool results, then user prompts, follow a reply; got {roles}")
    tools = [str(m.get("content") or "") for m in messages[:n_tools]]
    prompts = [str(m.get("content") or "") for m in messages[n_tools:]]
    segments = []
    if tools:
        segments.append("\n".join(f"<tool_response>\n{t}\n</tool_response>" for t in tools))
    segments.extend(prompts)
    if not segments:
        return None
    return {"role": "user", "content": turn_break.join(segments)}


def agent_messages(
    messages: Sequence[ChatMessage],
    *,
    user_after_tools: UserAfterTools = "chat",
    loss_scale: float | None = None,
    turn_break: str = CHATML_TURN_BREAK,
) -> tuple[SftMessage, ...]:
    """A rollout's conversation in ms-swift's agent format (docs: Instruction/Agent-support).

    - the system and user messages before the first assistant reply stay as they are;
    - an assistant message with tool calls becomes its text (an `assistant` message, only when
      it has non-blank text) followed by one `tool_call` message per call, in order, whose
      content is the JSON string `{"name": ..., "arguments": {...}}` (arguments as an object);
      parallel calls are consecutive `tool_call` messages, which the agent template joins into
      one assistant turn (hermes: one `<tool_call>` block per call);
    - an assistant message without calls becomes an `assistant` message; when it is not the
      last one (a reply without calls that did not answer, a failed answer before a rescue)
      it gets `"loss": false`, so only replies that led somewhere are taught;
    - what follows a reply (its tool results, in call order, then the episode's prompts: the
      turn reminder, the answer demand) depends on `user_after_tools`.

    `user_after_tools="chat"` (the default): everything between two replies (and after the
    last one) is ONE `user` message, `fold_follow_up(...)` of those messages with
    `turn_break`: the results as hermes `<tool_response>` blocks, each prompt after them as a
    new user turn. That is what the GRPO scheduler appends after a reply, and the tokens the
    Qwen chat template makes of the episode's messages at inference; ms-swift's own template
    backend pairs it with the next reply (it fails on a `user` message after `tool_response`
    ones). No `tool_response` message is written. Raises ValueError when what follows a reply
    is not tool results then user prompts, or a tool result comes before any reply.

    `"keep"`: each tool result is a `tool_response` message with the result text unchanged, in
    call order (ms-swift pairs them by position, not by id; consecutive ones are one turn), and
    user messages stay as they are: for `--template_backend jinja` or another trainer.

    `loss_scale`: written on every trained assistant text and on the first `tool_call` of each
    turn (ms-swift >= 4.2 reads it per message; values other than 0 and 1 need
    `--is_binary_loss_scale false`).
    """
    if user_after_tools not in ("chat", "keep"):
        raise ValueError(f"user_after_tools must be chat or keep, not {user_after_tools!r}")
    chat = user_after_tools == "chat"
    assistants = [i for i, m in enumerate(messages) if m.role == "assistant"]
    first = assistants[0] if assistants else len(messages)
    last = assistants[-1] if assistants else -1
    out: list[SftMessage] = []
    follow: list[dict[str, str]] = []  # chat mode: what followed the last reply, not yet written

    def write_follow_up() -> None:
        folded = fold_follow_up(follow, turn_break=turn_break)
        follow.clear()
        if folded is not None:
            out.append(SftMessage(role="user", content=folded["content"]))

    for i, m in enumerate(messages):
        text = m.content or ""
        if m.role != "assistant" and chat and i > first:
            follow.append({"role": m.role, "content": text})
            continue
        if m.role == "assistant":
            write_follow_up()
        if m.role == "system":
            out.append(SftMessage(role="system", content=text))
        elif m.role == "user":
            out.append(SftMessage(role="user", content=text))
        elif m.role == "tool":
            if chat:
                raise ValueError(f"message {i + 1}: a tool result before any assistant reply")
            out.append(SftMessage(role="tool_response", content=text))
        elif m.tool_calls:
            if text.strip():
                out.append(SftMessage(role="assistant", content=text, loss_scale=loss_scale))
            for j, c in enumerate(m.tool_calls):
                args = records.parse_json(c.arguments) if c.arguments.strip() else {}
                body = json.dumps({"name": c.name, "arguments": args}, ensure_ascii=False)
                scale = loss_scale if j == 0 else None
                out.append(SftMessage(role="tool_call", content=body, loss_scale=scale))
        elif i == last:
            out.append(SftMessage(role="assistant", content=text, loss_scale=loss_scale))
        else:
            out.append(SftMessage(role="assistant", content=text, loss=False))
    write_follow_up()
    return tuple(out)


def sft_rows(
    rollouts: Iterable[RolloutRecord],
    instances: Iterable[Instance],
    *,
    labels: Iterable[records.GoldLabel] = (),
    rule: records.GoldRule | None = None,
    threshold: float = 0.5,
    reward: str = "v3",
    user_after_tools: UserAfterTools = "chat",
    loss_scale: bool = False,
    bad_rows: Iterable[records.RowProblem | str] = (),
) -> SftDataset:
    """Agent-format SFT rows from the rollouts that answered and scored at least `threshold`.

    The score is the reward `reward` (`reward_name`; default CodeGrep v3: F0.5 over files times
    1[c̄ > 0]) of the final assistant message as `grpo_rewards.parse_answer` reads it, with the
    rollout's own T and C_total, against the instance's gold (its label when `labels` has one,
    else its patch under `rule`). Each row's `weight` is that reward; `loss_scale=True` also
    writes it on the trained messages. The messages are `agent_messages(...)` in
    `user_after_tools` mode: "chat" (the default) writes what follows each reply as the one
    user message the GRPO scheduler appends (`fold_follow_up`), "keep" as `tool_response` and
    `user` messages.

    Dropped, each named in the report: status `error`, `fallback` or `unanswered`; no gold (the
    instance is in neither `instances` nor `labels`, or its gold is empty); `bad_calls`
    (malformed or refused calls, results out of call order, or anything else after a reply
    than its results then user prompts: the agent format cannot carry them, and they are not
    worth teaching); `below_threshold`. Rows keep the rollouts' order.
    """
    if user_after_tools not in ("chat", "keep"):
        raise ValueError(f"user_after_tools must be chat or keep, not {user_after_tools!r}")
    name = reward_name(reward)
    if not math.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold}")
    by_id = {i.instance_id: i for i in reversed(list(instances))}  # first kept
    label_map = _label_map(labels)
    tools = json.dumps(openai_tools())
    report = SftReport(bad_rows=[str(p) for p in bad_rows], reward=name, threshold=threshold)
    rows: list[SftRow] = []

    for r in rollouts:
        report.rollouts += 1

        def drop(reason: SftDropReason, detail: str = "", r: RolloutRecord = r) -> None:
            report.dropped.append(Dropped(r.instance_id, r.repo, reason, detail))

        if r.status != "answered":
            drop(r.status, r.error or "")
            continue
        inst = by_id.get(r.instance_id)
        gold, source = _gold(r.instance_id, inst, label_map, rule)
        if not gold:
            drop("no_gold", _NO_GOLD[source])
            continue
        gold_ranges = _line_range_records(_gold_line_ranges(inst, gold, source))
        problem = _bad_calls(r)
        if problem is not None:
            drop("bad_calls", problem)
            continue
        final = next((m.content for m in reversed(r.messages) if m.role == "assistant"), None)
        try:
            stats = rewards.RolloutStats(turns=r.stats.turns, tool_calls=r.stats.tool_calls)
        except rewards.InvalidRolloutError as exc:
            drop("bad_calls", str(exc))
            continue
        result = rewards.score_parsed(
            name, rewards.parse_answer(final), rewards.Gold.of(gold, gold_ranges), stats
        )
        if not result.reward >= threshold:
            why = f"reward {result.reward:.4f}" + (f" ({result.reason})" if result.reason else "")
            drop("below_threshold", why)
            continue
        weight = result.reward
        try:
            messages = agent_messages(
                r.messages,
                user_after_tools=user_after_tools,
                loss_scale=weight if loss_scale else None,
            )
        except ValueError as exc:
            drop("bad_calls", str(exc))
            continue
        rows.append(
            SftRow(
                messages=messages,
                tools=tools,
                weight=weight,
                gold_files=gold,
                gold_source=source,
                instance_id=r.instance_id,
                repo=r.repo,
                base_commit=r.commit,
                policy=r.policy,
            )
        )
    report.kept = len(rows)
    report.kept_per_repo = dict(sorted(Counter(r.repo for r in rows).items()))
    report.gold_sources = dict(sorted(Counter(r.gold_source for r in rows).items()))
    if rows:
        report.mean_weight = sum(r.weight for r in rows) / len(rows)
    return SftDataset(rows, report)
