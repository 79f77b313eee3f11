"""`LocalizeService`: the one long-lived path behind `codegrep serve` (HTTP and MCP).

One service holds one `worktree_sandbox.TreePool` for every request (requests for one commit
share one tree), one policy (lexical by default, or a served model), the optional calibration
and gate settings, the allow-lists (folders a request may name, repositories it may have
cloned), and the admission rules: at most `max_concurrent` rollouts at once, at most
`max_queue` more waiting, a deadline per request. It answers typed requests with typed
responses and raises the typed errors below; the HTTP layer maps them to status codes, the MCP
layer to error results. Not for: parsing HTTP or MCP, or printing anything (it logs a failed
rollout's traceback to the `codegrep.serve` logger and says one line to the caller).
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import statistics
import time
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Literal, Self

from codegrep_gate import (
    Calibration,
    GateConfig,
    GateDecision,
    RenderStyle,
)
from codegrep_model import (
    DEFAULT_MAX_ISSUE_BYTES,
    LexicalPolicy,
    Policy,
    RolloutConfig,
)
from pydantic import BaseModel, ConfigDict, Field, field_validator
from worktree_sandbox import (
    CommitNotFoundError,
    CommitRequiredError,
    RepositoryNotFoundError,
    SandboxClosedError,
    TreePool,
)

from codegrep.errors import InjectorError, RepositoryInputError
from codegrep.gating import Gated, apply
from codegrep.localize import Localization, clone_cache
from codegrep.localize import localize as run_localize

__all__ = [
    "INJECT_STYLES",
    "BusyError",
    "HealthReport",
    "InjectStyle",
    "InternalServiceError",
    "LocalizeRequest",
    "LocalizeResponse",
    "LocalizeService",
    "NotAllowedError",
    "NotFoundError",
    "RequestError",
    "ServiceConfigError",
    "ServiceError",
    "ServiceLimits",
    "ServiceTimeoutError",
    "TooLargeError",
    "UpstreamError",
]

_log = logging.getLogger("codegrep.serve")

InjectStyle = RenderStyle
INJECT_STYLES: tuple[InjectStyle, ...] = ("openhands", "markdown", "agent_context", "json")

# owner/name as the clone cache takes it; "." and ".." are never a name part.
_REPO_NAME = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
# A hard ceiling on a request's fields, whatever the limits: pydantic refuses more before the
# service looks (the issue's own limit, in bytes, is `ServiceLimits.max_issue_bytes`).
_MAX_REPO_CHARS = 4096
_MAX_COMMIT_CHARS = 256
_LATENCY_SAMPLES = 1024


# --- errors ----------------------------------------------------------------------------------


class ServiceError(InjectorError):
    """Base of what `LocalizeService.localize` raises on purpose; the message is one line."""


class ServiceConfigError(ServiceError):
    """The service cannot start as configured (no allow-list, a root that is not a folder, a
    calibration made for another retriever). `codegrep serve` exits 2 with it."""


class RequestError(ServiceError):
    """The request is malformed or asks for something this server cannot do (HTTP 400)."""


class NotAllowedError(ServiceError):
    """A folder outside the allowed roots, or a repository name not on the allow-list (403)."""


class NotFoundError(ServiceError):
    """No such folder, repository or commit (404)."""


class TooLargeError(ServiceError):
    """The issue (or, in the HTTP layer, the body) is over its limit (413)."""


class BusyError(ServiceError):
    """Every rollout slot and every queue place is taken (503); retry after `retry_after_s`."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ServiceTimeoutError(ServiceError):
    """The request did not finish within the per-request timeout, queueing included (504)."""


class UpstreamError(ServiceError):
    """The policy's model endpoint failed (the rollout ended with status `error`) (502)."""


class InternalServiceError(ServiceError):
    """The rollout failed inside this server (500); the traceback went to the log only."""


# --- records ---------------------------------------------------------------------------------


