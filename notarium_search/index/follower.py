"""Serving a space from several processes (the HTTP server's workers): one
writer, the others followers.

The first worker to take a space's writer lock (index/folder.py) is its
writer, as a lone service is; the others follow it (`Follower`): they open
the indexes read-only and look every FOLLOW_INTERVAL_SECONDS at the files
the writer changes (index/sharing.py):

- the lexical index's `meta.json` (a commit, a merge): its searcher reloads;
- the change journal: its link graph applies each pass's changed notes;
- the vector manifest (semantic/follower.py): its vectors are read again;
- the published status: what its `/status` says, and when its answers are partial.

A follower's reindex, and the repair a damaged read asks for, are requests
left for the writer. The `PeerLoop` thread does both sides' rounds: a
follower's looks, a writer's requests taken and status published.
"""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from notarium_search.collector import HEAP
from notarium_search.graph.channel import GraphChannel
from notarium_search.index import sharing
from notarium_search.lexical.store import LexicalIndex
from notarium_search.logsetup import Throttle, get_logger
from notarium_search.storage.faults import IndexFolderMissing, StorageFault, fault_code
from notarium_search.storage.signature import file_signature
from notarium_search.types import (
    ChannelState,
    ChannelStatus,
    IndexState,
    LexicalStatus,
    SpaceStatus,
)

# How often a follower looks at the writer's files (a stat each, ~5 µs here) and a
# writer at its readers' requests: an edit reaches every worker within this
# of the writer's commit.
FOLLOW_INTERVAL_SECONDS = 0.1
# A writer publishes its status at most this often (status() reads counts
# from the index); state changes wait at most this long to be seen by followers.
PUBLISH_INTERVAL_SECONDS = 0.25
# A round that fails fails again every FOLLOW_INTERVAL_SECONDS while the cause
# lasts (too many open files: 600 lines a minute per step): one line a minute
# per kind of failure says so, with how many were not logged.
ROUND_FAILURE_LOG_SECONDS = 60.0

log = get_logger(__name__)

WAITING_FOR_WRITER = "waiting for the writer's first status"
MAX_REQUEST_PATHS = 1_000  # files named in one reconcile request; more: every file


class Follower:
    def __init__(
        self,
        name: str,
        directory: Path,
        lexical: LexicalIndex,
        graph: GraphChannel,
        on_semantic: Callable[[ChannelStatus | None], bool] | None,
    ) -> None:
        """`on_semantic`: the semantic channel's refresh (None: VECTOR_SEARCH off)."""
        self.name = name
        self.directory = directory
        self.lexical = lexical
        self.graph = graph
        self._on_semantic = on_semantic
        self._meta = file_signature(directory / "lexical" / "meta.json")
        self._journal_seen = file_signature(directory / sharing.JOURNAL_FILE)
        self._status_seen = file_signature(directory / sharing.STATUS_FILE)
        self.published = sharing.read_status(directory)
        # Read before the graph: entries journaled from now on are applied to it
        # (applying one it already holds reads the same notes again: no harm).
        journal = sharing.read_journal(directory)
        self._epoch, self._serial = (journal.epoch, journal.last_serial) if journal else ("", 0)
        self.repair_asked = False
        self._freeze_due = True  # what was read at open (the graph) is frozen at the first look
        # A reconcile asked for since the last look, sent at the next one: the
        # files of one search's vanished hits make one request, not one each.
        self._reconcile_asked = False
        self._reconcile_paths: set[str] | None = set()  # None: every file
        self._asking = threading.Lock()  # request threads ask, the peer thread sends

    def refresh(self) -> None:
        """One look at the writer's files; what changed is followed, and what
        it built is then kept out of full garbage collections, as the
        writer's jobs are (collector.py)."""
        changed, self._freeze_due = self._freeze_due, False
        status = file_signature(self.directory / sharing.STATUS_FILE)
        if status != self._status_seen:
            self._status_seen = status
            self.published = sharing.read_status(self.directory) or self.published
        self._send_reconcile()
        journal_seen = file_signature(self.directory / sharing.JOURNAL_FILE)
        # Read before the reload: its entries name notes the reloaded searcher
        # holds. Read after, an entry journaled meanwhile would be applied from
        # the older searcher, then counted as seen.
        journal = sharing.read_journal(self.directory) if journal_seen != self._journal_seen else None
        meta = file_signature(self.directory / "lexical" / "meta.json")
        if meta != self._meta or journal is not None:
            published = self.published
            emptied = published is not None and published.lexical.state == IndexState.READY and published.notes == 0
            if not self.lexical.reload(keep_if_emptied=not emptied):
                return  # a repair's new empty index: the notes it had are served until the rebuild commits
            self._meta = meta
            self.repair_asked = False  # a new commit: a read failing again is new damage
            changed = True
        if journal is not None:
            self._journal_seen = journal_seen
            self._follow_journal(journal)
        if self._on_semantic is not None:
            changed |= self._on_semantic(self.published.semantic if self.published else None)
        if changed:
            HEAP.after_job()

    def _follow_journal(self, journal: sharing.Journal) -> None:
        entries = journal.since(self._epoch, self._serial)
        self._epoch, self._serial = journal.epoch, journal.last_serial
        if entries is None or any(entry.everything for entry in entries):
            self.graph.rebuild()
            return
        for entry in entries:
            self.graph.after_lexical(set(entry.changed), set(entry.deleted))

    @property
    def ready(self) -> bool:
        return self.published is not None and self.published.lexical.state == IndexState.READY

    def ask_reindex(self, full: bool, paths: Iterable[str] | None) -> None:
        if full:
            self._ask(sharing.Request("full"))
            return
        with self._asking:
            self._reconcile_asked = True
            if paths is None or self._reconcile_paths is None:
                self._reconcile_paths = None
            else:
                self._reconcile_paths.update(paths)
                if len(self._reconcile_paths) > MAX_REQUEST_PATHS:
                    self._reconcile_paths = None  # as many as that: every file

    def _send_reconcile(self) -> None:
        with self._asking:
            if not self._reconcile_asked:
                return
            paths = sorted(self._reconcile_paths) if self._reconcile_paths is not None else None
            self._reconcile_asked, self._reconcile_paths = False, set()
        self._ask(sharing.Request("reconcile", paths))

    def ask_repair(self, reason: str) -> None:
        if not self.repair_asked:
            self.repair_asked = True
            log.error("lexical_index_damaged", space=self.name, reason=reason, action="asking the writer")
            if not self._ask(sharing.Request("repair", reason=reason)):
                self.repair_asked = False  # the next read that fails asks again

    def _ask(self, request: sharing.Request) -> bool:
        try:
            if sharing.ask(self.directory, request):
                return True
            log.warning("writer_requests_full", space=self.name, dropped=request.kind)
        except OSError as exc:
            log.error("writer_request_failed", space=self.name, kind=request.kind, error=str(exc))
        return False

    def status(self, notes: int, semantic: ChannelStatus, graph: ChannelStatus) -> SpaceStatus | None:
        """The writer's status, with this worker's note count and channels; None before any."""
        published = self.published
        if published is None:
            return None
        return SpaceStatus(
            space=published.space,
            path=published.path,
            language=published.language,
            notes=notes,
            skipped=published.skipped,
            lexical=published.lexical,
            semantic=semantic,
            # Its own graph follows its searcher; while the writer reads the links, say so.
            graph=graph if published.graph.state == ChannelState.READY else published.graph,
            message=published.message,
            collections=published.collections,
            watch=published.watch,
            skipped_notes=published.skipped_notes,
        )


