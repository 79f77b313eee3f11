"""`codegrep localize` as a typed library function: the checks made before the search, the
search, the gate, the one response record and the files written.

For: a caller that wants the command's job without its flags (`run_localize_job`), and the CLI,
which is a thin layer over it. Every problem is raised as one of the app's errors
(`codegrep.errors`), its message naming the flag it came from, so the CLI only maps them to an
`error:` line and exit 2. Not for: reading flags or printing (the CLI), the rollout itself
(`codegrep.localize`), gating (`codegrep.gating`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from codegrep_gate import RENDER_STYLES as INJECT_STYLES
from codegrep_model import DEFAULT_MAX_ISSUE_BYTES
from codegrep_records import why_unwritable

from codegrep.errors import IssueInputError, JobInputError, OutputWriteError
from codegrep.gating import Gated, apply, calibration_for
from codegrep.response import Localization, LocalizeResponse

if TYPE_CHECKING:
    from codegrep_gate import Calibration, GateConfig, RenderStyle
    from codegrep_model import Policy

__all__ = ["LocalizeJob", "LocalizeOutcome", "base_url_problem", "run_localize_job"]

DEFAULT_TIMEOUT_S = 120.0


def base_url_problem(base_url: str | None) -> str | None:
    """Why `--base-url` cannot be a served model's endpoint (not an http(s) URL with a host)."""
    if base_url is None:
        return None
    url = urlsplit(base_url)
    if url.scheme not in ("http", "https") or not url.netloc:
        return f"--base-url {base_url}: not an http(s) URL (e.g. http://127.0.0.1:8000/v1)"
    return None


@dataclass(frozen=True)
class LocalizeJob:
    """One `codegrep localize`: where to search, the issue, the policy, the gate, the outputs."""

    repo: str
    issue: str  # a file, or "-" for standard input
    commit: str | None = None
    output: Path | None = None  # also write the response JSON here
    rollout: Path | None = None  # write the full rollout record here
    base_url: str | None = None  # a served model; None: the lexical policy
    model: str = "codegrep"
    api_key: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S  # per model request
    cache: Path | None = None
    source: str = "https://github.com/{repo}.git"
    max_issue_bytes: int = DEFAULT_MAX_ISSUE_BYTES
    gate: GateConfig | None = None  # None: not gated
    calibration: Path | None = None
    inject: str | None = None  # a style of `codegrep_gate.RENDER_STYLES`
    max_files: int | None = None


@dataclass(frozen=True)
class LocalizeOutcome:
    """What the job found, what the gate kept, and the response record as written."""

    result: Localization
    gated: Gated
    response: dict[str, Any]


def _check(job: LocalizeJob) -> tuple[Calibration | None, str]:
    """The checks made before the search, in the command's order; returns the calibration
    (when gated) and the issue text."""
    if job.inject is not None and job.inject not in INJECT_STYLES:
        raise JobInputError(f"--inject {job.inject}: not one of {', '.join(INJECT_STYLES)}")
    if job.gate is None and job.calibration is not None:
        raise JobInputError("--calibration is for the gate: add --gate [THRESHOLD]")
    from codegrep_model import PolicySpec, served_spec

    spec = PolicySpec("lexical") if job.base_url is None else served_spec(job.base_url, job.model)
    cal = None
    if job.gate is not None:
        cal = calibration_for(spec.name, job.calibration)  # checked now, before the search
    problem = base_url_problem(job.base_url)
    if problem is not None:
        raise JobInputError(problem)
    output, rollout = job.output, job.rollout
    if output is not None and rollout is not None and output.resolve() == rollout.resolve():
        raise JobInputError(f"-o and --rollout are the same file ({output}); name two files")
    for flag, path in (("-o", output), ("--rollout", rollout)):
        why = None if path is None else why_unwritable(path)
        if why is not None:  # said now, not after the search
            raise OutputWriteError(f"cannot write {flag} {path}: {why}")
    try:
        # Bytes, decoded without newline translation: CRLF stays CRLF, so the issue (and its
        # byte count) is what a server or a batch row with the same text gets.
        raw = sys.stdin.buffer.read() if job.issue == "-" else Path(job.issue).read_bytes()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise IssueInputError(f"cannot read --issue {job.issue}: {exc}") from exc
    if not text.strip():
        raise IssueInputError("the issue text is empty")
    return cal, text


async def _search(job: LocalizeJob, text: str) -> Localization:
    from codegrep_model import (
        OpenAIPolicy,
        PolicySpec,
        RolloutConfig,
        policy_from_spec,
        served_spec,
    )

    from codegrep.localize import localize

    spec = PolicySpec("lexical") if job.base_url is None else served_spec(job.base_url, job.model)
    # The lexical policy is localize's default (None): the one a server builds too.
    policy: Policy | None = None
    if spec.served:
        policy = policy_from_spec(spec, api_key=job.api_key, timeout_s=job.timeout_s)
    try:
        return await localize(
            job.repo,
            text,
            commit=job.commit,
            policy=policy,
            config=RolloutConfig(max_issue_bytes=job.max_issue_bytes),
            cache_dir=job.cache,
            source=job.source,
        )
    finally:
        if isinstance(policy, OpenAIPolicy):
            await policy.aclose()


def run_localize_job(job: LocalizeJob) -> LocalizeOutcome:
    """Check the job, search, gate, and write `output` / `rollout`.

    Raises `JobInputError`, `IssueInputError`, `OutputWriteError`, `CalibrationChoiceError` or
    `RepositoryInputError` (all `InjectorError`s) with one line naming the flag. A search that
    failed is not raised: the outcome's `result.status` is "error" and the response says why.
    """
    cal, text = _check(job)
    result = asyncio.run(_search(job, text))
    gated = apply(
        [f.path for f in result.files],
        None
        if any(f.score is None for f in result.files)
        else [f.score or 0.0 for f in result.files],
        calibration=cal,
        config=job.gate,
        policy_name=result.policy,
        max_files=job.max_files,
        inject=cast("RenderStyle | None", job.inject),  # one of INJECT_STYLES: checked
    )
    data = LocalizeResponse.of(result, gated).model_dump(mode="json")
    for flag, path, body in (
        ("-o", job.output, json.dumps(data, indent=2)),
        ("--rollout", job.rollout, result.record.model_dump_json(indent=2)),
    ):
        if path is None:
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body + "\n", encoding="utf-8")
        except OSError as exc:
            raise OutputWriteError(f"cannot write {flag} {path}: {exc.strerror or exc}") from exc
    return LocalizeOutcome(result=result, gated=gated, response=data)
