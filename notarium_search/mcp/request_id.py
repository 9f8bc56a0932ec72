"""A JSON-RPC request's id, checked before the MCP SDK reads the message, on
both transports (mcp/stdio.py, mcp/route.py). docs/mcp.md.

JSON-RPC 2.0 (§4) takes a request's id as a string, a number or null, and MCP
narrows it to a string or an integer. The SDK (mcp 2.3) validates a message
against its four models, which ignore the fields they lack: a request whose
id is anything else (`{"id": {}, "method": "tools/list"}`) fails the request
model and passes as a notification, which is never answered. Over stdio the
client waited for an answer for good; over /mcp it got an empty 202. Such a
request is an Invalid Request (-32600), answered with a null id: its own
cannot be echoed.

No SDK import here: /mcp checks a request before the SDK is loaded.
"""

from typing import Any

import pydantic_core  # the SDK's own JSON parser: what it reads as JSON, so does this check

INVALID_REQUEST = -32600


def id_problem(raw: str | bytes) -> str | None:
    """Why `raw` is a request (an object with a `method`) whose id no request
    may have, or None. None too for what is not JSON, or not such an object:
    the SDK's own checks answer those."""
    try:
        message = pydantic_core.from_json(raw)
    except ValueError:  # not JSON, or nested deeper than the parser goes
        return None
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    value = message["id"]
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return None
    return f"not a JSON-RPC request: its id must be a string or an integer, not {_kind(value)}"


def invalid_request(reason: str) -> dict[str, Any]:
    """The JSON-RPC error answering such a request."""
    error = {"code": INVALID_REQUEST, "message": "Invalid Request", "data": reason}
    return {"jsonrpc": "2.0", "id": None, "error": error}


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a number with a fraction or an exponent"
    if isinstance(value, list):
        return "an array"
    return "an object"
