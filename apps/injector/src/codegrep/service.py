"""`LocalizeService`: the one long-lived path behind `codegrep serve` (HTTP and MCP).

One service holds one `worktree_sandbox.TreePool` for every request (requests for one commit
share one tree), one policy (lexical by default, or a served model), the optional calibration
and gate settings, the allow-lists (folders a request may name, repositories it may have
cloned), and the admission rules: at most `max_concurrent` rollouts at once, at most
`max_queue` more waiting, a deadline per request. A folder is served only when every place its
data lives (work tree, git dir, common dir, object store and alternates, as
`worktree_sandbox.repository_locations` lists them) is inside an allowed root or the clone
cache; a commit a client names is fetched only with `allow_fetch`, at a bounded rate; the
checkouts' bytes are bounded (`ServiceLimits.max_checkout_bytes`); a lexical policy's ranking
runs on a worker thread, so the event loop stays free for other requests; a cancelled request
(its client left) gives its slot back at once. It answers typed requests with typed
responses and raises the typed errors of `codegrep.service_errors` (re-exported here); the
HTTP layer maps them to status codes, the MCP layer to error results. Not for: parsing HTTP or
MCP, or printing anything (it logs a failed rollout's traceback to the `codegrep.serve` logger
and says one line to the caller).
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import statistics
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self, TypeVar

from codegrep_gate import RENDER_STYLES as INJECT_STYLES
from codegrep_gate import (
    Calibration,
    GateConfig,
    RenderStyle,
)
from codegrep_model import (
    DEFAULT_MAX_ISSUE_BYTES,
    Policy,
    PolicyReply,
    PolicyRequest,
    RolloutConfig,
)
from codegrep_model.policies import (
    DEFAULT_POLICY,
    PolicyNeeds,
    TreeContext,
    bind_tree,
    needs_of,
    policy_from_spec,
)
from codegrep_model.policies.local import episode_for
from pydantic import BaseModel, ConfigDict, Field, field_validator
from worktree_sandbox import RepositoryNotFoundError, SandboxLimits, TreePool, repository_locations
from worktree_sandbox.errors import (
    CommitNotFoundError,
    CommitRequiredError,
    RepositoryLayoutError,
    SandboxClosedError,
)

from codegrep.errors import RepositoryInputError
from codegrep.gating import apply
from codegrep.localize import clone_cache
from codegrep.localize import localize as run_localize
from codegrep.localize_options import served_field
from codegrep.response import Localization, LocalizeResponse
from codegrep.service_errors import (
    BusyError,
    InternalServiceError,
    NotAllowedError,
    NotFoundError,
    RateLimitedError,
    RequestError,
    ServiceConfigError,
    ServiceError,
    ServiceTimeoutError,
    TooLargeError,
    UpstreamError,
)

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
    "RateLimitedError",
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

# owner/name as the clone cache takes it; "." and ".." are never a name part.
_REPO_NAME = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_LATENCY_SAMPLES = 1024


# --- records ---------------------------------------------------------------------------------


class LocalizeRequest(BaseModel):
    """One request: an issue and where to look. Unknown fields are refused; types are strict
    (a string is not a number)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    # Each field's text and bounds are `codegrep localize`'s option of that name, declared once
    # (`codegrep.localize_options`): a hard ceiling on each whatever the limits (the issue's
    # own limit, in bytes, is `ServiceLimits.max_issue_bytes`).
    repo: str = Field(**served_field("repo"))
    issue: str = Field(**served_field("issue"))
    commit: str | None = Field(**served_field("commit"))
    gate: bool | float | None = Field(**served_field("gate"))
    inject: InjectStyle | None = Field(**served_field("inject"))
    max_files: int | None = Field(**served_field("max_files"))
    top: int | None = Field(**served_field("top"))

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


