"""What the MCP tools do: check the arguments, ask the Service, and answer
twice — compact text an assistant reads, and the HTTP API's JSON for the same
data (structured content). Transport-free: mcp/server.py registers these
methods with the MCP SDK and turns `ToolFailure` into tool errors."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from notarium_search import params
from notarium_search.bodies import (
    ActivationsBody,
    LinkedNoteOut,
    NotesBody,
    link_out,
    note_body,
    note_record_out,
    related_note,
    search_body,
)
from notarium_search.errors import ChannelUnavailable, NoteNotFound
from notarium_search.mcp.outputs import (
    ActivationsOutput,
    FrontmatterOutput,
    NoteOutput,
    RelatedOutput,
    SearchNotesOutput,
    fields_of,
)
from notarium_search.mcp.text import (
    activations_text,
    frontmatter_text,
    note_text,
    related_text,
    search_text,
)
from notarium_search.reading import reading
from notarium_search.service import Service
from notarium_search.types import FeedFilter, NoteDetail

# The HTTP API's bounds (api/app.py), so that both doors accept the same input.
# get_note returns at most this many characters of a note's text per call
# (about 5,000 tokens): a long note or a book chapter is read in slices
# (`offset`) instead of filling the assistant's context at once.
NOTE_TEXT_CHARS = 20_000


class ToolFailure(Exception):
    """The caller's arguments cannot be answered: the message says why and what to send instead."""


@dataclass(frozen=True, slots=True)
class ToolOutput:
    text: str  # what the assistant reads
    data: dict[str, Any]  # the same as JSON (the HTTP API's shapes where there is one)


