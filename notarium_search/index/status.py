"""What a space says of itself (`GET /spaces/{space}/status`): the pieces
Space.status() assembles from its indexes. No I/O."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from notarium_search.types import IndexProgress, IndexState, LexicalStatus

if TYPE_CHECKING:
    from notarium_search.graph.channel import GraphChannel
    from notarium_search.semantic.channel import SemanticChannel

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


def still_building(progress: IndexProgress, graph: GraphChannel, semantic: SemanticChannel | None) -> bool:
    """Whether any index of the space that is on is still being built."""
    if progress.state == IndexState.BUILDING:
        return True
    if graph.enabled and not graph.built:
        return True
    return semantic is not None and not semantic.unavailable and not semantic.ready
