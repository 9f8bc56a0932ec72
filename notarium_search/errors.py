"""Errors that reach clients. Each carries its HTTP status and a stable code;
the API renders them as `{"error": code, "detail": message, "status": n}`.
Leaf module."""

from __future__ import annotations


class NotariumError(Exception):
    status = 500
    code = "internal_error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class UnknownSpace(NotariumError):
    status = 404
    code = "unknown_space"


class NoteNotFound(NotariumError):
    status = 404
    code = "note_not_found"


class InvalidParameter(NotariumError):
    status = 400
    code = "invalid_parameter"


class ChannelUnavailable(NotariumError):
    """A feature needs a channel that is off, loading or building."""

    status = 503
    code = "channel_unavailable"


class IndexRepairing(NotariumError):
    """An index failed a read and is being rebuilt from the notes."""

    status = 503
    code = "index_repairing"


class IndexUnavailable(NotariumError):
    """The index could not be read for a passing reason (too many open files,
    no memory): nothing is damaged, nothing is rebuilt."""

    status = 503
    code = "index_unavailable"
