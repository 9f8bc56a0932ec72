"""The /mcp route of the service, with the MCP SDK loaded in the background
right after start.

Importing the SDK and building the session manager takes ~0.4 s on an idle
machine and ~37 MiB (46 → 83 MiB for the imports alone). Loaded by the first
call, as it was, it took 7 s on a busy machine: past the 5 s many MCP clients
wait for an answer. Loaded at start, in a worker thread (the event loop keeps
serving), it is ready before an assistant connects; a call that comes before
it is, waits for it. docs/mcp.md.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

import anyio
from anyio.abc import TaskGroup, TaskStatus
from litestar import Litestar, asgi
from litestar.exceptions import MethodNotAllowedException, ServiceUnavailableException
from litestar.handlers import ASGIRouteHandler
from litestar.types import (
    HTTPRequestEvent,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Receive,
    ReceiveMessage,
    Scope,
    Send,
)

from notarium_search.logsetup import get_logger
from notarium_search.service import Service
from notarium_search.settings import Settings

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

MCP_PATH = "/mcp"

log = get_logger(__name__)


class McpRoute:
    """The /mcp route handler and the lifespan that runs its session manager."""

    def __init__(self, service: Service, settings: Settings) -> None:
        self._service = service
        self._settings = settings
        self._manager: StreamableHTTPSessionManager | None = None
        self._group: TaskGroup | None = None
        self._starting = anyio.Lock()
        self.handler = self._handler()

    @asynccontextmanager
    async def lifespan(self, _: Litestar) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            self._group = group
            group.start_soon(self._preload)
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()  # stops the manager, if a call started it

    def _handler(self) -> ASGIRouteHandler:
        # A plain ASGI route rather than a mount: the endpoint is this one path, and
        # a mount would rewrite the request's path to "/" (the access log would show
        # every MCP call, and every 401, as "POST /").
        @asgi(MCP_PATH, copy_scope=True)
        async def mcp_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
            """MCP tools over Streamable HTTP (docs/mcp.md)."""
            if scope.get("method") != "POST":
                # No server-initiated messages, no sessions: the spec's answer to a GET
                # (event stream) is then 405. Held open, that stream would also keep
                # uvicorn from shutting down, waiting for the connection to close.
                raise MethodNotAllowedException("the MCP endpoint takes POST requests only", headers={"Allow": "POST"})
            manager = await self._started_manager()
            # The SDK would take a request whose id is an object for a notification, and answer 202:
            # its id is checked here first (mcp/request_id.py), the body then handed on as it came.
            limit = manager.max_request_body_size
            if _declared_length(scope) > limit:  # refused before a byte of it is read, as the SDK did
                await _send_too_large(send, limit)
                return
            body = await _body(receive, limit)
            if body is None:
                return  # the client left before its body was complete: nobody to answer
            if len(body) > limit:  # chunked, or longer than it said
                await _send_too_large(send, limit)
                return
            problem = _id_problem(body)
            if problem is not None:
                await _send_invalid_request(send, problem)
                return
            await manager.handle_request(cast(Any, scope), cast(Any, _replay(body, receive)), cast(Any, send))

        return mcp_endpoint

    async def _preload(self) -> None:
        try:
            await self._started_manager("start")
        except ServiceUnavailableException:
            pass  # stopped before it was ready: nothing to serve
        except Exception:  # the first call tries again, and answers the error if it happens again
            log.exception("mcp_http_preload_failed")

    async def _started_manager(self, by: str = "first call") -> StreamableHTTPSessionManager:
        async with self._starting:
            if self._manager is None:
                if self._group is None:  # outside the app's lifespan: starting up or shutting down
                    raise ServiceUnavailableException("the MCP endpoint is not running; retry shortly")
                started = anyio.current_time()
                manager = await anyio.to_thread.run_sync(_build_manager, self._service, self._settings)
                if self._group is None:  # the app stopped while the SDK loaded
                    raise ServiceUnavailableException("the MCP endpoint is not running; retry shortly")
                await self._group.start(_run_manager, manager)
                self._manager = manager
                log.info("mcp_http_started", by=by, seconds=round(anyio.current_time() - started, 3))
            return self._manager


async def _body(receive: Receive, limit: int) -> bytes | None:
    """The request's whole body (the SDK reads it whole too), read no further
    than one byte past `limit` (the SDK's bound, 4 MiB: it was checked only
    after this read, and 40 MB of `{},` grew a worker by 1.1 GB), or None when
    the client disconnected."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if size > limit or not message.get("more_body", False):
            return b"".join(chunks)


def _declared_length(scope: Scope) -> int:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


async def _send_too_large(send: Send, limit: int) -> None:
    detail = f"request body over {limit} bytes"
    await _send_json(send, 413, {"error": "request_too_large", "detail": detail, "status": 413})


async def _send_json(send: Send, status: int, answer: object) -> None:
    body = json.dumps(answer, separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    start: HTTPResponseStartEvent = {"type": "http.response.start", "status": status, "headers": headers}
    whole: HTTPResponseBodyEvent = {"type": "http.response.body", "body": body, "more_body": False}
    await send(start)
    await send(whole)


def _replay(body: bytes, receive: Receive) -> Receive:
    """`receive` for the SDK: the body read above, then the client's own messages (a disconnect)."""
    pending = [body]

    async def replayed() -> ReceiveMessage:
        if pending:
            whole: HTTPRequestEvent = {"type": "http.request", "body": pending.pop(), "more_body": False}
            return whole
        return await receive()

    return replayed


def _id_problem(body: bytes) -> str | None:
    # Imported here: its parser (pydantic_core) is loaded with the SDK, after start (see above).
    from notarium_search.mcp.request_id import id_problem

    return id_problem(body)


async def _send_invalid_request(send: Send, problem: str) -> None:
    """A request with an id no request may have (mcp/request_id.py): -32600
    with a null id, and 400, as the SDK answers a message it cannot read."""
    from notarium_search.mcp.request_id import invalid_request

    await _send_json(send, 400, invalid_request(problem))


def _build_manager(service: Service, settings: Settings) -> StreamableHTTPSessionManager:
    from notarium_search.mcp.server import session_manager  # the SDK's import: ~0.4 s, off the event loop

    return session_manager(service, settings)


async def _run_manager(manager: StreamableHTTPSessionManager, *, task_status: TaskStatus[None]) -> None:
    async with manager.run():
        task_status.started()
        await anyio.sleep_forever()
