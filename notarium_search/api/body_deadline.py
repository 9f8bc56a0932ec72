"""A request's body must arrive within `body_timeout` seconds of its headers.

granian closes a connection whose headers are late (`header_timeout`) but
sets no deadline on the body: `POST /mcp` with `Content-Length: 1000000` and
then nothing, or a byte a second, held its connection for good. At a
descriptor limit of 1,024, 1,100 such connections took every one a worker
may hold (768) and searches timed out; each one dropped then logged the MCP
SDK's traceback (1.1 MB of log for the attack).

This wrapper bounds the application's waits for the body of a request that
has one (a `Content-Length` other than 0, or a `Transfer-Encoding`): when
the last of it has not arrived by the deadline, the application is cancelled
where it waits and the request answered `408 body_timeout` with
`Connection: close`. granian then closes the connection (the rest of the
body is never read) and frees its descriptor; measured with the attack
above: searches answered (the first after waiting for the deadline in the
system's queue), 1.9 KB of log. A client that goes away before its body is
complete has the application cancelled too: nothing could be answered, and
the layers below would only log the disconnect as an error. Both are
refusals the access log logs once a minute per kind (api/access_log.py).
A slow body held a graceful stop for good as well; now for body_timeout.

A request without a body is passed through untouched; one with a body costs
a cancel scope per read of it, no task.
"""

from __future__ import annotations

import anyio

from notarium_search.api.access_log import refused
from notarium_search.api.asgi import App, Message, Receive, Scope, Send
from notarium_search.api.errors import send_error

CLOSE = [(b"connection", b"close")]


def has_body(scope: Scope) -> bool:
    """Whether an HTTP/1 request carries a body (RFC 9112 6.3): a
    `Transfer-Encoding`, or a `Content-Length` other than 0."""
    for name, value in scope.get("headers", ()):
        lowered = name.lower()
        if lowered == b"transfer-encoding" or (lowered == b"content-length" and value.strip() != b"0"):
            return True
    return False


class BodyDeadline:
    """ASGI middleware: the request's body within `seconds` of its headers.
    The deadline bounds the waits for the body only (an application may take
    its time between two reads, and after the last)."""

    def __init__(self, app: App, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not has_body(scope):
            await self.app(scope, receive, send)
            return
        due = anyio.current_time() + self.seconds
        complete = False
        answered = False
        timed_out = False

        with anyio.CancelScope() as application:

            async def receive_body() -> Message:
                nonlocal complete, timed_out
                if complete:
                    return await receive()
                with anyio.CancelScope(deadline=due) as waiting:
                    message = await receive()
                if waiting.cancelled_caught:
                    timed_out = True
                    refused(scope, "body_timeout")
                elif message["type"] == "http.request" and not message.get("more_body", False):
                    complete = True
                    return message
                elif message["type"] == "http.disconnect":  # gone before the end of its body
                    refused(scope, "body_abandoned")
                else:
                    return message
                # Unwound by cancellation: the layers below see neither a
                # timeout nor the disconnect, which they logged as errors.
                application.cancel()
                await anyio.lowlevel.checkpoint()
                return {"type": "http.disconnect"}  # read outside the scope (no layer does): what it would see

            async def send_answer(message: Message) -> None:
                nonlocal answered
                if message["type"] == "http.response.start":
                    answered = True
                await send(message)

            await self.app(scope, receive_body, send_answer)
        if timed_out and not answered:
            detail = f"the request's body did not arrive within {self.seconds:g} s of its headers (body_timeout)"
            await send_error(send, 408, "body_timeout", detail, CLOSE)
