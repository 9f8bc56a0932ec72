"""The Litestar application: routes, error handlers, lifespan.

The routes over the notes are one controller (`ServiceRoutes`): each handler
is given the process's `Service` by Litestar's dependency injection (the
`service` parameter, provided once for the app by `create_app`), reads its
parameters (`params.py`), and answers with a `bodies.py` shape or raises an
`errors.py` exception (the error body: api/errors.py).

Handlers are synchronous and run in Litestar's thread pool
(`sync_to_thread=True`): searching and reading the index never block the
event loop.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, Literal, cast

import anyio
from litestar import Controller, Litestar, get, post
from litestar.di import NamedDependency, Provide
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from litestar.handlers import BaseRouteHandler
from litestar.params import Parameter, PathParameter, SkipValidation

from notarium_search import __version__, params
from notarium_search.answer import MAX_LIMIT
from notarium_search.api import errors, explorer, preview
from notarium_search.api.access import ADMIN, PUBLIC, cors_config, rate_limit_config, token_guard
from notarium_search.api.access_log import AccessLog
from notarium_search.api.body_deadline import BodyDeadline
from notarium_search.api.errors import UniformErrors
from notarium_search.api.exposure import Exposure
from notarium_search.api.web import WEB_HANDLERS
from notarium_search.bodies import (
    ActivationsBody,
    FeedBody,
    Health,
    NoteBody,
    NotesBody,
    ReindexBody,
    RelatedBody,
    SearchBody,
    SpaceOut,
    StatusBody,
    ValueOut,
    ValuesBody,
    feed_body,
    ignored_out,
    note_body,
    note_record_out,
    related_note,
    root_out,
    search_body,
)
from notarium_search.errors import InvalidParameter, NotariumError
from notarium_search.logsetup import get_logger
from notarium_search.mcp.route import McpRoute
from notarium_search.service import MAX_PREFIX_CHARS, Service
from notarium_search.settings import Settings
from notarium_search.types import BUILDING_MESSAGE, FeedFilter, SpaceStatus

log = get_logger(__name__)


SpaceName = Annotated[str, PathParameter(description="Space name (GET /spaces lists them)")]
Query = Annotated[str, Parameter(description="Query text; any input is accepted", max_length=params.MAX_QUERY_CHARS)]
Limit = Annotated[int, Parameter(ge=1, le=MAX_LIMIT, description=f"Results to return (1-{MAX_LIMIT})")]
Folder = Annotated[
    str | None, Parameter(max_length=params.MAX_FILTER_CHARS, description="Folder, sub-folders included")
]
Tags = Annotated[list[str] | None, Parameter(description="Tag (repeatable, all must match; nested tags included)")]
Date = Annotated[str | None, Parameter(max_length=64, description="ISO date or datetime (naive = UTC)")]
Collections = Annotated[
    list[str] | None, Parameter(description="Collection of the space (repeatable: any of them); see /status")
]
Cursor = Annotated[
    str | None, Parameter(max_length=params.MAX_FILTER_CHARS, description="next_cursor of the previous page")
]

DaysApart = Annotated[
    float,
    Parameter(ge=0, le=36500, description="Only notes whose `updated` dates are at least this many days apart"),
]
# The process's one Service, given to each handler that names it (`provide`).
# Not validated: a provided object, not a client's input.
ServiceDependency = NamedDependency[SkipValidation[Service]]


@get("/healthz", sync_to_thread=False, opt={PUBLIC: True})
def healthz() -> Health:
    """Liveness: the process answers."""
    return Health("ok")


class ServiceRoutes(Controller):
    """The routes over the notes. Each handler is given the process's
    `Service` (`service: ServiceDependency`, provided by `create_app`)."""

    path = "/"

    def get_route_handlers(self) -> list[BaseRouteHandler]:
        """The handlers in the order written here (Litestar sorts them by name):
        the order of the operations in /schema."""
        written = list(vars(ServiceRoutes))
        return sorted(super().get_route_handlers(), key=lambda handler: written.index(handler.handler_name))

    @get("/status", sync_to_thread=True, responses=errors.RESPONSES)
    def status(self, service: ServiceDependency) -> StatusBody:
        """Every space's indexing state; cheap enough to poll every second."""
        spaces = service.status()
        building = any(s.message for s in spaces)
        settings = service.settings
        message = BUILDING_MESSAGE if building else None
        root, ignored = root_out(settings), ignored_out(settings)
        return StatusBody(message, settings.vector_search, settings.graph_boost, spaces, root, ignored)

    @get("/spaces", sync_to_thread=True, responses=errors.RESPONSES)
    def list_spaces(self, service: ServiceDependency) -> list[SpaceOut]:
        """The configured spaces."""
        return [SpaceOut(s.space, s.path, s.language, s.notes, s.lexical.state.value) for s in service.status()]

    @get("/spaces/{space:str}/status", sync_to_thread=True, responses=errors.RESPONSES)
    def space_status(self, service: ServiceDependency, space: SpaceName) -> SpaceStatus:
        """One space's indexing state."""
        return service.space_status(space)

    @get("/spaces/{space:str}/search", sync_to_thread=True, responses=errors.RESPONSES)
    def search(
        self,
        service: ServiceDependency,
        space: SpaceName,
        q: Query = "",
        limit: Limit = 10,
        folder: Folder = None,
        tag: Tags = None,
        collection: Collections = None,
        explain: Annotated[bool, Parameter(description="Include each channel's rank, score and contribution")] = False,
        sort: Annotated[
            Literal["relevance", "updated", "created"],
            Parameter(description="relevance (default), or the same notes newest first by updated or created date"),
        ] = "relevance",
    ) -> SearchBody:
        """Spotlight search: ranked notes with highlighted snippets. The query may
        hold filters: tag:x, -tag:x, folder:x, path:x, file:x, section:x, after:2024-05,
        before:2024-06-01, created-after:2024, created-before:2024-06."""
        filters = FeedFilter(folder=folder, tags=params.tags(tag), collections=params.names("collection", collection))
        return search_body(service.search(space, q, filters, limit, sort), explain)

    @get("/spaces/{space:str}/feed", sync_to_thread=True, responses=errors.RESPONSES)
    def feed(
        self,
        service: ServiceDependency,
        space: SpaceName,
        q: Query = "",
        folder: Folder = None,
        tag: Tags = None,
        since: Date = None,
        until: Date = None,
        collection: Collections = None,
        limit: Limit = 20,
        cursor: Cursor = None,
    ) -> FeedBody:
        """Notes where the words really occur, filtered, newest first, paginated."""
        filters = FeedFilter(
            folder=folder,
            tags=params.tags(tag),
            since=params.date("since", since),
            until=params.date("until", until, end_of_day=True),
            collections=params.names("collection", collection),
        )
        return feed_body(service.feed(space, q, filters, limit, cursor))

    @get("/spaces/{space:str}/notes", sync_to_thread=True, responses=errors.RESPONSES)
    def notes(
        self,
        service: ServiceDependency,
        space: SpaceName,
        tags: Tags = None,
        tag: Tags = None,
        tags_mode: Annotated[str, Parameter(pattern="^(any|all)$", description="any or all of the tags")] = "all",
        field: Annotated[
            str | None, Parameter(max_length=params.MAX_FILTER_CHARS, description="Frontmatter field")
        ] = None,
        value: Annotated[
            str | None, Parameter(max_length=params.MAX_FILTER_CHARS, description="Value of `field` (case-insensitive)")
        ] = None,
        updated_since: Date = None,
        created_since: Date = None,
        folder: Folder = None,
        activated: Annotated[bool | None, Parameter(description="Has (true) or lacks (false) a recorded use")] = None,
        collection: Collections = None,
        limit: Limit = 20,
        cursor: Cursor = None,
    ) -> NotesBody:
        """Metadata query without text: notes by tags, frontmatter fields, dates,
        folder, collection and activation, most recently updated first."""
        if value is not None and not (field or "").strip():
            raise InvalidParameter("value: give the frontmatter field it belongs to (field=...)")
        filters = FeedFilter(
            folder=folder,
            tags=params.tags([*(tags or []), *(tag or [])]),
            tags_any=tags_mode == "any",
            since=params.date("updated_since", updated_since),
            created_since=params.date("created_since", created_since),
            fields=((field.strip(), value),) if field and field.strip() else (),
            activated=activated,
            collections=params.names("collection", collection),
        )
        page = service.notes(space, filters, limit, cursor)
        return NotesBody([note_record_out(r) for r in page.items], page.next_cursor, page.partial)

    @get("/spaces/{space:str}/values", sync_to_thread=True, responses=errors.RESPONSES)
    def filter_values(
        self,
        service: ServiceDependency,
        space: SpaceName,
        field: Annotated[
            Literal["tag", "folder", "file"], Parameter(description="The filter whose values to complete")
        ],
        prefix: Annotated[
            str, Parameter(max_length=MAX_PREFIX_CHARS, description="What is typed so far (case ignored)")
        ] = "",
        limit: Limit = 20,
    ) -> ValuesBody:
        """Completion of a filter typed in the query (tag:, folder:, file:): the
        space's values starting with the prefix, ignoring case, with how many
        notes each keeps, most first."""
        found = service.values(space, field, prefix, limit)
        return ValuesBody(field, prefix, [ValueOut(v, n) for v, n in found], not service.ready(space))

    @get("/spaces/{space:str}/activations", sync_to_thread=True, responses=errors.RESPONSES)
    def activations(
        self,
        service: ServiceDependency,
        space: SpaceName,
        since: Date = None,
        collection: Collections = None,
        limit: Limit = 50,
    ) -> ActivationsBody:
        """Notes used (activated) since a date, newest use first, with where they were used."""
        since_date = params.date("since", since)
        filters = FeedFilter(collections=params.names("collection", collection))
        found = service.activations(space, filters, since_date, limit)
        return ActivationsBody(since_date, [note_record_out(r) for r in found])

    @get("/spaces/{space:str}/notes/{note_path:path}", sync_to_thread=True, responses=errors.RELATED_RESPONSES)
    def note_route(
        self,
        service: ServiceDependency,
        space: SpaceName,
        note_path: Annotated[str, PathParameter(description="note id (may contain /), optionally then /related")],
        content: Annotated[bool, Parameter(description="Include the note's Markdown")] = False,
        render: Annotated[bool, Parameter(description="Include the note's body as sanitised HTML")] = False,
        q: Annotated[
            str,
            Parameter(
                description='With render: the query whose words are marked (<mark class="hit">) in the HTML',
                max_length=params.MAX_QUERY_CHARS,
            ),
        ] = "",
        limit: Limit = 10,
        min_days_apart: DaysApart = 0.0,
        collection: Collections = None,
    ) -> NoteBody | RelatedBody:
        """`/notes/{id}`: a note's metadata, links, backlinks and dangling links.
        `/notes/{id}/related`: the same as `/related/{id}`."""
        whole = note_path.strip("/")
        note_id, _, action = whole.rpartition("/")
        if action == "related" and note_id and not service.has_note(space, whole):
            return _related(service, space, note_id, limit, min_days_apart, collection)
        if not whole:
            raise NotFoundException(f"unknown note route: expected /spaces/{space}/notes/{{id}}")
        detail = service.note(space, whole, content or render)
        body = note_body(detail)
        if render and detail.body is not None:
            targets = {link.target: link.note.id for link in detail.links if link.note is not None}
            hits = preview.MAX_PREVIEW_HITS, preview.MAX_PREVIEW_HIT_WORDS
            found = detail.record.note.id
            highlight = (lambda text: service.highlights(space, q, text, *hits, note_id=found)) if q.strip() else None
            body = replace(body, html=preview.render(detail.body, preview.resolver(targets), space, highlight))
        if render and not content:
            body = replace(body, content=None)
        return body

    @get("/spaces/{space:str}/related/{note_path:path}", sync_to_thread=True, responses=errors.RELATED_RESPONSES)
    def related(
        self,
        service: ServiceDependency,
        space: SpaceName,
        note_path: Annotated[str, PathParameter(description="note id (may contain /)")],
        limit: Limit = 10,
        min_days_apart: DaysApart = 0.0,
        collection: Collections = None,
    ) -> RelatedBody:
        """A note's semantic neighbours: the notes whose best pair of fragments is
        the most similar (needs the semantic channel). Also at
        `/spaces/{space}/notes/{id}/related`."""
        return _related(service, space, note_path.strip("/"), limit, min_days_apart, collection)

    @post(
        "/spaces/{space:str}/reindex",
        sync_to_thread=True,
        responses=errors.WRITE_RESPONSES,
        status_code=202,
        opt={ADMIN: True},
    )
    def reindex(
        self,
        service: ServiceDependency,
        space: SpaceName,
        full: Annotated[bool, Parameter(description="Forget the index and re-read every note")] = False,
    ) -> ReindexBody:
        """Compare the files with the index now (or rebuild it with `full=1`);
        returns at once: follow the work at the status URL."""
        service.reindex(space, full)
        return ReindexBody(space, full, f"/spaces/{space}/status")


