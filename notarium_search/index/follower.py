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

import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from notarium_search.collector import HEAP
from notarium_search.graph.channel import GraphChannel
from notarium_search.index import sharing
from notarium_search.lexical.store import LexicalIndex
from notarium_search.logsetup import get_logger
from notarium_search.semantic.follower import file_signature
from notarium_search.storage.faults import StorageFault
from notarium_search.types import (
    ChannelState,
    ChannelStatus,
    IndexState,
    LexicalStatus,
    SpaceStatus,
)

# How often a follower looks at the writer's files (a stat each, ~2 µs) and a
# writer at its readers' requests: an edit reaches every worker within this
# of the writer's commit.
FOLLOW_INTERVAL_SECONDS = 0.1
# A writer publishes its status at most this often (status() reads counts
# from the index); state changes wait at most this long to be seen by followers.
PUBLISH_INTERVAL_SECONDS = 0.25

log = get_logger(__name__)

WAITING_FOR_WRITER = "waiting for the writer's first status"


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
        self._built = True  # the graph read at open: frozen at the first look

    def refresh(self) -> None:
        """One look at the writer's files; what changed is followed, and what
        it built is then kept out of full garbage collections, as the
        writer's jobs are (collector.py)."""
        changed, self._built = self._built, False
        status = file_signature(self.directory / sharing.STATUS_FILE)
        if status != self._status_seen:
            self._status_seen = status
            self.published = sharing.read_status(self.directory) or self.published
        journal = file_signature(self.directory / sharing.JOURNAL_FILE)
        meta = file_signature(self.directory / "lexical" / "meta.json")
        if meta != self._meta or journal != self._journal_seen:
            self.lexical.reload()  # before the journal: its entries name committed notes
            self._meta = meta
            self.repair_asked = False  # a new commit: a read failing again is new damage
            changed = True
        if journal != self._journal_seen:
            self._journal_seen = journal
            self._follow_journal()
        if self._on_semantic is not None:
            changed |= self._on_semantic(self.published.semantic if self.published else None)
        if changed:
            HEAP.after_job()

    def _follow_journal(self) -> None:
        journal = sharing.read_journal(self.directory)
        if journal is None:
            return
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
        kind: sharing.RequestKind = "full" if full else "reconcile"
        self._ask(sharing.Request(kind, sorted(paths) if paths is not None else None))

    def ask_repair(self, reason: str) -> None:
        if not self.repair_asked:
            self.repair_asked = True
            log.error("lexical_index_damaged", space=self.name, reason=reason, action="asking the writer")
            self._ask(sharing.Request("repair", reason=reason))

    def _ask(self, request: sharing.Request) -> None:
        try:
            if not sharing.ask(self.directory, request):
                log.warning("writer_requests_full", space=self.name, dropped=request.kind)
        except OSError as exc:
            log.error("writer_request_failed", space=self.name, kind=request.kind, error=str(exc))

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
            graph=graph,
            message=published.message,
            collections=published.collections,
            watch=published.watch,
        )


def not_yet_published(name: str, path: str, language: str, notes: int) -> SpaceStatus:
    """A follower's status before the writer published one (its first moments)."""
    building = ChannelStatus(ChannelState.BUILDING, WAITING_FOR_WRITER)
    lexical = LexicalStatus(IndexState.BUILDING, 0, 0, None, None, None, None)
    return SpaceStatus(name, path, language, notes, 0, lexical, building, building, WAITING_FOR_WRITER)


class PeerLoop:
    """The thread that keeps one worker in step with the others."""

    def __init__(self, rounds: Iterable[Callable[[], None]], publish: Iterable[Callable[[], None]]) -> None:
        """`rounds`: run every FOLLOW_INTERVAL_SECONDS (followers' looks, writers' requests);
        `publish`: every PUBLISH_INTERVAL_SECONDS (writers' status)."""
        self._rounds = list(rounds)
        self._publish = list(publish)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peers", daemon=True)

    def start(self) -> None:
        if self._rounds or self._publish:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        every = max(1, round(PUBLISH_INTERVAL_SECONDS / FOLLOW_INTERVAL_SECONDS))
        turn = 0
        while not self._stop.wait(FOLLOW_INTERVAL_SECONDS if turn else 0):
            steps = self._rounds + (self._publish if turn % every == 0 else [])
            turn += 1
            for step in steps:
                try:
                    step()
                except (StorageFault, OSError, ValueError) as exc:  # a passing fault: the next round tries again
                    log.warning("peer_round_failed", error=str(exc))
                except Exception:
                    log.exception("peer_round_failed")
