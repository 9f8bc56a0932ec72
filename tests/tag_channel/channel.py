"""The tag channel: a query word that is one of a note's tags (`#zanzibar`,
or `tags: [zanzibar]`) finds the note, ranked by how many of the query's
words it is tagged with. Its index (tag → notes) is derived from the lexical
index as the link graph is: built from the committed notes, kept in step
with each pass on the writer (`after_lexical`), and on a follower with each
entry of the writer's change journal."""

from __future__ import annotations

import threading
import unicodedata
from collections import Counter

from notarium_search.channel import ChannelHooks
from notarium_search.index.channels import ChannelContext, Role
from notarium_search.lexical import search as lexical
from notarium_search.lexical import stored as stored_notes
from notarium_search.lexical.store import LexicalIndex
from notarium_search.types import ChannelHit, ChannelQuery, ChannelResult, ChannelState, ChannelStatus, Snippet

NAME = "tags"


def fold(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word.casefold().lstrip("#"))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


class TagChannel(ChannelHooks):
    name = NAME

    def __init__(self, index: LexicalIndex) -> None:
        self.index = index
        self.tags: dict[str, set[str]] = {}  # folded tag -> note ids
        self.of_note: dict[str, set[str]] = {}  # note id -> its folded tags
        self.built = False
        self.writers: ChannelStatus | None = None  # on a follower: the writer's, as published
        self._lock = threading.Lock()

    @classmethod
    def open(cls, context: ChannelContext) -> TagChannel | None:
        """The registered opener: none for a reader (nothing follows its
        index); a follower reads the committed notes now, as the graph does."""
        if context.role is Role.READER:
            return None
        channel = cls(context.lexical)
        if not context.writes:
            channel.rebuild()
        return channel

    # -- lifecycle --------------------------------------------------------

    def after_lexical(self, changed: set[str], deleted: set[str]) -> None:
        if not self.built:
            self.rebuild()
            return
        payloads = stored_notes.payloads_by_id(self.index, changed)
        with self._lock:
            for note_id in deleted | (changed - set(payloads)):
                self._forget(note_id)
            for payload in payloads.values():
                self._forget(payload.id)
                self._add(payload.id, payload.tags)

    def rebuild(self) -> None:
        with self._lock:
            self.tags, self.of_note = {}, {}
            for payload in stored_notes.all_payloads(self.index):
                self._add(payload.id, payload.tags)
            self.built = True

    def follow(self, published: ChannelStatus | None) -> bool:
        self.writers = published
        return False

    def _add(self, note_id: str, tags: tuple[str, ...]) -> None:
        folded = {fold(tag) for tag in tags}
        self.of_note[note_id] = folded
        for tag in folded:
            self.tags.setdefault(tag, set()).add(note_id)

    def _forget(self, note_id: str) -> None:
        for tag in self.of_note.pop(note_id, set()):
            self.tags.get(tag, set()).discard(note_id)

    # -- answers ----------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self.built

    @property
    def building(self) -> bool:
        return not self.built

    def why_not_ready(self) -> str:
        return "reading the notes' tags"

    def search(self, query: ChannelQuery) -> ChannelResult:
        allowed = lexical.note_ids_matching(self.index, query.filters)
        counts: Counter[str] = Counter()
        with self._lock:
            for word in {fold(w) for w in query.text.split()}:
                counts.update(self.tags.get(word, set()))
        ranked = [n for n, _ in sorted(counts.items(), key=lambda c: (-c[1], c[0])) if allowed is None or n in allowed]
        notes = stored_notes.summaries_by_id(self.index, ranked[: query.depth])
        hits = tuple(
            ChannelHit(notes[n], float(counts[n]), (), reason="tagged with the query") for n in ranked if n in notes
        )
        return ChannelResult(NAME, hits[: query.depth])

    def snippets(self, hit: ChannelHit) -> tuple[Snippet, ...]:
        return ()

    def caveat(self, result: ChannelResult) -> str | None:
        return None

    def status(self) -> ChannelStatus:
        if self.writers is not None and self.writers.state != ChannelState.READY:
            return self.writers
        if not self.built:
            return ChannelStatus(ChannelState.BUILDING, "reading the notes' tags")
        return ChannelStatus(ChannelState.READY, total=len(self.of_note))
