"""The answer records of `codegrep`: what one localization found (`Localization`, its
`LocalizedFile`s) and the one response record every surface gives (`LocalizeResponse`:
`localize --json`, the HTTP server, MCP).

They live apart from the job (`localize`) and the server (`service`) so that both import them
and neither imports the other for them. Records only: not for running a rollout, gating
(`gating`) or serving.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from codegrep_gate import GateDecision
from codegrep_model import RolloutRecord
from pydantic import BaseModel, Field

from codegrep.gating import Gated


def _definitions_mode() -> str:
    from codegrep_model import definitions_mode

    return definitions_mode()


__all__ = [
    "LOCALIZE_RESPONSE_SCHEMA_VERSION",
    "Localization",
    "LocalizeResponse",
    "LocalizedFile",
    "RankedFile",
]

#: The layout of `LocalizeResponse`; a response without `schema_version` is version 1.
LOCALIZE_RESPONSE_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class LocalizedFile:
    path: str
    reason: str
    score: float | None = None  # the policy's confidence, when it gives one (not calibrated)


@dataclass(frozen=True)
class Localization:
    files: tuple[LocalizedFile, ...]
    status: str
    policy: str
    turns: int
    tool_calls: int
    tokens: int
    latency_s: float
    record: RolloutRecord
    # the policy's best files with their scores beyond the answer (`Answer.ranking`), if any
    ranking: tuple[tuple[str, float], ...] | None = None
    clone_s: float = 0.0  # seconds spent cloning or fetching before the search

    def to_json(self) -> dict[str, object]:
        """This answer, ungated, as the one response record (`LocalizeResponse`) that
        `localize --json`, the HTTP server and MCP give."""
        ungated = Gated([f.path for f in self.files], None, None)
        return LocalizeResponse.of(self, ungated).model_dump(mode="json")


class RankedFile(BaseModel):
    """One of the policy's best files (`LocalizeResponse.top`)."""

    path: str
    score: float | None = Field(description="The policy's confidence; null if it gives none.")


class LocalizeResponse(BaseModel):
    """The one answer record of `codegrep localize --json`, the HTTP server and MCP: what the
    search found, what the gate kept (when gated) and the text to inject (when asked). Every
    field is present on every surface (`queue_s` is 0 outside a server; `gate` and `injection`
    are null when not asked for)."""

    schema_version: int = Field(
        default=LOCALIZE_RESPONSE_SCHEMA_VERSION,
        ge=1,
        description="The record's layout; a response without it (written before it) is 1.",
    )
    files: list[str] = Field(description="The retriever's files, most important first.")
    scores: list[float] | None = Field(
        description="The policy's confidence per file, aligned with `files`; null if none."
    )
    reasons: dict[str, str]
    line_ranges: dict[str, list[list[int]]]
    status: str = Field(
        description="answered, fallback, or error (the CLI only: a server answers an error "
        "with an HTTP error)."
    )
    policy: str
    turns: int
    tool_calls: int
    tokens: int
    latency_s: float = Field(description="Seconds from admission to answer, queueing included.")
    queue_s: float = Field(default=0.0, description="Seconds of `latency_s` spent waiting.")
    issue_bytes: int = Field(description="The issue's UTF-8 bytes as given (CRLF kept).")
    issue_cut_to: int | None = Field(
        default=None, description="The bytes searched, when the issue was cut to its limit."
    )
    error: str | None = Field(default=None, description="Why the search failed (status error).")
    gate: GateDecision | None = Field(
        default=None, description="The gate's decision per file, when the request was gated."
    )
    injected: list[str] = Field(
        description="The files to put in front of the agent: the gate's, or all (cut to "
        "`max_files`) when not gated."
    )
    injection: str | None = Field(
        default=None, description="`injected` rendered in the style asked (`inject`)."
    )
    top: list[RankedFile] | None = Field(
        default=None,
        description="The policy's N best files with their scores, the answer's first and "
        "beyond it, when asked for (`localize --top N`); a policy that ranks no further "
        "(a served model) gives its answer's files.",
    )
    definitions: str | None = Field(
        default=None,
        description="How the search read definitions: 'tree-sitter' (worktree-sandbox's "
        "symbols extra, which the app requires) or 'regex'; the lexical policy's scores, and "
        "so the gate, differ between the two. Null in a response written before it was said.",
    )
    clone_s: float = Field(
        default=0.0,
        description="Seconds spent cloning or fetching the repository before the search "
        "(not in `latency_s`).",
    )

    @classmethod
    def of(
        cls, result: Localization, gated: Gated, *, queue_s: float = 0.0, top: int | None = None
    ) -> Self:
        """The record of one localization and what `gating.apply` made of it; with `top`, the
        policy's `top` best files."""
        answer = result.record.answer
        ranked: list[RankedFile] | None = None
        if top is not None:
            pairs: tuple[tuple[str, float | None], ...] = result.ranking or tuple(
                (f.path, f.score) for f in result.files
            )
            ranked = [RankedFile(path=p, score=s) for p, s in pairs[:top]]
        line_ranges = answer.line_ranges if answer is not None else {}
        given = [f.score for f in result.files]
        return cls(
            files=[f.path for f in result.files],
            scores=None if None in given else [s for s in given if s is not None],
            reasons={f.path: f.reason for f in result.files},
            line_ranges={k: [list(r) for r in v] for k, v in line_ranges.items()},
            status=result.status,
            policy=result.policy,
            turns=result.turns,
            tool_calls=result.tool_calls,
            tokens=result.tokens,
            latency_s=round(result.latency_s, 3),
            queue_s=round(queue_s, 3),
            issue_bytes=result.record.issue_bytes,
            issue_cut_to=result.record.issue_cut_to,
            error=result.record.error,
            gate=gated.decision,
            injected=gated.injected,
            injection=gated.injection,
            top=ranked,
            definitions=_definitions_mode(),
            clone_s=round(result.clone_s, 3),
        )
