"""The HTTP API of `codegrep serve`: a starlette app over one `LocalizeService`.

Routes: `POST /localize` (JSON in, JSON out), `GET /health`, `GET /calibration`, and MCP's
streamable-HTTP transport at `/mcp` (`codegrep.serve_mcp`). The body is
limited while it is read (its Content-Length first, then the bytes that actually arrive);
malformed JSON is a 400 that names the problem, a field of the wrong type a 422 that names the
field; the service's typed errors map to 400/403/404/413/502/503/504, and anything else to a
500 with one line. Every error body is `{"error": {"code": ..., "message": ...}}`. Not for:
the rules themselves (who may read what, how many at once): those are the service's.

starlette (the `serve` extra) is imported when the app is built, not with this module.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from codegrep.service import (
    BusyError,
    InternalServiceError,
    LocalizeRequest,
    LocalizeService,
    NotAllowedError,
    NotFoundError,
    RequestError,
    ServiceError,
    ServiceTimeoutError,
    TooLargeError,
    UpstreamError,
)

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response

__all__ = ["DEFAULT_MAX_BODY_BYTES", "STATUS_OF", "build_app"]

_log = logging.getLogger("codegrep.serve")

DEFAULT_MAX_BODY_BYTES = 1 << 20

# The service's errors, most specific first: status code and the `code` of the error body.
STATUS_OF: tuple[tuple[type[ServiceError], int, str], ...] = (
    (RequestError, 400, "bad_request"),
    (NotAllowedError, 403, "not_allowed"),
    (NotFoundError, 404, "not_found"),
    (TooLargeError, 413, "too_large"),
    (UpstreamError, 502, "upstream_failed"),
    (BusyError, 503, "busy"),
    (ServiceTimeoutError, 504, "timeout"),
    (InternalServiceError, 500, "internal"),
)


class _BodyTooLarge(Exception):
    pass


def _error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status)


def build_app(
    service: LocalizeService,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    on_ready: Callable[[], None] | None = None,
    mcp: bool = True,
) -> Starlette:
    """The app; its lifespan closes `service` on shutdown (and calls `on_ready` at startup).
    ``mcp``: also serve MCP's streamable-HTTP transport at `/mcp` (the same service)."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.requests import ClientDisconnect
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from codegrep.serve_mcp import mcp_routes

    mcp_mount, mcp_server = mcp_routes(service) if mcp else ([], None)

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
        try:
            data = json.loads(body)
        except UnicodeDecodeError as exc:
            return _error(400, "malformed_json", f"the body is not UTF-8: {exc}")
        except json.JSONDecodeError as exc:
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
            answer = await service.localize(payload)
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
    )
