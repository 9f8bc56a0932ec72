"""The lexical channel of one space: BM25 over its Tantivy index, always on.

It answers from the last commit, also while a pass is indexing (answers then
say `partial`); its status is the indexing pass's progress, which the space's
indexer owns.
"""

from __future__ import annotations

from collections.abc import Callable

from notarium_search.lexical import search as lexical
from notarium_search.lexical.store import LexicalIndex
from notarium_search.settings import RankingConfig
from notarium_search.types import ChannelHit, ChannelQuery, ChannelResult, IndexProgress, IndexState, Snippet

CHANNEL = lexical.CHANNEL


class LexicalChannel:
    def __init__(self, index: LexicalIndex, ranking: RankingConfig, progress: Callable[[], IndexProgress]) -> None:
        self.index = index
        self.ranking = ranking
        self._progress = progress  # the current pass's counters (the indexer replaces them per pass)

    @property
    def name(self) -> str:
        return CHANNEL

    @property
    def ready(self) -> bool:
        return True  # the last commit answers, even while a pass indexes

    @property
    def building(self) -> bool:
        return self._progress().state == IndexState.BUILDING

    def why_not_ready(self) -> str:
        return "always ready"

    def search(self, query: ChannelQuery) -> ChannelResult:
        return lexical.search(
            self.index,
            query.text,
            query.filters,
            query.depth,
            self.ranking,
            snippet_depth=query.snippet_depth,
            phrase_depth=query.phrase_depth,
        )

    def snippets(self, hit: ChannelHit) -> tuple[Snippet, ...]:
        return lexical.snippets_of(self.index, hit)

    def caveat(self, result: ChannelResult) -> str | None:
        return None  # a word matched is a match: there is no floor
