"""The MCP tools, each declared once: a method of `NotesTools` marked
`@tool(title, description)`, whose signature is its schema — the arguments
annotated with their bounds and descriptions (pydantic `Field`, the JSON
schema clients see), the answer `ToolOutput[X]`, X its structured content
(mcp/outputs.py, the `outputSchema`). A tool checks the arguments, asks the
Service, and answers twice — compact text an assistant reads (mcp/text.py),
and the HTTP API's JSON for the same data. Transport-free: mcp/server.py
registers every declared tool with the MCP SDK, gives `space` the configured
spaces, and turns `ToolFailure` into tool errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import Field

from notarium_search import params
from notarium_search.answer import MAX_LIMIT
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
from notarium_search.params import MAX_DAYS, MAX_QUERY_CHARS
from notarium_search.service import Service
from notarium_search.types import FeedFilter, NoteDetail

# The HTTP API's bounds (api/app.py), so that both doors accept the same input.
# get_note returns at most this many characters of a note's text per call
# (about 5,000 tokens): a long note or a book chapter is read in slices
# (`offset`) instead of filling the assistant's context at once.
NOTE_TEXT_CHARS = 20_000

Output = TypeVar("Output")
Method = TypeVar("Method", bound=Callable[..., Any])
TOOL_ATTRIBUTE = "mcp_tool"


class ToolFailure(Exception):
    """The caller's arguments cannot be answered: the message says why and what to send instead."""


@dataclass(frozen=True, slots=True)
class ToolOutput(Generic[Output]):
    text: str  # what the assistant reads
    data: Output  # the same as structured content (the HTTP API's shapes where there is one): mcp/outputs.py


@dataclass(frozen=True, slots=True)
class ToolSpec:
    title: str  # for clients to show
    description: str  # for the assistant: what the tool does and when to call it


def tool(title: str, description: str) -> Callable[[Method], Method]:
    """Declares a method of NotesTools (or of a subclass) an MCP tool, named
    as the method; its parameters are the tool's arguments, its return type
    `ToolOutput[X]` the structured content's schema (mcp/server.py)."""

    def declare(method: Method) -> Method:
        setattr(method, TOOL_ATTRIBUTE, ToolSpec(title, description))
        return method

    return declare


def declared_tools(tools: NotesTools) -> dict[str, ToolSpec]:
    """The tools `tools` declares, by name, in the order written (a subclass's after its base's)."""
    found: dict[str, ToolSpec] = {}
    for kind in reversed(type(tools).__mro__):
        for name, member in vars(kind).items():
            spec = getattr(member, TOOL_ATTRIBUTE, None)
            if isinstance(spec, ToolSpec):
                found[name] = spec
    return found


class SpaceChoice:
    """The metadata of the `space` argument: mcp/server.py replaces it with a
    field listing the configured spaces (an enum a client can offer), known
    only when the server is built."""


SPACE = SpaceChoice()
Space = Annotated[str | None, SPACE]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description=f"How many notes to return (1-{MAX_LIMIT})")]
NoteId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=1000,
        description=(
            "The note's id, as search_notes and the other tools return it (frontmatter id, else its path);"
            " its path, file name, title or alias also open it, as a [[wiki-link]] would"
        ),
    ),
]
NESTED_TAGS = "without #; nested tags included: 'projet' matches 'projet/dora'"

SEARCH_NOTES = """Search the notes by words and, when the semantic channel is on, by meaning (the two rankings fused).
Returns the best notes first: id, title, path, score, 1-3 snippets with the matched words in **bold**, and which
channels found each note (lexical = the words, semantic = the meaning, graph = wiki-links) with its rank in each.
Query syntax: plain words (notes matching more of them rank higher; a missing word never empties the answer),
"quoted phrases" (required, exact order), -word to exclude. French and English, accents optional.
Filters may be typed in the query: tag:x, -tag:x, folder:x, path:x (the path contains x), file:x (the file
name contains x), section:x (a heading contains x), after:2024-05, before:2024-06-01 (updated dates),
created-after:2024, created-before:2024-06 (created dates), tag:"two words"; filters alone list the notes
they allow, newest first. Each note says whether its dates come from its frontmatter or its file.
Says when the answer is lexical-only and why (semantic search off, index still building, model loading), and
when the space is still being indexed (then only the notes indexed so far were searched: search again later).
Open a result with get_note; find what resonates with it with get_related."""

GET_RELATED = """Notes related to one note: its semantic neighbours (notes whose passages are closest in meaning,
each with the pair of fragments that resonated: theirs and this note's) and its link neighbours (the notes it
links to, the notes linking to it, and links to notes that do not exist). Use it to surface older notes that
echo a note, or to walk the note graph. The semantic neighbours need the semantic channel (VECTOR_SEARCH): when
it is off or still building, the answer says why and still gives the link neighbours."""

QUERY_FRONTMATTER = """List notes by metadata, without a text query: tags, a frontmatter field (and its value),
update date, collection, and whether the note records a use ("activation": a frontmatter field such as used_in
listing where the note was published). Most recently updated first, with each note's frontmatter and uses.
Example: notes tagged dora never used anywhere: tags=["dora"], activated=false.
Pages: when more notes match, the answer gives a cursor to pass on the next call."""

