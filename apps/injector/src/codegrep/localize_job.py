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

from codegrep_gate import RENDER_STYLES as INJECT_STYLES
from codegrep_model import PolicySpecError, spec_from_options
from codegrep_model.policies import base_url_problem as base_url_problem
from codegrep_records.io import why_unwritable
from worktree_sandbox import SandboxError, check_grep_engine

from codegrep.errors import IssueInputError, JobInputError, OutputWriteError
from codegrep.gating import Gated, apply, calibration_for
from codegrep.localize_options import DEFAULT_TIMEOUT_S as DEFAULT_TIMEOUT_S
from codegrep.localize_options import LocalizeJob
from codegrep.response import Localization, LocalizeResponse

if TYPE_CHECKING:
    from codegrep_gate import Calibration, RenderStyle
    from codegrep_model import Policy, PolicySpec

__all__ = ["LocalizeJob", "LocalizeOutcome", "base_url_problem", "run_localize_job"]

# The job's options (fields, defaults, help) are declared once, in `codegrep.localize_options`.


@dataclass(frozen=True)
class LocalizeOutcome:
    """What the job found, what the gate kept, and the response record as written."""

    result: Localization
    gated: Gated
    response: dict[str, Any]


def _spec(job: LocalizeJob) -> PolicySpec:
    """The policy the job names, read once (`--policy`, or `--base-url`/`--model`)."""
    try:
        spec = spec_from_options(job.policy, base_url=job.base_url, model=job.model)
        spec.name  # noqa: B018  # an import path is imported here: its errors are bad input
    except PolicySpecError as exc:
        raise JobInputError(str(exc)) from exc
    return spec


def _check(job: LocalizeJob, spec: PolicySpec) -> tuple[Calibration | None, str]:
    """The checks made before the search, in the command's order; returns the calibration
    (when gated) and the issue text."""
    if job.inject is not None and job.inject not in INJECT_STYLES:
        raise JobInputError(f"--inject {job.inject}: not one of {', '.join(INJECT_STYLES)}")
    if job.gate is None and job.calibration is not None:
        raise JobInputError("--calibration is for the gate: add --gate [THRESHOLD]")
    try:
        check_grep_engine(job.grep_engine)
    except SandboxError as exc:
        raise JobInputError(f"--grep-engine: {exc}") from exc
    cal = None
    if job.gate is not None:
        cal = calibration_for(spec.name, job.calibration)  # checked now, before the search
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


async def _search(job: LocalizeJob, spec: PolicySpec, text: str) -> Localization:
    from codegrep_model import RolloutConfig, policy_from_spec
    from codegrep_model.policies.local import episode_for

    from codegrep.localize import localize

    # The lexical policy is localize's default (None): the one a server builds too.
    policy: Policy | None = None
    if spec.kind != "lexical" or job.top:
        try:
            # a ranking beside the answer, for a policy that keeps one; the answer is the same
            policy = policy_from_spec(
                spec, api_key=job.api_key, timeout_s=job.timeout_s, ranking=job.top or 0
            )
        except PolicySpecError as exc:
            raise JobInputError(str(exc)) from exc
    try:
        return await localize(
            job.repo,
            text,
            commit=job.commit,
            policy=policy,
            # a trained checkpoint runs in the episode shape it learned (its
            # codegrep-episode.json); every other policy in the command's
            config=episode_for(policy, RolloutConfig(max_issue_bytes=job.max_issue_bytes)),
            cache_dir=job.cache,
            source=job.source,
            grep_engine=job.grep_engine,
            progress=job.progress,
        )
    finally:
        close = getattr(policy, "aclose", None)  # a served model's connections
        if close is not None:
            await close()


def run_localize_job(job: LocalizeJob) -> LocalizeOutcome:
    """Check the job, search, gate, and write `output` / `rollout`.

    Raises `JobInputError`, `IssueInputError`, `OutputWriteError`, `CalibrationChoiceError` or
    `RepositoryInputError` (all `InjectorError`s) with one line naming the flag. A search that
    failed is not raised: the outcome's `result.status` is "error" and the response says why.
    """
    spec = _spec(job)
    cal, text = _check(job, spec)
    result = asyncio.run(_search(job, spec, text))
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
    data = LocalizeResponse.of(result, gated, top=job.top).model_dump(mode="json")
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
