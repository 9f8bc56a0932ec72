"""MCP over stdio, its read stream: `notarium-search mcp` (run_stdio in
mcp/server.py) serves the tools on stdin/stdout, and a line that is not a
JSON-RPC message, which the SDK's stdio transport would drop unanswered, is
answered here (AnsweringReader). docs/mcp.md.
"""

import contextvars
from typing import Self

import anyio
import mcp_types
from mcp.shared._stream_protocols import ReadStream, WriteStream  # the types of the SDK's transport streams
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from notarium_search.logsetup import get_logger

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
    shown = request_id[:SHOWN_LINE_CHARS] if isinstance(request_id, str) else request_id
    log.warning("mcp_stdio_invalid_request", id=shown, reason=reason)
    error = mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message="Invalid Request", data=reason)
    return mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
