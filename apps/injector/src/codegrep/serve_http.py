"""The HTTP API of `codegrep serve`: a starlette app over one `LocalizeService`.

Routes: `POST /localize` (JSON in, JSON out), `GET /health`, `GET /calibration`, and MCP's
streamable-HTTP transport at `/mcp` (`codegrep.serve_mcp`). The body is limited while it is read
(its Content-Length first, then the bytes that actually arrive) and must arrive within a deadline
(408); JSON nested deeper than `MAX_JSON_DEPTH` is a 400 before it is parsed; malformed JSON is a
400 that names the problem, a field of the wrong type a 422 that names the field; the service's
typed errors map to 400/403/404/413/429/502/503/504, and anything else to a 500 with one line. A
search whose client hangs up is cancelled at once (its slot is free again). Every error body is
`{"error": {"code": ..., "message": ...}}`. Not for: the rules themselves (who may read what, how
many at once): those are the service's.

`RequestGuard`, ASGI middleware around the whole app (every route, also those mounted later),
answers before any route runs: a Host or Origin that is not this server's (DNS rebinding, a web
page's cross-origin request) is 403, a POST that is not `application/json` is 415 (a page's
form or `text/plain` "simple request" never reaches a route), a missing or wrong bearer token
(when the server has one) is 401. Not for: the rules themselves (who may read what, how many
at once): those are the service's.

starlette and uvicorn (the `serve` extra) are imported when the app is built, not with this
module.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import re
import socket
import threading
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    MutableMapping,
)
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from codegrep_records.io import parse_json
from pydantic import ValidationError

from codegrep.service import (
    BusyError,
    InternalServiceError,
    LocalizeRequest,
    LocalizeService,
    NotAllowedError,
    NotFoundError,
    RateLimitedError,
    RequestError,
    ServiceError,
    ServiceTimeoutError,
    TooLargeError,
    UpstreamError,
)

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response

__all__ = [
    "DEFAULT_BODY_TIMEOUT_S",
    "DEFAULT_HEADER_TIMEOUT_S",
    "DEFAULT_MAX_BODY_BYTES",
    "LOOPBACK_HOSTS",
    "MAX_JSON_DEPTH",
    "STATUS_OF",
    "RequestGuard",
    "build_app",
    "serve_in_thread",
    "server_config",
]

_log = logging.getLogger("codegrep.serve")

DEFAULT_MAX_BODY_BYTES = 1 << 20
DEFAULT_BODY_TIMEOUT_S = 10.0  # from the request's headers to the body's last byte
DEFAULT_HEADER_TIMEOUT_S = 10.0  # from the connection (or the last answer) to the headers
MAX_JSON_DEPTH = 32  # a request is flat; deeper nesting is an attack on the parser
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")

# The service's errors, most specific first: status code and the `code` of the error body.
STATUS_OF: tuple[tuple[type[ServiceError], int, str], ...] = (
    (RequestError, 400, "bad_request"),
    (NotAllowedError, 403, "not_allowed"),
    (NotFoundError, 404, "not_found"),
    (TooLargeError, 413, "too_large"),
    (RateLimitedError, 429, "rate_limited"),
    (UpstreamError, 502, "upstream_failed"),
    (BusyError, 503, "busy"),
    (ServiceTimeoutError, 504, "timeout"),
    (InternalServiceError, 500, "internal"),
)


class _BodyTooLarge(Exception):
    pass


class _BodyTimeout(Exception):
    pass


# JSON strings (escapes included), dropped before the brackets are counted.
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_JSON_BRACKET = re.compile(rb"[\[\]{}]")


def json_too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `body` nests arrays/objects deeper than `limit`, counted without parsing (the
    parser itself recurses, and 100,000 levels end in a RecursionError)."""
    depth = 0
    for m in _JSON_BRACKET.finditer(_JSON_STRING.sub(b"", body)):
        if m.group() in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _send_error(send: Send, status: int, code: str, message: str, **headers: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _split_host(value: str) -> tuple[str, int | None] | None:
    """(name, port) of a Host header or an origin's netloc; None when it is not one."""
    match = re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[^:\[\]]+)(?::(\d{1,5}))?", value)
    if match is None:
        return None
    return match.group(1).casefold(), int(match.group(2)) if match.group(2) else None


