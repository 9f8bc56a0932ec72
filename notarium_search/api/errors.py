"""One error body for every error: `{"error": code, "detail": message, "status": n}`.

A 500 never leaks internals: the client gets a generic detail, the log gets
the traceback.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi import ResponseSpec

from notarium_search.api.asgi import App, Message, Receive, Scope, Send
from notarium_search.bodies import ErrorBody, FilterErrorBody
from notarium_search.errors import InvalidFilter, NotariumError
from notarium_search.logsetup import get_logger

log = get_logger(__name__)

_CODES = {
    400: "invalid_parameter",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "request_too_large",
    421: "host_not_allowed",
    429: "too_many_requests",
}
# An error body we did not write (a CORS preflight refused by Litestar's
# middleware, the MCP SDK's 413/421/403/400) is at most this long: plain text.
FOREIGN_BODY_LIMIT = 4096


def _documented(description: str) -> ResponseSpec:
    return ResponseSpec(data_container=ErrorBody, description=description, generate_examples=False)


# The error responses every route may give, in the OpenAPI schema with the
# one body they really have (Litestar would document its own shape for 400).
RESPONSES: dict[int, ResponseSpec] = {
    400: _documented(
        "A parameter is invalid (`invalid_parameter`, a forged or stale cursor too); `detail` says which and why."
        " A filter typed in the query cannot be read (`invalid_filter`: `filter`, `value` and `reason` say which)."
        " Or the request's Host is ambiguous (`invalid_host`: two Host headers, none, or not a host name)"
    ),
    401: _documented("A token is configured and the request has none or a wrong one (`unauthorized`)"),
    404: _documented("Unknown space (`unknown_space`), note (`note_not_found`) or route (`not_found`)"),
    421: _documented(
        "The request is addressed to a name the service does not answer to (`host_not_allowed`): its Host"
        " header is not a loopback name, the bound address or one of allowed_hosts (DNS rebinding)"
    ),
    429: _documented("Too many requests from this client (`too_many_requests`); see Retry-After"),
    500: _documented("A fault of the service (`internal_error`); details only in the server log"),
    503: _documented(
        "The space could not open (`space_unavailable`: the detail says why), its index is being rebuilt"
        " (`index_repairing`), cannot be read right now"
        " (`index_unavailable`: too many open files), or a channel the request needs is not ready"
        " (`channel_unavailable`: the model loading, the vectors building); retry after Retry-After seconds"
    ),
}
# Related notes: the semantic channel switched off by the configuration.
RELATED_RESPONSES: dict[int, ResponseSpec] = {
    **RESPONSES,
    409: _documented(
        "The semantic channel is off in this service's configuration (`channel_disabled`: VECTOR_SEARCH is not"
        " set); no retry changes the answer"
    ),
}
# POST routes may also be refused as cross-site (403), as the read-only token is on reindex.
WRITE_RESPONSES: dict[int, ResponseSpec] = {
    **RESPONSES,
    408: _documented("The request's body did not arrive within body_timeout of its headers (`body_timeout`)"),
    403: _documented(
        "The read-only token on an admin route (`forbidden`), or a request from a page of another site"
        " (`cross_site_refused`: its Origin is neither this service nor one of cors_origins)"
    ),
}


def _body(status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> Response[ErrorBody]:
    return Response(ErrorBody(code, detail, status), status_code=status, media_type=MediaType.JSON, headers=headers)


def notarium_error(_: Request[Any, Any, Any], exc: NotariumError) -> Response[ErrorBody]:
    headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
    if isinstance(exc, InvalidFilter):  # the filter, its value and why, for the client to word
        body = FilterErrorBody(exc.code, exc.detail, exc.status, exc.name, exc.value, exc.reason)
        return Response(body, status_code=exc.status, media_type=MediaType.JSON)
    return _body(exc.status, exc.code, exc.detail, headers)


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
    # Kept: WWW-Authenticate on a 401, Retry-After and RateLimit-* on a 429, Allow on a 405.
    headers = dict(exc.headers or {})
    if "allow" in headers:
        headers["allow"] = _allowed(headers["allow"])
    return _body(status, _CODES.get(status, "error"), exc.detail, headers)


def _allowed(methods: str) -> str:
    """A 405's Allow: the route's methods, then OPTIONS (answered on every
    route), whatever order Litestar's routing holds them in (a controller's
    routes keep them in a set: api/app.py)."""
    listed = [method.strip() for method in methods.split(",")]
    return ", ".join(sorted(listed, key=lambda method: method == "OPTIONS"))


def internal_error(request: Request[Any, Any, Any], exc: Exception) -> Response[ErrorBody]:
    log.error("unhandled_error", path=request.url.path, exc_info=exc)
    return _body(500, "internal_error", "internal error; see the server log")


class UniformErrors:
    """The one error body for responses written outside our handlers:
    Litestar's CORS middleware answers a refused preflight with plain text,
    the MCP SDK its 400/403/413/421. An error response that is not JSON is
    rewritten as `{"error", "detail", "status"}`, its text as the detail."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: list[Message] = []  # the start of a foreign error response, then its body

        async def rewriting_send(message: Message) -> None:
            if message["type"] == "http.response.start" and _foreign_error(message):
                held.append(message)
                return
            if not held or message["type"] != "http.response.body":
                await send(message)
                return
            held.append(message)
            if not message.get("more_body", False):
                await _send_uniform(send, held)

        await self.app(scope, receive, rewriting_send)


def _foreign_error(start: Message) -> bool:
    if start["status"] < 400:
        return False
    headers = {k.lower(): v for k, v in start.get("headers", ())}
    return not headers.get(b"content-type", b"").startswith(b"application/json")


async def _send_uniform(send: Send, held: list[Message]) -> None:
    start, chunks = held[0], held[1:]
    status = int(start["status"])
    text = b"".join(c.get("body", b"") for c in chunks)[:FOREIGN_BODY_LIMIT].decode("utf-8", "replace").strip()
    code = _CODES.get(status, "internal_error" if status >= 500 else "error")
    detail = text if text and status < 500 else "internal error; see the server log" if status >= 500 else code
    kept = [
        (k, v) for k, v in start.get("headers", ()) if k.lower() not in (b"content-type", b"content-length")
    ]  # CORS and Allow headers stay
    await send_error(send, status, code, detail, kept)


async def send_error(
    send: Send, status: int, code: str, detail: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """The error body sent from plain ASGI, outside Litestar's handlers."""
    body = msgspec.json.encode(ErrorBody(code, detail, status))
    sent = [*(headers or []), (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": sent})
    await send({"type": "http.response.body", "body": body, "more_body": False})