def _related(
    service: Service, space: str, note_id: str, limit: int, min_days_apart: float, collection: list[str] | None
) -> RelatedBody:
    filters = FeedFilter(collections=params.names("collection", collection))
    echoes = service.related(space, note_id, limit, min_days_apart, filters)
    return RelatedBody(note_id, [related_note(e) for e in echoes])


def provide(service: Service) -> Provide:
    """The `service` every handler is given: the same object on every request."""

    def the_service() -> Service:
        return service

    return Provide(the_service, use_cache=True, sync_to_thread=False)


def create_app(settings: Settings, service: Service | None = None, start_indexing: bool = True) -> Litestar:
    service = service or Service(settings)
    mcp = McpRoute(service, settings)  # MCP tools at /mcp, behind the same guard (docs/mcp.md)

    async def on_startup() -> None:
        if start_indexing:
            service.start()

    async def on_shutdown() -> None:
        await anyio.to_thread.run_sync(service.stop)
        log.info("service_stopped")  # every space's writer done: what a graceful stop ends with

    app = Litestar(
        route_handlers=[
            healthz,
            mcp.handler,
            ServiceRoutes,
            *WEB_HANDLERS,  # the Spotlight page at / (no token: it holds no data)
        ],
        guards=[token_guard(settings)],
        cors_config=cors_config(settings),
        middleware=[limit.middleware] if (limit := rate_limit_config(settings)) else [],
        dependencies={"service": provide(service)},
        on_startup=[on_startup],
        on_shutdown=[on_shutdown],
        lifespan=[mcp.lifespan],  # entered before on_startup, left before on_shutdown (service.stop)
        exception_handlers={
            NotariumError: errors.notarium_error,
            ValidationException: errors.validation_error,
            HTTPException: errors.http_error,
            Exception: errors.internal_error,
        },
        # Litestar's default logging config replaces the root handlers: logging
        # is configured once by notarium_search.logsetup instead.
        logging_config=None,
        # /schema: Swagger UI from the installed packages, working offline (api/explorer.py).
        openapi_config=explorer.openapi_config("notarium-search", __version__),
    )
    # Outermost, before CORS and every route: the access log and request id,
    # the body's deadline (a request's body within body_timeout of its
    # headers), the Host and Origin checks, then the one error body for
    # answers written outside our handlers.
    exposed = UniformErrors(Exposure(cast(Any, app.asgi_handler), settings))
    app.asgi_handler = cast(Any, AccessLog(BodyDeadline(exposed, settings.body_timeout)))
    return app