class LocalizeRequest(BaseModel):
    """One request: an issue and where to look. Unknown fields are refused; types are strict
    (a string is not a number)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    repo: str = Field(
        min_length=1,
        max_length=_MAX_REPO_CHARS,
        description="An absolute folder path inside an allowed root (searched as it is, or at "
        "`commit`), or owner/name on the allow-list (needs `commit`).",
    )
    issue: str = Field(min_length=1, description="The issue text (non-empty).")
    commit: str | None = Field(
        default=None,
        min_length=1,
        max_length=_MAX_COMMIT_CHARS,
        description="Search the repository at this commit (a sha, a branch, HEAD).",
    )
    gate: bool | float | None = Field(
        default=None,
        description="true/false: gate or not; a number in [0, 1]: gate at that precision "
        "threshold; null: the server's default.",
    )
    inject: InjectStyle | None = Field(
        default=None, description="Also render the injected files as this style of text."
    )
    max_files: int | None = Field(
        default=None, ge=1, le=100, description="At most this many files injected."
    )

    @field_validator("issue")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the issue text is empty")
        return value

    @field_validator("gate")
    @classmethod
    def _threshold(cls, value: bool | float | None) -> bool | float | None:
        if isinstance(value, float | int) and not isinstance(value, bool) and not 0 <= value <= 1:
            raise ValueError("a gate threshold is a precision in [0, 1]")
        return value


class LocalizeResponse(BaseModel):
    """The one answer record of `codegrep localize --json`, the HTTP server and MCP: what the
    search found, what the gate kept (when gated) and the text to inject (when asked). Every
    field is present on every surface (`queue_s` is 0 outside a server; `gate` and `injection`
    are null when not asked for)."""

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

    @classmethod
    def of(cls, result: Localization, gated: Gated, *, queue_s: float = 0.0) -> Self:
        """The record of one localization and what `gating.apply` made of it."""
        answer = result.record.answer
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
        )


class ServiceLimits(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    max_concurrent: int = Field(default=2, ge=1, description="Rollouts at once.")
    max_queue: int = Field(default=16, ge=0, description="Requests waiting beyond those.")
    timeout_s: float = Field(default=60.0, gt=0, description="Per request, queueing included.")
    max_issue_bytes: int = Field(default=DEFAULT_MAX_ISSUE_BYTES, ge=1)


class PoolReport(BaseModel):
    open_trees: int
    trees_opened: int
    trees_closed: int


class HealthReport(BaseModel):
    status: Literal["ok", "closing"]
    version: str
    policy: str
    gate_by_default: bool
    calibration: str | None = Field(description="The calibration's data set, when one is loaded.")
    in_flight: int
    queued: int
    max_concurrent: int
    max_queue: int
    served: int
    failed: int
    rejected_busy: int
    latency_p50_s: float | None = Field(description="Over the last 1,024 answered requests.")
    pool: PoolReport
    uptime_s: float


# --- the service -----------------------------------------------------------------------------


class LocalizeService:
    """The one path from a `LocalizeRequest` to a `LocalizeResponse`; use as an async context
    manager (or call `aclose`) so the pool's trees and checkouts are closed on shutdown.

    ``allow_roots``: folders a request may name (a request's folder must resolve, symlinks
    resolved, inside one); ``allow_repos``: owner/name that may be cloned into ``cache_dir``
    from ``source`` (default none). At least one of the two must be given.
    ``calibration``: the retriever's precision for the gate, checked against the policy's name;
    ``gate_by_default``: whether a request that does not say is gated (default: when a
    calibration is loaded). ``pool``: a pool to use instead of one made here (not closed here).
    ``version``: the retriever's version, checked against the calibration's.
    """

    def __init__(
        self,
        *,
        policy: Policy | None = None,
        allow_roots: Sequence[str | Path] = (),
        allow_repos: Iterable[str] = (),
        cache_dir: Path | None = None,
        source: str = "https://github.com/{repo}.git",
        calibration: Calibration | None = None,
        gate_config: GateConfig | None = None,
        gate_by_default: bool | None = None,
        limits: ServiceLimits | None = None,
        pool: TreePool | None = None,
        version: str | None = None,
    ) -> None:
        from codegrep import __version__

        self.policy: Policy = policy or LexicalPolicy()
        self.limits = limits or ServiceLimits()
        self.roots = tuple(_allowed_root(r) for r in allow_roots)
        self.repos = {_allowed_name(n).casefold(): n for n in allow_repos}
        if not self.roots and not self.repos:
            raise ServiceConfigError(
                "nothing to serve: give at least one folder (--allow-root DIR) or repository "
                "(--allow-repo owner/name) that requests may name"
            )
        self.calibration = calibration
        self.gate_config = gate_config or GateConfig()
        if gate_by_default and calibration is None:
            raise ServiceConfigError(
                "gating needs a calibration (--calibration FILE); none is loaded"
            )
        self.gate_by_default = (
            calibration is not None if gate_by_default is None else gate_by_default
        )
        self.retriever_version = version
        if calibration is not None:
            problem = calibration.retriever.mismatch(self.policy.name, version)
            if problem is not None:
                raise ServiceConfigError(
                    f"the calibration does not fit this server's policy: {problem} (give the "
                    f"calibration of {self.policy.name!r}, made by codegrep calibrate)"
                )
        root = (cache_dir or Path("~/.cache/codegrep/repos")).expanduser()
        self._owns_pool = pool is None
        self.pool = pool or TreePool(
            (lambda: clone_cache(root, source)) if self.repos else None, materialize="auto"
        )
        self._rollout = RolloutConfig(max_issue_bytes=self.limits.max_issue_bytes)
        self._slots = asyncio.Semaphore(self.limits.max_concurrent)
        self._admitted = 0  # in flight + waiting for a slot
        self._in_flight = 0
        self._served = 0
        self._failed = 0
        self._rejected = 0
        self._latencies: deque[float] = deque(maxlen=_LATENCY_SAMPLES)
        self._closing = False
        self._started = time.monotonic()
        self._version = __version__

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Refuse new requests and close the pool (when it was made here); safe to call twice."""
        self._closing = True
        if self._owns_pool:
            await self.pool.close()

    # -- admission --

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def queued(self) -> int:
        return self._admitted - self._in_flight

    def _retry_after(self) -> int:
        """Seconds until a place is likely free: a typical request's time, at least 1."""
        typical = statistics.median(self._latencies) if self._latencies else 1.0
        return max(1, math.ceil(typical))

    async def localize(self, request: LocalizeRequest) -> LocalizeResponse:
        """Answer one request, or raise a `ServiceError` saying why not in one line."""
        if self._closing:
            raise BusyError("the server is shutting down", retry_after_s=self._retry_after())
        target, folders = self._target(request)
        gate_config = self._gate_config(request)
        issue_bytes = len(request.issue.encode("utf-8"))
        if issue_bytes > self.limits.max_issue_bytes:
            raise TooLargeError(
                f"the issue is {issue_bytes} bytes; this server takes at most "
                f"{self.limits.max_issue_bytes}"
            )
        limits = self.limits
        if self._admitted >= limits.max_concurrent + limits.max_queue:
            self._rejected += 1
            raise BusyError(
                f"busy: {self._in_flight} searches running and {self.queued} waiting "
                f"(--max-concurrent {limits.max_concurrent}, --max-queue {limits.max_queue})",
                retry_after_s=self._retry_after(),
            )
        self._admitted += 1
        admitted = time.perf_counter()
        queue_s: float | None = None  # None until a slot is had
        try:
            async with asyncio.timeout(limits.timeout_s) as deadline, self._slots:
                queue_s = time.perf_counter() - admitted
                self._in_flight += 1
                try:
                    result = await run_localize(
                        target,
                        request.issue,
                        commit=request.commit,
                        policy=self.policy,
                        config=self._rollout,
                        pool=self.pool,
                        folders=folders,
                    )
                finally:
                    self._in_flight -= 1
        except TimeoutError as exc:
            self._failed += 1
            if not deadline.expired():  # a TimeoutError of the rollout itself
                raise self._internal(exc) from exc
            where = "waiting for a slot" if queue_s is None else "searching"
            raise ServiceTimeoutError(
                f"no answer within {limits.timeout_s:g} s (--timeout; it timed out {where})"
            ) from exc
        except RepositoryInputError as exc:
            self._failed += 1
            raise _opening_error(exc) from exc
        except Exception as exc:
            self._failed += 1
            raise self._internal(exc) from exc
        finally:
            self._admitted -= 1
        if result.status == "error":
            self._failed += 1
            raise UpstreamError(f"the search failed: {_one_line(result.record.error or '')}")
        try:
            response = self._respond(request, result, gate_config, queue_s or 0.0)
        except Exception as exc:  # a gate or render failure is this server's, not the caller's
            self._failed += 1
            raise self._internal(exc) from exc
        latency = time.perf_counter() - admitted
        self._latencies.append(latency)
        self._served += 1
        return response.model_copy(update={"latency_s": round(latency, 3)})

    def _internal(self, exc: BaseException) -> InternalServiceError:
        _log.error("a search failed inside the server", exc_info=exc)
        return InternalServiceError(
            f"the search failed inside the server: {type(exc).__name__}: {_one_line(str(exc))}"
        )

    # -- what a request names --

    def _target(self, request: LocalizeRequest) -> tuple[str, bool]:
        """What to open (a resolved folder, or a name of the allow-list) and whether it is a
        folder; raises for anything outside the allow-lists."""
        repo = request.repo
        if repo.startswith("/"):
            return self._folder(repo, request.commit), True
        if _REPO_NAME.fullmatch(repo) and not {".", ".."} & set(repo.split("/")):
            canonical = self.repos.get(repo.casefold())
            if canonical is None:
                allowed = ", ".join(sorted(self.repos.values())) or "none"
                raise NotAllowedError(
                    f"repository {repo!r} is not on this server's allow-list (--allow-repo; "
                    f"allowed: {allowed})"
                )
            if request.commit is None:
                raise RequestError(f"{repo!r} is a repository name: it needs a commit")
            return canonical, False
        raise RequestError(
            f"repo {repo[:200]!r} is neither an absolute folder path nor a repository name "
            "(owner/name)"
        )

    def _folder(self, repo: str, commit: str | None) -> str:
        try:
            resolved = Path(repo).resolve()  # symlinks and ".." resolved before the check
        except (OSError, ValueError) as exc:  # a NUL byte, a symlink loop
            raise RequestError(f"repo {repo[:200]!r} is not a usable path: {exc}") from exc
        if not any(resolved.is_relative_to(root) for root in self.roots):
            raise NotAllowedError(f"{repo[:200]!r} is outside the folders this server may read")
        if not resolved.is_dir():
            raise NotFoundError(f"no folder {repo[:200]!r}")
        if commit is not None and not (
            (resolved / ".git").exists() or (resolved / "HEAD").is_file()
        ):
            raise NotFoundError(f"{repo[:200]!r} is not a git repository, so it has no commits")
        return str(resolved)

    def _gate_config(self, request: LocalizeRequest) -> GateConfig | None:
        """The gate settings for this request, or None when it is not gated."""
        wanted = self.gate_by_default if request.gate is None else request.gate is not False
        if not wanted:
            return None
        if self.calibration is None:
            raise RequestError(
                "this server has no calibration, so it cannot gate (ask with gate: false, or "
                "start it with --calibration FILE)"
            )
        update: dict[str, object] = {}
        if not isinstance(request.gate, bool) and request.gate is not None:
            update["threshold"] = float(request.gate)
        if request.max_files is not None:
            update["max_files"] = request.max_files
        return self.gate_config.model_copy(update=update) if update else self.gate_config

    # -- the answer --

    def _respond(
        self,
        request: LocalizeRequest,
        result: Localization,
        gate_config: GateConfig | None,
        queue_s: float,
    ) -> LocalizeResponse:
        files = [f.path for f in result.files]
        given = [f.score for f in result.files]
        scores = None if None in given else [s for s in given if s is not None]
        gated = apply(
            files,
            scores,
            calibration=self.calibration,
            config=gate_config,
            policy_name=self.policy.name,
            max_files=request.max_files,
            inject=request.inject,
        )
        return LocalizeResponse.of(result, gated, queue_s=queue_s)

    def health(self) -> HealthReport:
        stats = self.pool.stats
        return HealthReport(
            status="closing" if self._closing else "ok",
            version=self._version,
            policy=self.policy.name,
            gate_by_default=self.gate_by_default,
            calibration=self.calibration.data.name if self.calibration is not None else None,
            in_flight=self._in_flight,
            queued=self.queued,
            max_concurrent=self.limits.max_concurrent,
            max_queue=self.limits.max_queue,
            served=self._served,
            failed=self._failed,
            rejected_busy=self._rejected,
            latency_p50_s=round(statistics.median(self._latencies), 3) if self._latencies else None,
            pool=PoolReport(
                open_trees=self.pool.open_trees,
                trees_opened=stats.trees_opened,
                trees_closed=stats.trees_closed,
            ),
            uptime_s=round(time.monotonic() - self._started, 1),
        )


def _allowed_root(root: str | Path) -> Path:
    path = Path(root).expanduser()
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise ServiceConfigError(f"--allow-root {root}: {exc}") from exc
    if not resolved.is_dir():
        raise ServiceConfigError(f"--allow-root {root}: not a folder")
    return resolved


def _allowed_name(name: str) -> str:
    if not _REPO_NAME.fullmatch(name) or {".", ".."} & set(name.split("/")):
        raise ServiceConfigError(f"--allow-repo {name!r}: not a repository name (owner/name)")
    return name


def _opening_error(exc: RepositoryInputError) -> ServiceError:
    """The typed error for a repository or commit that could not be opened."""
    cause = exc.__cause__
    message = _one_line(str(exc))
    if isinstance(cause, RepositoryNotFoundError | CommitNotFoundError):
        return NotFoundError(message)
    if isinstance(cause, SandboxClosedError):
        return BusyError("the server is shutting down", retry_after_s=1)
    if isinstance(cause, CommitRequiredError):
        return RequestError(message)
    return RequestError(message)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:500]
