"""The /mcp route of the service, with the MCP SDK loaded in the background
right after start, in one worker (mcp/owner.py): the others forward their
calls to it.

Importing the SDK and building the session manager takes ~0.4 s on an idle
machine and ~37 MiB (46 → 83 MiB for the imports alone). Loaded by the first
call, as it was, it took 7 s on a busy machine: past the 5 s many MCP clients
wait for an answer. Loaded at start, in a worker thread (the event loop keeps
serving), it is ready before an assistant connects; a call that comes before
it is, waits for it. docs/mcp.md.
"""

from __future__ import annotations

import json
import os
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

from notarium_search.errors import McpUnavailable
from notarium_search.logsetup import get_logger
from notarium_search.mcp import owner
from notarium_search.service import Service
from notarium_search.settings import Settings

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

MCP_PATH = "/mcp"
# The SDK's bound on a request body (its DEFAULT_MAX_REQUEST_BODY_SIZE, which
# the manager keeps: tests/mcp/test_route.py), known here without the SDK: a
# worker that forwards its calls never loads it.
BODY_MAX_BYTES = 4 * 1024 * 1024
HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"transfer-encoding", b"content-length"})

log = get_logger(__name__)


class McpRoute:
    """The /mcp route handler and the lifespan that runs its session manager."""

    def __init__(self, service: Service, settings: Settings) -> None:
        self._service = service
        self._settings = settings
        self._manager: StreamableHTTPSessionManager | None = None
        self._group: TaskGroup | None = None
        self._starting = anyio.Lock()
        self._ownership = owner.Ownership(settings.sockets_dir)
        self.handler = self._handler()

    @asynccontextmanager
    async def lifespan(self, _: Litestar) -> AsyncIterator[None]:
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                if self._ownership.claim():
                    group.start_soon(self._own, "start")
                try:
                    yield
                finally:
                    self._group = None
                    group.cancel_scope.cancel()  # stops the manager and the forwarded calls' listener
        finally:
            self._ownership.release()  # once nothing listens any more

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
            if _declared_length(scope) > BODY_MAX_BYTES:  # refused before a byte of it is read, as the SDK did
                await _send_too_large(send, BODY_MAX_BYTES)
                return
            body = await _body(receive, BODY_MAX_BYTES)
            if body is None:
                return  # the client left before its body was complete: nobody to answer
            if len(body) > BODY_MAX_BYTES:  # chunked, or longer than it said
                await _send_too_large(send, BODY_MAX_BYTES)
                return
            if await self._forwarded(scope, body, send):
                return
            # The SDK would take a request whose id is an object for a notification, and answer 202:
            # its id is checked here first (mcp/request_id.py), the body then handed on as it came.
            # (Where the SDK is: a forwarding worker parses no JSON.)
            problem = _id_problem(body)
            if problem is not None:
                await _send_json(send, 400, _invalid_request(problem))
                return
            manager = await self._started_manager()
            await manager.handle_request(cast(Any, scope), cast(Any, _replay(body, receive)), cast(Any, send))

        return mcp_endpoint

    async def _forwarded(self, scope: Scope, body: bytes, send: Send) -> bool:
        """The call answered by the worker that owns the endpoint, or False
        when this worker owns it (now, if the owner it had is gone)."""
        deadline = anyio.current_time() + owner.LISTEN_WAIT_SECONDS
        while not self._ownership.owned:
            stream = await owner.connect(self._ownership.socket_path)
            if stream is not None:
                try:
                    answered = await owner.forward(stream, _forwarded_request(scope, body))
                except owner.OwnerGone as exc:  # the call may have run: the client decides whether to ask again
                    log.warning("mcp_owner_gone", error=str(exc))
                    raise McpUnavailable("the worker that runs MCP calls stopped during this one; retry") from None
                await _send_answer(send, answered)
                return True
            if self._ownership.claim():  # nobody listens and nobody holds the lock: the owner died
                await self._own("takeover")
            elif anyio.current_time() >= deadline:  # held, and never listening: a stopped process
                raise McpUnavailable("the worker that runs MCP calls does not answer; retry shortly")
            else:
                await anyio.sleep(owner.LISTEN_POLL_SECONDS)  # it took the lock and is binding its socket
        return False

    async def _own(self, by: str) -> None:
        """This worker owns the endpoint: it listens for the others' calls
        (when it has others) and loads the SDK."""
        try:
            if self._ownership.shared and self._group is not None:
                try:
                    await owner.listen(self._ownership.socket_path, self._answer_forwarded, BODY_MAX_BYTES, self._group)
                except OSError as exc:
                    log.warning("mcp_socket_unavailable", error=str(exc), action="this worker answers its own calls")
                    self._ownership.give_up()
            await self._started_manager(by)
        except ServiceUnavailableException:
            pass  # stopped before it was ready: nothing to serve
        except Exception:  # the first call tries again, and answers the error if it happens again
            log.exception("mcp_http_preload_failed")

    async def _answer_forwarded(self, request: owner.Forwarded) -> owner.Answered:
        """Another worker's call, run by this worker's SDK."""
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "method": request.method,
            "path": request.path,
            "raw_path": request.path.encode(),
            "root_path": "",
            "query_string": request.query_string,
            "headers": request.headers,
            "scheme": request.scheme,
            "http_version": request.http_version,
            "client": request.client,
            "server": request.server,
        }
        started: list[HTTPResponseStartEvent] = []
        parts: list[bytes] = []

        delivered = False

        async def receive() -> ReceiveMessage:
            nonlocal delivered
            if not delivered:
                delivered = True
                whole: HTTPRequestEvent = {"type": "http.request", "body": request.body, "more_body": False}
                return whole
            await anyio.sleep_forever()  # the forwarding worker watches its own client
            raise AssertionError  # unreachable: sleep_forever ends by cancellation only

        async def send(message: Any) -> None:
            if message["type"] == "http.response.start":
                started.append(message)
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))

        problem = _id_problem(request.body)
        if problem is not None:
            return _json_answer(400, _invalid_request(problem))
        try:
            manager = await self._started_manager()
        except ServiceUnavailableException as exc:  # this worker is stopping
            return _unavailable(exc.detail)
        await manager.handle_request(cast(Any, scope), cast(Any, receive), cast(Any, send))
        if not started:  # cancelled: this worker is stopping
            return _unavailable("the worker that runs MCP calls is stopping; retry")
        return owner.Answered(started[0]["status"], list(started[0].get("headers", [])), b"".join(parts))

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
                log.info("mcp_http_started", by=by, pid=os.getpid(), seconds=round(anyio.current_time() - started, 3))
            return self._manager


