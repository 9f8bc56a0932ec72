"""One worker of a `serve` holds the MCP SDK; the others hand it their /mcp
calls (issue 34).

The SDK costs each process that loads it ~25 MiB of PSS: its imports
(pydantic models of every MCP type, starlette, and what they pull:
uvicorn, opentelemetry, cryptography, a second httpx) are 345 modules.
Loaded in every worker at start (mcp/route.py says why not at the first
call), it grew the service with its cores: a 2-worker hybrid service at
2,000 notes held 373–378 MiB idle with the SDK in both workers, 320–332
with it in neither (docs/benchmarks.md).

Now the first worker to take `mcp.lock` in the serve's sockets folder
(mode 0700: model_process.py `socket_folder`) owns the endpoint: it loads
the SDK at start and answers, besides its own clients' calls, those the
other workers forward on `mcp.sock`. A forwarding worker has done
everything but the SDK's part (the guard: token, host, origin, rate; the
body's bound and its id: mcp/route.py) and sends the request's scope and
body as one frame; the owner answers the status, headers and body as one
frame. The endpoint is stateless and answers JSON: nothing streams, nothing
is kept between calls, so any worker's call can go to any owner.

When the owner dies the kernel lets its lock go, and the next call that
finds nobody listening makes its own worker the owner: that call waits for
the SDK to load, as the first call did before the preload. A call under
way when the owner died is answered 503 with Retry-After (it may have run,
so it is not run again behind the client's back).

Without a sockets folder (one worker, or none could be made) each worker
owns its own endpoint, as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import msgspec
from anyio.abc import SocketStream, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from notarium_search.bodies import ErrorBody
from notarium_search.logsetup import get_logger

LOCK_NAME = "mcp.lock"
SOCKET_NAME = "mcp.sock"
# A forwarded request is the body (bounded by the route) and its headers; an
# answer is a tool's result (a note's text is cut at 40,000 characters,
# mcp/tools.py): frames past these are not ours.
HEADERS_MAX_BYTES = 1024 * 1024
ANSWER_MAX_BYTES = 64 * 1024 * 1024
# How long a forwarded call may take. A worker none of whose Python code ran
# for 60 s is ended by its watchdog (api/server.py): this only bounds a wait
# on an owner that is alive but stopped (SIGSTOP, swapping).
FORWARD_TIMEOUT_SECONDS = 120.0
# A worker holds the lock but does not listen yet: it binds right after taking
# it, so this is a few microseconds, unless it is stopped.
LISTEN_WAIT_SECONDS = 5.0
LISTEN_POLL_SECONDS = 0.05
# An accept that failed (no descriptor left) is tried again after this long.
ACCEPT_RETRY_SECONDS = 0.5
_LENGTH = struct.Struct(">I")
_INTERNAL_ERROR = msgspec.json.encode(ErrorBody("internal_error", "internal error; see the server log", 500))

log = get_logger(__name__)


class Forwarded(msgspec.Struct, array_like=True, frozen=True):
    """A checked /mcp request, as the owner needs it to run the SDK."""

    method: str
    path: str
    query_string: bytes
    headers: list[tuple[bytes, bytes]]
    scheme: str
    http_version: str
    client: tuple[str, int] | None
    server: tuple[str, int] | None
    body: bytes


class Answered(msgspec.Struct, array_like=True, frozen=True):
    """The SDK's answer to a forwarded request."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes


class OwnerGone(Exception):
    """No answer from the owner: it died or stopped during the call."""


