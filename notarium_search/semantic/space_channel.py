"""The semantic channel of one space: its state, its share of the writer
thread's work, and its queries.

State machine (reported by `/status`): `building` (model loading, then
fragments being embedded) → `ready`; `unavailable` with the reason when the
model cannot be had. Writes happen only on the space's writer thread, in
slices, so that lexical updates never wait for a long embedding build.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import structlog

from notarium_search.embedding import Embedder
from notarium_search.lexical import search as lexical
from notarium_search.lexical.store import LexicalIndex
from notarium_search.models import ChannelResult, ChannelState, ChannelStatus, FeedFilter
from notarium_search.semantic import channel
from notarium_search.semantic.index import SemanticIndex

SLICE_FRAGMENTS = 64  # embedded between two looks at the writer's queue (~2 s on 2 cores)

log = structlog.get_logger(__name__)


class SemanticChannel:
    def __init__(self, space: str, directory: Path, lexical_index: LexicalIndex) -> None:
        self.space = space
        self.directory = directory
        self.lexical = lexical_index
        self.index: SemanticIndex | None = None
        self.unavailable: str | None = None
        self._build_started = time.monotonic()

    # -- writer thread -----------------------------------------------------

    def attach(self, embedder: Embedder) -> None:
        """Open (or rebuild) the vector index, then plan every note's fragments."""
        self.index = SemanticIndex(self.directory, embedder)
        self.replan()

    def replan(self) -> None:
        """Plan every note's fragments again, forgetting notes that are gone."""
        assert self.index is not None
        notes = [payload.to_note() for payload in lexical.all_payloads(self.lexical)]
        self.index.forget_missing({note.id for note in notes})
        self.index.plan(notes)
        self._build_started = time.monotonic()
        self.index.progress.embedded = 0
        if not self.index.has_pending:
            self.index.checkpoint()
        log.info("semantic_planned", space=self.space, pending=self.index.progress.pending, vectors=self.index.size())

    def after_lexical(self, changed: set[str], deleted: set[str]) -> None:
        if self.index is None or not (changed or deleted):
            return
        payloads = lexical.payloads_by_id(self.lexical, changed)
        self.index.plan([p.to_note() for p in payloads.values()], deleted | (changed - set(payloads)))
        if not self.index.has_pending:
            self.index.checkpoint()

    @property
    def has_work(self) -> bool:
        return self.index is not None and self.index.has_pending

    def work_slice(self) -> None:
        assert self.index is not None
        if self.index.embed_pending(SLICE_FRAGMENTS) and not self.index.has_pending:
            log.info("semantic_ready", space=self.space, vectors=self.index.size())

    # -- readers -----------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self.index is not None and not self.index.has_pending

    def why_not_ready(self) -> str:
        if self.unavailable:
            return self.unavailable
        if self.index is None:
            return "model loading"
        progress = self.index.progress
        done = progress.embedded
        return f"index building: {done}/{done + progress.pending} fragments embedded"

    def status(self) -> ChannelStatus:
        if self.unavailable:
            return ChannelStatus(ChannelState.UNAVAILABLE, self.unavailable)
        if self.index is None:
            return ChannelStatus(ChannelState.BUILDING, "model loading")
        progress = self.index.progress
        total = progress.embedded + progress.pending
        if not progress.pending:
            size = self.index.size()  # every fragment of the space has its vector
            return ChannelStatus(ChannelState.READY, self.index.repaired, embedded=size, total=size)
        elapsed = max(time.monotonic() - self._build_started, 1e-6)
        rate = progress.embedded / elapsed
        eta = progress.pending / rate if rate > 0 else None
        return ChannelStatus(
            ChannelState.BUILDING,
            self.index.repaired,
            embedded=progress.embedded,
            total=total,
            per_second=round(rate, 1),
            eta_seconds=round(eta, 1) if eta is not None else None,
        )

    def related(
        self, note_id: str, limit: int, min_seconds_apart: float, allowed: set[str] | None = None
    ) -> list[channel.Echo]:
        assert self.index is not None
        return channel.related(self.index, self.lexical, note_id, limit, min_seconds_apart, allowed)

    def search(
        self, query: np.ndarray, text: str, filters: FeedFilter, limit: int, snippet_depth: int | None = None
    ) -> ChannelResult:
        assert self.index is not None
        return channel.search(self.index, self.lexical, query, text, filters, limit, snippet_depth)