def _forwarded_request(scope: Scope, body: bytes) -> owner.Forwarded:
    client, server = scope.get("client"), scope.get("server")
    return owner.Forwarded(
        method=str(scope.get("method", "POST")),
        path=scope["path"],
        query_string=scope.get("query_string", b""),
        headers=[(name, value) for name, value in scope.get("headers", ())],
        scheme=scope.get("scheme", "http"),
        http_version=scope.get("http_version", "1.1"),
        client=_address(client),
        server=_address(server),
        body=body,
    )


def _address(value: object) -> tuple[str, int] | None:
    """A scope's (host, port), its port an int (granian's client port is a string)."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        return None
    try:
        return str(value[0]), int(value[1])
    except (TypeError, ValueError):
        return None


async def _send_answer(send: Send, answered: owner.Answered) -> None:
    """An answer made here or by the owner, sent as this worker's: its length said again, hop-by-hop headers dropped."""
    headers = [(name, value) for name, value in answered.headers if name.lower() not in HOP_BY_HOP]
    headers.append((b"content-length", str(len(answered.body)).encode()))
    start: HTTPResponseStartEvent = {"type": "http.response.start", "status": answered.status, "headers": headers}
    whole: HTTPResponseBodyEvent = {"type": "http.response.body", "body": answered.body, "more_body": False}
    await send(start)
    await send(whole)


def _json_answer(status: int, answer: object, headers: tuple[tuple[bytes, bytes], ...] = ()) -> owner.Answered:
    """A JSON answer made here, sent by `_send_answer` or to the worker that forwarded the call."""
    body = json.dumps(answer, separators=(",", ":")).encode()
    return owner.Answered(status, [(b"content-type", b"application/json"), *headers], body)


def _unavailable(detail: str) -> owner.Answered:
    """A 503 from the owner, as `McpUnavailable` answers it."""
    status, retry = McpUnavailable.status, str(McpUnavailable.retry_after).encode()
    return _json_answer(
        status, {"error": McpUnavailable.code, "detail": detail, "status": status}, ((b"retry-after", retry),)
    )


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
    await _send_answer(send, _json_answer(status, answer))


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


def _invalid_request(problem: str) -> dict[str, Any]:
    """A request with an id no request may have (mcp/request_id.py): -32600
    with a null id, and 400, as the SDK answers a message it cannot read."""
    from notarium_search.mcp.request_id import invalid_request

    return invalid_request(problem)


def _build_manager(service: Service, settings: Settings) -> StreamableHTTPSessionManager:
    from notarium_search.mcp.server import session_manager  # the SDK's import: ~0.4 s, off the event loop

    return session_manager(service, settings)


async def _run_manager(manager: StreamableHTTPSessionManager, *, task_status: TaskStatus[None]) -> None:
    async with manager.run():
        task_status.started()
        await anyio.sleep_forever()
