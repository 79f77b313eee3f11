"""The answer turn as a task of its own: the issue and a shortlist of candidate files, each with
why it was found and a few of its matching lines, answered with the JSON answer schema.

`LexicalPolicy` explores (its greps, reads and learned ranking); `LexicalPolicy.shortlist` gives
its best `ShortlistConfig.size` files in its order, with its reasons and the lines its greps
matched; `shortlist_messages` renders them as the system and user messages of the answer task
(templates `prompts/shortlist_system.md` and `prompts/shortlist_user.md`). The same rendering
makes the training rows (`codegrep-model dataset grpo --shortlist K`, `shortlist_rows`) and
the prompt `ShortlistPolicy` gives its model at `codegrep localize --policy shortlist:DIR`, so
a model trained on the rows meets the prompt it was trained on.

The scores of the ranking are not shown: the order is the search's opinion, and a model that
reads the evidence can disagree with it (the learning benchmark evaluates a shuffled shortlist
too, to tell order-following from reading).

Not for: the paper's multi-turn episode (`episode.py`), or generating text (`LocalPolicy`).
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib import resources
from typing import Protocol

from worktree_sandbox import GrepResult

from codegrep_model.policies.protocol import (
    Observation,
    PolicyNeeds,
    PolicyReply,
    PolicyRequest,
    TreeContext,
)
from codegrep_model.records import Usage

__all__ = [
    "Explorer",
    "ShortlistConfig",
    "ShortlistEntry",
    "ShortlistPolicy",
    "TextModel",
    "matched_lines",
    "render_candidates",
    "shortlist_messages",
    "shuffled",
]


@dataclass(frozen=True)
class ShortlistConfig:
    """How much of the search the answer task shows: `size` files, each with at most
    `lines_per_file` matched lines cut to `line_chars` characters, and the issue cut to
    `issue_chars` characters (a 135M model's context is short; the files and lines are what it
    must choose from)."""

    size: int = 5
    lines_per_file: int = 3
    line_chars: int = 120
    issue_chars: int = 2000

    def __post_init__(self) -> None:
        for name in ("size", "lines_per_file", "line_chars", "issue_chars"):
            if getattr(self, name) < 1:
                raise ValueError(f"ShortlistConfig.{name} must be at least 1")


@dataclass(frozen=True)
class ShortlistEntry:
    """One candidate file: its path, why the search found it, and lines its greps matched."""

    path: str
    reason: str
    lines: tuple[tuple[int, str], ...] = ()


@functools.cache
def _template(name: str) -> str:
    return (resources.files("codegrep_model") / "prompts" / f"{name}.md").read_text("utf-8")


def render_candidates(entries: Sequence[ShortlistEntry]) -> str:
    """The candidates block: a numbered file per entry, its reason, then its lines."""
    out = []
    for n, e in enumerate(entries, 1):
        out.append(f"{n}. {e.path}\n   why: {e.reason}")
        out.extend(f"   {line}: {text}" for line, text in e.lines)
    return "\n".join(out) if out else "(the search found no candidate)"


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + "\n[... the issue is cut here]"


def shortlist_messages(
    repo: str, issue: str, entries: Sequence[ShortlistEntry], config: ShortlistConfig
) -> tuple[dict[str, str], dict[str, str]]:
    """The answer task's system and user messages for `issue` and its shortlist."""
    system = _template("shortlist_system").format().strip()
    user = (
        _template("shortlist_user")
        .format(
            repo=repo,
            issue=_cut(issue, config.issue_chars),
            candidates=render_candidates(entries),
        )
        .strip()
    )
    return {"role": "system", "content": system}, {"role": "user", "content": user}


def shuffled(entries: Sequence[ShortlistEntry], seed: str) -> list[ShortlistEntry]:
    """The entries in an order drawn from `seed` (an instance id): the same order on every
    run, for the evaluation that hides the search's order."""
    out = list(entries)
    random.Random(seed).shuffle(out)
    return out


