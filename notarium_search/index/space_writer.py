"""The writer of a space: the one process, and the one thread in it, that
writes its indexes.

Its jobs run on the `Writer` thread, one at a time, as a chain of stages that
hand their results forward and never call back into the one that fed them:
the lexical pass (index/passes.py) → every channel follows what changed
(`after_lexical`, or `rebuild` after a full read) → the change journal the
other workers follow (a shared writer). Between jobs, the channels' own work
(embedding) runs in slices. A failed pass is retried by itself, later.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from notarium_search.graph.remote import GraphServer
from notarium_search.index import sharing
from notarium_search.index.channels import graph_socket_of
from notarium_search.index.indexer import SpaceIndexer
from notarium_search.index.model_attach import attach_job
from notarium_search.index.passes import Passes
from notarium_search.index.peers import Step
from notarium_search.index.watch import SpaceWatcher
from notarium_search.index.writer import Job, Writer
from notarium_search.index.writer_lock import WriterLock
from notarium_search.lexical.store import IndexLocked
from notarium_search.logsetup import get_logger
from notarium_search.storage.faults import IndexFolderMissing
from notarium_search.types import BuildStep, IndexProgress, IndexState, SpaceStatus

if TYPE_CHECKING:
    from notarium_search.index.space import Space

log = get_logger(__name__)


class SpaceWriter:
    def __init__(
        self,
        space: Space,
        indexer: SpaceIndexer,
        passes: Passes,
        lock: WriterLock,
        changes: sharing.ChangeWriter | None,
    ) -> None:
        """`changes`: the journal of a writer that other workers follow (None: a lone writer)."""
        self.space = space
        self.indexer = indexer
        self.passes = passes
        self.lock = lock
        self.changes = changes
        # Its folder: a full disk's retry looks there; its stop ends a pass after the current note.
        self.writer = Writer(space.name, self._idle_work, space.directory, passes.stop_event)
        self.stop_event = passes.stop_event
        self._repair_queued = threading.Event()
        self._published: bytes | None = None
        # The other workers ask this writer's link graph rather than each read
        # its own (graph/remote.py: ~95 MiB a worker at 50,000 notes).
        socket = graph_socket_of(space.settings, space.name) if changes is not None else None
        self.graph_server = GraphServer(socket, space.graph.answer, space.name) if socket is not None else None
        # A status is computed and published under one lock: a request's and
        # the peer loop's, taken in one order, are published in that order.
        self._publishing = threading.Lock()
        settings = space.settings
        self.watcher = SpaceWatcher(
            space.name,
            space.config.path,
            lambda paths: self.request_reindex(paths=paths),
            settings.watch,
            settings.watch_debounce_ms,
            settings.reconcile_interval,
        )
        for channel in self.space.every_channel:
            channel.on_writer(self.writer.put)  # a paused build resumes on the writer thread
        if changes is not None:
            # A writer that died may have committed notes it never journaled (a
            # pass commits along the way, and journals at its end): followers
            # read every note's links again once.
            changes.record(everything=True)
        if space.mismatch is not None:
            self.request_repair(space.mismatch)  # the first job: answers come from the old index meanwhile

    # -- requests ---------------------------------------------------------

    def start(self) -> None:
        """Start the writer thread, queue the start-up reconcile (changes made
        while the service was down), then follow the files."""
        if self.graph_server is not None:
            self.graph_server.start()
        self.writer.start()
        self.request_reindex()
        self.watcher.start()

    def request_reindex(self, full: bool = False, paths: Iterable[str] | None = None) -> None:
        """Queue a reconcile (returns at once): `full` forgets what the index
        holds and re-reads every note (vectors of unchanged fragments are
        kept); `paths`, the files a watcher saw change (None: every file).
        Requests made before the pass starts are merged into it."""
        if full:
            self.writer.put(self._full_reindex_job)
        else:
            self.writer.request_pass(self.run_queued_pass, paths)

    def request_repair(self, reason: str) -> None:
        """The lexical index failed a read: rebuild it from the notes (once,
        however many requests saw the failure)."""
        if not self._repair_queued.is_set():
            self._repair_queued.set()
            log.error("lexical_index_damaged", space=self.space.name, reason=reason)
            self.passes.repaired = f"lexical index damaged ({reason}): rebuilding from the notes"
            self.writer.put(self._repair_job)

    def take_requests(self) -> bool:
        """What the other workers asked for since the last look (a shared
        writer); whether they asked for anything."""
        requests = sharing.take_requests(self.space.directory)
        for request in requests:
            if request.kind == "repair":
                self.request_repair(f"seen by another worker: {request.reason}")
            else:
                self.request_reindex(request.kind == "full", request.paths)
        return bool(requests)

    def publish_status(self) -> bool:
        """Publish the status for the other workers when it changed (a shared
        writer's peer loop, which logs a failure and tries again); whether it had."""
        self._repair_if_deleted(self.space)
        before = self._published
        self._said(self.space, publish=True)
        return self._published != before

    def peer_steps(self) -> tuple[list[Step], list[Step]]:
        if self.changes is None:
            return [], []
        publish: list[Step] = [self.publish_status]
        if self.graph_server is not None:
            publish.append(self.graph_server.keep_listening)  # a start that failed, tried again
        return [self.take_requests], publish

    def attach_embedder(self, embedder: Any) -> None:
        """The model is loaded: each channel that needs it builds or opens its
        files on the writer thread (index/model_attach.py)."""
        for channel in self.space.needing("vector"):
            self.writer.put(attach_job(self.writer, self.space.name, channel, embedder))

    def request_stop(self) -> None:
        """Ask the watcher and the writer to end, without waiting for them."""
        self.watcher.request_stop()
        self.writer.request_stop()

    def stop(self, timeout: float = 30.0) -> None:
        self.request_stop()
        self.watcher.stop()
        self.writer.join(timeout)
        for channel in self.space.every_channel:
            channel.writer_stopped()
        if self.graph_server is not None:
            self.graph_server.stop()
        self.space.lexical.close()
        self.lock.release()

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self.passes.wait_ready(timeout)

    # -- jobs (the writer thread) -------------------------------------------

    def run_reconcile(
        self, on_progress: Callable[[IndexProgress], None] | None = None, paths: set[str] | None = None
    ) -> IndexProgress:
        """One reconcile pass now, on the calling thread (the writer thread,
        or the CLI and tests, never beside a running writer thread): the
        lexical pass, then the channels and the journal follow what changed."""
        progress = self.passes.reconcile(on_progress, paths)
        for channel in self.space.every_channel:
            channel.after_lexical(progress.changed_ids, progress.deleted_ids)
        if self.changes is not None:
            self.changes.record(progress.changed_ids, progress.deleted_ids)
        return progress

    def _idle_work(self) -> Job | None:
        """A slice of a channel's own work (embedding), for when no job waits."""
        busy = next((c for c in self.space.every_channel if c.has_work), None)
        return busy.work_slice if busy is not None else None

    def run_queued_pass(self) -> None:
        """The queued pass, over what was asked since the last (every file, or
        those paths), as the writer thread runs it: a failure is logged, shown
        in status and tried again later. Tests run it on their own thread."""
        paths = self.writer.take_pending()
        try:
            self.run_reconcile(paths=paths)
        except IndexFolderMissing as exc:
            self.request_repair(str(exc))
            return
        except Exception:  # noqa: BLE001 - logged once by the pass, shown in status; retried
            # A missing folder, a full disk, too many open files: the retries
            # see the condition pass, without waiting for a change of the files.
            self._retry_later()
            return
        self.writer.succeeded()

    def _retry_later(self, again: Callable[[], None] | None = None) -> None:
        """A failed pass is tried again by itself, at growing intervals: a
        pass over every file, or `again`."""
        self.passes.retrying(self.writer.later(again or self.request_reindex))

    def _repair_job(self, on_progress: Callable[[IndexProgress], None] | None = None) -> None:
        try:
            self.lock.take_again(self.space.cursors.key)
        except IndexLocked as exc:  # another process made the folder again and holds it now
            self.passes.locked(exc)
            return
        self._rebuild(self._recreate_lexical, lambda: self.request_repair("the last repair failed"), on_progress)
        semantic = self.space.semantic
        if semantic is not None and semantic.index is not None and not semantic.index.directory.exists():
            semantic.index.save_again()  # the vectors held in memory are still good: no re-embedding

    def _recreate_lexical(self) -> None:
        self.space.lexical.recreate()
        self._repair_queued.clear()  # reads fail no more: a new failure is new damage

    def _full_reindex_job(self) -> None:
        self.writer.take_pending()
        self._rebuild(self.space.lexical.delete_all, lambda: self.request_reindex(full=True))

    def _rebuild(
        self,
        empty_index: Callable[[], None],
        again: Callable[[], None],
        on_progress: Callable[[IndexProgress], None] | None = None,
    ) -> None:
        """A full reindex or a repair, then every channel reads every note
        again (unchanged fragments keep their vectors). The notes folder away,
        nothing is emptied and a pass follows later. Failed half way (a full
        disk), the index holds what it committed: it is done `again`, whole, later."""
        try:
            rebuilt = self.passes.rebuild(empty_index, on_progress)
        except IndexFolderMissing as exc:
            self._repair_queued.clear()  # failed before the index was made again: ask again
            self.request_repair(str(exc))
            return
        except Exception:
            self._repair_queued.clear()
            self._retry_later(again)
            raise  # logged by the writer with its traceback
        if not rebuilt:
            self._repair_queued.clear()  # a read that meets the damage again asks again
            self._retry_later()
            return
        for channel in self.space.every_channel:
            channel.rebuild()
        if self.changes is not None:
            self.changes.record(everything=True)

    def build(self, on_progress: Callable[[BuildStep], None] | None = None, embedder: Any = None) -> IndexProgress:
        """Index the space now on the calling thread (the CLI, tests), never
        beside a running writer thread: the lexical pass, then, given an
        embedder, every pending fragment (index/building.py)."""
        from notarium_search.index.building import build

        return build(self, on_progress, embedder)

    def repair_now(self, on_progress: Callable[[IndexProgress], None] | None = None) -> bool:
        """The repair asked for (at open, or by a read that met damage), run
        now on the calling thread (the CLI's build, tests); whether there was one."""
        if not self._repair_queued.is_set():
            return False
        self._repair_job(on_progress)
        return True

    # -- what it says -----------------------------------------------------

    @property
    def ready(self) -> bool:
        return self.passes.progress.state == IndexState.READY

    @property
    def folder_away(self) -> bool:
        return self.passes.folder_away

    def status(self, space: Space) -> SpaceStatus:
        """What it says; a shared writer publishes it first when it changed, so
        that no follower asked after this writer says less (follower.py, `status`)."""
        self._repair_if_deleted(space)
        try:
            return self._said(space, publish=self.changes is not None)
        except OSError:
            # Not published (a full disk, the folder gone): still said; the
            # peer loop's next round publishes it, or logs why it cannot.
            return self._own_status(space)

    def catch_up(self) -> None:
        return None  # its own commits: its searcher reloads after each

    def _repair_if_deleted(self, space: Space) -> None:
        if space.lexical.folder_missing:
            # Deleted under the running service: answers still come from the open
            # files, but nothing could be committed; rebuilt now rather than at the next edit.
            self.request_repair(f"the index folder {space.directory} was deleted")

    def _said(self, space: Space, publish: bool) -> SpaceStatus:
        if not publish:
            return self._own_status(space)
        with self._publishing:
            status = self._own_status(space)
            self._published = sharing.publish_status(space.directory, status, self._published)
        return status

    def _own_status(self, space: Space) -> SpaceStatus:
        return space.own_status(self.watcher.mode, self.indexer.skipped_total, self.indexer.skipped_notes)