class Ownership:
    """Whether this worker owns the MCP endpoint: holds `mcp.lock` (the
    kernel releases it when the process dies)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._lock: int | None = None

    @property
    def shared(self) -> bool:
        """Whether workers share one owner (a sockets folder exists)."""
        return self.folder is not None

    @property
    def owned(self) -> bool:
        return self.folder is None or self._lock is not None

    @property
    def socket_path(self) -> Path:
        assert self.folder is not None
        return self.folder / SOCKET_NAME

    def claim(self) -> bool:
        """Take the lock if no live worker holds it; whether this worker owns the endpoint now."""
        if self.owned:
            return True
        assert self.folder is not None
        try:
            fd = os.open(self.folder / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError as exc:  # the folder is gone (the service stopping), or full: this worker serves its own
            log.warning("mcp_lock_unavailable", error=str(exc), action="this worker loads the SDK itself")
            self.folder = None
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._lock = fd
        return True

    def give_up(self) -> None:
        """This worker keeps its own endpoint and lets the lock go: its socket
        could not be made. Another worker may make one; if none can, each
        serves its own calls, as with one worker."""
        self.release()
        self.folder = None

    def release(self) -> None:
        """The socket removed, then the lock let go (in that order: a new
        owner's socket, bound once it has the lock, is never removed)."""
        if self._lock is None:
            return
        with contextlib.suppress(OSError):
            self.socket_path.unlink()
        os.close(self._lock)
        self._lock = None


async def listen(
    path: Path, answer: Callable[[Forwarded], Awaitable[Answered]], body_max: int, group: TaskGroup
) -> None:
    """Serve forwarded requests on `path` until `group` is cancelled; each
    connection carries one request. An existing socket file is a dead
    owner's (the caller holds the lock) and is replaced. Raises OSError when
    the socket cannot be made."""
    listener = await anyio.create_unix_listener(path, mode=0o600)

    async def connection(stream: SocketStream) -> None:
        async with stream:
            try:
                request = msgspec.msgpack.decode(
                    await _read_frame(stream, body_max + HEADERS_MAX_BYTES), type=Forwarded
                )
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, ValueError) as exc:
                log.warning("mcp_forward_unreadable", error=f"{type(exc).__name__}: {exc}")
                return
            try:
                answered = await answer(request)
            except Exception:  # one call's failure is its 500, never the end of the listener (and of the app)
                log.exception("mcp_forward_failed")
                answered = Answered(500, [(b"content-type", b"application/json")], _INTERNAL_ERROR)
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await _send_frame(stream, msgspec.msgpack.encode(answered))  # the forwarder left: nobody to answer

    async def accepting() -> None:
        async with listener:
            while True:
                try:
                    stream = await listener.accept()
                except anyio.ClosedResourceError:
                    return
                except (OSError, anyio.BrokenResourceError) as exc:  # no descriptor left (EMFILE): try again
                    log.warning("mcp_forward_accept_failed", error=f"{type(exc).__name__}: {exc}")
                    await anyio.sleep(ACCEPT_RETRY_SECONDS)
                    continue
                group.start_soon(connection, stream)

    group.start_soon(accepting)


async def connect(path: Path) -> SocketStream | None:
    """A connection to the owner, or None when nobody listens on `path`."""
    try:
        return await anyio.connect_unix(path)
    except OSError:  # no socket (ENOENT), nobody behind it (ECONNREFUSED), its queue full (EAGAIN)
        return None


async def forward(stream: SocketStream, request: Forwarded) -> Answered:
    """The owner's answer to `request` on a connection from `connect`.
    Raises OwnerGone."""
    try:
        with anyio.fail_after(FORWARD_TIMEOUT_SECONDS):
            async with stream:
                await _send_frame(stream, msgspec.msgpack.encode(request))
                return msgspec.msgpack.decode(await _read_frame(stream, ANSWER_MAX_BYTES), type=Answered)
    except (TimeoutError, OSError, anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError) as exc:
        raise OwnerGone(f"{type(exc).__name__}: {exc}") from None
    except ValueError as exc:  # msgspec's DecodeError, a frame too long
        raise OwnerGone(f"unreadable answer: {exc}") from None


async def _send_frame(stream: SocketStream, payload: bytes) -> None:
    await stream.send(_LENGTH.pack(len(payload)) + payload)


async def _read_frame(stream: SocketStream, limit: int) -> bytes:
    buffered = BufferedByteReceiveStream(stream)
    (length,) = _LENGTH.unpack(await buffered.receive_exactly(_LENGTH.size))
    if length > limit:
        raise ValueError(f"frame of {length} bytes, over {limit}")
    return await buffered.receive_exactly(length)
