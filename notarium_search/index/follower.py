"""Serving a space from several processes (the HTTP server's workers): one
writer, the others followers.

The first worker to take a space's writer lock (index/folder.py) is its
writer, as a lone service is; the others follow it (`Follower`): they open
the indexes read-only and look every FOLLOW_INTERVAL_SECONDS (index/peers.py; up to
IDLE_INTERVAL_SECONDS once nothing changed for a while) at the files the writer
changes (index/sharing.py):

- the lexical index's `meta.json` (a commit, a merge): its searcher reloads;
- the change journal: its channels follow each pass's changed notes, as the
  writer's do (`after_lexical`: the link graph applies them);
- each channel's `follow`, with the writer's published status of it (the
  semantic channel reads the vectors again when their manifest changed:
  semantic/follower.py);
- the published status: what its `/status` says, and when its answers are partial.

A follower's reindex, and the repair a damaged read asks for, are requests
left for the writer. The `PeerLoop` thread does both sides' rounds: a
follower's looks, a writer's requests taken and status published.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from msgspec.structs import replace

from notarium_search.collector import HEAP
from notarium_search.index import sharing
from notarium_search.index.peers import Step
from notarium_search.lexical.channel import generic_status
from notarium_search.logsetup import get_logger
from notarium_search.storage.faults import IndexFolderMissing, StorageFault
from notarium_search.storage.signature import file_signature
from notarium_search.types import ChannelState, ChannelStatus, IndexState, LexicalStatus, SpaceStatus

if TYPE_CHECKING:
    from notarium_search.index.space import Space

log = get_logger(__name__)

WAITING_FOR_WRITER = "waiting for the writer's first status"
MAX_REQUEST_PATHS = 1_000  # files named in one reconcile request; more: every file


class Follower:
    """The role of a space whose writer is another worker (index/space.py SpaceRole)."""

    def __init__(self, space: Space) -> None:
        self.space = space
        self.name = space.name
        self.directory = directory = space.directory
        self.lexical = space.lexical
        # Looked at before every request (`catch_up`): joined once.
        self._meta_path = directory / "lexical" / "meta.json"
        self._status_path = directory / sharing.STATUS_FILE
        self._meta = file_signature(self._meta_path)
        self._journal_seen = file_signature(directory / sharing.JOURNAL_FILE)
        self._status_seen = file_signature(self._status_path)
        self.published = sharing.read_status(directory)
        # Read before the channels follow it: entries journaled from now on are
        # applied to them (applying one they hold reads the same notes again: no harm).
        journal = sharing.read_journal(directory)
        self._epoch, self._serial = (journal.epoch, journal.last_serial) if journal else ("", 0)
        self.repair_asked = False
        self._freeze_due = True  # what was read at open (the graph) is frozen at the first look
        # A reconcile asked for since the last look, sent at the next one: the
        # files of one search's vanished hits make one request, not one each.
        self._reconcile_asked = False
        self._reconcile_paths: set[str] | None = set()  # None: every file
        self._asking = threading.Lock()  # request threads ask, the peer thread sends
        # The peer thread's looks and every request's catch-up (`catch_up`,
        # from Service.space; `status`) take turns.
        self._catching_up = threading.Lock()

    def refresh(self) -> bool:
        """One look at the writer's files; what changed is followed, and what
        it built is then kept out of full garbage collections, as the
        writer's jobs are (collector.py). Whether something changed (the
        peer loop's pace, index/peers.py)."""
        changed, self._freeze_due = self._freeze_due, False
        try:
            sent = self._send_reconcile()
            changed |= self._look()
        finally:
            if changed:
                HEAP.after_job()
        return changed or sent

    def _look(self) -> bool:
        with self._catching_up:
            # The journal read before the searcher reloads: its entries name
            # notes the reloaded searcher holds. Read after, an entry journaled
            # meanwhile would be applied from the older searcher, then counted as seen.
            journal_seen = file_signature(self.directory / sharing.JOURNAL_FILE)
            journal = sharing.read_journal(self.directory) if journal_seen != self._journal_seen else None
            reloaded = self._catch_up(reload=journal is not None)
            if reloaded is None:
                return False  # kept: the journal and the channels wait for the commit that ends the rebuild
            if journal is not None:
                self._journal_seen = journal_seen
        if journal is not None:
            self._follow_journal(journal)
        statuses = self.published.channels if self.published is not None else {}
        changed = reloaded
        for channel in self.space.every_channel:
            changed |= channel.follow(statuses.get(channel.name))
        return changed

    def _catch_up(self, reload: bool = False) -> bool | None:
        """The writer's status and commits: its published status read, then
        the searcher reloaded when the writer committed (or `reload`), and
        the status made this worker's only once the reload is done: a status
        saying "ready" beside the older searcher's count (0 at start) was
        what /status said, at times, between the two (CI, test_vault_root).
        Whether the searcher reloaded; None when it kept the older one (a
        repair's new empty index: `LexicalStore.reload`). Under `_catching_up`."""
        fresh = self._read_status()
        published = fresh or self.published
        try:
            meta = file_signature(self._meta_path)
            if meta == self._meta and not reload:
                return False
            emptied = published is not None and published.lexical.state == IndexState.READY and published.notes == 0
            if not self.lexical.reload(keep_if_emptied=not emptied):
                return None  # the notes it had are served until the rebuild commits
            self._meta = meta
            self.repair_asked = False  # a new commit: a read failing again is new damage
            return True
        finally:
            self.published = published

    def _read_status(self) -> SpaceStatus | None:
        """The writer's published status when it changed since the last look."""
        status = file_signature(self._status_path)
        if status == self._status_seen:
            return None
        self._status_seen = status
        return sharing.read_status(self.directory)

    def _follow_journal(self, journal: sharing.Journal) -> None:
        entries = journal.since(self._epoch, self._serial)
        self._epoch, self._serial = journal.epoch, journal.last_serial
        if entries is None or any(entry.everything for entry in entries):
            for channel in self.space.every_channel:
                channel.rebuild()
            return
        for entry in entries:
            for channel in self.space.every_channel:
                channel.after_lexical(set(entry.changed), set(entry.deleted))

    @property
    def ready(self) -> bool:
        return self.published is not None and self.published.lexical.state == IndexState.READY

    @property
    def folder_away(self) -> bool:
        return False  # the writer's passes know; a vanished note is asked about all the same

    def start(self) -> None:
        return None  # the peer loop runs its looks (`peer_steps`)

    def peer_steps(self) -> tuple[list[Step], list[Step]]:
        return [self.refresh], []

    def request_stop(self) -> None:
        return None

    def stop(self, timeout: float = 30.0) -> None:
        if self.space.graph.remote is not None:
            self.space.graph.remote.close()
        self.lexical.close()

    def attach_embedder(self, embedder: Any) -> None:
        """The model, for its queries: it reads the writer's vectors at its next look."""
        for channel in self.space.needing("vector"):
            channel.attach(embedder)

    def request_reindex(self, full: bool = False, paths: Iterable[str] | None = None) -> None:
        """Asked of the writer at the next look (every file, or these)."""
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

    def _send_reconcile(self) -> bool:
        """The reconcile asked since the last look, sent; whether one was."""
        with self._asking:
            if not self._reconcile_asked:
                return False
            paths = sorted(self._reconcile_paths) if self._reconcile_paths is not None else None
            self._reconcile_asked, self._reconcile_paths = False, set()
        self._ask(sharing.Request("reconcile", paths))
        return True

    def request_repair(self, reason: str) -> None:
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

    def catch_up(self) -> None:
        """Before a request reads the space: the writer's last status and
        commit (two stats when nothing changed: 5.7 µs, measured in process).
        The writer publishes what its /status says before it says it
        (space_writer.py): a client told "ready", or that an edit is in, by
        one worker is not told otherwise by the next (at start, a page
        polling /status, or a test, between the writer's word and this
        worker's next look: up to IDLE_INTERVAL_SECONDS and a reload).
        Only the status and the searcher: the channels follow at the peer
        thread's next look."""
        with self._catching_up:
            self._catch_up_quietly()

    def _catch_up_quietly(self) -> None:
        # On failure, what it has: the peer loop's next look tries again, and logs why.
        with contextlib.suppress(StorageFault, IndexFolderMissing, OSError, ValueError):
            self._catch_up()

    def status(self, space: Space) -> SpaceStatus:
        """The writer's status, with this worker's note count and channels:
        caught up and read under one turn of `_catching_up`."""
        with self._catching_up:
            self._catch_up_quietly()
            published = self.published
            notes = int(self.lexical.searcher().num_docs)
        if published is None:
            waiting = not_yet_published(space.name, str(space.config.path), space.config.language, notes)
            return replace(waiting, channels=dict.fromkeys(space.opened, waiting.semantic))
        channels = {**space.channel_statuses(), "lexical": generic_status(published.lexical)}
        return replace(
            published,
            notes=notes,
            semantic=channels.get("semantic", published.semantic),
            graph=channels.get("graph", published.graph),
            channels=channels,
        )


def not_yet_published(name: str, path: str, language: str, notes: int) -> SpaceStatus:
    """A follower's status before the writer published one (its first moments)."""
    building = ChannelStatus(ChannelState.BUILDING, WAITING_FOR_WRITER)
    lexical = LexicalStatus(IndexState.BUILDING, 0, 0, None, None, None, None)
    return SpaceStatus(name, path, language, notes, 0, lexical, building, building, WAITING_FOR_WRITER)