class RequestGuard:
    """ASGI middleware that checks every HTTP request before the app sees it.

    It wraps the WHOLE app (`build_app` installs it as the Starlette app's middleware, so a
    route or sub-app mounted later, such as an MCP endpoint, is behind it too):

    - Host must name this server: one of ``hosts`` (loopback names by default), with the
      server's ``port`` when one is given: a DNS-rebinding page sends its own name (403).
    - Origin, when sent, must be ``http(s)://`` one of those hosts and ports: another web
      page's request is refused (403); a missing Origin is a non-browser client.
    - A POST must say ``Content-Type: application/json`` (415): a cross-origin form or
      `text/plain` POST needs no CORS preflight, a JSON one does.
    - With a ``token``, ``Authorization: Bearer <token>`` (compared in constant time) (401).
    - The body must arrive within ``body_timeout_s`` of the headers (408); after it, the app's
      `receive` waits without a deadline (for a client's disconnect).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        hosts: Iterable[str] = LOOPBACK_HOSTS,
        port: int | None = None,
        token: str | None = None,
        body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
    ) -> None:
        self.app = app
        self.hosts = frozenset(h.casefold() for h in hosts)
        self.port = port
        self._token = token.encode() if token else None
        self.body_timeout_s = body_timeout_s

    def _host_ok(self, name: str, port: int | None, default_port: int) -> bool:
        if name not in self.hosts:
            return False
        return self.port is None or (port if port is not None else default_port) == self.port

    def _refusal(self, scope: Scope) -> tuple[int, str, str, dict[str, str]] | None:
        headers: dict[bytes, bytes] = {}
        for key, value in scope.get("headers", ()):
            headers.setdefault(key.lower(), value)
        host = _split_host(headers.get(b"host", b"").decode("latin-1"))
        if host is None or not self._host_ok(*host, 80):
            return 403, "forbidden_host", "the Host header does not name this server", {}
        origin = headers.get(b"origin")
        if origin is not None:
            parts = urlsplit(origin.decode("latin-1"))
            named = _split_host(parts.netloc) if parts.scheme in ("http", "https") else None
            default = 443 if parts.scheme == "https" else 80
            if named is None or not self._host_ok(*named, default):
                return 403, "forbidden_origin", "requests from other origins are refused", {}
        if self._token is not None:
            given = headers.get(b"authorization", b"")
            scheme, _, credential = given.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(
                credential.strip(), self._token
            ):
                return (
                    401,
                    "unauthorized",
                    "this server needs a bearer token (Authorization: Bearer ...)",
                    {"WWW-Authenticate": "Bearer"},
                )
        if scope.get("method") == "POST":
            media = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if media != b"application/json" and not media.endswith(b"+json"):
                return (
                    415,
                    "unsupported_media_type",
                    "a POST body must be JSON, sent as Content-Type: application/json",
                    {},
                )
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            status, code, message, extra = refusal
            await _send_error(send, status, code, message, **extra)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout_s
        body_done = False
        started = False

        async def guarded_receive() -> Message:
            nonlocal body_done
            if body_done:
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                raise _BodyTimeout from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, guarded_receive, watched_send)
        except _BodyTimeout:
            if started:
                raise
            await _send_error(
                send,
                408,
                "body_timeout",
                f"the body did not arrive within {self.body_timeout_s:g} s",
                Connection="close",
            )


def _error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status)


def build_app(
    service: LocalizeService,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    on_ready: Callable[[], None] | None = None,
    hosts: Iterable[str] = LOOPBACK_HOSTS,
    port: int | None = None,
    token: str | None = None,
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
    mcp: bool = True,
) -> Starlette:
    """The app; its lifespan closes `service` on shutdown (and calls `on_ready` at startup).

    Every request passes `RequestGuard` (``hosts``, ``port``, ``token``, ``body_timeout_s``)
    first: it is the app's outermost own middleware, so a route or a sub-app added to the app
    this returns (e.g. `app.mount("/mcp", ...)`, or a route in the list below) is guarded too.
    ``mcp``: also serve MCP's streamable-HTTP transport at `/mcp` (the same service).
    """
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.requests import ClientDisconnect
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from codegrep.serve_mcp import mcp_routes

    hosts = tuple(hosts)
    mcp_mount, mcp_server = mcp_routes(service, hosts) if mcp else ([], None)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        if on_ready is not None:
            on_ready()
        try:
            if mcp_server is None:
                yield
            else:
                async with mcp_server.session_manager.run():
                    yield
        finally:
            await service.aclose()

    async def read_body(request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                raise HTTPException(400, "Content-Length is not a number") from None
            if size > max_body_bytes:
                raise _BodyTooLarge(f"{size} bytes declared")
        chunks: list[bytes] = []
        got = 0
        # A body sent chunked, or longer than it said, is counted as it arrives.
        async for chunk in request.stream():
            got += len(chunk)
            if got > max_body_bytes:
                raise _BodyTooLarge(f"more than {max_body_bytes} bytes sent")
            chunks.append(chunk)
        return b"".join(chunks)

    async def localize(request: Request) -> Response:
        try:
            body = await read_body(request)
        except _BodyTooLarge as exc:
            return _error(
                413,
                "too_large",
                f"the body is over this server's limit of {max_body_bytes} bytes "
                f"(--max-body-bytes; {exc})",
            )
        except ClientDisconnect:
            return Response(status_code=400)
        if json_too_deep(body):
            return _error(
                400, "malformed_json", f"the body nests deeper than {MAX_JSON_DEPTH} levels"
            )
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _error(400, "malformed_json", f"the body is not UTF-8: {exc}")
        try:
            # the one hardened reader: a 5,000-digit integer, 1e999 and NaN are refused with a
            # reason, like a syntax error (Python's own int limit would be a 500)
            data = parse_json(text)
        except ValueError as exc:
            return _error(400, "malformed_json", f"the body is not JSON: {exc}")
        if not isinstance(data, dict):
            return _error(
                422, "invalid", f"the body must be a JSON object, not {type(data).__name__}"
            )
        try:
            payload = LocalizeRequest.model_validate(data)
        except ValidationError as exc:
            fields = [
                {"field": ".".join(str(p) for p in e["loc"]) or "(body)", "message": e["msg"]}
                for e in exc.errors(include_url=False, include_input=False)
            ]
            said = "; ".join(f"{f['field']}: {f['message']}" for f in fields)
            return _error(422, "invalid", f"invalid request: {said}", fields=fields)
        try:
            answer = await _unless_client_leaves(service.localize(payload), request)
        except _ClientLeft:
            return Response(status_code=499)  # nobody reads it; the search was cancelled
        except ServiceError as exc:
            for kind, status, code in STATUS_OF:
                if isinstance(exc, kind):
                    headers = (
                        {"Retry-After": str(exc.retry_after_s)}
                        if isinstance(exc, BusyError)
                        else None
                    )
                    response = _error(status, code, str(exc))
                    if headers:
                        response.headers.update(headers)
                    return response
            _log.error("unmapped service error", exc_info=exc)
            return _error(500, "internal", str(exc))
        return JSONResponse(answer.model_dump(mode="json"))

    async def health(_: Request) -> Response:
        return JSONResponse(service.health().model_dump(mode="json"))

    async def calibration(_: Request) -> Response:
        if service.calibration is None:
            return _error(404, "not_found", "this server runs without a calibration")
        return JSONResponse(
            {
                "calibration": service.calibration.model_dump(mode="json"),
                "gate": service.gate_config.model_dump(mode="json"),
                "gate_by_default": service.gate_by_default,
            }
        )

    async def http_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "bad_request")
        response = _error(exc.status_code, code, str(exc.detail))
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    async def server_error(_: Request, exc: Exception) -> Response:
        _log.error("a request failed inside the server", exc_info=exc)
        one_line = " ".join(str(exc).split())[:500]
        return _error(500, "internal", f"internal error: {type(exc).__name__}: {one_line}")

    return Starlette(
        routes=[
            Route("/localize", localize, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
            Route("/calibration", calibration, methods=["GET"]),
            *mcp_mount,
        ],
        lifespan=lifespan,
        exception_handlers={HTTPException: http_error, Exception: server_error},
        middleware=[
            Middleware(
                RequestGuard,
                hosts=hosts,
                port=port,
                token=token,
                body_timeout_s=body_timeout_s,
            )
        ],
    )


class _ClientLeft(Exception):
    pass


async def _unless_client_leaves(work: Awaitable[Any], request: Request) -> Any:
    """`work`'s result, or `_ClientLeft` as soon as the client disconnects (then `work` is
    cancelled, and its slot given back, before this returns)."""

    async def disconnected() -> None:
        while True:
            message = await request.receive()
            if message["type"] == "http.disconnect":
                return

    job = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(disconnected())
    try:
        await asyncio.wait({job, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not job.done():
            job.cancel()
            with contextlib.suppress(BaseException):
                await job
        watch.cancel()
        with contextlib.suppress(BaseException):
            await watch
    if job.cancelled():
        raise _ClientLeft
    return job.result()


def server_config(
    app: Starlette,
    *,
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S,
    keep_alive_s: float = 5.0,
    max_connections: int | None = None,
    verbose: bool = False,
) -> uvicorn.Config:
    """uvicorn's settings for `app`: h11 with a deadline for a request's headers (from the
    connection, or from the last answer on a kept-alive one; uvicorn has none of its own, so a
    client sending a byte at a time held a connection without end), idle connections closed
    after ``keep_alive_s``, and at most ``max_connections`` open connections.

    The connection limit makes room rather than refusing: a connection that would pass it
    closes the open connection idle longest (no request on it, or a request whose headers have
    not all arrived), then the one sending its body longest; only when every other connection
    has a request in the app is the newcomer itself closed. So idle connections, however many
    one client opens, never turn `/health` or a search away (uvicorn's own `limit_concurrency`
    answered every request 503 while they were open)."""
    import h11
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderDeadlineH11(H11Protocol):
        _idle_since = 0.0

        def _arm_headers(self) -> None:
            self._idle_since = self.loop.time()
            self.loop.call_later(header_timeout_s, self._headers_late)

        def _headers_late(self) -> None:
            # No request's headers since the timer was armed (an earlier timer may close a
            # kept-alive connection sooner; the keep-alive limit is shorter anyway).
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

        def _waiting(self) -> int | None:
            """0: idle (no request, or its headers still arriving); 1: sending its body;
            None: a request in the app, or the connection closing."""
            if self.transport.is_closing():
                return None
            if self.conn.their_state is h11.IDLE and (
                self.cycle is None or self.cycle.response_complete
            ):
                return 0
            if self.conn.their_state is h11.SEND_BODY and not self.cycle.response_complete:
                return 1
            return None

        def _make_room(self) -> None:
            if max_connections is None:
                return
            live = [
                p
                for p in self.connections
                if isinstance(p, HeaderDeadlineH11) and p is not self
                if not p.transport.is_closing()
            ]
            over = len(live) + 1 - max_connections
            if over <= 0:
                return
            ranked = [(w, p._idle_since, id(p), p) for p in live if (w := p._waiting()) is not None]
            for *_, victim in sorted(ranked)[:over]:
                victim.transport.close()
                over -= 1
            if over > 0:  # every other connection has a request in the app
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm_headers()
            self._make_room()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm_headers()

    return uvicorn.Config(
        app,
        http=HeaderDeadlineH11,
        log_level="info" if verbose else "warning",
        access_log=verbose,
        server_header=False,
        lifespan="on",
        timeout_keep_alive=max(1, round(keep_alive_s)),
    )


@contextmanager
def serve_in_thread(app: Starlette | Callable[[int], Starlette], **config: Any) -> Iterator[str]:
    """Serve `app` with a real uvicorn on a free port of 127.0.0.1, in a daemon thread, as
    `codegrep serve` configures it (`server_config(**config)`); yields the base URL and stops
    the server on exit. `app` may be a function of the bound port that makes the app (the
    request guard must know the port). For embedding the server in a test or a harness; the
    CLI serves in its own event loop instead."""
    import uvicorn

    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        port = sock.getsockname()[1]
        made = app(port) if callable(app) and not hasattr(app, "router") else app
        server = uvicorn.Server(server_config(made, **config))  # type: ignore[arg-type]
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 15
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the server stopped while starting")
            if time.monotonic() > deadline:
                server.should_exit = True
                raise RuntimeError("the server did not start within 15 s")
            time.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            thread.join(15)
    finally:
        sock.close()
