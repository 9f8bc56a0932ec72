"""The wiki-link graph of one space, kept in step with its lexical index, and
the graph channel's answer to a query (GRAPH_BOOST).

With GRAPH_BOOST the graph is read from the notes at start; without it, at
the first request that needs links (the note endpoint), so that a service
that never asks pays no memory for it (~27 MiB at 10,000 notes). Once built,
the writer thread updates it after each lexical pass, from the committed
notes; request threads read it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from notarium_search.channel import ChannelHooks
from notarium_search.graph.links import LinkGraph, NoteLinks
from notarium_search.graph.ranking import explain, rank_neighbours
from notarium_search.lexical import search as lexical
from notarium_search.lexical.store import LexicalIndex
from notarium_search.logsetup import get_logger
from notarium_search.types import ChannelHit, ChannelQuery, ChannelResult, ChannelState, ChannelStatus, Snippet

CHANNEL = "graph"

log = get_logger(__name__)


class GraphChannel(ChannelHooks):
    name = CHANNEL
    needs = frozenset({"seeds"})  # it follows links from the notes the text channels found

    def __init__(self, space_name: str, lexical_index: LexicalIndex, enabled: bool, k: float) -> None:
        """`k`: the fusion's RRF constant, with which a seed's rank weighs its neighbours."""
        self.space_name = space_name
        self.lexical = lexical_index
        self.enabled = enabled
        self.k = k
        self.graph = LinkGraph()
        self.built = False
        # Held while the graph is read from the notes and while the writer applies
        # a pass: a build on a request thread then never misses a pass.
        self._build_lock = threading.Lock()
        self._writers: ChannelStatus | None = None  # on a follower: the writer's graph, as it published it

    # -- writer thread -----------------------------------------------------

    def after_lexical(self, changed: Iterable[str], deleted: Iterable[str]) -> None:
        """With the channel on, the first call reads every note; once built,
        a call applies what changed."""
        with self._build_lock:
            if not self.built:
                if self.enabled:
                    self._build()
                return
            self._apply(set(changed), set(deleted))

    def rebuild(self) -> None:
        """Read every note's links again (after a full reindex), if the graph is in use."""
        with self._build_lock:
            if self.built or self.enabled:
                self.graph = LinkGraph()
                self._build()

    def ensure_built(self) -> None:
        """Read the graph now if nothing has yet (a request that needs links)."""
        if not self.built:
            with self._build_lock:
                if not self.built:
                    self._build()

    def _apply(self, changed: set[str], deleted: set[str]) -> None:
        payloads = lexical.payloads_by_id(self.lexical, changed)
        for note_id in set(deleted) | (changed - set(payloads)):
            self.graph.remove(note_id)
        for payload in payloads.values():
            self.graph.upsert(NoteLinks.of(payload))

    def _build(self) -> None:
        for payload in lexical.all_payloads(self.lexical):
            self.graph.upsert(NoteLinks.of(payload))
        self.built = True
        stats = self.graph.stats()
        log.info("graph_built", space=self.space_name, notes=stats.notes, links=stats.links, dangling=stats.dangling)

    # -- readers -----------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self.enabled and self.built

    @property
    def building(self) -> bool:
        return self.enabled and not self.built

    def why_not_ready(self) -> str:
        return "GRAPH_BOOST is off" if not self.enabled else "reading the notes' links"

    def follow(self, published: ChannelStatus | None) -> bool:
        """A follower's graph follows its own searcher (the journal's changes:
        `after_lexical`); while the writer reads the links, its status says so."""
        self._writers = published
        return False

    def status(self) -> ChannelStatus:
        if self._writers is not None and self._writers.state != ChannelState.READY:
            return self._writers
        stats = self.graph.stats() if self.built else None
        links = stats.links if stats else None
        dangling = stats.dangling if stats else None
        if not self.enabled:
            state, reason = ChannelState.DISABLED, None
        elif not self.built:
            state, reason = ChannelState.BUILDING, "reading the notes' links"
        else:
            state, reason = ChannelState.READY, None
        return ChannelStatus(state, reason, links=links, dangling=dangling)

    def search(self, query: ChannelQuery) -> ChannelResult:
        """Notes linked with the best text hits (`query.seeds`, best first, as
        many as the caller wants to seed with)."""
        allowed = lexical.note_ids_matching(self.lexical, query.filters)
        seeds = [note.id for note in query.seeds]
        titles = {note.id: note.title for note in query.seeds}
        neighbours = rank_neighbours(self.graph, seeds, self.k, len(seeds))
        ranked = [h for h in neighbours if allowed is None or h.note_id in allowed][: query.depth]
        notes = lexical.summaries_by_id(self.lexical, [h.note_id for h in ranked])
        hits = tuple(
            ChannelHit(notes[h.note_id], h.score, (), reason=explain(h, titles))
            for h in ranked
            if h.note_id in notes  # deleted since the graph was read
        )
        return ChannelResult(CHANNEL, hits)

    def snippets(self, hit: ChannelHit) -> tuple[Snippet, ...]:
        return ()  # a link says nothing of the query's words: text channels' snippets are shown

    def caveat(self, result: ChannelResult) -> str | None:
        return None  # it follows notes that passed a text channel; hubs are weighed down in its scores