class ServiceLimits(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    max_concurrent: int = Field(default=2, ge=1, description="Rollouts at once.")
    max_queue: int = Field(default=16, ge=0, description="Requests waiting beyond those.")
    timeout_s: float = Field(default=60.0, gt=0, description="Per request, queueing included.")
    max_issue_bytes: int = Field(default=DEFAULT_MAX_ISSUE_BYTES, ge=1)
    max_checkout_bytes: int | None = Field(
        default=512 << 20,
        ge=0,
        description="Bytes of checkouts (tmpfs by default) held at once; idle trees are closed "
        "least recently used first to make room, and past it grep runs on git objects. None: "
        "no bound.",
    )
    max_idle_trees: int = Field(default=16, ge=0, description="Trees kept open when idle.")
    fetches_per_minute: float = Field(
        default=6.0, gt=0, description="Client-driven fetches (with allow_fetch), refilled rate."
    )
    fetch_burst: int = Field(default=3, ge=1, description="Fetches allowed back to back.")
    grep_engine: str | None = Field(
        default=None,
        description="The grep engine by its worktree_sandbox.GREP_ENGINES name; None: ripgrep "
        "when installed, else git grep.",
    )


class PoolReport(BaseModel):
    open_trees: int
    trees_opened: int
    trees_closed: int
    max_idle_trees: int
    checkout_bytes: int = Field(description="Bytes of the checkouts held now.")
    checkout_bytes_peak: int
    max_checkout_bytes: int | None
    checkouts_refused: int = Field(description="Trees served from git objects: over budget.")
    budget_evictions: int = Field(description="Idle trees closed to make room for a checkout.")


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
    abandoned: int = Field(description="Requests cancelled because their client went away.")
    allow_fetch: bool
    fetches: int = Field(description="Client-driven fetches started (with allow_fetch).")
    fetches_refused: int = Field(description="Refused: fetching is off, or over the rate.")
    latency_p50_s: float | None = Field(description="Over the last 1,024 answered requests.")
    pool: PoolReport
    uptime_s: float


# --- the service -----------------------------------------------------------------------------


class LocalizeService:
    """The one path from a `LocalizeRequest` to a `LocalizeResponse`; use as an async context
    manager (or call `aclose`) so the pool's trees and checkouts are closed on shutdown.

    ``allow_roots``: folders a request may name (a request's folder, and every place its
    repository's data lives, must resolve inside one, symlinks resolved); `/`, the home folder
    and its ancestors are refused unless ``allow_broad_root``. ``allow_repos``: owner/name that
    requests may name, served from the clone cache ``cache_dir`` (default none). At least one
    of the two must be given. ``allow_fetch``: a request may make the server clone or fetch
    from ``source`` (a repository not yet in the cache, a commit not yet in its clone), at most
    `limits.fetches_per_minute`; without it only what is in the cache is served.
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
        allow_fetch: bool = False,
        allow_broad_root: bool = False,
        rank_off_loop: bool | None = None,
    ) -> None:
        from codegrep import __version__

        self.policy: Policy = policy or policy_from_spec(DEFAULT_POLICY)
        self.limits = limits or ServiceLimits()
        self.roots = tuple(_allowed_root(r, broad_ok=allow_broad_root) for r in allow_roots)
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
        # What the clone cache holds was cloned by this program: a folder inside it is served.
        self._cache_root = root.resolve()
        self.allow_fetch = allow_fetch
        self._fetch_bucket = _TokenBucket(
            self.limits.fetch_burst, self.limits.fetches_per_minute / 60.0
        )
        self._fetches = 0
        self._fetches_refused = 0
        self._owns_pool = pool is None
        self.pool = pool or TreePool(
            (lambda: clone_cache(root, source)) if self.repos else None,
            limits=SandboxLimits(grep_engine=self.limits.grep_engine),
            materialize="auto",
            max_idle_trees=self.limits.max_idle_trees,
            max_checkout_bytes=self.limits.max_checkout_bytes,
        )
        off_loop = needs_of(self.policy).own_thread if rank_off_loop is None else rank_off_loop
        self._off_loop = _OffLoopPolicy(self.policy) if off_loop else None
        self._abandoned = 0
        # a trained checkpoint's own episode shape, its issue cut never above the server's
        shape = episode_for(self.policy, RolloutConfig(max_issue_bytes=self.limits.max_issue_bytes))
        self._rollout = shape.model_copy(
            update={"max_issue_bytes": min(shape.max_issue_bytes, self.limits.max_issue_bytes)}
        )
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
        if self._off_loop is not None:
            await asyncio.to_thread(self._off_loop.close)

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
        if request.repo.startswith("/"):
            # The layout check walks the git dir and reads pointer files: a thread's work, so
            # that a slow disk or a large git dir never holds the loop (`/health`, the others).
            target, layout = await asyncio.to_thread(self._target, request)
        else:
            target, layout = self._target(request)
        folders = layout is not None
        if not folders:
            await self._check_fetch(target, request.commit or "")
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
                    if layout is not None:  # it may have waited: checked again before git runs
                        await asyncio.to_thread(
                            self._same_layout, target, layout, "while the request waited"
                        )
                    result = await run_localize(
                        target,
                        request.issue,
                        commit=request.commit,
                        policy=self._off_loop or self.policy,
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
        except asyncio.CancelledError:
            self._abandoned += 1  # the client left: the slot is given back on the way out
            raise
        except RepositoryInputError as exc:
            self._failed += 1
            raise _opening_error(exc, None if folders else target) from exc
        except NotAllowedError:
            self._failed += 1
            raise
        except Exception as exc:
            self._failed += 1
            raise self._internal(exc) from exc
        finally:
            self._admitted -= 1
        if result.status == "error":
            self._failed += 1
            raise UpstreamError(f"the search failed: {_one_line(result.record.error or '')}")
        if layout is not None:  # what git read may have been swapped under it: answer withheld
            try:
                await asyncio.to_thread(self._same_layout, target, layout, "during the search")
            except NotAllowedError:
                self._failed += 1
                raise
        try:
            response = self._respond(request, result, gate_config, queue_s or 0.0)
        except Exception as exc:  # a gate or render failure is this server's, not the caller's
            self._failed += 1
            raise self._internal(exc) from exc
        latency = time.perf_counter() - admitted
        self._latencies.append(latency)
        self._served += 1
        return response.model_copy(update={"latency_s": round(latency, 3)})

    async def _check_fetch(self, name: str, commit: str) -> None:
        """Refuse a request that would make this server clone or fetch, unless `allow_fetch`
        (then at most `fetches_per_minute`). Messages never name the source."""
        try:
            cache = self.pool.cache
        except RepositoryInputError as exc:
            raise RequestError(_one_line(str(exc))) from exc
        if cache is None:
            raise RequestError(f"{name!r}: this server has no clone cache")
        if await asyncio.to_thread(cache.lookup, name, commit) is not None:
            return
        shown = f"{commit[:80]!r}"
        if not self.allow_fetch:
            self._fetches_refused += 1
            where = "clone of it" if cache.has(name) else "clone cache"
            raise NotFoundError(
                f"{name}: commit {shown} is not in this server's {where}, and this server does "
                "not fetch on a client's behalf (--allow-fetch)"
            )
        wait = self._fetch_bucket.take()
        if wait > 0:
            self._fetches_refused += 1
            raise RateLimitedError(
                f"{name}: commit {shown} would need a fetch, and this server is over its fetch "
                f"rate ({self.limits.fetches_per_minute:g} a minute)",
                retry_after_s=max(1, math.ceil(wait)),
            )
        self._fetches += 1

    def _internal(self, exc: BaseException) -> InternalServiceError:
        _log.error("a search failed inside the server", exc_info=exc)
        return InternalServiceError(
            f"the search failed inside the server: {type(exc).__name__}: {_one_line(str(exc))}"
        )

    # -- what a request names --

    def _target(self, request: LocalizeRequest) -> tuple[str, tuple[tuple[str, str], ...] | None]:
        """What to open (a resolved folder, or a name of the allow-list) and, for a folder,
        where its repository's data lives (None for a name); raises for anything outside the
        allow-lists."""
        repo = request.repo
        if repo.startswith("/"):
            return self._folder(repo, request.commit)
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
            return canonical, None
        raise RequestError(
            f"repo {repo[:200]!r} is neither an absolute folder path nor a repository name "
            "(owner/name)"
        )

    def _folder(self, repo: str, commit: str | None) -> tuple[str, tuple[tuple[str, str], ...]]:
        try:
            resolved = Path(repo).resolve()  # symlinks and ".." resolved before the check
        except (OSError, ValueError) as exc:  # a NUL byte, a symlink loop
            raise RequestError(f"repo {repo[:200]!r} is not a usable path: {exc}") from exc
        if not any(resolved.is_relative_to(root) for root in self.roots):
            raise NotAllowedError(f"{repo[:200]!r} is outside the folders this server may read")
        if not resolved.is_dir():
            raise NotFoundError(f"no folder {repo[:200]!r}")
        layout = self._layout(resolved, repo)
        if commit is not None and not (
            (resolved / ".git").exists() or (resolved / "HEAD").is_file()
        ):
            raise NotFoundError(f"{repo[:200]!r} is not a git repository, so it has no commits")
        return str(resolved), layout

    def _layout(self, resolved: Path, repo: str) -> tuple[tuple[str, str], ...]:
        """Where the repository at `resolved` keeps its data (work tree, git dir, common dir,
        object stores, links inside them), each checked to be inside the roots; the list is
        returned so that a later check can tell whether it changed."""
        try:
            places = repository_locations(resolved)
        except RepositoryLayoutError as exc:
            raise NotAllowedError(
                f"{repo[:200]!r}: where its repository's data lives cannot be said ({exc})"
            ) from exc
        found = tuple((role, str(place)) for role, place in places.places())
        for role, place in places.places():
            if not self._inside(place):
                # The place itself is not said: it is outside what this client may see.
                raise NotAllowedError(
                    f"{repo[:200]!r}: its {role} is outside the folders this server may read "
                    "(a link, a `gitdir:` file, a `commondir` file, an object alternate or a "
                    "partial clone's promisor remote points out of the allowed roots)"
                )
        return found

    def _same_layout(self, target: str, before: tuple[tuple[str, str], ...], when: str) -> None:
        """The layout checked again (`when`: before git runs, after the search): a link swapped
        in while the request waited or ran is refused, and the answer is withheld."""
        if self._layout(Path(target), target) != before:
            raise NotAllowedError(
                f"{target[:200]!r}: where its repository's data lives changed {when} (a link "
                "or pointer file was replaced); the request is refused"
            )

    def _inside(self, place: Path) -> bool:
        return any(place.is_relative_to(r) for r in (*self.roots, self._cache_root))

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
        return LocalizeResponse.of(result, gated, queue_s=queue_s, top=request.top)

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
            abandoned=self._abandoned,
            allow_fetch=self.allow_fetch,
            fetches=self._fetches,
            fetches_refused=self._fetches_refused,
            latency_p50_s=round(statistics.median(self._latencies), 3) if self._latencies else None,
            pool=PoolReport(
                open_trees=self.pool.open_trees,
                trees_opened=stats.trees_opened,
                trees_closed=stats.trees_closed,
                max_idle_trees=self.pool.max_idle_trees,
                checkout_bytes=self.pool.checkout_bytes,
                checkout_bytes_peak=stats.checkout_bytes_peak,
                max_checkout_bytes=self.pool.max_checkout_bytes,
                checkouts_refused=stats.checkouts_refused,
                budget_evictions=stats.budget_evictions,
            ),
            uptime_s=round(time.monotonic() - self._started, 1),
        )


def _allowed_root(root: str | Path, *, broad_ok: bool = False) -> Path:
    path = Path(root).expanduser()
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise ServiceConfigError(f"--allow-root {root}: {exc}") from exc
    if not resolved.is_dir():
        raise ServiceConfigError(f"--allow-root {root}: not a folder")
    if not broad_ok and _broad(resolved):
        raise ServiceConfigError(
            f"--allow-root {root}: the file system's root, the home folder or a folder above "
            "it would let any client read every file there (keys, browser profiles); name the "
            "folders of your repositories, or give --allow-broad-root"
        )
    return resolved


def _broad(root: Path) -> bool:
    """`/`, the home folder, or a folder the home folder is inside."""
    if root == Path(root.anchor):
        return True
    try:
        home = Path.home().resolve()
    except (RuntimeError, OSError):
        return False
    return home.is_relative_to(root)


def _allowed_name(name: str) -> str:
    if not _REPO_NAME.fullmatch(name) or {".", ".."} & set(name.split("/")):
        raise ServiceConfigError(f"--allow-repo {name!r}: not a repository name (owner/name)")
    return name


def _opening_error(exc: RepositoryInputError, name: str | None = None) -> ServiceError:
    """The typed error for a repository or commit that could not be opened; for a repository
    name, the message says nothing of where it is cloned from."""
    cause = exc.__cause__
    message = _one_line(str(exc))
    if name is not None and isinstance(cause, RepositoryNotFoundError):
        return NotFoundError(
            f"{name}: the repository could not be cloned from this server's source"
        )
    if name is not None and isinstance(cause, CommitNotFoundError):
        return NotFoundError(f"{name}: no such commit in the clone or at this server's source")
    if isinstance(cause, RepositoryNotFoundError | CommitNotFoundError):
        return NotFoundError(message)
    if isinstance(cause, SandboxClosedError):
        return BusyError("the server is shutting down", retry_after_s=1)
    if isinstance(cause, CommitRequiredError):
        return RequestError(message)
    return RequestError(message)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:500]


class _TokenBucket:
    """`burst` tokens, refilled at `rate` a second; `take` spends one or says how long to wait."""

    def __init__(self, burst: int, rate: float) -> None:
        self.burst = float(burst)
        self.rate = rate
        self._tokens = float(burst)
        self._at = time.monotonic()

    def take(self) -> float:
        """0 when a token was spent, else the seconds until one is there."""
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens >= 1:
            self._tokens -= 1
            return 0.0
        return (1 - self._tokens) / self.rate


_T = TypeVar("_T")


def _on_loop(
    call: Callable[..., Awaitable[_T]], loop: asyncio.AbstractEventLoop
) -> Callable[..., Awaitable[_T]]:
    """`call`, run on `loop` (the server's) whoever awaits it: the tree's lookups stay on the
    loop that owns the tree's git processes."""

    async def bridged(*args: Any) -> _T:
        async def run() -> _T:
            return await call(*args)

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(run(), loop))

    return bridged


class _OffLoopPolicy:
    """A CPU-heavy policy (one whose `needs` ask for a thread of its own: the lexical one ranks
    in Python) run on one worker thread with its own event loop, so the server's loop keeps
    answering (`/health`, other requests) while it ranks. One thread: the policy's own caches
    are never touched by two threads at once; what it asked of the tree (definitions, history)
    is run back on the server's loop. Cancelling a reply (the client left) cancels it on the
    worker at its next await."""

    def __init__(self, inner: Policy, worker: _Worker | None = None) -> None:
        self.inner = inner
        self._worker = worker or _Worker()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def needs(self) -> PolicyNeeds:
        return needs_of(self.inner)

    def for_tree(self, context: TreeContext) -> _OffLoopPolicy:
        """The policy bound to one rollout's tree on the same worker, its lookups run on the
        loop that binds it (the server's, which owns the tree's git processes)."""
        home, defs, log = asyncio.get_running_loop(), context.definitions, context.commit_log
        bridged = TreeContext(
            definitions=None if defs is None else _on_loop(defs, home),
            commit_log=None if log is None else _on_loop(log, home),
        )
        return _OffLoopPolicy(bind_tree(self.inner, bridged), self._worker)

    async def reply(self, request: PolicyRequest) -> PolicyReply:
        async def run() -> PolicyReply:
            return await self.inner.reply(request)

        loop = self._worker.loop()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(run(), loop))

    def close(self) -> None:
        self._worker.close()


class _Worker:
    """The worker thread of `_OffLoopPolicy` and its event loop, started on first use."""

    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None

    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="codegrep-ranking", daemon=True)
            thread.start()
            self._loop, self._thread = loop, thread
        return self._loop

    def close(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = None
