"""A space at run time: its indexes, its single writer thread, its status.

All writes go through one thread fed by a queue; readers (request threads)
only take Tantivy searchers, which see the last commit and never block on the
writer.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from notarium_search.graph.channel import GraphChannel
from notarium_search.index import editor_link, sharing
from notarium_search.index.folder import cursor_codec, index_mismatch
from notarium_search.index.follower import Follower, not_yet_published
from notarium_search.index.indexer import SpaceIndexer, index_fingerprint
from notarium_search.index.manifest import Manifest
from notarium_search.index.passes import Passes
from notarium_search.index.status import BUILDING_MESSAGE, DerivedChannel, lexical_status
from notarium_search.index.watch import SpaceWatcher
from notarium_search.index.writer import Job, Writer
from notarium_search.index.writer_lock import WriterLock
from notarium_search.lexical import search as lexical_search
from notarium_search.lexical.channel import LexicalChannel
from notarium_search.lexical.integrity import Verdicts
from notarium_search.lexical.store import IndexLocked, LexicalIndex
from notarium_search.logsetup import get_logger
from notarium_search.settings import Settings, SpaceConfig
from notarium_search.storage.faults import IndexFolderMissing, StorageFault
from notarium_search.types import (
    BuildStep,
    Channel,
    ChannelState,
    ChannelStatus,
    FeedFilter,
    IndexProgress,
    IndexState,
    NoteSummary,
    SpaceStatus,
)

if TYPE_CHECKING:
    from notarium_search.semantic.channel import SemanticChannel
    from notarium_search.semantic.embedding import Embedder

log = get_logger(__name__)


class NotIndexed(RuntimeError):
    """A read-only open found no index for the space."""


class Space:
    def __init__(
        self,
        config: SpaceConfig,
        settings: Settings,
        read_only: bool = False,
        rebuild: bool = False,
        *,
        share: bool = False,
        follow: bool = False,
    ) -> None:
        """`read_only`: open what another process (the service) built, never
        write: for CLI searches beside a running service. `rebuild`: forget
        the index and build it again from the files. Served by several
        workers (index/follower.py): `share`, the writer also publishes its
        status and changes and takes the others' requests; `follow`, a worker
        that is not the writer serves the indexes read-only and follows them."""
        self.config = config
        self.settings = settings
        self.name = config.name
        read_only = read_only or follow
        self.read_only = read_only
        self.directory = settings.index_dir / config.name
        self._lock = WriterLock(self.name, self.directory)
        manifest = Manifest.load(self.directory / "manifest.json", index_fingerprint(config, settings))
        if read_only:  # a follower's writer made the index before it opened (index/registry.py)
            if not follow and (not manifest.entries or not (self.directory / "lexical" / "meta.json").exists()):
                raise NotIndexed(f"space {self.name} is not indexed yet: run `notarium-search index {self.name}`")
        else:
            self._lock.take(manifest, forget=rebuild)
        self.lexical = LexicalIndex(self.directory / "lexical", config.language, read_only=read_only)
        self.integrity = Verdicts(self.directory / "lexical")  # whether a failed read met damage
        if self.lexical.created:
            manifest.forget()
        # Why the index does not match its manifest (an older meta.json put
        # back: notes lost with no error), or None; repaired below unless read-only.
        self.mismatch = index_mismatch(self.lexical, manifest)
        self.cursors = cursor_codec(self.directory, read_only)
        self._editor_template: str | None = None
        self._editor_template_known = False
        self.indexer = SpaceIndexer(config, settings, self.lexical, manifest)
        self.lexical_channel = LexicalChannel(self.lexical, settings.ranking, lambda: self.indexer.progress)
        self.graph = GraphChannel(self.name, self.lexical, settings.graph_boost, settings.fusion.k)
        self.semantic: SemanticChannel | None = None
        self.follower: Follower | None = None
        if follow:
            self.follower = self._follower()
        if read_only and settings.graph_boost:
            self.graph.ensure_built()  # nothing will reconcile: read the committed links now
        if settings.vector_search and not read_only:
            from notarium_search.semantic.channel import SemanticChannel

            self.semantic = SemanticChannel(self.name, self.directory / "vectors", self.lexical)
        self.changes = sharing.ChangeWriter(self.directory) if share and not read_only else None
        if self.changes is not None:
            # A writer that died may have committed notes it never journaled (a
            # pass commits along the way, and journals at its end): followers
            # read every note's links again once.
            self.changes.record(everything=True)
        self._published: bytes | None = None
        self.writer = Writer(self.name, self._idle_work, self.directory)  # its folder: a full disk's retry looks there
        if self.semantic is not None:
            self.semantic.wake = self.writer.put  # a paused build resumes on the writer thread
        self._repair_queued = threading.Event()
        self.repaired: str | None = None  # the last repair of the lexical index, for status
        self.watcher: SpaceWatcher | None = None
        if not read_only:
            self.watcher = SpaceWatcher(
                self.name,
                config.path,
                lambda paths: self.request_reindex(paths=paths),
                settings.watch,
                settings.watch_debounce_ms,
                settings.reconcile_interval,
            )
        self.stop_event = self.writer.stop_event
        self.passes = Passes(self.indexer, self.stop_event, self._derived, self.changes)
        if self.mismatch is not None and not read_only:
            self.request_repair(self.mismatch)  # the first job: answers come from the old index meanwhile

    def _follower(self) -> Follower:
        on_semantic = None
        if self.settings.vector_search:
            from notarium_search.semantic.follower import FollowedSemanticChannel

            semantic = FollowedSemanticChannel(self.name, self.directory / "vectors", self.lexical)
            self.semantic, on_semantic = semantic, semantic.refresh
        return Follower(self.name, self.directory, self.lexical, self.graph, on_semantic)

    # -- writer thread ----------------------------------------------------

    def start(self) -> None:
        """Start the writer thread, queue the start-up reconcile (changes made
        while the service was down), then follow the files."""
        if self.follower is not None:
            return  # the writer is another worker: PeerLoop follows it
        self.writer.start()
        self.request_reindex()
        if self.watcher is not None:
            self.watcher.start()

    def request_reindex(self, full: bool = False, paths: Iterable[str] | None = None) -> None:
        """Queue a reconcile (returns at once). `full` forgets what the index
        holds and re-reads every note; vectors whose fragments did not change
        are kept. `paths` (relative to the space) are the files a watcher saw
        change: the pass can look at those alone; without them it scans every
        file. Requests made before the pass starts are merged into it."""
        if self.follower is not None:
            self.follower.ask_reindex(full, paths)
        elif full:
            self.writer.put(self._full_reindex_job)
        else:
            self.writer.request_pass(self._reconcile_job, paths)

    def take_requests(self) -> None:
        """What the other workers asked for since the last look (a shared writer)."""
        for request in sharing.take_requests(self.directory):
            if request.kind == "repair":
                self.request_repair(f"seen by another worker: {request.reason}")
            else:
                self.request_reindex(request.kind == "full", request.paths)

    def publish_status(self) -> None:
        """Publish the status for the other workers when it changed (a shared writer)."""
        self._published = sharing.publish_status(self.directory, self.status(), self._published)

    def attach_embedder(self, embedder: Embedder) -> None:
        """The model is loaded: build or open the vectors (on the writer thread;
        again later when their files could not be read for a passing reason,
        or the embedding server failed on the reference passages)."""
        if self.follower is not None and self.semantic is not None:
            self.semantic.attach(embedder)  # reads the writer's vectors: no writer thread here
        elif self.semantic is not None:
            semantic = self.semantic

            def attach() -> None:
                from notarium_search.semantic.embedder_errors import EmbedderUnavailable, EmbedderUnreachable

                try:
                    semantic.attach(embedder, in_slices=True)
                except (StorageFault, EmbedderUnreachable) as exc:
                    delay = self.writer.later(lambda: self.writer.put(attach), exc)
                    log.error("semantic_open_failed", space=self.name, error=str(exc), retry_seconds=delay)
                    if isinstance(exc, EmbedderUnreachable):
                        semantic.unavailable = f"{exc}; retrying in {delay:g} s"
                except EmbedderUnavailable as exc:  # a configuration to fix (a 401, a wrong dim): no retry helps
                    log.error("semantic_open_failed", space=self.name, error=str(exc), retry_seconds=None)
                    semantic.unavailable = f"{exc}; not retried (a configuration to fix, then restart)"

            self.writer.put(attach)

    def semantic_unavailable(self, reason: str) -> None:
        if self.semantic is not None:
            self.semantic.unavailable = reason

    def request_stop(self) -> None:
        """Ask the watcher and the writer to end, without waiting for them."""
        if self.watcher is not None:
            self.watcher.request_stop()
        self.writer.request_stop()

    def stop(self, timeout: float = 30.0) -> None:
        self.request_stop()
        if self.watcher is not None:
            self.watcher.stop()
        self.writer.join(timeout)
        self.lexical.close()
        self._lock.release()

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self.passes.wait_ready(timeout)

    def _idle_work(self) -> Job | None:
        """A slice of a derived channel's work (embedding), for when no job waits."""
        busy = next((c for c in self._derived() if c.has_work), None)
        return busy.work_slice if busy is not None else None

    def _retry_later(self, again: Callable[[], None] | None = None) -> None:
        """A failed pass (a full disk, a file locked by another program) is
        tried again by itself, at growing intervals, without waiting for the
        next change of the files: a pass over every file, or `again`."""
        self.passes.retrying(self.writer.later(again or self.request_reindex))

    def request_repair(self, reason: str) -> None:
        """The lexical index failed a read: rebuild it from the notes (once,
        however many requests saw the failure)."""
        if self.follower is not None:
            self.follower.ask_repair(reason)
        elif not self._repair_queued.is_set():
            self._repair_queued.set()
            log.error("lexical_index_damaged", space=self.name, reason=reason)
            self.repaired = f"lexical index damaged ({reason}): rebuilding from the notes"
            self.writer.put(self._repair_job)

    def _repair_job(self, on_progress: Callable[[IndexProgress], None] | None = None) -> None:
        try:
            self._lock.take_again(self.cursors.key)
        except IndexLocked as exc:  # another process made the folder again and holds it now
            self.passes.locked(exc)
            return
        self._rebuild(self._recreate_lexical, lambda: self.request_repair("the last repair failed"), on_progress)
        if self.semantic is not None and self.semantic.index is not None and not self.semantic.index.directory.exists():
            self.semantic.index.save_again()  # the vectors held in memory are still good: no re-embedding

    def _recreate_lexical(self) -> None:
        self.lexical.recreate()
        self._repair_queued.clear()  # reads fail no more: a new failure is new damage

    def _full_reindex_job(self) -> None:
        self.writer.take_pending()
        self._rebuild(self.lexical.delete_all, lambda: self.request_reindex(full=True))

    def _rebuild(
        self,
        empty_index: Callable[[], None],
        again: Callable[[], None],
        on_progress: Callable[[IndexProgress], None] | None = None,
    ) -> None:
        """A full reindex or a repair (Passes.rebuild). The notes folder away,
        nothing is emptied and a pass follows later. Failed half way (a full
        disk, too many open files), the index holds only what it committed: it
        is done `again`, whole, later (links and vectors read again too)."""
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

    def _reconcile_job(self) -> None:
        paths = self.writer.take_pending()
        try:
            self.run_reconcile(paths=paths)
        except IndexFolderMissing as exc:
            self.request_repair(str(exc))
            return
        except Exception:  # noqa: BLE001 - logged once by run_reconcile, shown in status; retried
            # A missing folder, a full disk, too many open files: the retries
            # see the condition pass, without waiting for a change of the files.
            self._retry_later()
            return
        self.writer.succeeded()

    def _derived(self) -> list[DerivedChannel]:
        """The channels built from the lexical index, which follow its passes."""
        return [self.graph] if self.semantic is None else [self.semantic, self.graph]

    def run_reconcile(
        self, on_progress: Callable[[IndexProgress], None] | None = None, paths: set[str] | None = None
    ) -> IndexProgress:
        """One reconcile pass on the calling thread (the writer thread, or the
        CLI and tests), then the channels built from it follow what changed."""
        return self.passes.reconcile(on_progress, paths)

    def build(
        self, on_progress: Callable[[BuildStep], None] | None = None, embedder: Embedder | None = None
    ) -> IndexProgress:
        """Index the space now on the calling thread (the CLI, tests), never
        beside a running writer thread: the lexical pass, then, given an
        embedder and with VECTOR_SEARCH on, every pending fragment. `stop_event`
        stops it after the current note or slice; what was embedded is kept (a
        checkpoint), and the next run goes on from there."""
        report = on_progress or (lambda step: None)

        def notes(counts: IndexProgress) -> None:
            report(BuildStep("notes", counts.done, counts.total))

        if self._repair_queued.is_set():  # the index did not match its manifest at open: no writer runs here
            self._repair_job(notes)
            progress = self.indexer.progress
        else:
            progress = self.run_reconcile(notes)
        report(BuildStep("notes", progress.done, progress.total))
        semantic = self.semantic
        if semantic is None or embedder is None or self.stop_event.is_set():
            return progress
        semantic.attach(embedder)
        index = semantic.index
        assert index is not None  # attach opened it
        total = index.progress.pending
        report(BuildStep("fragments", 0, total))
        while semantic.has_work and not self.stop_event.is_set():
            semantic.work_slice()
            report(BuildStep("fragments", total - index.progress.pending, total))
        if semantic.has_work:
            index.checkpoint()
        return progress

    # -- readers ----------------------------------------------------------

    @property
    def ready(self) -> bool:
        if self.follower is not None:
            return self.follower.ready
        if self.read_only:
            return not self.behind
        return self.indexer.progress.state == IndexState.READY

    @functools.cached_property
    def behind(self) -> list[str]:
        """What a read-only space's index lacks: it runs no pass, so its
        indexer's progress says nothing; the writer's records do, read once.
        (`status` also stats every file, ~0.14 s at 10,000 notes: too slow here.)"""
        return self.indexer.manifest.left_behind() + ([self.mismatch] if self.mismatch else [])

    @property
    def channels(self) -> list[Channel]:
        """The space's channels that are on, lexical first (the order answers list them in)."""
        on: list[Channel] = [self.lexical_channel]
        if self.semantic is not None:
            on.append(self.semantic)
        if self.graph.enabled:
            on.append(self.graph)
        return on

    @property
    def editor_template(self) -> str | None:
        """The space's `open_url` template (index/editor_link.py). Looked for
        once it can be: a folder the service may not read (yet) has none, and
        is looked at again later, instead of failing the space's open (one
        unreadable space stopped every worker of `serve`)."""
        if not self._editor_template_known:
            try:
                self._editor_template = editor_link.template_for(self.config)
            except OSError:
                return None
            self._editor_template_known = True
        return self._editor_template

    def open_url(self, path: str, heading: str = "", line: int | None = None) -> str | None:
        """The link that opens the note at `path` in its editor (at the match's
        section and line when known), or None (no template)."""
        if self.editor_template is None:
            return None
        return editor_link.render(self.editor_template, self.config.path, path, heading, line or 1)

    def on_disk(self, note: NoteSummary) -> bool:
        """Whether the note's file is still there. The index follows deletions
        within a second or so, but later while a long rebuild holds the writer
        (a 32-client load with full re-indexes every 15 s showed hits on notes
        deleted seconds before): answers never name a vanished file (a stat
        costs ~6 µs at 10,000 notes), and a vanished one triggers a reconcile
        in case the watcher missed it."""
        try:
            os.lstat(self.config.path / note.path)
            return True
        except (FileNotFoundError, NotADirectoryError):
            pass
        except OSError:
            return True  # an unreadable folder: its notes are kept in the index (notes/scan.py), so in answers too
        if self.passes.folder_away or not os.path.isdir(self.config.path):
            # The whole folder is away (an unmounted share), not this note: the
            # index is kept for that case, so answers keep coming from it
            # (partial, status says why) and the retries follow the folder.
            return True
        self.request_reindex(paths=(note.path,))
        return False

    def _semantic_status(self) -> ChannelStatus:
        return self.semantic.status() if self.semantic is not None else ChannelStatus(ChannelState.DISABLED)

    def status(self) -> SpaceStatus:
        if self.follower is not None:
            notes = int(self.lexical.searcher().num_docs)
            followed = self.follower.status(notes, self._semantic_status(), self.graph.status())
            return followed or not_yet_published(self.name, str(self.config.path), self.config.language, notes)
        if not self.read_only and self.lexical.folder_missing:
            # Deleted under the running service: answers still come from the open
            # files, but nothing could be committed; rebuilt now rather than at the next edit.
            self.request_repair(f"the index folder {self.directory} was deleted")
        progress = self.indexer.progress
        lexical = lexical_status(progress, self.passes.failure, self.repaired)
        return SpaceStatus(
            space=self.name,
            path=str(self.config.path),
            language=self.config.language,
            notes=int(self.lexical.searcher().num_docs),
            skipped=self.indexer.skipped_total,
            skipped_notes=self.indexer.skipped_notes,
            lexical=lexical,
            semantic=self._semantic_status(),
            graph=self.graph.status(),
            message=BUILDING_MESSAGE if any(c.building for c in self.channels) else None,
            watch=self.watcher.mode if self.watcher is not None else "off (read-only)",
            collections={
                c.name: lexical_search.count_notes(self.lexical, FeedFilter(collections=(c.name,)))
                for c in self.config.collections
            },
        )