LIST_RECENT_ACTIVATIONS = """Notes used (published, quoted, presented) in the last `days` days, most recent use first,
each with where and when it was used. Reads the notes' activation fields (frontmatter such as used_in:
["2024-05-02 Newsletter 12", {where: Blog, date: 2024-06-01}]); an undated use counts as of the note's last update.
Use it to avoid recycling the same notes and claims, or to recall what was published lately."""

GET_NOTE = f"""Read one note: its metadata (title, path, tags, dates, aliases, collections, uses), its links,
backlinks and dangling links, and its full Markdown text (frontmatter included). At most {NOTE_TEXT_CHARS:,}
characters of text are returned per call: a longer note says where it was cut and which offset to pass to read on."""


class NotesTools:
    """The tools over one Service (shared with the HTTP API when mounted there).
    The helpers (`space_name`, `note_detail`) are for the tools."""

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

    @tool("Search the notes", SEARCH_NOTES)
    def search_notes(
        self,
        query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for")],
        space: Space = None,
        collections: Annotated[list[str] | None, Field(description="Only notes of any of these collections")] = None,
        folder: Annotated[str | None, Field(description="Only notes in this folder or its sub-folders")] = None,
        tags: Annotated[
            list[str] | None, Field(description=f"Only notes with every one of these tags ({NESTED_TAGS})")
        ] = None,
        limit: Limit = 10,
        sort: Annotated[
            Literal["relevance", "updated", "created"],
            Field(description="relevance (default), or the same notes newest first by updated or created date"),
        ] = "relevance",
    ) -> ToolOutput[SearchNotesOutput]:
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
        # While the space is indexed, the answer says how many notes were searched
        # (those indexed so far) and why indexing stalled, if it did.
        status = self.service.space_status(name) if response.partial else None
        indexed = status.notes if status is not None else None
        stalled = status.lexical.error if status is not None else None
        return ToolOutput(search_text(name, response, lexical_only, indexed, stalled), data)

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
            linked = self.service.resolve_link(name, note)  # the note a link [[note]] opens
            if linked is None or linked == note:
                raise ToolFailure(f"{exc}, nor with that path, file name, title or alias") from exc
            return self.service.note(name, linked, content=content)

    @tool("Related notes", GET_RELATED)
    def get_related(
        self,
        note: NoteId,
        space: Space = None,
        limit: Limit = 10,
        min_days_apart: Annotated[
            float | None,
            Field(ge=0, le=MAX_DAYS, description="Only neighbours updated at least this many days before or after it"),
        ] = None,
    ) -> ToolOutput[RelatedOutput]:
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
        return ToolOutput(related_text(name, detail, echoes, unavailable), data)

    @tool("List notes by metadata", QUERY_FRONTMATTER)
    def query_frontmatter(
        self,
        space: Space = None,
        collection: Annotated[str | None, Field(description="Only notes of this collection")] = None,
        tags: Annotated[list[str] | None, Field(description=f"Tags ({NESTED_TAGS}); see tags_mode")] = None,
        tags_mode: Annotated[
            Literal["any", "all"], Field(description="all: every tag must match; any: at least one")
        ] = "all",
        activated: Annotated[
            bool | None, Field(description="true: notes recording a use; false: notes never used")
        ] = None,
        updated_since: Annotated[
            str | None, Field(max_length=64, description="ISO date or datetime, e.g. 2024-05-01")
        ] = None,
        field: Annotated[
            str | None, Field(description="A frontmatter field the note must have; nested fields dotted: source.url")
        ] = None,
        value: Annotated[
            str | None, Field(description="With field: its value (or one item of a list), ignoring case")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description=f"Notes per page (1-{MAX_LIMIT})")] = 20,
        cursor: Annotated[str | None, Field(description="The cursor a previous answer gave, for the next page")] = None,
    ) -> ToolOutput[FrontmatterOutput]:
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
        return ToolOutput(frontmatter_text(name, page, criteria), data)

    @tool("Recently used notes", LIST_RECENT_ACTIVATIONS)
    def list_recent_activations(
        self,
        space: Space = None,
        days: Annotated[int, Field(ge=1, le=MAX_DAYS, description="The window, in days up to today")] = 30,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description=f"How many notes (1-{MAX_LIMIT})")] = 50,
    ) -> ToolOutput[ActivationsOutput]:
        name = self.space_name(space)
        since = datetime.now(UTC) - timedelta(days=days)
        found = self.service.activations(name, FeedFilter(), since, limit)
        partial = not self.service.ready(name)  # as the service's other answers say `partial`
        body = ActivationsBody(since, [note_record_out(r) for r in found])
        data = ActivationsOutput(**fields_of(body), space=name, days=days)
        return ToolOutput(activations_text(name, days, since, found, partial), data)

    @tool("Read a note", GET_NOTE)
    def get_note(
        self,
        note: NoteId,
        space: Space = None,
        offset: Annotated[
            int, Field(ge=0, description="Character of the text to start from, to read on where a call was cut")
        ] = 0,
    ) -> ToolOutput[NoteOutput]:
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
        return ToolOutput(note_text(name, detail, piece, offset, total, NOTE_TEXT_CHARS), data)


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