class NotesTools:
    """The five tools over one Service (shared with the HTTP API when mounted there)."""

    def __init__(self, service: Service) -> None:
        self.service = service

    @property
    def space_names(self) -> list[str]:
        """Every configured space: one that could not open answers why (service.space)."""
        return [config.name for config in self.service.settings.spaces]

    def space_name(self, space: str | None) -> str:
        """`space`, checked; the only space when none is given."""
        names = self.space_names
        if not names:
            raise ToolFailure("no space is configured: set NOTARIUM_SPACES_ROOT or [spaces] (docs/configuration.md)")
        listed = ", ".join(names)
        if space is None or not space.strip():
            if len(names) == 1:
                return names[0]
            raise ToolFailure(f"several spaces are configured: give `space`, one of: {listed}")
        if space not in names:
            raise ToolFailure(f"unknown space {space[:100]!r}; the spaces are: {listed}")
        return space

    def search_notes(
        self,
        query: str,
        space: str | None,
        collections: list[str] | None,
        folder: str | None,
        tags: list[str] | None,
        limit: int,
        sort: str = "relevance",
    ) -> ToolOutput:
        if not query.strip():
            raise ToolFailure("query is empty: give words to search for (query_frontmatter lists notes without one)")
        name = self.space_name(space)
        filters = FeedFilter(
            folder=params.text("folder", folder),
            tags=params.tags(tags),
            collections=params.names("collection", collections),
        )
        response = self.service.search(name, query, filters, limit, sort)
        lexical_only = self._lexical_only(response.channels_used, response.degraded)
        data = SearchNotesOutput(**fields_of(search_body(response)), space=name, lexical_only=lexical_only)
        indexed = self._indexed(name) if response.partial else None
        stalled = self.service.space(name).status().lexical.error if response.partial else None
        return ToolOutput(search_text(name, response, lexical_only, indexed, stalled), _json(data))

    def _indexed(self, name: str) -> int:
        """How many notes the space's index holds now: what a search of a
        space still indexing has searched (its status counts them the same way)."""
        space = self.service.space(name)
        with reading(space):
            return int(space.lexical.searcher().num_docs)

    def _lexical_only(self, channels_used: tuple[str, ...], degraded: dict[str, str]) -> str | None:
        """Why the semantic channel did not answer, or None when it did."""
        if "semantic" in channels_used:
            return None
        if not self.service.settings.vector_search:
            return "semantic search is off on this server (VECTOR_SEARCH is not set)"
        return degraded.get("semantic", "the semantic channel did not answer")

    def note_detail(self, name: str, note: str, content: bool = False) -> NoteDetail:
        """The note `note` names: the note with that id, else the one a wiki-link
        written so opens (its path, with or without .md, its file name, title or
        alias, ignoring case and accents: graph/links.py), as the space's own
        links resolve. A note with a frontmatter id was found by its id only,
        though search answers show its path and title as much as its id."""
        try:
            return self.service.note(name, note, content=content)
        except NoteNotFound as exc:
            linked = self._linked(name, note)
            if linked is None or linked == note:
                raise ToolFailure(f"{exc}, nor with that path, file name, title or alias") from exc
            return self.service.note(name, linked, content=content)

    def _linked(self, name: str, note: str) -> str | None:
        """The id of the note a link `[[note]]` opens, or None."""
        space = self.service.space(name)
        with reading(space):
            space.graph.ensure_built()  # as the service's note() does: read once, kept in step by the writer
            return space.graph.graph.resolve("", note)  # written nowhere: no folder to prefer

    def get_related(self, note: str, space: str | None, limit: int, min_days_apart: float | None) -> ToolOutput:
        name = self.space_name(space)
        detail = self.note_detail(name, note)  # an unknown note fails here, whatever the semantic channel's state
        note = detail.record.note.id
        unavailable: str | None = None
        try:
            echoes = self.service.related(name, note, limit, min_days_apart or 0.0)
        except ChannelUnavailable as exc:
            # The link neighbours still answer: worth returning on their own.
            echoes, unavailable = [], exc.detail
        data = RelatedOutput(
            space=name,
            note=note_record_out(detail.record),
            related=[related_note(echo) for echo in echoes],
            semantic_unavailable=unavailable,
            links=[link_out(link) for link in detail.links],
            backlinks=[LinkedNoteOut(n.id, n.path, n.title) for n in detail.backlinks],
            dangling=[link_out(link) for link in detail.dangling],
        )
        return ToolOutput(related_text(name, detail, echoes, unavailable), _json(data))

    def query_frontmatter(
        self,
        space: str | None,
        collection: str | None,
        tags: list[str] | None,
        tags_mode: str,
        activated: bool | None,
        updated_since: str | None,
        field: str | None,
        value: str | None,
        limit: int,
        cursor: str | None,
    ) -> ToolOutput:
        name = self.space_name(space)
        field = params.text("field", field)
        if value is not None and field is None:
            raise ToolFailure("value needs the frontmatter field it belongs to: give `field` too")
        filters = FeedFilter(
            tags=params.tags(tags),
            tags_any=tags_mode == "any",
            since=params.date("updated_since", updated_since),
            fields=((field, value),) if field else (),
            activated=activated,
            collections=params.names("collection", [collection] if collection else None),
        )
        page = self.service.notes(name, filters, limit, params.text("cursor", cursor))
        body = NotesBody([note_record_out(r) for r in page.items], page.next_cursor, page.partial)
        criteria = _criteria(filters, tags_mode)
        data = FrontmatterOutput(**fields_of(body), space=name)
        return ToolOutput(frontmatter_text(name, page, criteria), _json(data))

    def list_recent_activations(self, space: str | None, days: int, limit: int) -> ToolOutput:
        name = self.space_name(space)
        since = datetime.now(UTC) - timedelta(days=days)
        found = self.service.activations(name, FeedFilter(), since, limit)
        partial = not self.service.space(name).ready  # as the service's other answers say `partial`
        body = ActivationsBody(since, [note_record_out(r) for r in found])
        data = ActivationsOutput(**fields_of(body), space=name, days=days)
        return ToolOutput(activations_text(name, days, since, found, partial), _json(data))

    def get_note(self, note: str, space: str | None, offset: int) -> ToolOutput:
        name = self.space_name(space)
        detail = self.note_detail(name, note, content=True)
        content = detail.content
        total = len(content) if content is not None else 0
        if offset and offset >= total:
            raise ToolFailure(f"offset {offset} is past the end of the note's text ({total} characters)")
        piece = content[offset : offset + NOTE_TEXT_CHARS] if content is not None else None
        end = offset + len(piece or "")
        body = replace(note_body(detail), content=piece)
        data = NoteOutput(
            **fields_of(body), space=name, content_offset=offset, content_chars=total, truncated=end < total
        )
        return ToolOutput(note_text(name, detail, piece, offset, total, NOTE_TEXT_CHARS), _json(data))


def _json(value: Any) -> Any:
    """API bodies (dataclasses, datetimes) as JSON values."""
    return msgspec.to_builtins(value)


def _criteria(filters: FeedFilter, tags_mode: str) -> str:
    """The filters in words, for the answer's first line."""
    parts = []
    if filters.tags:
        joiner = " and " if tags_mode == "all" else " or "
        parts.append(f"tagged {joiner.join(filters.tags)}")
    if filters.activated is not None:
        parts.append("used somewhere" if filters.activated else "never used: no activation recorded")
    if filters.since is not None:
        parts.append(f"updated since {filters.since.date().isoformat()}")
    for field, value in filters.fields:
        parts.append(f"{field} = {value!r}" if value is not None else f"with a {field} field")
    if filters.collections:
        parts.append(f"in collection {filters.collections[0]}")
    return "; ".join(parts) or "no filter"
