"""The MCP server: notarium's tools for assistants, two ways — over stdio
(`notarium-search mcp`, started as a subprocess by desktop assistants and
coding agents) and over Streamable HTTP at /mcp on the running service
(routed by api/app.py, behind the API's bearer token). docs/mcp.md. The stdio
transport's input, which answers malformed lines, is mcp/stdio.py.

Annotations here are evaluated at definition time (no `from __future__ import
annotations`): the SDK reads the tools' signatures to build their JSON
schemas, and the `space` description is built at run time from the spaces.
"""

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError
from pydantic.fields import FieldInfo

from notarium_search import __version__
from notarium_search.errors import NotariumError
from notarium_search.logsetup import get_logger
from notarium_search.mcp.outputs import (
    ActivationsOutput,
    FrontmatterOutput,
    NoteOutput,
    RelatedOutput,
    SearchNotesOutput,
    schema_model,
)
from notarium_search.mcp.stdio import AnsweringReader, CheckedStdin, protocol_stdin
from notarium_search.mcp.tools import (
    NOTE_TEXT_CHARS,
    NotesTools,
    ToolFailure,
    ToolOutput,
)
from notarium_search.params import MAX_DAYS, MAX_QUERY_CHARS
from notarium_search.service import MAX_LIMIT, Service
from notarium_search.settings import Settings

SERVER_NAME = "notarium-search"
SDK_TRANSPORT_LOGGER = "mcp.server.streamable_http"
SHOWN_INPUT_CHARS = 80  # of a rejected argument value, in the error message

# Every tool only reads the notes: clients may call them without asking the user.
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

log = get_logger(__name__)

SEARCH_NOTES = """Search the notes by words and, when the semantic channel is on, by meaning (the two rankings fused).
Returns the best notes first: id, title, path, score, 1-3 snippets with the matched words in **bold**, and which
channels found each note (lexical = the words, semantic = the meaning, graph = wiki-links) with its rank in each.
Query syntax: plain words (notes matching more of them rank higher; a missing word never empties the answer),
"quoted phrases" (required, exact order), -word to exclude. French and English, accents optional.
Filters may be typed in the query: tag:x, -tag:x, folder:x (or path:x), after:2024-05, before:2024-06-01
(updated dates), tag:"two words"; filters alone list the notes they allow, newest first.
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


class NotesServer(MCPServer[Any]):
    """The SDK's server with argument errors stated briefly: which argument and
    why, instead of pydantic's multi-line report with documentation links; and,
    over stdio, malformed input answered (AnsweringReader)."""

    async def run_stdio_async(self) -> None:
        """MCPServer.run_stdio_async (the SDK's stdio transport, its claim of
        fd 1 included), reading stdin through CheckedStdin (fd 0 claimed by
        protocol_stdin) and the read stream through AnsweringReader."""
        with protocol_stdin() as wire:
            stdin = CheckedStdin(wire)
            async with stdio_server(stdin=stdin) as (read_stream, write_stream):
                stdin.answer_on(write_stream)
                lowlevel = self._lowlevel_server  # what the SDK's own run_stdio_async runs: no public accessor
                await lowlevel.run(
                    AnsweringReader(read_stream, write_stream), write_stream, lowlevel.create_initialization_options()
                )

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            raise ToolError(f"Error executing tool {name}: invalid arguments: {_brief(cause)}") from cause


def build_server(
    service: Service, lifespan: Callable[[MCPServer[Any]], AbstractAsyncContextManager[None]] | None = None
) -> NotesServer:
    """The five tools over `service`; `lifespan` wraps the server's run (stdio)."""
    tools = NotesTools(service)
    server = NotesServer(SERVER_NAME, version=__version__, instructions=_instructions(service), lifespan=lifespan)
    space_field = _space_field(tools.space_names)
    for add in (_add_search, _add_related, _add_frontmatter, _add_activations, _add_get_note):
        add(server, tools, space_field)
    return server


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


def _add_search(server: NotesServer, tools: NotesTools, space_field: FieldInfo) -> None:
    @server.tool(title="Search the notes", description=SEARCH_NOTES, annotations=READ_ONLY)
    def search_notes(
        query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for")],
        space: Annotated[str | None, space_field] = None,
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
    ) -> Annotated[CallToolResult, schema_model(SearchNotesOutput)]:
        return _answer(lambda: tools.search_notes(query, space, collections, folder, tags, limit, sort))


def _add_related(server: NotesServer, tools: NotesTools, space_field: FieldInfo) -> None:
    @server.tool(title="Related notes", description=GET_RELATED, annotations=READ_ONLY)
    def get_related(
        note: NoteId,
        space: Annotated[str | None, space_field] = None,
        limit: Limit = 10,
        min_days_apart: Annotated[
            float | None,
            Field(ge=0, le=MAX_DAYS, description="Only neighbours updated at least this many days before or after it"),
        ] = None,
    ) -> Annotated[CallToolResult, schema_model(RelatedOutput)]:
        return _answer(lambda: tools.get_related(note, space, limit, min_days_apart))


def _add_frontmatter(server: NotesServer, tools: NotesTools, space_field: FieldInfo) -> None:
    @server.tool(title="List notes by metadata", description=QUERY_FRONTMATTER, annotations=READ_ONLY)
    def query_frontmatter(
        space: Annotated[str | None, space_field] = None,
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
    ) -> Annotated[CallToolResult, schema_model(FrontmatterOutput)]:
        return _answer(
            lambda: tools.query_frontmatter(
                space, collection, tags, tags_mode, activated, updated_since, field, value, limit, cursor
            )
        )


