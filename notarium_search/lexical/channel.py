"""The lexical channel of one space: BM25 over its Tantivy index, always on.

It answers from the last commit, also while a pass is indexing (answers then
say `partial`); its status is the writer's passes' (index/passes.py): their
progress, why the last one failed, why the index was last rebuilt.
"""

from __future__ import annotations

import time
from typing import Protocol

from notarium_search.channel import ChannelHooks
from notarium_search.lexical import search as lexical
from notarium_search.lexical.store import LexicalIndex
from notarium_search.settings import RankingConfig
from notarium_search.types import (
    ChannelHit,
    ChannelQuery,
    ChannelResult,
    ChannelState,
    ChannelStatus,
    IndexProgress,
    IndexState,
    LexicalStatus,
    Snippet,
)

CHANNEL = lexical.CHANNEL


class PassView(Protocol):
    """The writer's lexical passes, as the channel reports them."""

    @property
    def progress(self) -> IndexProgress:
        """The current (or last) pass's counters."""

    @property
    def failure(self) -> str | None:
        """Why the last pass failed (with when it is retried), or None."""

    @property
    def repaired(self) -> str | None:
        """Why the index was last found damaged and rebuilt, or None."""


class LexicalChannel(ChannelHooks):
    def __init__(self, index: LexicalIndex, ranking: RankingConfig, passes: PassView | None) -> None:
        """`passes`: the writer's (None in a process that runs none: it reads
        what another wrote, and says nothing of that writer's passes)."""
        self.index = index
        self.ranking = ranking
        self.passes = passes

    @property
    def name(self) -> str:
        return CHANNEL

    @property
    def ready(self) -> bool:
        return True  # the last commit answers, even while a pass indexes

    @property
    def building(self) -> bool:
        return self.passes is not None and self.passes.progress.state == IndexState.BUILDING

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

    def indexing(self) -> LexicalStatus:
        """The documented `lexical` part of /status: the pass's counters."""
        progress = self.passes.progress if self.passes is not None else IndexProgress(state=IndexState.READY)
        rate, eta = rate_and_eta(progress)
        failure = self.passes.failure if self.passes is not None else None
        repaired = self.passes.repaired if self.passes is not None else None
        return LexicalStatus(
            state=progress.state,
            indexed=progress.done,
            total=progress.total,
            notes_per_second=rate,
            eta_seconds=eta,
            last_indexed=progress.last_indexed,
            error=failure,
            repaired=repaired,
        )

    def status(self) -> ChannelStatus:
        return generic_status(self.indexing())


def generic_status(indexing: LexicalStatus) -> ChannelStatus:
    """The lexical part of /status in every channel's shape (`channels`)."""
    state = {IndexState.READY: ChannelState.READY, IndexState.BUILDING: ChannelState.BUILDING}.get(
        indexing.state, ChannelState.UNAVAILABLE
    )
    return ChannelStatus(
        state,
        indexing.error or indexing.repaired,
        total=indexing.total,
        per_second=indexing.notes_per_second,
        eta_seconds=indexing.eta_seconds,
    )


def rate_and_eta(progress: IndexProgress) -> tuple[float | None, float | None]:
    end = progress.finished_at or time.monotonic()
    elapsed = end - progress.started_at
    if progress.done == 0 or elapsed <= 0:
        return None, None
    rate = progress.done / elapsed
    remaining = max(progress.total - progress.done, 0)
    eta = remaining / rate if progress.state == IndexState.BUILDING else 0.0
    return round(rate, 1), round(eta, 1)
