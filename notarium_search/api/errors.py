"""One error body for every error: `{"error": code, "detail": message, "status": n}`.

A 500 never leaks internals: the client gets a generic detail, the log gets
the traceback.
"""

from __future__ import annotations

from typing import Any

import structlog
from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi import ResponseSpec

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


def _documented(description: str) -> ResponseSpec:
    return ResponseSpec(data_container=ErrorBody, description=description, generate_examples=False)


# The error responses every route may give, in the OpenAPI schema with the
# one body they really have (Litestar would document its own shape for 400).
RESPONSES: dict[int, ResponseSpec] = {
    400: _documented(
        "A parameter is invalid (`invalid_parameter`, a forged or stale cursor too); `detail` says which and why"
    ),
    401: _documented("A token is configured and the request has none or a wrong one (`unauthorized`)"),
    404: _documented("Unknown space (`unknown_space`), note (`note_not_found`) or route (`not_found`)"),
    429: _documented("Too many requests from this client (`too_many_requests`); see Retry-After"),
    500: _documented("A fault of the service (`internal_error`); details only in the server log"),
    503: _documented(
        "The space's index is being rebuilt (`index_repairing`) or a channel the request needs"
        " is not ready (`channel_unavailable`); retry shortly"
    ),
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
