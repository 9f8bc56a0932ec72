"""The service: every configured space, and the query entry points the API
and the CLI share (channels → merged response)."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from notarium_search import answer, typed_filters
from notarium_search.answer import READ_ONLY_WITHOUT_MEANING, check_limit, space_filters
from notarium_search.errors import (
    ChannelDisabled,
    ChannelUnavailable,
    EmbedderUnreachable,
    InvalidParameter,
    NoteNotFound,
    SpaceUnavailable,
    UnknownSpace,
)
from notarium_search.index.peers import PeerLoop
from notarium_search.index.registry import Spaces
from notarium_search.index.space import Space
from notarium_search.lexical import metadata
from notarium_search.lexical import search as lexical
from notarium_search.lexical import stored as stored_notes
from notarium_search.lexical import values as lexical_values
from notarium_search.logsetup import get_logger
from notarium_search.malloc_trim import MemoryTrimmer
from notarium_search.notes import formats
from notarium_search.notes.parse import body_of
from notarium_search.notes.scan import open_note
from notarium_search.query_embedding import QueryEmbedding, is_embedder_error
from notarium_search.reading import reading
from notarium_search.settings import Settings, valid_space_name
from notarium_search.storage.backoff import Backoff
from notarium_search.types import (
    FeedFilter,
    FeedPage,
    NoteDetail,
    NoteLink,
    NoteRecord,
    NotesPage,
    SearchResponse,
    SpaceStatus,
    TextRange,
)

if TYPE_CHECKING:
    from notarium_search.semantic.embedding import Embedder
    from notarium_search.types import Echo

MAX_PREFIX_CHARS = lexical_values.MAX_PREFIX_CHARS  # of a value completed (values)
# An embedding server down at start is asked again after this, doubling up to
# the max: the writer's retry intervals for a failed pass (index/writer.py).
MODEL_RETRY_FIRST_SECONDS = 5.0
MODEL_RETRY_MAX_SECONDS = 300.0

log = get_logger(__name__)
P = ParamSpec("P")
R = TypeVar("R")


def guarded(method: Callable[Concatenate[Service, str, P], R]) -> Callable[Concatenate[Service, str, P], R]:
    """A Service entry point whose first argument is a space name: its reads
    run under `reading` (see below)."""

    @functools.wraps(method)
    def wrapper(service: Service, name: str, /, *args: P.args, **kwargs: P.kwargs) -> R:
        space = service.space(name)
        with reading(space):
            return method(service, name, *args, **kwargs)

    return wrapper


class Service:
    def __init__(self, settings: Settings, read_only: bool = False, shared: bool = False) -> None:
        """`shared`: one of several worker processes serving the same indexes
        (the HTTP server's workers): each space is written by the first worker
        that takes it, and followed by the others (index/follower.py)."""
        self.settings = settings
        self.registry = Spaces(settings, read_only=read_only, shared=shared)
        self.peers = PeerLoop((), ())
        for space in self.spaces.values():
            self.peers.add(*space.role.peer_steps())
        self.embedder: Embedder | None = None
        self._query_embedding = QueryEmbedding(settings.query_embed_timeout_ms)
        self.memory = MemoryTrimmer()
        self._stopping = threading.Event()
        self._model_retries = Backoff(MODEL_RETRY_FIRST_SECONDS, MODEL_RETRY_MAX_SECONDS)
        self._model_lock = threading.Lock()
        self._model_failure: str | None = None  # why there is no model (after a failed load)
        self._model_given: set[str] = set()  # the spaces given the model, or its failure, since it changed

    @property
    def spaces(self) -> dict[str, Space]:
        """The spaces open now (a space that could not open joins when it does: `registry`)."""
        return self.registry.opened

    def start(self) -> None:
        self.memory.start()
        for space in self.spaces.values():
            space.start()
        self.peers.start()
        self.registry.retry(self._opened_later)
        if self.settings.vector_search:
            threading.Thread(target=self.load_model, name="model-loader", daemon=True).start()

    def _opened_later(self, space: Space) -> None:
        """A space that could not open at start did (on the registry's retry thread)."""
        self.peers.add(*space.role.peer_steps())
        space.start()
        self._give_model(space)

    def _give_model(self, space: Space) -> None:
        """The model, or why there is none, to `space` once (the loader and a
        space opened later race: each may be first to see the other)."""
        with self._model_lock:
            if space.name in self._model_given:
                return
            if self.embedder is not None:
                space.attach_embedder(self.embedder)
            elif self._model_failure is not None:
                space.model_unavailable(self._model_failure)
            else:
                return  # still loading: the loader gives it
            self._model_given.add(space.name)

    def load_model(self) -> None:
        """Load the embedding model (off the request path) and hand it to every
        space; or tell them why the semantic channel is unavailable. A server
        that cannot answer yet (EmbedderUnreachable) is asked again by itself,
        at growing intervals: the build starts once it is up, without a restart."""
        from notarium_search.semantic.loading import load_configured_embedder  # onnxruntime: only when asked

        try:
            embedder = load_configured_embedder(self.settings)
        except Exception as exc:  # noqa: BLE001 - any failure: lexical keeps serving, status says why
            reason = str(exc) if is_embedder_error(exc) else f"model failed to load: {exc}"
            if isinstance(exc, EmbedderUnreachable) and not self._stopping.is_set():
                delay = self._model_retries.later(self.load_model)
                reason = f"{reason}; retrying in {delay:g} s"
            log.warning("semantic_unavailable", reason=reason)
            with self._model_lock:
                self._model_failure = reason
                self._model_given.clear()  # a retry that succeeds gives the model to every space
            for space in self.spaces.values():
                self._give_model(space)
            return
        if self._stopping.is_set():
            return
        self._model_retries.succeeded()
        with self._model_lock:
            self.embedder = embedder
            self._model_given.clear()
        for space in self.spaces.values():
            self._give_model(space)
        # Loading a pack frees what building its session used (~36 MiB with
        # e5-small), which glibc keeps until a trim: one worker, whose model is
        # its own, held it until its first search.
        self.memory.note_activity()

    def stop(self) -> None:
        self._stopping.set()
        self.registry.stop()
        self._model_retries.cancel()
        self.peers.stop()
        self.memory.stop()
        # Every space is asked first, then waited for: a stop takes the slowest
        # space's time, not the sum (a watcher looks every 0.5 s). SIGTERM to
        # exit, 10 or 20 one-note spaces: 0.58-2.11 s one after the other,
        # 0.24-0.33 s asked first (5 runs each, alternated; `docker stop` kills at 10 s).
        for space in self.spaces.values():
            space.request_stop()
        for space in self.spaces.values():
            space.stop()
        self._query_embedding.stop()

    def space(self, name: str) -> Space:
        space = self.spaces.get(name)
        unopened = self.registry.unopened.get(name) if space is None else None
        if unopened is not None:
            raise SpaceUnavailable(unopened.why)
        if space is None and self.settings.space_config(name) is not None:
            # Opened between the two looks above (a retry): a moment, never a 404 a client would not retry.
            raise SpaceUnavailable(f"space {name} is opening; retry shortly")
        if space is None:
            shown = name if valid_space_name(name) and len(name) <= 64 else "(invalid name)"
            raise UnknownSpace(f"no space named {shown}; GET /spaces lists them")
        space.catch_up()
        return space

    def reindex(self, name: str, full: bool) -> None:
        """Queue a reconcile of the space (or a rebuild with `full`); returns at once."""
        self.space(name).request_reindex(full)

    def status(self) -> list[SpaceStatus]:
        """Every configured space's, those that could not open too (with why)."""
        return self.registry.statuses(Space.status)

    @guarded
    def search(self, name: str, text: str, filters: FeedFilter, limit: int, sort: str = "relevance") -> SearchResponse:
        """Ranked notes for the query (answer.search: the channels in their
        stages, fused), the query's embedding from this service's model."""
        space = self.space(name)

        def vector(space: Space, text: str, started: float, degraded: dict[str, str]) -> Any:
            return self._query_embedding.vector(space.semantic, self.embedder, text, started, degraded)

        return answer.search(space, text, filters, limit, sort, vector=vector, answered=self.memory.note_activity)

    @guarded
    def related(
        self, name: str, note_id: str, limit: int, min_days_apart: float = 0.0, filters: FeedFilter | None = None
    ) -> list[Echo]:
        space = self.space(name)
        check_limit(limit)
        allowed = lexical.note_ids_matching(space.lexical, space_filters(space, filters or FeedFilter()))
        semantic = space.semantic
        if semantic is None and not self.settings.vector_search:
            raise ChannelDisabled("related notes need the semantic channel: VECTOR_SEARCH is off in this service")
        if semantic is None or not semantic.ready:
            why = READ_ONLY_WITHOUT_MEANING if semantic is None else semantic.why_not_ready()
            raise ChannelUnavailable(f"related notes need the semantic channel: {why}")
        if stored_notes.get_note(space.lexical, note_id) is None:
            raise NoteNotFound(f"no note with id {note_id[:200]!r} in space {name}")
        echoes = semantic.related(note_id, limit, min_days_apart * 86400, allowed)
        return [echo for echo in echoes if space.on_disk(echo.note)]

    @guarded
    def feed(self, name: str, text: str, filters: FeedFilter, limit: int, cursor: str | None) -> FeedPage:
        space = self.space(name)
        check_limit(limit)
        typed = typed_filters.parse(text)
        narrowed = space_filters(space, typed.narrow(filters))
        try:
            page = lexical.feed(space.lexical, typed.text, narrowed, limit, cursor, space.cursors)
        except lexical.InvalidCursor as exc:
            raise InvalidParameter(str(exc)) from exc
        items = tuple(n for n in page.items if space.on_disk(n))
        urls = {n.id: url for n in items if (url := space.open_url(n.path)) is not None}
        return FeedPage(items, page.next_cursor, not space.ready, typed.filters, page.excerpts, urls)

    @guarded
    def notes(self, name: str, filters: FeedFilter, limit: int, cursor: str | None) -> NotesPage:
        """Metadata query: notes matching the filters, newest first, with their frontmatter."""
        space = self.space(name)
        check_limit(limit)
        try:
            filters = space_filters(space, filters)
            items, next_cursor = metadata.notes_page(space.lexical, filters, limit, cursor, space.cursors)
        except lexical.InvalidCursor as exc:
            raise InvalidParameter(str(exc)) from exc
        # Like search and feed: never a note whose file is gone (a 1,000-file
        # `git checkout` listed deleted notes for 3-7 s before the index caught up).
        items = [record for record in items if space.on_disk(record.note)]
        return NotesPage(tuple(items), next_cursor, partial=not space.ready)

    @guarded
    def has_note(self, name: str, note_id: str) -> bool:
        return bool(stored_notes.payloads_by_id(self.space(name).lexical, [note_id]))

    @guarded
    def note(self, name: str, note_id: str, content: bool = False) -> NoteDetail:
        """A note's metadata, outgoing links, backlinks and dangling links;
        its Markdown too when `content` (bounded like indexing)."""
        space = self.space(name)
        payloads = stored_notes.payloads_by_id(space.lexical, [note_id])
        payload = payloads.get(note_id)
        if payload is None or not space.on_disk(payload.summary()):
            raise NoteNotFound(f"no note with id {note_id[:200]!r} in space {name}")
        outgoing, backlinking = space.graph.links(note_id)
        linked = stored_notes.payloads_by_id(
            space.lexical, {link.target_id for link in outgoing if link.target_id} | set(backlinking)
        )
        links: list[NoteLink] = []
        dangling: list[NoteLink] = []
        for link in outgoing:
            target = linked.get(link.target_id) if link.target_id else None
            entry = NoteLink(link.target, link.heading, link.alias, target.summary() if target else None)
            (links if target else dangling).append(entry)
        backlinks = tuple(linked[i].summary() for i in backlinking if i in linked)
        text = read_markdown(space.config.path, payload.path, self.settings.max_file_bytes) if content else None
        record = metadata.record(payload, self.settings.activation_fields)
        body = body_of(text) if text is not None else None
        return NoteDetail(record, tuple(links), tuple(dangling), backlinks, text, body, space.open_url(payload.path))

    def space_status(self, name: str) -> SpaceStatus:
        """One space's status (`/spaces/{space}/status`)."""
        return self.space(name).status()

    def ready(self, name: str) -> bool:
        """Whether the space's index holds every note (answers are not `partial`)."""
        return self.space(name).ready

    def unopened(self) -> dict[str, str]:
        """The spaces that could not open, and why (they are tried again by themselves)."""
        return {name: unopened.reason for name, unopened in self.registry.unopened.items()}

    @guarded
    def resolve_link(self, name: str, target: str) -> str | None:
        """The id of the note a link `[[target]]` written nowhere in particular
        opens (path, file name, title or alias, ignoring case and accents:
        graph/links.py), as the space's own links resolve; None when none."""
        return self.space(name).graph.resolve(target)  # read once, kept in step by the writer

    @guarded
    def highlights(
        self, name: str, query: str, text: str, limit: int, max_words: int, note_id: str = ""
    ) -> tuple[TextRange, ...]:
        """Where a query's words occur in `text` (the rendered text of the note
        `note_id`, for the page's preview), found as search and its snippets
        find them: the note's language's analyzer, typed filters (`tag:x`…)
        left out. Bounded as `lexical.highlights` says."""
        words = typed_filters.parse(query).text
        return lexical.highlights(self.space(name).lexical, words, text, limit, max_words, note_id)

    @guarded
    def values(self, name: str, kind: str, prefix: str, limit: int) -> list[tuple[str, int]]:
        """Completion of a typed filter's value: the space's tags, folders or
        file names (`kind`) starting with `prefix` ignoring case, with how
        many notes each keeps, most first (lexical/values.py)."""
        space = self.space(name)
        check_limit(limit)
        if kind not in lexical_values.FIELDS:
            raise InvalidParameter(f"field must be one of {', '.join(lexical_values.FIELDS)}")
        if len(prefix) > MAX_PREFIX_CHARS:
            raise InvalidParameter(f"prefix: at most {MAX_PREFIX_CHARS} characters")
        return lexical_values.values(space.lexical, kind, prefix, limit)

    @guarded
    def activations(self, name: str, filters: FeedFilter, since: datetime | None, limit: int) -> list[NoteRecord]:
        space = self.space(name)
        check_limit(limit)
        found = metadata.activated_since(space.lexical, space_filters(space, filters), since, limit)
        return [record for record in found if space.on_disk(record.note)]


def read_markdown(root: Path, rel_path: str, max_bytes: int) -> str | None:
    """A note's file as Markdown for people, read-only: a Markdown note's text,
    what another format shows of its file (a canvas's cards, a PDF's pages:
    notes/formats.py, `shown`). None when it is gone, not inside the space
    (the path comes from the index, but a symlink may have moved: opened, then
    checked, as indexing reads it, scan.open_note), no longer readable, or
    not readable now (every PDFium process busy: the request does not wait)."""
    fmt = formats.for_path(rel_path)
    limit = max_bytes if fmt is None else formats.byte_limit(fmt, max_bytes)
    try:
        with open_note(os.path.realpath(root), rel_path) as stream:
            raw = stream.read(limit + 1)
    except OSError:  # gone, unreadable, or OutsideSpace
        return None
    truncated = len(raw) > limit
    raw = raw[:limit]
    if fmt is None or fmt is formats.MARKDOWN:
        return raw.decode("utf-8-sig", errors="replace")
    try:
        return formats.shown(raw, rel_path, truncated=truncated)
    except (formats.NotANote, formats.ReadLater) as exc:  # no longer readable, or not now (PDFium busy)
        log.info("note_not_shown", path=rel_path, reason=str(exc))
        return None