def _add_activations(server: NotesServer, tools: NotesTools, space_field: FieldInfo) -> None:
    @server.tool(title="Recently used notes", description=LIST_RECENT_ACTIVATIONS, annotations=READ_ONLY)
    def list_recent_activations(
        space: Annotated[str | None, space_field] = None,
        days: Annotated[int, Field(ge=1, le=MAX_DAYS, description="The window, in days up to today")] = 30,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description=f"How many notes (1-{MAX_LIMIT})")] = 50,
    ) -> Annotated[CallToolResult, schema_model(ActivationsOutput)]:
        return _answer(lambda: tools.list_recent_activations(space, days, limit))


def _add_get_note(server: NotesServer, tools: NotesTools, space_field: FieldInfo) -> None:
    @server.tool(title="Read a note", description=GET_NOTE, annotations=READ_ONLY)
    def get_note(
        note: NoteId,
        space: Annotated[str | None, space_field] = None,
        offset: Annotated[
            int, Field(ge=0, description="Character of the text to start from, to read on where a call was cut")
        ] = 0,
    ) -> Annotated[CallToolResult, schema_model(NoteOutput)]:
        return _answer(lambda: tools.get_note(note, space, offset))


def _answer(work: Callable[[], ToolOutput]) -> CallToolResult:
    """A tool's output as text plus structured content; the caller's mistakes
    and the service's refusals (unknown note, index repairing…) as tool errors."""
    try:
        output = work()
    except (ToolFailure, NotariumError) as exc:
        raise ToolError(str(exc)) from exc
    return CallToolResult(content=[TextContent(type="text", text=output.text)], structured_content=output.data)


def _brief(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        shown = "" if item["type"] == "missing" else f" (got {repr(item.get('input'))[:SHOWN_INPUT_CHARS]})"
        parts.append(f"{where}: {item['msg']}{shown}")
    return "; ".join(parts)


def _space_field(names: list[str]) -> FieldInfo:
    """The `space` argument: its schema lists the configured spaces (an enum a
    client can offer), while an unknown name still gets the tools' own answer
    naming the spaces (mcp/tools.py), not a bare validation error."""

    def enum(schema: dict[str, Any]) -> None:
        schema.pop("anyOf", None)
        schema["type"] = ["string", "null"]
        schema["enum"] = [*names, None]

    field: FieldInfo = Field(description=_space_help(names), json_schema_extra=enum if names else None)
    return field


def _space_help(names: list[str]) -> str:
    if len(names) == 1:
        return f"The space (a folder of notes): {names[0]}, the only one, is used when omitted"
    return f"The space (a folder of notes), required: one of {', '.join(names)}"


def _instructions(service: Service) -> str:
    unopened = service.registry.unopened
    spaces = ", ".join(
        f"{c.name} ({c.language})"
        if c.name not in unopened
        else f"{c.name} (could not open: {unopened[c.name].reason})"
        for c in service.settings.spaces
    )
    return (
        f"Search and read the user's Markdown notes (Obsidian/Zettelkasten vaults). Spaces: {spaces}. "
        "Start with search_notes; open a note with get_note; get_related surfaces notes that resonate with one; "
        "query_frontmatter lists notes by tags and frontmatter fields; list_recent_activations tells which notes "
        "were used (published) lately. Every tool only reads."
    )


# -- the two transports -------------------------------------------------------


def session_manager(service: Service, settings: Settings) -> StreamableHTTPSessionManager:
    """The manager of MCP over Streamable HTTP, stateless with JSON answers:
    every POST carries its own request (no server-side sessions to expire or to
    pin to one worker), and the tools never call back into the client.
    `settings` are the app's (its token decides the DNS-rebinding protection).
    mcp/route.py routes /mcp to it and runs it."""
    # Stateless transports log "Terminating session: None" at info after every
    # request: noise beside the access log. Its warnings still show.
    logging.getLogger(SDK_TRANSPORT_LOGGER).setLevel(logging.WARNING)
    server = build_server(service)
    server.streamable_http_app(
        stateless_http=True, json_response=True, transport_security=_transport_security(settings)
    )
    return server.session_manager  # the Starlette app made above is not used: Litestar routes to the manager


def _transport_security(settings: Settings) -> TransportSecuritySettings:
    """The SDK's own Host and Origin checks stay off: api/exposure.py checks
    every route, /mcp included, against the same names as the rest of the
    service (loopback, the bound address, `allowed_hosts`) and refuses
    cross-site POSTs. The SDK's list would contradict `allowed_hosts` behind
    a proxy. It still validates the Content-Type of every POST."""
    del settings  # the same policy whatever the settings: see api/exposure.py
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def run_stdio(settings: Settings) -> None:
    """Serve the tools over stdin/stdout until the client closes stdin. The
    service indexes, watches and repairs as under `serve`; it starts once the
    SDK has moved fd 1 to stderr, so nothing but protocol reaches stdout."""
    service = Service(settings)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(service.start)  # the client's initialize is answered meanwhile
        log.info("mcp_stdio_started", spaces=list(service.spaces))
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(service.stop)

    anyio.run(build_server(service, lifespan).run_stdio_async)
