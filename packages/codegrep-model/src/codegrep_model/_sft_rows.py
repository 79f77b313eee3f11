"""SFT rows: rollout records (`codegrep-model batch`, any policy) as ms-swift agent-format rows,
keeping the answered rollouts whose reward clears a threshold, weighted by that reward
(rejection-sampling fine-tuning, the warm start before GRPO).
Not for: the chat format itself (`_chat_format`), or GRPO rows (`_grpo_rows`).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import codegrep_records as records
import grpo_rewards as rewards
from codegrep_records.io import load_records, parse_json

from codegrep_model._chat_format import SftMessage, UserAfterTools, agent_messages
from codegrep_model._dataset_rows import (
    _NO_GOLD,
    Dropped,
    _DropReport,
    _gold,
    _gold_line_ranges,
    _label_map,
    _line_range_records,
    _VersionedRow,
)
from codegrep_model.records import Instance, RolloutRecord
from codegrep_model.tools import openai_tools, tool_names

__all__ = [
    "SftDataset",
    "SftDropReason",
    "SftReport",
    "SftRow",
    "load_rollouts",
    "reward_name",
    "sft_rows",
]

SftDropReason = Literal[
    "error", "fallback", "unanswered", "no_gold", "bad_calls", "below_threshold"
]


class SftRow(_VersionedRow):
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


@dataclass
class SftReport(_DropReport):
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


@dataclass
class SftDataset:
    rows: list[SftRow]
    report: SftReport


# ---------------------------------------------------------------------------------- SFT


def load_rollouts(paths: Iterable[str | Path]) -> records.Loaded[RolloutRecord]:
    """Rollout records from `codegrep-model batch` rollout files, every bad row reported with
    its file and line. Raises `codegrep_records.RecordFileError` for a file it cannot read."""
    rows: list[RolloutRecord] = []
    problems: list[records.RowProblem] = []
    for path in paths:
        # One instance may have several rollouts (samples, reruns): no key, all kept.
        loaded = load_records(path, RolloutRecord, key=None)
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
                args = parse_json(tc.arguments) if tc.arguments.strip() else {}
            except ValueError:
                return f"message {i + 1}: arguments of {tc.name} are not JSON"
            if not isinstance(args, dict):
                return f"message {i + 1}: arguments of {tc.name} are not a JSON object"
    return None


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
