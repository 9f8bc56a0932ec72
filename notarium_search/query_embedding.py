"""The query's embedding under its deadline (`query_embed_timeout_ms`): a
query past it is answered without the semantic channel, and says why."""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from notarium_search.errors import EmbedderUnavailable
from notarium_search.logsetup import get_logger

if TYPE_CHECKING:
    from notarium_search.semantic.channel import SemanticChannel
    from notarium_search.semantic.embedding import Embedder

QUERY_EMBED_WORKERS = 2  # one query embedding per core at most; more would only queue

log = get_logger(__name__)


class QueryEmbedding:
    def __init__(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        # Query embeddings run here, so that a deadline can cut them off.
        self._pool = ThreadPoolExecutor(max_workers=QUERY_EMBED_WORKERS, thread_name_prefix="query-embed")

    def vector(
        self,
        semantic: SemanticChannel | None,
        embedder: Embedder | None,
        text: str,
        started: float,
        degraded: dict[str, str],
    ) -> Any:
        """The query's embedding, or None (and why, in `degraded`). It runs on the
        query pool so that a deadline can cut it off, and is awaited before the
        other channels start: on 2 cores, overlapping it with the lexical
        channel made the whole query slower (measured p50 14-15 ms against
        12-13 ms: the threads hand the GIL back and forth)."""
        if not text.strip() or semantic is None:
            return None
        if not semantic.ready or embedder is None:
            degraded["semantic"] = semantic.why_not_ready()
            return None
        return self._wait_for(self._pool.submit(embedder.embed_query, text), started, degraded)

    def _wait_for(self, pending: Future[Any], started: float, degraded: dict[str, str]) -> Any:
        left = self.timeout_ms / 1000 - (time.perf_counter() - started)
        try:
            return pending.result(timeout=max(left, 0.0))
        except FutureTimeout:
            degraded["semantic"] = f"query embedding took longer than {self.timeout_ms} ms"
        except Exception as exc:  # noqa: BLE001 - a model failure on one query must not fail the search
            log.warning("query_embedding_failed", error=str(exc))
            why = str(exc) if is_embedder_error(exc) else type(exc).__name__
            degraded["semantic"] = f"query embedding failed: {why}"
        return None

    def stop(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def is_embedder_error(exc: BaseException) -> bool:
    """Whether `exc` says why the model cannot be used (its message is for users)."""
    return isinstance(exc, EmbedderUnavailable)
