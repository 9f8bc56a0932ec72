"""MCP over stdio, its input: `notarium-search mcp` (run_stdio in
mcp/server.py) serves the tools on stdin/stdout. What the SDK's stdio
transport would leave unanswered is answered here: a line that is not a
JSON-RPC message (AnsweringReader), and a request whose id is neither a
string nor an integer (CheckedStdin, mcp/request_id.py). docs/mcp.md.
"""

import contextvars
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from io import TextIOWrapper
from typing import BinaryIO, Self

import anyio
import mcp_types
from mcp.shared._stream_protocols import ReadStream, WriteStream  # the types of the SDK's transport streams
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from notarium_search.logsetup import get_logger
from notarium_search.mcp.request_id import id_problem

SHOWN_LINE_CHARS = 20  # of a malformed stdin line, in the log: never more, it may be a note's text

log = get_logger(__name__)


class AnsweringReader:
    """The stdio transport's read stream, which answers what is not a message.

    Works around mcp 2.3's stdio: stdio_server() passes a line that does not
    validate as a JSON-RPC message to the read stream as the pydantic exception,
    and the server's JSONRPCDispatcher, which has no on_stream_exception
    observer on the server side, drops it with a debug log: no answer, so a
    client waiting for one hangs. Here such a line is answered as JSON-RPC 2.0
    §5.1 says (-32700 Parse error, or -32600 Invalid Request with the request's
    id when it can be read), logged, and not passed on; the session goes on.
    """

    def __init__(self, inner: ReadStream[SessionMessage | Exception], replies: WriteStream[SessionMessage]) -> None:
        self._inner = inner
        self._replies = replies

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last message, which the SDK's loops run it in."""
        context: contextvars.Context | None = getattr(self._inner, "last_context", None)
        return context

    async def receive(self) -> SessionMessage:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            answer = _refusal(item)
            if answer is None:
                continue
            try:
                await self._replies.send(SessionMessage(answer))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                log.debug("mcp_stdio_refusal_unsent")  # the session is closing: nobody to answer

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _refusal(error: Exception) -> mcp_types.JSONRPCError | None:
    """The answer to a stdin line the SDK could not read as a message, logged
    (its length and start, never the line: it may hold a note's text)."""
    problems = error.errors() if isinstance(error, ValidationError) else []
    if problems and all(problem["type"] != "json_invalid" for problem in problems):
        return _invalid_request(problems)
    line = problems[0]["input"] if problems else None
    if isinstance(line, str):
        line = line.removesuffix("\n")
        # A blank line is no message (JSON-RPC and MCP's stdio framing say nothing of it): it is skipped
        # unanswered, as a stray line end from a client is harmless. The SDK would drop it too.
        if not line.strip(" \t\r\n"):  # JSON's whitespace (RFC 8259 §2)
            return None
    reason = problems[0]["msg"] if problems else f"unreadable line ({type(error).__name__})"
    chars, start = (len(line), line[:SHOWN_LINE_CHARS]) if isinstance(line, str) else (None, None)
    log.warning("mcp_stdio_parse_error", chars=chars, start=start, reason=reason)
    error_data = mcp_types.ErrorData(code=mcp_types.PARSE_ERROR, message="Parse error", data=reason)
    return mcp_types.JSONRPCError(jsonrpc="2.0", id=None, error=error_data)


def _invalid_request(problems: list[ErrorDetails]) -> mcp_types.JSONRPCError:
    """-32600 for JSON that is none of the four JSON-RPC messages (the SDK's union):
    which fields are wrong for the closest one, and the request's id if it has one."""
    request_id: mcp_types.RequestId | None = None
    by_message: dict[str, list[str]] = {}
    for problem in problems:
        loc = problem["loc"]  # (which of the four messages, field...) for the SDK's plain union
        message, where = (str(loc[0]), loc[1:]) if loc else ("", ())
        field = ".".join(map(str, where))
        by_message.setdefault(message, []).append(f"{field}: {problem['msg']}" if field else problem["msg"])
        # A missing field's error carries the whole message as its input (pydantic): its id, if well-formed.
        value = problem["input"]
        if problem["type"] == "missing" and not where[1:] and isinstance(value, dict):
            found = value.get("id")
            if isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool)):
                request_id = found
    reason = "not a JSON-RPC 2.0 message: " + "; ".join(min(by_message.values(), key=len)[:3])
    return _refused_request(request_id, reason)


def _refused_request(request_id: mcp_types.RequestId | None, reason: str) -> mcp_types.JSONRPCError:
    shown = request_id[:SHOWN_LINE_CHARS] if isinstance(request_id, str) else request_id
    log.warning("mcp_stdio_invalid_request", id=shown, reason=reason)
    error = mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message="Invalid Request", data=reason)
    return mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


class CheckedStdin(anyio.AsyncFile[str]):
    """The stdin the SDK's stdio_server reads, line by line: a request whose id
    no request may have is answered here and not passed on.

    Works around mcp 2.3's stdio: the SDK reads `{"id": {}, "method":
    "tools/list"}` as a notification (its models ignore the fields they lack)
    and a notification is never answered, so the client waited for good. Once
    the read line is in the SDK's hands its id is gone: it is checked before
    (mcp/request_id.py). The answer goes out on the transport's write stream,
    given by `answer_on` once stdio_server has made it.
    """

    def __init__(self, wire: BinaryIO) -> None:
        # Decoded as the SDK decodes the stdin it opens itself.
        super().__init__(TextIOWrapper(wire, encoding="utf-8", errors="replace"))
        self._replies: WriteStream[SessionMessage] | None = None
        self._answering = anyio.Event()

    def answer_on(self, replies: WriteStream[SessionMessage]) -> None:
        self._replies = replies
        self._answering.set()

    async def readline(self) -> str:
        while True:
            line = await super().readline()
            reason = id_problem(line) if line else None  # "": the end of the input
            if reason is None:
                return line
            answer = _refused_request(None, reason)
            await self._answering.wait()
            assert self._replies is not None
            try:
                await self._replies.send(SessionMessage(answer))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                log.debug("mcp_stdio_refusal_unsent")  # the session is closing: nobody to answer


@contextmanager
def protocol_stdin() -> Iterator[BinaryIO]:
    """fd 0 for the protocol alone, as the SDK's stdio_server claims it when it
    opens stdin itself (it does not for a stdin it is given, as CheckedStdin
    is): the client's messages are read from a private duplicate while fd 0
    points at the null device, so that nothing else in the process (a native
    library, a child process) reads them; fd 0 is restored on leaving. Without
    a descriptor to spare, fd 0 is read in place. The duplicate is never
    closed: a worker thread may still be blocked reading it after the session
    (the SDK's reason too)."""
    try:
        wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        wire = None
    if wire is None:
        yield open(0, "rb", closefd=False)  # noqa: SIM115 - never closed, like the duplicate
        return
    diverted = _divert_stdin()
    try:
        yield open(wire, "rb", closefd=False)  # noqa: SIM115 - see above
    finally:
        if diverted:
            with suppress(OSError):  # nothing reads fd 0 after the session: the process is ending
                os.dup2(wire, 0)


def _divert_stdin() -> bool:
    try:
        null = os.open(os.devnull, os.O_RDONLY)
    except OSError:
        return False
    try:
        os.dup2(null, 0)
    except OSError:
        return False
    finally:
        os.close(null)
    return True
