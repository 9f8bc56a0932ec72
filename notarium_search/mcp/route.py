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

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

import anyio
from anyio.abc import TaskGroup, TaskStatus
from litestar import Litestar, asgi
from litestar.exceptions import MethodNotAllowedException, ServiceUnavailableException
from litestar.handlers import ASGIRouteHandler
from litestar.types import Receive, Scope, Send

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
            await manager.handle_request(cast(Any, scope), cast(Any, receive), cast(Any, send))

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


def _build_manager(service: Service, settings: Settings) -> StreamableHTTPSessionManager:
    from notarium_search.mcp.server import session_manager  # the SDK's import: ~0.4 s, off the event loop

    return session_manager(service, settings)


async def _run_manager(manager: StreamableHTTPSessionManager, *, task_status: TaskStatus[None]) -> None:
    async with manager.run():
        task_status.started()
        await anyio.sleep_forever()
