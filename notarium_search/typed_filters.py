"""Filters typed in the query box, Obsidian's search operators beside ours:
`tag:x`, `-tag:x`, `folder:x`, `path:x`, `file:x`, `section:x`,
`after:2024-05`, `before:2024-06-01`, `created-after:2024`,
`created-before:2024-06`, a value in double quotes when it has spaces
(`tag:"mots clés"`). Search, feed, the MCP tools and the command line read
them the same way (the service parses the query).

Only these names, written at the start of a word, are filters: any other
`word:` stays text (`arXiv:2104.08663`, `C:\\temp`, `12:30`, `note:`), and a
filter with nothing after the colon too. What each keeps, ignoring case:
`folder:x` the notes in folder x or below it; `path:x` those whose path
(folders and file name) contains x, `file:x` those whose file name contains
x, as Obsidian's operators do; `section:x` those with a heading containing x
(accents and punctuation aside too), and a hit then opens in such a section
when its words occur there. Dates are periods: `after:P` keeps notes updated
at or after P's start, `before:P` those updated before it
(`before:2024-06-01` ends with 31 May), P a year, a month or a day, in UTC;
`created-after:` and `created-before:` do the same on the creation date.

A filter that cannot be read (`after:2` while it is being typed) is an
`InvalidFilter`: a 400 naming the filter, its value and why (errors.py).
Pure: no I/O.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import msgspec
from msgspec.structs import replace

from notarium_search.errors import InvalidFilter
from notarium_search.types import FeedFilter, TypedFilter

# At the start of a word (after a space or the start), a known name, a colon,
# then a quoted value or a run of non-space characters, ending the word.
# `created-after` before `after`: the longer name wins at the same place.
_TYPED = re.compile(
    r"(?<!\S)(?P<name>-tag|tag|folder|path|file|section|created-after|created-before|after|before)"
    r':(?:"(?P<quoted>[^"]*)"|(?P<bare>[^\s"]+))(?=\s|$)',
    re.IGNORECASE,
)
_PERIOD = re.compile(r"^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?$", re.ASCII)
EARLIEST = datetime.min.replace(tzinfo=UTC)
_INSTANT = timedelta(microseconds=1)
# `path:`, `file:` and `section:` are looked for anywhere in a name (an
# automaton over the index's terms, lexical/filters.py): Tantivy refuses one
# of over 1,000 states, which 100 characters of any script stay under
# (measured: 100 emoji, 150 CJK, 200 accented, 300 ASCII characters). Its
# compilation grows with the value: 5-15 ms for 5-20 characters, 50-110 ms
# for 100 (then kept: lexical/filters.py), on this 2-core machine under load.
MAX_CONTAINS_CHARS = 100
_CONTAINS = {"path": "paths", "file": "files", "section": "sections"}
_STARTS = {"after": "since", "created-after": "created_since"}
_ENDS = {"before": "until", "created-before": "created_until"}


class TypedQuery(msgspec.Struct, frozen=True):
    text: str  # the query's words, without the filters
    filters: tuple[TypedFilter, ...]

    def narrow(self, given: FeedFilter) -> FeedFilter:
        """`given` (the request's own parameters) with the typed filters added: all must hold."""
        dates: dict[str, datetime | None] = {
            "since": given.since,
            "until": given.until,
            "created_since": given.created_since,
            "created_until": given.created_until,
        }
        contains: dict[str, tuple[str, ...]] = {"paths": given.paths, "files": given.files, "sections": given.sections}
        for typed in self.filters:
            if typed.name in _STARTS:
                start, key = period_start(typed), _STARTS[typed.name]
                later = dates[key]
                dates[key] = start if later is None else max(start, later)
            elif typed.name in _ENDS:
                start, key = period_start(typed), _ENDS[typed.name]
                if start == EARLIEST:
                    why = f"{typed.name}:{typed.value}: no date is earlier than 0001-01-01"
                    raise InvalidFilter(why, name=typed.name, value=typed.value, reason="before_the_first_date")
                end, earlier = start - _INSTANT, dates[key]
                dates[key] = end if earlier is None else min(end, earlier)
            elif typed.name in _CONTAINS:
                contains[_CONTAINS[typed.name]] += (_contained(typed),)
        return replace(
            given,
            folder=self._folder(given.folder),
            tags=(*given.tags, *(f.value for f in self.filters if f.name == "tag")),
            exclude_tags=(*given.exclude_tags, *(f.value for f in self.filters if f.name == "-tag")),
            since=dates["since"],
            until=dates["until"],
            created_since=dates["created_since"],
            created_until=dates["created_until"],
            paths=contains["paths"],
            files=contains["files"],
            sections=contains["sections"],
        )

    def _folder(self, given: str | None) -> str | None:
        """The one folder of the request and of `folder:` filters: folders
        are compared ignoring case, as they are matched (`folder:Lectures`
        is the folder `lectures`)."""
        chosen = (given or "").strip("/") or None
        for typed in self.filters:
            if typed.name != "folder":
                continue
            folder = typed.value.strip("/")
            if chosen is not None and folder.casefold() != chosen.casefold():
                why = f"one folder at a time, got {chosen} and {folder}"
                raise InvalidFilter(why, name="folder", value=typed.value, reason="one_folder_at_a_time")
            chosen = chosen or folder
        return chosen


def parse(query: str) -> TypedQuery:
    """The query's words and the filters typed in it, in order."""
    filters: list[TypedFilter] = []

    def take(match: re.Match[str]) -> str:
        value = (match["quoted"] if match["quoted"] is not None else match["bare"]).strip()
        if not value:
            return match[0]  # `tag:""`: nothing to filter on, left as typed
        filters.append(TypedFilter(match["name"].lower(), value))
        return " "

    text = _TYPED.sub(take, query)
    return TypedQuery(" ".join(text.split()) if filters else query, tuple(filters))


def _contained(typed: TypedFilter) -> str:
    if len(typed.value) > MAX_CONTAINS_CHARS:
        why = f"{typed.name}:{typed.value[:40]}…: at most {MAX_CONTAINS_CHARS} characters"
        raise InvalidFilter(why, name=typed.name, value=typed.value, reason="too_long")
    return typed.value


def period_start(typed: TypedFilter) -> datetime:
    """The first instant of the year, month or day a date filter names, in UTC.
    Only the start is computed: the end of year 9999 is past what a datetime
    holds (`after:9999-12` raised "year 10000 is out of range", which the
    read path took for index damage and answered with a rebuild)."""
    found = _PERIOD.match(typed.value)
    expected = "expected 2024, 2024-05 or 2024-05-01"
    if found is None:
        why = f"{typed.name}:{typed.value[:40]} is not a date ({expected})"
        raise InvalidFilter(why, name=typed.name, value=typed.value, reason="not_a_date")
    year, month, day = (int(part) if part else 1 for part in (found[1], found[2], found[3]))
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError as exc:
        why = f"{typed.name}:{typed.value} is not a date ({exc}; {expected})"
        raise InvalidFilter(why, name=typed.name, value=typed.value, reason="not_a_date") from exc
