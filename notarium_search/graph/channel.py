"""The wiki-link graph of one space, kept in step with its lexical index, and
the graph channel's answer to a query (GRAPH_BOOST).

With GRAPH_BOOST the graph is read from the notes at start; without it, at
the first request that needs links (the note endpoint), so that a service
that never asks pays no memory for it (~27 MiB at 10,000 notes). Once built,
the writer thread updates it after each lexical pass, from the committed
notes; request threads read it.

A follower of a `serve` whose writer serves its graph (graph/remote.py)
holds none: it asks the writer (`remote`), one question a query.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from notarium_search.channel import ChannelHooks
from notarium_search.errors import ChannelUnavailable
from notarium_search.graph.links import Link, LinkGraph, NoteLinks
from notarium_search.graph.ranking import GraphHit, explain, rank_neighbours
from notarium_search.lexical import search as lexical
from notarium_search.lexical import stored as stored_notes
from notarium_search.lexical.store import LexicalIndex
from notarium_search.logsetup import get_logger
from notarium_search.types import ChannelHit, ChannelQuery, ChannelResult, ChannelState, ChannelStatus, Snippet

if TYPE_CHECKING:
    # Imported where a socket is in use (a serve's workers): `notarium-search
    # search` opens this channel too, and the socket modules cost it ~6.5 ms.
    from notarium_search.graph.remote import Answer, Question, RemoteGraph

CHANNEL = "graph"

log = get_logger(__name__)


class GraphChannel(ChannelHooks):
    name = CHANNEL
    needs = frozenset({"seeds"})  # it follows links from the notes the text channels found

    def __init__(
        self, space_name: str, lexical_index: LexicalIndex, enabled: bool, k: float, remote: RemoteGraph | None = None
    ) -> None:
        """`k`: the fusion's RRF constant, with which a seed's rank weighs its
        neighbours. `remote`: the writer's graph, asked instead of one read here."""
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
        self.remote = remote
        # A follower whose writer did not answer: why, until a look finds it listening again (`follow`).
        self._unreachable: str | None = None

    # -- writer thread -----------------------------------------------------

    def after_lexical(self, changed: Iterable[str], deleted: Iterable[str]) -> None:
        """With the channel on, the first call reads every note; once built,
        a call applies what changed."""
        if self.remote is not None:
            return  # the writer's graph followed its own pass
        with self._build_lock:
            if not self.built:
                if self.enabled:
                    self._build()
                return
            self._apply(set(changed), set(deleted))

    def rebuild(self) -> None:
        """Read every note's links again (after a full reindex), if the graph is in use."""
        if self.remote is not None:
            return
        with self._build_lock:
            if self.built or self.enabled:
                self.graph = LinkGraph()
                self._build()

    def ensure_built(self) -> None:
        """Read the graph now if nothing has yet (a request that needs links)."""
        if not self.built and self.remote is None:
            with self._build_lock:
                if not self.built:
                    self._build()

    def _apply(self, changed: set[str], deleted: set[str]) -> None:
        payloads = stored_notes.links_by_id(self.lexical, changed)
        for note_id in set(deleted) | (changed - set(payloads)):
            self.graph.remove(note_id)
        for payload in payloads.values():
            self.graph.upsert(NoteLinks.of(payload))

    def _build(self) -> None:
        for payload in stored_notes.all_links(self.lexical):
            self.graph.upsert(NoteLinks.of(payload))
        self.built = True
        stats = self.graph.stats()
        log.info("graph_built", space=self.space_name, notes=stats.notes, links=stats.links, dangling=stats.dangling)

    # -- readers -----------------------------------------------------------

    @property
    def ready(self) -> bool:
        if self.remote is not None:
            writers = self._writers
            return (
                self.enabled
                and self._unreachable is None
                and writers is not None
                and writers.state == ChannelState.READY
            )
        return self.enabled and self.built

    @property
    def building(self) -> bool:
        if self.remote is not None:
            writers = self._writers
            return (
                self.enabled
                and self._unreachable is None
                and (writers is None or writers.state == ChannelState.BUILDING)
            )
        return self.enabled and not self.built

    def why_not_ready(self) -> str:
        if not self.enabled:
            return "GRAPH_BOOST is off"
        return self._unreachable or "reading the notes' links"

    def follow(self, published: ChannelStatus | None) -> bool:
        """A follower's graph follows its own searcher (the journal's changes:
        `after_lexical`), or is its writer's (`remote`); while the writer reads
        the links, its status says so. A writer that did not answer is looked
        for again at each look."""
        self._writers = published
        if self._unreachable is not None and self.remote is not None and self.remote.reachable():
            log.info("graph_writer_reachable", space=self.space_name)
            self._unreachable = None
        return False

    def status(self) -> ChannelStatus:
        if self._unreachable is not None and self.enabled:
            return ChannelStatus(ChannelState.UNAVAILABLE, self._unreachable)
        if self._writers is not None and (self.remote is not None or self._writers.state != ChannelState.READY):
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

    def links(self, note_id: str) -> tuple[tuple[Link, ...], tuple[str, ...]]:
        """A note's outgoing links (`target_id` None: dangling) and the notes
        linking to it, sorted; the graph read first if nothing has yet.
        `ChannelUnavailable` when the writer that holds it does not answer."""
        if self.remote is not None:
            from notarium_search.graph.remote import LinksOf

            answer = self._ask(LinksOf(note_id))
            return tuple(answer.outgoing), tuple(answer.backlinks)
        self.ensure_built()
        stored = stored_notes.links_by_id(self.lexical, [note_id]).get(note_id)
        written = stored.wikilinks() if stored is not None else ()
        return self.graph.outgoing(note_id, written), self.graph.backlinks(note_id)

    def resolve(self, target: str) -> str | None:
        """The note a link `[[target]]` written nowhere in particular opens, or None."""
        if self.remote is not None:
            from notarium_search.graph.remote import Resolve

            return self._ask(Resolve(target)).resolved
        self.ensure_built()
        return self.graph.resolve("", target)

    def search(self, query: ChannelQuery) -> ChannelResult:
        """Notes linked with the best text hits (`query.seeds`, best first, as
        many as the caller wants to seed with)."""
        allowed = lexical.note_ids_matching(self.lexical, query.filters)
        seeds = [note.id for note in query.seeds]
        titles = {note.id: note.title for note in query.seeds}
        try:
            # Cut by the writer when nothing filters them here: a hub's thousands
            # of neighbours were a 6.2 MB answer, decoded in 406 ms (50,000 notes).
            neighbours = self._neighbours(seeds, query.depth if allowed is None else None)
        except ChannelUnavailable as exc:
            # Said in this answer's caveats; from the next query on in `degraded`
            # too, while the writer does not answer.
            return ChannelResult(CHANNEL, (), unanswered=str(exc))
        ranked = [h for h in neighbours if allowed is None or h.note_id in allowed][: query.depth]
        notes = stored_notes.summaries_by_id(self.lexical, [h.note_id for h in ranked])
        hits = tuple(
            ChannelHit(notes[h.note_id], h.score, (), reason=explain(h, titles))
            for h in ranked
            if h.note_id in notes  # deleted since the graph was read
        )
        return ChannelResult(CHANNEL, hits)

    def snippets(self, hit: ChannelHit) -> tuple[Snippet, ...]:
        return ()  # a link says nothing of the query's words: text channels' snippets are shown

    def caveat(self, result: ChannelResult) -> str | None:
        # It follows notes that passed a text channel; hubs are weighed down in
        # its scores. A writer that did not answer this query's question is said.
        return result.unanswered

    # -- the writer's answers to its followers (graph/remote.py) --------------

    def answer(self, question: Question) -> Answer:
        """A follower's question, answered from this (the writer's) graph."""
        from notarium_search.graph.remote import Answer, LinksOf, Ping, Rank

        if isinstance(question, Ping):
            return Answer()
        if isinstance(question, Rank):
            if not self.ready:
                return Answer(refused=self.why_not_ready())
            hits = rank_neighbours(self.graph, question.seeds, self.k, len(question.seeds))
            return Answer(hits=hits[: question.limit])
        if isinstance(question, LinksOf):
            outgoing, backlinks = self.links(question.note_id)
            return Answer(outgoing=list(outgoing), backlinks=list(backlinks))
        return Answer(resolved=self.resolve(question.target))

    def _neighbours(self, seeds: list[str], limit: int | None) -> list[GraphHit]:
        if self.remote is None:
            return rank_neighbours(self.graph, seeds, self.k, len(seeds))
        from notarium_search.graph.remote import Rank

        return self._ask(Rank(seeds, limit)).hits

    def _ask(self, question: Question) -> Answer:
        from notarium_search.graph.remote import GraphUnreachable

        assert self.remote is not None
        try:
            answer = self.remote.ask(question)
        except GraphUnreachable as exc:
            self._unreachable = f"the space's writer holds its link graph and did not answer: {exc}"
            log.warning("graph_writer_unreachable", space=self.space_name, error=str(exc))
            raise ChannelUnavailable(self._unreachable) from exc
        self._unreachable = None  # it answered: no need to wait for the next look
        if answer.refused is not None:
            raise ChannelUnavailable(f"the space's writer could not answer about links: {answer.refused}")
        return answer
