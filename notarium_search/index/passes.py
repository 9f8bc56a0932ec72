"""A space's lexical passes and what the last one left.

A pass brings the lexical index in line with the files and hands what
changed forward (the writer role then has the channels and the change journal
follow it); a rebuild reads every note again into an emptied index. A failed pass touches
nothing: searches answer from the last commit, flagged partial, and status
shows the error kept here. Run on the space's writer thread, or on the
calling thread for the CLI and tests.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from notarium_search.index.indexer import SpaceIndexer
from notarium_search.lexical.store import IndexLocked
from notarium_search.logsetup import get_logger
from notarium_search.notes.scan import SpaceUnavailable, check_root
from notarium_search.storage.faults import IndexFolderMissing, StorageFault
from notarium_search.types import IndexProgress, IndexState

log = get_logger(__name__)


class Passes:
    """The lexical channel's view of them (lexical/channel.py PassView):
    `progress`, `failure`, `repaired`."""

    def __init__(self, indexer: SpaceIndexer, stop_event: threading.Event) -> None:
        self.indexer = indexer
        self.config = indexer.config
        self.stop_event = stop_event
        self.failure: str | None = None  # why the last pass failed, for status
        self.repaired: str | None = None  # why the lexical index was last rebuilt from the notes, for status
        self.folder_away = False  # the last pass found the notes folder missing or empty
        self._ready = threading.Event()

    @property
    def progress(self) -> IndexProgress:
        return self.indexer.progress

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    def reconcile(
        self, on_progress: Callable[[IndexProgress], None] | None = None, paths: set[str] | None = None
    ) -> IndexProgress:
        """One reconcile pass: its counters say what changed (`changed_ids`, `deleted_ids`)."""
        return self._pass(on_progress, paths)

    def rebuild(
        self, empty_index: Callable[[], None], on_progress: Callable[[IndexProgress], None] | None = None
    ) -> bool:
        """Every note read again into an emptied index (a full reindex, or a
        repair). False, nothing emptied, when the notes folder is away."""
        try:
            check_root(self.config.path)
        except SpaceUnavailable as exc:
            # Emptied now, the index would answer nothing until the folder is
            # back: it is kept, and a pass follows once the folder returns.
            self.folder_unavailable(exc)
            return False
        # Building from now on: answers say `partial` (from the last good
        # commit, still served) before anything is emptied.
        self.indexer.begin_rebuild()
        # The emptied manifest is saved before anything is deleted: killed at any
        # point after this, the next start finds no trustworthy record and
        # rebuilds from the files (a saved full manifest beside a committed
        # delete-all would make it trust an empty index).
        self.indexer.manifest.forget()
        try:
            self.indexer.manifest.save()
            empty_index()
        except BaseException as exc:
            self.indexer.distrust_manifest()  # emptied in memory only: read back before the next pass
            if isinstance(exc, Exception):
                self._failed(f"{type(exc).__name__}: {exc}")
            raise
        self._pass(on_progress)
        return True

    def _pass(
        self, on_progress: Callable[[IndexProgress], None] | None = None, paths: set[str] | None = None
    ) -> IndexProgress:
        """The lexical index brought in line with the files (all, or `paths`)."""
        try:
            progress = self.indexer.reconcile(self.stop_event, on_progress, paths)
        except SpaceUnavailable as exc:
            self.folder_unavailable(exc)
            raise
        except IndexLocked as exc:
            self.locked(exc)
            self._ready.set()
            raise
        except IndexFolderMissing as exc:
            log.error("space_index_folder_missing", space=self.config.name, error=str(exc), action="rebuilding")
            raise
        except StorageFault as exc:  # one line a pass: the condition, not a traceback per note
            log.error("space_index_failed", space=self.config.name, error=str(exc))
            self._failed(str(exc))
            self._ready.set()
            raise
        except Exception as exc:
            log.exception("space_index_failed", space=self.config.name)
            self._failed(f"{type(exc).__name__}: {exc}")
            self._ready.set()  # searches answer from the last commit, flagged as partial
            raise
        self.failure = None
        self.folder_away = False
        if progress.state == IndexState.READY:
            self._ready.set()
        return progress

    def locked(self, exc: IndexLocked) -> None:
        """Another process holds the index folder: nothing can be written."""
        log.error("space_index_locked", space=self.config.name, error=str(exc))
        self._failed(str(exc))

    def folder_unavailable(self, exc: SpaceUnavailable) -> None:
        """Nothing was touched: searches answer from the index as it was
        (flagged partial), and the next pass, once the folder is back, finds
        only what changed meanwhile."""
        log.error("space_folder_unavailable", space=self.config.name, path=str(self.config.path), error=str(exc))
        self._failed(str(exc))
        self.folder_away = True
        self._ready.set()

    def retrying(self, delay: float) -> None:
        """The failed pass is tried again in `delay` seconds: the error says so."""
        self.failure = f"{self.failure}; retrying in {delay:g} s" if self.failure else None

    def _failed(self, error: str) -> None:
        self.failure = error
        self.indexer.failed()
