"""The query's embedding under its deadline (`query_embed_timeout_ms`): a
query past it is answered without the semantic channel, and says why.

Embeddings are kept (QUERY_CACHE_ENTRIES, the latest used): search as you
type asks for the same prefix again when a letter is erased, and assistants
retry the same query over MCP. The key is the model's fingerprint and the
query with its spaces collapsed, which is also what is embedded (the
tokenizers split on spaces: "a  b" and "a b" are the same tokens)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from notarium_search.errors import EmbedderUnavailable
from notarium_search.logsetup import get_logger

if TYPE_CHECKING:
    from notarium_search.semantic.channel import SemanticChannel
    from notarium_search.semantic.embedding import Embedder

QUERY_EMBED_WORKERS = 2  # one query embedding per core at most; more would only queue
# 1,024 vectors of 384 float32 (e5-small) are 1.5 MiB a worker; 1024-wide models 4 MiB.
QUERY_CACHE_ENTRIES = 1024

log = get_logger(__name__)


class QueryEmbedding:
    def __init__(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        # Query embeddings run here, so that a deadline can cut them off.
        self._pool = ThreadPoolExecutor(max_workers=QUERY_EMBED_WORKERS, thread_name_prefix="query-embed")
        self.cache = QueryVectors(QUERY_CACHE_ENTRIES)

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
        text = " ".join(text.split())
        key = (embedder.fingerprint, text)
        kept = self.cache.get(key)
        if kept is not None:
            return kept
        vector = self._wait_for(self._pool.submit(embedder.embed_query, text), started, degraded)
        if vector is not None:
            self.cache.put(key, vector)
        return vector

    def _wait_for(self, pending: Future[Any], started: float, degraded: dict[str, str]) -> Any:
        left = self.timeout_ms / 1000 - (time.perf_counter() - started)
        try:
            return pending.result(timeout=max(left, 0.0))
        except FutureTimeout:
            # Not started yet (the pool's threads busy): it never will be; a
            # model that hangs would otherwise leave a queue every query waits behind.
            pending.cancel()
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


class QueryVectors:
    """The latest `size` query embeddings used, by (fingerprint, text); read-only arrays."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.hits = 0
        self._kept: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> Any:
        with self._lock:
            vector = self._kept.get(key)
            if vector is not None:
                self._kept.move_to_end(key)
                self.hits += 1
            return vector

    def put(self, key: tuple[str, str], vector: Any) -> None:
        vector.flags.writeable = False  # shared by every search that asks again
        with self._lock:
            self._kept[key] = vector
            self._kept.move_to_end(key)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
