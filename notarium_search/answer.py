"""A search of one open space, and its answer assembled from the channels'
results: the channels asked in their stages, the fused ranking with its
notes, the kept notes' snippets, and each hit's editor link.

`search` is what `Service.search` does once it has the space; the command
line's `search` (offline.py) calls it on a space it opened read-only,
without the service and what the service imports (issue 34)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from msgspec.structs import replace

from notarium_search import typed_filters
from notarium_search.channel import Channel
from notarium_search.errors import InvalidParameter
from notarium_search.fusion import (
    CANDIDATES_PER_CHANNEL,
    FETCH_SLACK,
    GRAPH_SEEDS,
    PHRASE_DEPTH,
    Fused,
    carried,
    enough_snippets,
    found_by,
    hits,
    kept,
    merge_snippets,
    ranking,
)
from notarium_search.lexical import search as lexical
from notarium_search.lexical import stored as stored_notes
from notarium_search.types import (
    ChannelQuery,
    ChannelResult,
    FeedFilter,
    NoteSummary,
    SearchHit,
    SearchResponse,
    Snippet,
)

if TYPE_CHECKING:
    from notarium_search.index.space import Space

MAX_LIMIT = 100
SORTS = ("relevance", "updated", "created")
# A read-only process (`notarium-search search`) opens no semantic channel: it
# would load the model (~1-2 s) for one query, against a ~0.2 s start
# (docs/benchmarks.md). With VECTOR_SEARCH on, the answer says so instead of
# silently answering by keywords alone.
READ_ONLY_WITHOUT_MEANING = (
    "not loaded by `notarium-search search`, which answers with keywords (and links) to start fast;"
    " the running service searches by meaning too"
)

# The query's embedding for the channels that need one ("vector"), given the
# space, the query's words, when the search started (its deadline runs from
# then) and where to say why there is none; None: no vector for this query.
QueryVector = Callable[["Space", str, float, dict[str, str]], Any]


def search(
    space: Space,
    text: str,
    filters: FeedFilter,
    limit: int,
    sort: str = "relevance",
    *,
    vector: QueryVector | None = None,
    answered: Callable[[], None] | None = None,
) -> SearchResponse:
    """Ranked notes for the query (its typed filters applied: typed_filters.py);
    a query of filters alone lists the notes they allow, newest first.
    `sort`: "relevance", or "updated"/"created" (the same notes, newest first).
    `vector`: the query's embedding (None: this process has no model, as a
    read-only one); `answered`: called once a ranked answer is made (the
    service notes its activity). The caller reads under `reading(space)`."""
    check_limit(limit)
    if sort not in SORTS:
        raise InvalidParameter(f"sort must be one of {', '.join(SORTS)}")
    typed = typed_filters.parse(text)
    narrowed = typed.narrow(filters)
    if typed.filters and not typed.text.strip():
        answer = _filtered(space, narrowed, limit)
    else:
        answer = _ranked(space, typed.text, narrowed, limit, vector, answered)
    results = answer.results
    if sort != "relevance":
        results = tuple(sorted(results, key=lambda hit: getattr(hit.note, sort), reverse=True))
    if space.editor_template is not None:
        results = tuple(replace(hit, open_url=open_url(space, hit)) for hit in results)
    return replace(answer, results=results, query=text, filters=typed.filters)


def check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidParameter(f"limit must be between 1 and {MAX_LIMIT}")


def space_filters(space: Space, filters: FeedFilter) -> FeedFilter:
    """The filters with the configured activation fields, collections checked."""
    known = space.config.collections
    unknown = [c for c in filters.collections if c not in {k.name for k in known}]
    if unknown:
        names = ", ".join(k.name for k in known) or "none defined"
        raise InvalidParameter(f"unknown collection {unknown[0][:100]!r} in space {space.name} ({names})")
    return replace(filters, activation_fields=space.settings.activation_fields)


def _filtered(space: Space, filters: FeedFilter, limit: int) -> SearchResponse:
    """The notes the filters allow, newest first (a query of filters alone)."""
    started = time.perf_counter()
    page = lexical.feed(space.lexical, "", space_filters(space, filters), limit, None, space.cursors)
    found = tuple(SearchHit(note, 0.0, (), {}) for note in page.items if space.on_disk(note))
    took = round((time.perf_counter() - started) * 1000, 3)
    return SearchResponse("", found, ("lexical",), {}, (), not space.ready, took)


def _answering(space: Space, text: str, degraded: dict[str, str]) -> list[Channel]:
    """The space's channels that answer this query, in order: the lexical
    channel always; the others when they can now (else `degraded` says why)."""
    if not text.strip():
        return [space.lexical_channel]
    if space.settings.vector_search and space.semantic is None:
        degraded["semantic"] = READ_ONLY_WITHOUT_MEANING
    answering = []
    for channel in space.channels:
        if channel.ready:
            answering.append(channel)
        else:
            degraded[channel.name] = channel.why_not_ready()
    return answering


def _ranked(
    space: Space,
    text: str,
    filters: FeedFilter,
    limit: int,
    vector_of: QueryVector | None,
    answered: Callable[[], None] | None,
) -> SearchResponse:
    """The channels in their stages (index/channels.py): those that need
    the text alone or the query's embedding, then those that need their
    best notes as seeds; fused."""
    started = time.perf_counter()
    degraded: dict[str, str] = {}
    answering = _answering(space, text, degraded)
    vector = None
    if any("vector" in c.needs for c in answering):
        vector = vector_of(space, text, started, degraded) if vector_of is not None else None
        if vector is None:
            answering = [c for c in answering if "vector" not in c.needs]
    fused = len(answering) > 1
    depth = max(limit, CANDIDATES_PER_CHANNEL) if fused else limit
    query = ChannelQuery(
        text,
        space_filters(space, filters),
        depth,
        snippet_depth=0 if fused else limit,  # fused: cut for the kept hits only, below
        phrase_depth=PHRASE_DEPTH if fused else 0,
        vector=vector,
    )
    channels = [c for c in answering if "seeds" not in c.needs]
    results = [channel.search(query) for channel in channels]
    seeded = [c for c in answering if "seeds" in c.needs]
    if seeded:
        # Links are followed from the best text hits, fused as the user would see them.
        ranked, notes = fused_notes(space, results, GRAPH_SEEDS)
        seeds = tuple(notes[note_id] for note_id in kept(ranked, notes, GRAPH_SEEDS))
        channels += seeded
        results += [channel.search(replace(query, seeds=seeds)) for channel in seeded]
    ranked, notes = fused_notes(space, results, limit)
    snippets = answer_snippets(channels, results, kept(ranked, notes, limit))
    if answered is not None:
        answered()
    return SearchResponse(
        query=text,
        results=tuple(h for h in hits(results, ranked, notes, snippets, limit) if space.on_disk(h.note)),
        channels_used=tuple(r.channel for r in results) if text.strip() else (),
        degraded=degraded,
        unmatched_terms=results[0].unmatched_terms,
        # A channel that answered from part of its index (vectors still embedding) makes it partial
        # too; the lexical channel's part is space.ready (a reader runs no pass).
        partial=not space.ready or any(c.building for c in channels if c is not space.lexical_channel),
        took_ms=round((time.perf_counter() - started) * 1000, 3),
        caveats={r.channel: why for c, r in zip(channels, results, strict=True) if (why := c.caveat(r))},
    )


def fused_notes(space: Space, results: list[ChannelResult], count: int) -> tuple[list[Fused], dict[str, NoteSummary]]:
    """The fused ranking's first `count` (and FETCH_SLACK more, standing in
    for notes deleted since a channel listed them), with their notes: those
    the hits carry, and those fetched from the lexical index."""
    ranked = ranking(results, space.settings.fusion)[: count + FETCH_SLACK]
    notes, missing = carried(results, ranked)
    if missing:
        notes.update(stored_notes.summaries_by_id(space.lexical, missing))
    return ranked, notes


def answer_snippets(
    channels: Sequence[Channel], results: Sequence[ChannelResult], note_ids: Sequence[str]
) -> dict[str, tuple[Snippet, ...]]:
    """The snippets of the answer's notes: a single channel's own, whole;
    with several, each channel's in turn (lexical first), cut only while the
    earlier ones leave room (fusion.merge_snippets)."""
    single = sum(1 for r in results if r.hits) == 1
    found = found_by(results)
    by_name = {channel.name: channel for channel in channels}
    out: dict[str, tuple[Snippet, ...]] = {}
    for note_id in note_ids:
        per_channel: list[tuple[Snippet, ...]] = []
        for name, hit in found[note_id].items():
            if not single and enough_snippets(per_channel):
                break
            per_channel.append(hit.snippets or by_name[name].snippets(hit))
        out[note_id] = per_channel[0] if single else merge_snippets(per_channel)
    return out


def open_url(space: Space, hit: SearchHit) -> str | None:
    """The hit's editor link, at its best match (its first snippet placed in the body)."""
    best = hit.placed()
    if best is None:
        return space.open_url(hit.note.path)
    return space.open_url(hit.note.path, best.heading[-1] if best.heading else "", best.line)
