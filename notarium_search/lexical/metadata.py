"""Structured queries over note metadata (no text query): the notes endpoint
and the activations window. Reads the lexical index only."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from msgspec.structs import replace

from notarium_search.lexical import search as lexical
from notarium_search.lexical.cursor import CursorCodec
from notarium_search.lexical.schema import Payload
from notarium_search.lexical.store import LexicalIndex
from notarium_search.notes.activation import activations
from notarium_search.types import FeedFilter, NoteRecord

# The activations window reads every activated note; past this many the
# answer is cut (newest first) rather than unbounded.
MAX_ACTIVATED_NOTES = 10_000


def record(payload: Payload, activation_fields: Sequence[str]) -> NoteRecord:
    summary = payload.summary()
    return NoteRecord(
        note=summary,
        frontmatter=payload.frontmatter,
        collections=payload.collections,
        activations=activations(payload.frontmatter, activation_fields, summary.updated),
    )


def notes_page(
    index: LexicalIndex, filters: FeedFilter, limit: int, cursor: str | None, cursors: CursorCodec
) -> tuple[list[NoteRecord], str | None]:
    """Notes matching the filters, most recently updated first, paginated."""
    payloads, next_cursor = lexical.feed_payloads(index, "", filters, limit, cursor, cursors)
    return [record(p, filters.activation_fields) for p in payloads], next_cursor


def activated_since(index: LexicalIndex, filters: FeedFilter, since: datetime | None, limit: int) -> list[NoteRecord]:
    """Notes with a use dated in the window (an undated use counts as of the
    note's last update), newest use first; each keeps only its uses in the window."""
    wanted = replace(filters, activated=True)
    payloads, _ = lexical.feed_payloads(index, "", wanted, MAX_ACTIVATED_NOTES, None, None)
    found = []
    for payload in payloads:
        note = record(payload, filters.activation_fields)
        recent = tuple(a for a in note.activations if since is None or a.date >= since)
        if recent:
            found.append(replace(note, activations=recent))
    found.sort(key=lambda n: (-n.activations[0].date.timestamp(), n.note.id))
    return found[:limit]
