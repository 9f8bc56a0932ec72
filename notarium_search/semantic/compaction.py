"""A space's vector graph rebuilt from its own vectors, beside its writer.

`SemanticIndex` (semantic/index.py) decides when (a quarter of the graph is
removed vectors, or it was built in a way that strands some:
vector_store.GRAPH_BUILD); this runs it and owns its state: the thread, the
event that stops it, whether it failed. A rebuild takes 155 s at 111,091
vectors on one thread, so with a writer thread to tell it runs in a thread
of its own (searches, adds and removes going on: VectorStore.compact) and
hands the writer a job when done; without one (a build on the calling
thread: the CLI, tests) it runs there and then.

A process that exits while usearch inserts is aborted by usearch's C++
runtime (SIGABRT): the writer's stop calls `stop`, which the thread sees
between two batches of inserts (vector_store.COMPACTION_BATCH).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from notarium_search.logsetup import get_logger
from notarium_search.semantic.vector_store import VectorStore

WriterJobs = Callable[[Callable[[], None]], None]

log = get_logger(__name__)


class GraphRebuild:
    """The rebuilds of one space's vector graph, one at a time."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._thread: threading.Thread | None = None
        self._failed = False  # not tried again before the next start
        self._stop = threading.Event()

    @property
    def running(self) -> bool:
        """Whether a thread rebuilds the graph (until the writer ran its job)."""
        return self._thread is not None

    @property
    def stopping(self) -> bool:
        """Whether `stop` was called: no rebuild runs again."""
        return self._stop.is_set()

    @property
    def may_start(self) -> bool:
        return self._thread is None and not self._failed and not self.stopping

    def now(self, store: VectorStore) -> bool:
        """Rebuild on this thread; whether it was rebuilt (not stopped first)."""
        started, tombstones, graph = time.monotonic(), store.tombstones, store.graph
        if not store.compact(self._stop):
            log.info("vector_compaction_stopped", directory=str(self._directory))
            return False
        log.info(
            "vector_graph_rebuilt",
            directory=str(self._directory),
            vectors=len(store),
            tombstones=tombstones,
            graph_was=graph,
            seconds=round(time.monotonic() - started, 2),
        )
        return True

    def start(self, store: VectorStore, jobs: WriterJobs, done: Callable[[bool], None]) -> None:
        """Rebuild in a thread; then `done(rebuilt)` runs on the writer thread
        (through `jobs`), unless it was stopped first. `ended` must be called there."""

        def rebuild() -> None:
            try:
                rebuilt = self.now(store)
            except Exception:  # memory, a native error: the old graph serves on
                log.exception("vector_compaction_failed", directory=str(self._directory))
                jobs(lambda: done(False))
            else:
                if rebuilt:
                    jobs(lambda: done(True))

        self._thread = threading.Thread(target=rebuild, name="vector-compaction", daemon=True)
        self._thread.start()

    def ended(self, rebuilt: bool) -> None:
        """On the writer thread, in `done`: the thread is over."""
        self._thread = None
        self._failed = not rebuilt

    def stop(self, timeout: float) -> None:
        """Stop the rebuild's thread and wait for it (the old graph stays, as saved)."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
