"""Where a note was used ("activated"), read from its frontmatter. Pure: no I/O.

A Zettelkasten note is activated when a publication uses it; writers record
that in a frontmatter field (settings.activation_fields, default `used_in`,
alias `utilisé_dans`). Each entry of the field is one use, written either as
text ("2024-05-02 Newsletter #12", "[[Article DORA]]") or as a mapping
(`{where: Newsletter #12, date: 2024-05-02}`). An entry's date is its `date`
key or the first ISO date in its text; an entry without one counts as of the
note's last update (the edit that recorded it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from notarium_search.notes.parse import to_datetime
from notarium_search.types import Activation

_ISO_DATE_RE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b")
_SEPARATORS = " \t-–—:,;()[]|"
# Keys of a mapping entry, most telling first.
WHERE_KEYS = ("where", "in", "title", "name", "publication", "article", "url", "lieu", "où", "titre")
DATE_KEYS = ("date", "on", "when", "le", "published", "publié")


def activations(frontmatter: Mapping[str, Any], fields: Iterable[str], updated: datetime) -> tuple[Activation, ...]:
    """Every use recorded in the note's activation fields, newest first."""
    found: list[Activation] = []
    for name in fields:
        value = frontmatter.get(name.casefold())
        entries = value if isinstance(value, list) else [value]
        found.extend(a for a in (_entry(e, updated) for e in entries) if a is not None)
    return tuple(sorted(found, key=lambda a: a.date, reverse=True))


def _entry(entry: Any, updated: datetime) -> Activation | None:
    if isinstance(entry, Mapping):
        return _mapping_entry(entry, updated)
    if entry is None or isinstance(entry, list):
        return None
    text = str(entry).strip()
    if not text:
        return None
    match = _ISO_DATE_RE.search(text)
    when = to_datetime(match.group()) if match else None
    where = (text[: match.start()] + " " + text[match.end() :]).strip(_SEPARATORS) if match else text
    return Activation(where or text, when or updated, when is not None)


def _mapping_entry(entry: Mapping[str, Any], updated: datetime) -> Activation | None:
    where = next((str(entry[k]) for k in WHERE_KEYS if entry.get(k) not in (None, "")), None)
    when = next((d for k in DATE_KEYS if (d := to_datetime(entry.get(k))) is not None), None)
    if where is None:
        others = [str(v) for k, v in entry.items() if k not in DATE_KEYS and v not in (None, "")]
        where = ", ".join(others)
    if not where and when is None:
        return None
    return Activation(where, when or updated, when is not None)
