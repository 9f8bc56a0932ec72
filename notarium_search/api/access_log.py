"""One structured log line per request, and a request id on every line of it.

granian's access log wrote one pre-formatted string per request
(`127.0.0.1 - "GET /spaces/x/search HTTP/1.1" 200 2.1`): a log pipeline had
to parse it back. Here each request is one `request` event with its fields:
method, path (the query string's parameter names only, never their values:
a search's text stays out of the log), status, duration in milliseconds, the
client's address (the forwarded one only from a trusted proxy: the server
rewrites the address before this runs) and the request id.

The id is the client's `X-Request-ID` when it sends a usable one (a proxy's
or a caller's, to follow one request across services), else a new one; it is
returned in the response's `X-Request-ID` and bound (structlog contextvars)
to every line logged while the request runs, in handler threads too (anyio
copies the context into them).

A request refused by one of the checks in front of the application (a body
too slow, a name not ours: `refused`) is a kind of refusal: of each kind, one
line a minute per worker, which carries the kind (`refused`) and how many
such requests were not logged since the last one (`not_logged`). 1,100
connections sending their body a byte a second logged 1.1 MB; a flood costs
a line a minute now, as accept errors do (logsetup.FloodFilter).
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Callable
from urllib.parse import parse_qsl

import structlog

from notarium_search.api.asgi import App, Message, Receive, Scope, Send
from notarium_search.logsetup import FLOOD_WINDOW_SECONDS, Throttle

REQUEST_ID_HEADER = b"x-request-id"
# A client's id is kept when it is a short token of printable characters
# (UUIDs, trace ids, `req-42`); anything else (too long, spaces, control
# characters that could forge log lines) is replaced by a new id.
USABLE_REQUEST_ID = re.compile(rb"[A-Za-z0-9._:@+/=-]{1,128}")

PARAMETER_NAME = re.compile(r"[A-Za-z0-9_.-]{1,40}")

# The request's scope names the kind of refusal a check answered it with.
REFUSAL = "notarium.refusal"

log = structlog.get_logger("notarium_search.access")


def refused(scope: Scope, kind: str) -> None:
    """Mark the request as refused by a check in front of the application;
    `kind` is the error code it was answered with (or, with no answer, why)."""
    scope[REFUSAL] = kind


class AccessLog:
    """ASGI middleware: outermost, so that refused requests are logged too."""

    def __init__(
        self, app: App, window: float = FLOOD_WINDOW_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.app = app
        self.refusals = Throttle(window, clock)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _request_id(scope)
        started = time.perf_counter()
        status: int | None = None

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != REQUEST_ID_HEADER]
                message = {**message, "headers": [*headers, (REQUEST_ID_HEADER, request_id.encode())]}
            await send(message)

        with structlog.contextvars.bound_contextvars(request_id=request_id):
            try:
                await self.app(scope, receive, send_with_id)
            finally:
                kind = scope.get(REFUSAL)
                not_logged = None if kind is None else self.refusals.admit(kind)
                if kind is None or not_logged is not None:
                    refusal = {} if kind is None else {"refused": kind, "not_logged": not_logged}
                    log.info(
                        "request",
                        method=scope.get("method"),
                        path=scope.get("path"),
                        query=_parameter_names(scope.get("query_string", b"")),
                        status=status,  # None: the client went away before an answer started
                        duration_ms=round((time.perf_counter() - started) * 1000, 2),
                        client=(scope.get("client") or (None,))[0],
                        worker=os.getpid(),  # which of the server's worker processes answered
                        **refusal,
                    )


def _request_id(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name.lower() == REQUEST_ID_HEADER and USABLE_REQUEST_ID.fullmatch(value):
            return str(value.decode("ascii"))
    return uuid.uuid4().hex


def _parameter_names(query_string: bytes) -> list[str]:
    """The names, sorted; a "name" that is not one (`?some+free+text`) is shown as "?"."""
    names = {name for name, _ in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)}
    return sorted(name if PARAMETER_NAME.fullmatch(name) else "?" for name in names)
