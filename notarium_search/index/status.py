"""What a space says of itself (`GET /spaces/{space}/status`): the pieces
Space.status() assembles from its indexes. No I/O."""

from __future__ import annotations

import time
from typing import Protocol

from notarium_search.types import Channel, IndexProgress, IndexState, LexicalStatus

BUILDING_MESSAGE = "Building search index…"


def rate_and_eta(progress: IndexProgress) -> tuple[float | None, float | None]:
    end = progress.finished_at or time.monotonic()
    elapsed = end - progress.started_at
    if progress.done == 0 or elapsed <= 0:
        return None, None
    rate = progress.done / elapsed
    remaining = max(progress.total - progress.done, 0)
    eta = remaining / rate if progress.state == IndexState.BUILDING else 0.0
    return round(rate, 1), round(eta, 1)


def lexical_status(progress: IndexProgress, error: str | None, repaired: str | None) -> LexicalStatus:
    rate, eta = rate_and_eta(progress)
    return LexicalStatus(
        state=progress.state,
        indexed=progress.done,
        total=progress.total,
        notes_per_second=rate,
        eta_seconds=eta,
        last_indexed=progress.last_indexed,
        error=error,
        repaired=repaired,
    )


class DerivedChannel(Channel, Protocol):
    """A channel built from the lexical index (semantic, graph): the space's
    writer thread keeps it in step with each pass."""

    @property
    def has_work(self) -> bool:
        """Whether it has work to do between the writer's jobs (embedding)."""

    def work_slice(self) -> None:
        """One bounded slice of that work, on the writer thread."""

    def after_lexical(self, changed: set[str], deleted: set[str]) -> None:
        """Follow a pass: these notes were (re)indexed, these deleted."""

    def rebuild(self) -> None:
        """Every note was read again (a full reindex, a repair): read them all again."""
