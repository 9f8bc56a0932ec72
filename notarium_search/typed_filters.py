"""Filters typed in the query box: `tag:x`, `-tag:x`, `folder:x` (or
`path:x`), `after:2024-05`, `before:2024-06-01`, a value in double quotes
when it has spaces (`tag:"mots clés"`). Search, feed, the MCP tools and the
command line read them the same way (the service parses the query).

Only these names, written at the start of a word, are filters: any other
`word:` stays text (`arXiv:2104.08663`, `C:\\temp`, `12:30`, `note:`), and a
filter with nothing after the colon too. Dates are periods: `after:P` keeps
notes updated at or after P's start, `before:P` those updated before it
(`before:2024-06-01` ends with 31 May), P a year, a month or a day, in UTC.
Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from notarium_search.errors import InvalidParameter
from notarium_search.types import FeedFilter, TypedFilter

FOLDER_NAMES = ("folder", "path")
# At the start of a word (after a space or the start), a known name, a colon,
# then a quoted value or a run of non-space characters, ending the word.
_TYPED = re.compile(
    r'(?<!\S)(?P<name>-tag|tag|folder|path|after|before):(?:"(?P<quoted>[^"]*)"|(?P<bare>[^\s"]+))(?=\s|$)',
    re.IGNORECASE,
)
_PERIOD = re.compile(r"^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?$", re.ASCII)
EARLIEST = datetime.min.replace(tzinfo=UTC)
_INSTANT = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class TypedQuery:
    text: str  # the query's words, without the filters
    filters: tuple[TypedFilter, ...]

    def narrow(self, given: FeedFilter) -> FeedFilter:
        """`given` (the request's own parameters) with the typed filters added: all must hold."""
        tags = [f.value for f in self.filters if f.name == "tag"]
        excluded = [f.value for f in self.filters if f.name == "-tag"]
        folders = {f.value.strip("/") for f in self.filters if f.name == "folder"}
        if len(folders) > 1 or (folders and given.folder and given.folder.strip("/") not in folders):
            named = ", ".join(sorted(folders | ({given.folder.strip("/")} if given.folder else set())))
            raise InvalidParameter(f"one folder at a time, got {named}")
        since, until = given.since, given.until
        for typed in self.filters:
            if typed.name == "after":
                start = period_start(typed)
                since = start if since is None else max(since, start)
            elif typed.name == "before":
                start = period_start(typed)
                if start == EARLIEST:
                    raise InvalidParameter(f"{typed.name}:{typed.value}: no date is earlier than 0001-01-01")
                end = start - _INSTANT
                until = end if until is None else min(until, end)
        return replace(
            given,
            folder=next(iter(folders), None) or given.folder,
            tags=(*given.tags, *tags),
            exclude_tags=(*given.exclude_tags, *excluded),
            since=since,
            until=until,
        )


def parse(query: str) -> TypedQuery:
    """The query's words and the filters typed in it, in order."""
    filters: list[TypedFilter] = []

    def take(match: re.Match[str]) -> str:
        value = (match["quoted"] if match["quoted"] is not None else match["bare"]).strip()
        if not value:
            return match[0]  # `tag:""`: nothing to filter on, left as typed
        name = match["name"].lower()
        filters.append(TypedFilter("folder" if name in FOLDER_NAMES else name, value))
        return " "

    text = _TYPED.sub(take, query)
    return TypedQuery(" ".join(text.split()) if filters else query, tuple(filters))


def period_start(typed: TypedFilter) -> datetime:
    """The first instant of the year, month or day a date filter names, in UTC.
    Only the start is computed: the end of year 9999 is past what a datetime
    holds (`after:9999-12` raised "year 10000 is out of range", which the
    read path took for index damage and answered with a rebuild)."""
    found = _PERIOD.match(typed.value)
    if found is None:
        raise InvalidParameter(f"{typed.name}:{typed.value[:40]} is not a date (expected 2024, 2024-05 or 2024-05-01)")
    year, month, day = (int(part) if part else 1 for part in (found[1], found[2], found[3]))
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError as exc:
        raise InvalidParameter(f"{typed.name}:{typed.value} is not a date ({exc})") from exc
