"""The service: every configured space, and the query entry points the API
and the CLI share (channels → merged response)."""

from __future__ import annotations

import time

from notarium_search.errors import InvalidParameter, UnknownSpace
from notarium_search.lexical import search as lexical
from notarium_search.models import FeedFilter, FeedPage, SearchHit, SearchResponse, SpaceStatus
from notarium_search.settings import SPACE_NAME_RE, Settings
from notarium_search.space import NOT_YET_AVAILABLE, Space

MAX_LIMIT = 100


class Service:
    def __init__(self, settings: Settings, read_only: bool = False) -> None:
        self.settings = settings
        self.spaces = {config.name: Space(config, settings, read_only) for config in settings.spaces}

    def start(self) -> None:
        for space in self.spaces.values():
            space.start()

    def stop(self) -> None:
        for space in self.spaces.values():
            space.stop()

    def space(self, name: str) -> Space:
        space = self.spaces.get(name)
        if space is None:
            shown = name if SPACE_NAME_RE.match(name) and len(name) <= 64 else "(invalid name)"
            raise UnknownSpace(f"no space named {shown}; GET /spaces lists them")
        return space

    def status(self) -> list[SpaceStatus]:
        return [space.status() for space in self.spaces.values()]

    def search(self, name: str, text: str, filters: FeedFilter, limit: int) -> SearchResponse:
        space = self.space(name)
        _check_limit(limit)
        started = time.perf_counter()
        result = lexical.search(space.lexical, text, filters, limit, self.settings.ranking)
        hits = tuple(
            SearchHit(hit.note, hit.score, hit.snippets, {result.channel: rank})
            for rank, hit in enumerate(result.hits, start=1)
        )
        return SearchResponse(
            query=text,
            results=hits,
            channels_used=(result.channel,) if text.strip() else (),
            degraded=self._degraded(),
            unmatched_terms=result.unmatched_terms,
            partial=not space.ready,
            took_ms=round((time.perf_counter() - started) * 1000, 3),
        )

    def feed(self, name: str, text: str, filters: FeedFilter, limit: int, cursor: str | None) -> FeedPage:
        space = self.space(name)
        _check_limit(limit)
        try:
            page = lexical.feed(space.lexical, text, filters, limit, cursor)
        except lexical.InvalidCursor as exc:
            raise InvalidParameter(str(exc)) from exc
        return FeedPage(page.items, page.next_cursor, partial=not space.ready)

    def _degraded(self) -> dict[str, str]:
        wanted = {"semantic": self.settings.vector_search, "graph": self.settings.graph_boost}
        return {channel: NOT_YET_AVAILABLE for channel, on in wanted.items() if on}


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidParameter(f"limit must be between 1 and {MAX_LIMIT}")
