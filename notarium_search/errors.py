"""Errors that reach clients. Each carries its HTTP status and a stable code;
the API renders them as `{"error": code, "detail": message, "status": n}`.
Also why the model cannot be used (`EmbedderUnavailable`), raised by the
semantic channel and caught above it: by the service, the query's embedding
and the command line, which need not import the channel to name it.
Leaf module."""

from __future__ import annotations


class NotariumError(Exception):
    status = 500
    code = "internal_error"
    retry_after: int | None = None  # seconds, for a 503: the answer may change by then (Retry-After)

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class UnknownSpace(NotariumError):
    status = 404
    code = "unknown_space"


class SpaceUnavailable(NotariumError):
    """A configured space could not open (its folder unreadable, its index
    locked by another process…): the others serve; it is tried again."""

    status = 503
    code = "space_unavailable"
    retry_after: int | None = 5


class McpUnavailable(NotariumError):
    """The worker that runs the MCP SDK for the others (mcp/owner.py) stopped
    during a call, or does not answer: a new one takes over at the next call."""

    status = 503
    code = "mcp_unavailable"
    retry_after: int | None = 1


class NoteNotFound(NotariumError):
    status = 404
    code = "note_not_found"


class InvalidParameter(NotariumError):
    status = 400
    code = "invalid_parameter"


class InvalidFilter(InvalidParameter):
    """A filter typed in the query cannot be read (`after:2` while typing,
    `folder:a folder:b`): the error body also names the filter, its value as
    typed and why, each a stable token, so that a client can say it in its own
    language (docs/api.md). `reason` is `not_a_date`, `before_the_first_date`,
    `one_folder_at_a_time` or `too_long`."""

    code = "invalid_filter"

    def __init__(self, detail: str, *, name: str, value: str, reason: str) -> None:
        super().__init__(detail)
        self.name = name
        self.value = value
        self.reason = reason


class ChannelUnavailable(NotariumError):
    """A feature needs a channel that is loading or building: retry later."""

    status = 503
    code = "channel_unavailable"
    retry_after: int | None = 5


class ChannelDisabled(ChannelUnavailable):
    """A feature needs a channel that the configuration turns off: no retry
    will change the answer, so not a 503 (an OpenAPI fuzzer counts a 503 for
    a feature switched off as a server error)."""

    status = 409
    code = "channel_disabled"
    retry_after = None


class IndexRepairing(NotariumError):
    """An index failed a read and is being rebuilt from the notes."""

    status = 503
    code = "index_repairing"
    retry_after: int | None = 5


class IndexUnavailable(NotariumError):
    """The index could not be read for a passing reason (too many open files,
    no memory): nothing is damaged, nothing is rebuilt."""

    status = 503
    code = "index_unavailable"
    retry_after: int | None = 2


class EmbedderUnavailable(RuntimeError):
    """The model cannot be used; `str(exc)` is a precise, user-facing reason.
    Raised by the model configuration (semantic/model_config.py), local packs
    (semantic/embedding.py) and inference servers (semantic/remote.py)."""


class EmbedderUnreachable(EmbedderUnavailable):
    """The model is served by another process that cannot answer right now
    (down, overloaded, timing out): worth trying again later, unlike a
    configuration error (semantic/remote.py)."""
