"""One error body for every error: `{"error": code, "detail": message, "status": n}`.

A 500 never leaks internals: the client gets a generic detail, the log gets
the traceback.
"""

from __future__ import annotations

from typing import Any

import structlog
from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, ValidationException

from notarium_search.api.schemas import ErrorBody
from notarium_search.errors import NotariumError

log = structlog.get_logger(__name__)

_CODES = {
    400: "invalid_parameter",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "request_too_large",
    429: "too_many_requests",
}


def _body(status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> Response[ErrorBody]:
    return Response(ErrorBody(code, detail, status), status_code=status, media_type=MediaType.JSON, headers=headers)


def notarium_error(_: Request[Any, Any, Any], exc: NotariumError) -> Response[ErrorBody]:
    return _body(exc.status, exc.code, exc.detail)


def validation_error(_: Request[Any, Any, Any], exc: ValidationException) -> Response[ErrorBody]:
    problems = []
    for item in exc.extra if isinstance(exc.extra, list) else []:
        if isinstance(item, dict):
            key = item.get("key")
            problems.append(f"{key}: {item.get('message')}" if key else str(item.get("message")))
    return _body(400, "invalid_parameter", "; ".join(problems) or exc.detail)


def http_error(_: Request[Any, Any, Any], exc: HTTPException) -> Response[ErrorBody]:
    status = exc.status_code
    if status >= 500:
        log.error("http_error", status=status, detail=exc.detail)
        return _body(status, "internal_error", "internal error; see the server log")
    # Kept: WWW-Authenticate on a 401, Retry-After and RateLimit-* on a 429.
    return _body(status, _CODES.get(status, "error"), exc.detail, dict(exc.headers or {}))


def internal_error(request: Request[Any, Any, Any], exc: Exception) -> Response[ErrorBody]:
    log.error("unhandled_error", path=request.url.path, exc_info=exc)
    return _body(500, "internal_error", "internal error; see the server log")