def _clean(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def matched_lines(
    history: Sequence[Sequence[Observation]], paths: Sequence[str], config: ShortlistConfig
) -> dict[str, tuple[tuple[int, str], ...]]:
    """For each of `paths`, the first `config.lines_per_file` distinct lines the exploration's
    greps matched in it: definition and message greps first (the first turn's calls, then the
    confirming greps of later turns), the plain-word usage greps (`lex_use_*`) last."""
    wanted = set(paths)
    found: dict[str, dict[int, str]] = {p: {} for p in paths}
    primary = [o for turn in history for o in turn if not o.call.id.startswith("lex_use_")]
    usage = [o for turn in history for o in turn if o.call.id.startswith("lex_use_")]
    for obs in primary + usage:
        r = obs.result
        if not isinstance(r, GrepResult) or not r.ok:
            continue
        for m in r.matches:
            if m.path not in wanted:
                continue
            seen = found[m.path]
            if len(seen) < config.lines_per_file and m.line not in seen:
                seen[m.line] = _clean(m.text, config.line_chars)
    return {p: tuple(found[p].items()) for p in paths}


class TextModel(Protocol):
    """A model that continues a prompt (`LocalPolicy` is one)."""

    @property
    def name(self) -> str: ...

    async def complete(self, prompt: str) -> tuple[str, Usage]: ...


class Explorer(Protocol):
    """What explores for `ShortlistPolicy` (`LexicalPolicy` is one): a policy that can also
    give the shortlist of the answer it would give."""

    @property
    def name(self) -> str: ...

    @property
    def needs(self) -> PolicyNeeds: ...

    def for_tree(self, context: TreeContext) -> Explorer: ...

    async def reply(self, request: PolicyRequest) -> PolicyReply: ...

    async def shortlist(
        self, request: PolicyRequest, config: ShortlistConfig | None = None
    ) -> list[ShortlistEntry]: ...


class ShortlistPolicy:
    """`LexicalPolicy` explores; when it would answer, a model chooses from its shortlist.

    The model sees `shortlist_messages` rendered as ms-swift's `chatml` template renders a row
    without tools (`local_policy.render_chatml`), the prompt of `dataset grpo --shortlist`
    rows. When the search found no candidate the lexical answer (empty) stands and the model is
    not asked."""

    def __init__(
        self, answerer: TextModel, explorer: Explorer, config: ShortlistConfig | None = None
    ) -> None:
        self.answerer = answerer
        self.explorer = explorer
        self.config = config or ShortlistConfig()

    @property
    def name(self) -> str:
        return f"shortlist:{self.answerer.name.removeprefix('local:')}"

    @property
    def needs(self) -> PolicyNeeds:
        """The explorer's tree (its definitions and history); no thread of its own, as the
        explorer alone would have: the model's generation is not the explorer's ranking."""
        return replace(self.explorer.needs, own_thread=False)

    def for_tree(self, context: TreeContext) -> ShortlistPolicy:
        """This policy for one rollout: the explorer bound to the rollout's tree."""
        return ShortlistPolicy(self.answerer, self.explorer.for_tree(context), self.config)

    async def reply(self, request: PolicyRequest) -> PolicyReply:
        explored = await self.explorer.reply(request)
        if explored.tool_calls:
            return explored
        # the explorer would answer now (it does before the last turn once it is done): the
        # model answers instead, from the explorer's shortlist
        entries = await self.explorer.shortlist(request, self.config)
        if not entries:
            return PolicyReply(content=json.dumps({"files": []}))
        from codegrep_model.policies.local import render_chatml

        messages = shortlist_messages(
            request.instance.repo, request.instance.problem_statement, entries, self.config
        )
        text, usage = await self.answerer.complete(render_chatml(messages, ()))
        return PolicyReply(content=text, usage=usage)
