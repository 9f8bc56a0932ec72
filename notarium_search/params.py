"""The front doors' input rules, shared by HTTP, MCP and the command line:
bounds on text, and how tags, names and dates a client sends are read. A
value out of bounds is an `InvalidParameter` (HTTP 400, an MCP tool error)."""

from __future__ import annotations

import re
from datetime import datetime

from notarium_search.errors import InvalidParameter
from notarium_search.notes.parse import to_datetime

MAX_QUERY_CHARS = 1000  # longer input is a paste, not a query
MAX_FILTER_CHARS = 500
MAX_DAYS = 36_500  # day counts (activation window, gap between notes): past a century means "all"
# A date with no time (`2024-05-01`, `20240501`): as an upper bound, the whole day.
BARE_DATE_RE = re.compile(r"^(?:\d{4}-\d{1,2}-\d{1,2}|\d{4}/\d{1,2}/\d{1,2}|\d{1,2}/\d{1,2}/\d{4}|\d{8})$", re.ASCII)


def text(name: str, value: str | None) -> str | None:
    """A text filter: stripped, at most MAX_FILTER_CHARS; blank is none."""
    cleaned = (value or "").strip()
    if len(cleaned) > MAX_FILTER_CHARS:
        raise InvalidParameter(f"{name}: at most {MAX_FILTER_CHARS} characters")
    return cleaned or None


def tags(values: list[str] | None) -> tuple[str, ...]:
    """Tags to match: stripped, blank ones and a bare `#` dropped."""
    return tuple(t for t in (text("tag", value) for value in values or []) if t and t.lstrip("#"))


def names(name: str, values: list[str] | None) -> tuple[str, ...]:
    """Names (collections…): stripped, blank ones and repeats dropped."""
    return tuple(dict.fromkeys(t for t in (text(name, value) for value in values or []) if t))


def date(name: str, value: str | None, *, end_of_day: bool = False) -> datetime | None:
    """A date a client sent (API query parameter, MCP tool argument); blank is none.

    With `end_of_day`, a bare date (no time: `2024-05-01`, `20240501`) is the
    last microsecond of that day in UTC, so that an upper bound such as
    `until=2024-05-01` includes the whole day; a value with a time is kept."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    parsed = to_datetime(text)
    if parsed is None:
        expected = "expected e.g. 2024-05-01 or 2024-05-01T10:00:00+02:00"
        raise InvalidParameter(f"{name}: not a date {value[:64]!r} ({expected})")
    if end_of_day and BARE_DATE_RE.match(text):
        return parsed.replace(hour=23, minute=59, second=59, microsecond=999999)
    return parsed