def not_yet_published(name: str, path: str, language: str, notes: int) -> SpaceStatus:
    """A follower's status before the writer published one (its first moments)."""
    building = ChannelStatus(ChannelState.BUILDING, WAITING_FOR_WRITER)
    lexical = LexicalStatus(IndexState.BUILDING, 0, 0, None, None, None, None)
    return SpaceStatus(name, path, language, notes, 0, lexical, building, building, WAITING_FOR_WRITER)


class PeerLoop:
    """The thread that keeps one worker in step with the others."""

    def __init__(
        self,
        rounds: Iterable[Callable[[], None]],
        publish: Iterable[Callable[[], None]],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`rounds`: run every FOLLOW_INTERVAL_SECONDS (followers' looks, writers' requests);
        `publish`: every PUBLISH_INTERVAL_SECONDS (writers' status); `clock`: the failures' log windows'."""
        self._rounds = list(rounds)
        self._publish = list(publish)
        self._stop = threading.Event()
        self._failures = Throttle(ROUND_FAILURE_LOG_SECONDS, clock)
        self._started = False
        self._thread = threading.Thread(target=self._run, name="peers", daemon=True)

    def start(self) -> None:
        self._started = True
        if (self._rounds or self._publish) and not self._thread.is_alive():
            self._thread.start()

    def add(self, rounds: Iterable[Callable[[], None]], publish: Iterable[Callable[[], None]]) -> None:
        """Steps of a space opened later (it could not open at first): in the
        next round. The lists are replaced, never changed, under the running thread."""
        self._rounds = [*self._rounds, *rounds]
        self._publish = [*self._publish, *publish]
        if self._started and not self._stop.is_set():
            self.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        every = max(1, round(PUBLISH_INTERVAL_SECONDS / FOLLOW_INTERVAL_SECONDS))
        turn = 0
        while not self._stop.wait(FOLLOW_INTERVAL_SECONDS if turn else 0):
            steps = self._rounds + (self._publish if turn % every == 0 else [])
            turn += 1
            self.run(steps)

    def run(self, steps: Iterable[Callable[[], None]]) -> None:
        """One round of `steps`: one that fails is tried again next round."""
        for step in steps:
            try:
                step()
            except (StorageFault, IndexFolderMissing, OSError, ValueError) as exc:  # the next round tries again
                self._failed(exc, expected=True)
            except Exception as exc:  # noqa: BLE001 - a fault of ours: logged with its traceback, tried again
                self._failed(exc, expected=False)

    def _failed(self, exc: Exception, expected: bool) -> None:
        """Logged once a window per kind (the OS error's name, else the
        exception's type), with how many like it were not."""
        code = fault_code(exc)
        kind = errno.errorcode.get(code, str(code)) if code is not None else type(exc).__name__
        not_logged = self._failures.admit(kind)
        if not_logged is None:
            return
        if expected:
            log.warning("peer_round_failed", kind=kind, error=str(exc), not_logged_since_last=not_logged)
        else:
            log.error("peer_round_failed", kind=kind, not_logged_since_last=not_logged, exc_info=exc)
