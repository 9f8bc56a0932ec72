"""The Litestar application: routes, error handlers, lifespan.

Handlers are synchronous and run in Litestar's thread pool
(`sync_to_thread=True`): searching and reading the index never block the
event loop.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import anyio
from litestar import Litestar, get
from litestar.datastructures import State
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from litestar.openapi import OpenAPIConfig
from litestar.params import Parameter, PathParameter

from notarium_search import __version__
from notarium_search.api import errors
from notarium_search.api.schemas import (
    FeedBody,
    Health,
    RelatedBody,
    SearchBody,
    SpaceOut,
    StatusBody,
    note_out,
    related_note,
    search_body,
)
from notarium_search.errors import InvalidParameter, NotariumError
from notarium_search.models import FeedFilter, SpaceStatus
from notarium_search.parse import to_datetime
from notarium_search.service import MAX_LIMIT, Service
from notarium_search.settings import Settings
from notarium_search.space import BUILDING_MESSAGE

MAX_QUERY_CHARS = 1000  # longer input is a paste, not a query
MAX_FILTER_CHARS = 500

SpaceName = Annotated[str, PathParameter(description="Space name (GET /spaces lists them)")]
Query = Annotated[str, Parameter(description="Query text; any input is accepted", max_length=MAX_QUERY_CHARS)]
Limit = Annotated[int, Parameter(ge=1, le=MAX_LIMIT, description=f"Results to return (1-{MAX_LIMIT})")]
Folder = Annotated[str | None, Parameter(max_length=MAX_FILTER_CHARS, description="Folder, sub-folders included")]
Tags = Annotated[list[str] | None, Parameter(description="Tag (repeatable, all must match; nested tags included)")]
Date = Annotated[str | None, Parameter(max_length=64, description="ISO date or datetime (naive = UTC)")]


@get("/healthz", sync_to_thread=False)
def healthz() -> Health:
    """Liveness: the process answers."""
    return Health("ok")


@get("/status", sync_to_thread=True)
def status(state: State) -> StatusBody:
    """Every space's indexing state; cheap enough to poll every second."""
    service: Service = state.service
    spaces = service.status()
    building = any(s.message for s in spaces)
    settings = service.settings
    return StatusBody(BUILDING_MESSAGE if building else None, settings.vector_search, settings.graph_boost, spaces)


@get("/spaces", sync_to_thread=True)
def list_spaces(state: State) -> list[SpaceOut]:
    """The configured spaces."""
    return [SpaceOut(s.space, s.path, s.language, s.notes, s.lexical.state.value) for s in state.service.status()]


@get("/spaces/{space:str}/status", sync_to_thread=True)
def space_status(state: State, space: SpaceName) -> SpaceStatus:
    """One space's indexing state."""
    service: Service = state.service
    return service.space(space).status()


@get("/spaces/{space:str}/search", sync_to_thread=True)
def search(
    state: State, space: SpaceName, q: Query = "", limit: Limit = 10, folder: Folder = None, tag: Tags = None
) -> SearchBody:
    """Spotlight search: ranked notes with highlighted snippets."""
    filters = FeedFilter(folder=folder, tags=_tags(tag))
    return search_body(state.service.search(space, q, filters, limit))


@get("/spaces/{space:str}/feed", sync_to_thread=True)
def feed(
    state: State,
    space: SpaceName,
    q: Query = "",
    folder: Folder = None,
    tag: Tags = None,
    since: Date = None,
    until: Date = None,
    limit: Limit = 20,
    cursor: Annotated[str | None, Parameter(max_length=MAX_FILTER_CHARS)] = None,
) -> FeedBody:
    """Notes where the words really occur, filtered, newest first, paginated."""
    filters = FeedFilter(folder=folder, tags=_tags(tag), since=_date("since", since), until=_date("until", until))
    page = state.service.feed(space, q, filters, limit, cursor)
    return FeedBody([note_out(n) for n in page.items], page.next_cursor, page.partial)


@get("/spaces/{space:str}/notes/{note_path:path}", sync_to_thread=True)
def note_route(
    state: State,
    space: SpaceName,
    note_path: Annotated[str, PathParameter(description="note id, then /related")],
    limit: Limit = 10,
    min_days_apart: Annotated[float, Parameter(ge=0, le=36500)] = 0.0,
) -> RelatedBody:
    """`/notes/{id}/related`: semantic neighbours of a note (ids may contain `/`)."""
    note_id, _, action = note_path.strip("/").rpartition("/")
    if action != "related" or not note_id:
        raise NotFoundException(f"unknown note route: expected /spaces/{space}/notes/{{id}}/related")
    service: Service = state.service
    echoes = service.related(space, note_id, limit, min_days_apart)
    return RelatedBody(note_id, [related_note(e) for e in echoes])


def _tags(tags: list[str] | None) -> tuple[str, ...]:
    cleaned = tuple(t for t in (tags or []) if t.strip().lstrip("#"))
    if any(len(t) > MAX_FILTER_CHARS for t in cleaned):
        raise InvalidParameter(f"tag: at most {MAX_FILTER_CHARS} characters")
    return cleaned


def _date(name: str, value: str | None) -> datetime | None:
    if value is None or not value.strip():
        return None
    parsed = to_datetime(value)
    if parsed is None:
        raise InvalidParameter(f"{name}: not a date (expected e.g. 2024-05-01 or 2024-05-01T10:00:00+02:00)")
    return parsed


def create_app(settings: Settings, service: Service | None = None, start_indexing: bool = True) -> Litestar:
    service = service or Service(settings)

    async def on_startup() -> None:
        if start_indexing:
            service.start()

    async def on_shutdown() -> None:
        await anyio.to_thread.run_sync(service.stop)

    return Litestar(
        route_handlers=[healthz, status, list_spaces, space_status, search, feed, note_route],
        state=State({"service": service}),
        on_startup=[on_startup],
        on_shutdown=[on_shutdown],
        exception_handlers={
            NotariumError: errors.notarium_error,
            ValidationException: errors.validation_error,
            HTTPException: errors.http_error,
            Exception: errors.internal_error,
        },
        # Litestar's default logging config replaces the root handlers: logging
        # is configured once by notarium_search.logsetup instead.
        logging_config=None,
        openapi_config=OpenAPIConfig(title="notarium-search", version=__version__, path="/schema"),
    )
