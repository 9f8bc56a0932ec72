"""Bring a space's indexes in line with its files (runs on the writer thread).

files → scan → diff against the manifest → read + parse changed files →
lexical index, committing every `commit_every` notes (or `COMMIT_SECONDS`) so
search answers from what is indexed so far. Unchanged files are not read;
touched-but-identical files are read and hashed but not re-indexed.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Callable, Collection
from datetime import UTC, datetime

import msgspec
import tantivy
from msgspec.structs import replace

from notarium_search.index import parse_ahead
from notarium_search.index.manifest import Entry, Manifest, intern, named_skipped
from notarium_search.index.note_file import file_time
from notarium_search.index.note_reader import Later, NoteReader, Read, Skip
from notarium_search.index.parse_ahead import NoteHead, ParseAhead
from notarium_search.index.quarantine import Marks
from notarium_search.index.survey import Pending, survey, to_read
from notarium_search.lexical import segments
from notarium_search.lexical.store import IndexLocked, LexicalIndex
from notarium_search.logsetup import get_logger
from notarium_search.notes.collection import CollectionRules
from notarium_search.notes.scan import (
    check_root,
    stat_paths,
)
from notarium_search.settings import Settings, SpaceConfig
from notarium_search.shared_strings import shared
from notarium_search.storage.faults import IndexFolderMissing, StorageFault
from notarium_search.types import IndexProgress, IndexState, ParsedNote, SourceFile

# Errors that stop a pass at once, leaving what is committed as it is: the
# index, the writer or the machine failing, not one note.
PASS_STOPPERS = (IndexLocked, StorageFault, IndexFolderMissing)
# Intermediate commits make a build searchable early, but each one leaves a
# Tantivy segment, and segments slow every query (tantivy-py cannot force a
# merge). The first commit comes quickly; the interval then doubles.
FIRST_COMMIT_SECONDS = 2.0
MAX_COMMIT_SECONDS = 60.0

log = get_logger(__name__)


class _Read(msgspec.Struct):
    entry: Entry
    note: ParsedNote | NoteHead | None  # None: not a note
    document: tantivy.Document | None = None  # the note's, made ahead (a head always has one)


class SpaceIndexer:
    """Owns the write side of one space. Not thread-safe: one writer thread."""

    def __init__(self, config: SpaceConfig, settings: Settings, lexical: LexicalIndex, manifest: Manifest) -> None:
        self.config = config
        self.settings = settings
        self.lexical = lexical
        self.manifest = manifest
        self.progress = IndexProgress()
        self._count_skipped()
        self.reader = NoteReader(config.name, settings, CollectionRules(config.collections))
        # What the next commit writes, recorded before it (see index/manifest.py).
        self._touched_ids: set[str] = set()
        self._touched_paths: set[str] = set()
        # A failed pass could not read the saved manifest back (too many open
        # files): the in-memory one may describe uncommitted writes, so the
        # next pass reads it first, or fails again without touching anything.
        self._manifest_stale = False
        self._work: list[SourceFile] = []  # the files the current pass reads, in path order
        self._unread_elsewhere = 0  # files an unfinished pass left that this one does not survey
        self._done_at_commit = 0  # files the current pass had read at its last commit
        self._committed = False  # by a pass of this process (see _wrote_nothing)
        self._marks: Marks | None = None  # the note being read, for the next process if this one dies
        self.clock: Callable[[], float] = time.thread_time  # the CPU each note's read takes (tests inject it)
        self._ahead: ParseAhead | None = None  # the current pass's notes parsed in other processes
        self._written = segments.LastWrites()  # the current pass's last notes written (_merge_segments)

    def reconcile(
        self,
        stop: threading.Event | None = None,
        on_progress: Callable[[IndexProgress], None] | None = None,
        paths: Collection[str] | None = None,
    ) -> IndexProgress:
        """Index new and changed notes, drop deleted ones. Safe to interrupt:
        what was committed is recorded in the manifest, the rest is redone.
        `paths` (relative, from a watcher) limits the pass to those files when
        it can: stat'ing 50,000 files takes over a second, one takes microseconds.
        Raises scan.SpaceUnavailable, before anything is touched, when the
        space's folder is not there: its notes are unknown, not deleted."""
        check_root(self.config.path)
        self.reader.root_real = os.path.realpath(self.config.path)
        if self.lexical.folder_missing:
            # Deleted under the running service: commits could no longer land (and
            # one with nothing to write would not even fail): the space is rebuilt.
            raise IndexFolderMissing(f"the index folder {self.lexical.directory} was deleted")
        if self._manifest_stale:
            self._reload_manifest()
        progress = IndexProgress(state=IndexState.BUILDING, started_at=time.monotonic())
        progress.last_indexed = self.progress.last_indexed
        self._done_at_commit = 0
        self.progress = progress
        try:
            self._reconcile(progress, stop, on_progress, paths)
        except BaseException as exc:
            # The in-memory manifest may describe writes that were never
            # committed: go back to the last saved one, which matches the index.
            self._touched_ids.clear()
            self._touched_paths.clear()
            self._manifest_stale = True
            with contextlib.suppress(StorageFault):  # still unreadable: the next pass reads it first
                self._reload_manifest()
                # Not after a kill (KeyboardInterrupt, SystemExit: nothing more is
                # written), nor into a folder this writer may no longer hold.
                if isinstance(exc, Exception) and not isinstance(exc, IndexLocked | IndexFolderMissing):
                    self._record_unread(progress.total - self._done_at_commit)
            raise
        interrupted = stop is not None and stop.is_set() and progress.done < progress.total
        # Still building when files an unfinished pass over every file left are
        # unread (this pass read only reported ones): the retry reads them.
        progress.state = IndexState.BUILDING if interrupted or self.manifest.unread else IndexState.READY
        progress.finished_at = time.monotonic()
        log.info(
            "space_indexed",
            space=self.config.name,
            changed=progress.indexed,
            deleted=progress.deleted,
            skipped=progress.skipped,
            seconds=round(progress.finished_at - progress.started_at, 3),
            interrupted=interrupted,
        )
        return progress

    def _record_unread(self, left: int) -> None:
        """A failed pass left `left` files unread since its last commit: a
        read-only reader must know, even when it failed before its first commit
        (2 s into it). Best effort (the disk may be what failed); the reloaded
        entries match the index, so saving them is safe."""
        if left > (self.manifest.unread or 0):
            self.manifest.unread = left
            with contextlib.suppress(OSError):
                self.manifest.save()

    def distrust_manifest(self) -> None:
        """The manifest in memory may not match the index (a rebuild emptied it
        and failed): the next pass reads the saved one first."""
        self._manifest_stale = True

    def _reload_manifest(self) -> None:
        self.manifest = Manifest.load(self.manifest.path, self.manifest.fingerprint)
        self._manifest_stale = False

    def begin_rebuild(self) -> None:
        """A rebuild starts (a full reindex, a repair): status says building,
        and answers `partial`, from now on, before anything is emptied."""
        self.progress = IndexProgress(state=IndexState.BUILDING, started_at=time.monotonic())

    def failed(self) -> None:
        """The pass failed: its counters stay, its state says so."""
        self.progress.state = IndexState.FAILED

    def _reconcile(
        self,
        progress: IndexProgress,
        stop: threading.Event | None,
        on_progress: Callable[[IndexProgress], None] | None,
        paths: Collection[str] | None,
    ) -> None:
        self._redo_unsettled(progress)
        surveyed = survey(self.config, self.manifest, paths)
        # A pass over a few reported files says nothing of the others an
        # unfinished pass over every file had left: their count is kept.
        self._unread_elsewhere = 0 if surveyed.everything else (self.manifest.unread or 0)
        for rel_path in surveyed.gone:
            note_id = self.manifest.entries.pop(rel_path).note_id
            self._touched_paths.add(rel_path)
            if note_id is not None:
                self._touched_ids.add(note_id)
                self.lexical.delete(note_id)
                progress.deleted += 1
                progress.deleted_ids.add(note_id)
        self._work = to_read(self.manifest, surveyed.files)
        progress.total = len(self._work)
        owners = self.manifest.ids()
        last_commit = time.monotonic()
        interval = FIRST_COMMIT_SECONDS
        pending = len(surveyed.gone)
        commits = 0
        self._written = segments.LastWrites()
        self._ahead = self._start_parse_ahead()
        try:
            for index, source in enumerate(self._work):  # grows when a note must be read again (see _demote)
                if stop is not None and stop.is_set():
                    break
                pending += self._apply_isolated(index, source, owners, progress)
                progress.done += 1
                if pending >= self.settings.commit_every or (pending and time.monotonic() - last_commit > interval):
                    self._commit(progress)
                    pending, last_commit, commits = 0, time.monotonic(), commits + 1
                    interval = min(interval * 2, MAX_COMMIT_SECONDS)
                if on_progress is not None:
                    on_progress(progress)
        finally:
            if self._ahead is not None:
                self._ahead.close()
                self._ahead = None
        if not self._wrote_nothing(progress, surveyed.gone):
            self._commit(progress)
            commits += 1
        if commits > 1 and not (stop is not None and stop.is_set()):
            self._merge_segments(progress)
        self._written = segments.LastWrites()  # its notes' texts and documents not kept until the next pass
        # A note moved (same frontmatter id, new path) was deleted and re-added in
        # this pass: later stages keep its vectors and links instead of redoing them.
        progress.deleted_ids -= progress.changed_ids

    def _merge_segments(self, progress: IndexProgress) -> None:
        """A pass that committed several times left several segments: its
        last notes are written again, each committed, until Tantivy merges
        them (lexical/segments.py). A failure here loses nothing: the pass's
        notes are committed."""
        try:
            rewritten = self._written.write_again(
                self.lexical,
                lambda path, note_id: getattr(self.manifest.entries.get(path), "note_id", None) == note_id,
                lambda: self._commit(progress),
            )
        except (OSError, msgspec.DecodeError, StorageFault) as exc:
            log.warning("segments_not_merged", space=self.config.name, error=str(exc))
            return
        log.info("segments", space=self.config.name, rewritten=rewritten, now=self.lexical.searcher().num_segments)

    def pending(self) -> Pending:
        """Compare the files with the manifest, stat only (nothing read or
        written, so safe beside a running writer): the honest answer to "is
        this index complete?" whether the last pass was interrupted, crashed,
        or files changed since. Raises scan.SpaceUnavailable like a pass."""
        surveyed = survey(self.config, self.manifest, None)
        return Pending(
            files=len(surveyed.files), changed=len(to_read(self.manifest, surveyed.files)), gone=len(surveyed.gone)
        )

    def _start_parse_ahead(self) -> ParseAhead | None:
        processes = self.settings.parse_processes or parse_ahead.cores()
        return parse_ahead.start(
            self._work,
            processes,
            self.reader.root_real,
            self.lexical.languages,
            self.config.collections,
            lambda source: self.reader.job_for(source, self._reading_marks()),
        )

    def _apply_isolated(self, index: int, source: SourceFile, owners: dict[str, str], progress: IndexProgress) -> int:
        """One bad file never stops the scan: an unexpected error skips it; a
        note the process died reading is marked, and set aside once it has
        done so QUARANTINE_STRIKES times (index/quarantine.py)."""
        marks = self._reading_marks()
        marks.reading(source)
        try:
            return self._apply(index, source, owners, progress)
        except PASS_STOPPERS:
            raise  # the index, the writer or the machine, not this file: the pass stops and is retried
        except Exception as exc:  # logged with its traceback; the file is retried next pass
            log.exception("note_failed", space=self.config.name, path=source.path)
            self._skip(progress, source.path, f"internal error: {type(exc).__name__}")
            return 0
        finally:  # also on a stop (Ctrl+C, SIGTERM): only a process that dies leaves the mark
            marks.done()

    def _reading_marks(self) -> Marks:
        """The marks, read at the first pass of this process (only a writer has them)."""
        if self._marks is None:
            self._marks = Marks(self.manifest.path.parent, self.config.name)
        return self._marks

    def _apply(self, index: int, source: SourceFile, owners: dict[str, str], progress: IndexProgress) -> int:
        """Index the pass's `index`th file; returns how many index writes it caused."""
        previous = self.manifest.entries.get(source.path)
        read = self._read(index, source, owners, progress)
        if read is None:
            return 0
        self.manifest.entries[shared(source.path)] = intern(read.entry)  # one copy of each path (shared_strings.py)
        if (
            previous is not None
            and previous.digest == read.entry.digest
            and previous.note_id == read.entry.note_id
            and (read.note is None or read.note.updated != file_time(source))
        ):
            return 0  # touched, not changed (a note dated by its file's time did change: its date)
        previous_id = previous.note_id if previous is not None else None
        self._touched_paths.add(source.path)
        self._touched_ids.update(i for i in (previous_id, read.entry.note_id) if i is not None)
        if read.note is None:
            if previous_id is not None:
                self.lexical.delete(previous_id)
                owners.pop(previous_id, None)
                progress.deleted_ids.add(previous_id)
                self._read_claimants(previous_id, progress)
            return 1 if previous_id else 0
        if read.document is not None:
            self.lexical.upsert_document(read.note.id, read.document, previous_id)
            again = functools.partial(self.lexical.upsert_document, read.note.id, read.document)
        else:
            assert isinstance(read.note, ParsedNote)
            self.lexical.upsert(read.note, previous_id)
            again = functools.partial(self.lexical.upsert, read.note)
        self._written.wrote(source.path, read.note.id, again)
        if previous_id is not None and previous_id != read.note.id:
            owners.pop(previous_id, None)
            progress.deleted_ids.add(previous_id)
            self._read_claimants(previous_id, progress)
        owners[read.note.id] = source.path
        progress.indexed += 1
        progress.changed_ids.add(read.note.id)
        return 1

    def _read(self, index: int, source: SourceFile, owners: dict[str, str], progress: IndexProgress) -> _Read | None:
        ahead = self._ahead.parsed(index, source) if self._ahead is not None else None
        read = self.reader.read(source, self._reading_marks(), self.clock, ahead)
        if isinstance(read, Skip):
            return self._skip_read(read.entry, progress, source.path, read.reason)
        if isinstance(read, Later):
            self._skip(progress, source.path, read.reason)
            return None
        note, digest = read.note, read.entry.digest
        owner = owners.get(note.id)
        if owner is not None and owner != source.path and source.path < owner:
            self._demote(owner, note.id, source.path, progress)
            owner = owners.pop(note.id)
        elif owner is not None and owner != source.path:
            # Indexed under its path instead, unless another note already has that path as its id.
            if note.id == source.path or owners.get(source.path, source.path) != source.path:
                return self._skip_read(
                    read.entry, progress, source.path, f"note id {note.id!r} already used by {owner}"
                )
            log.warning("duplicate_note_id", space=self.config.name, path=source.path, id=note.id, owner=owner)
            if not isinstance(note, ParsedNote):  # parsed ahead: its document says its id, the whole note is needed
                again = self.reader.read(source, self._reading_marks(), self.clock)
                if not isinstance(again, Read) or again.note.id != note.id:  # changed meanwhile: the next pass
                    self._skip(progress, source.path, "changed while it was read")
                    return None
                note, digest = again.note, again.entry.digest
            assert isinstance(note, ParsedNote)
            claimed = note.id
            note = replace(note, id=source.path)
            return _Read(Entry(source.mtime_ns, source.size, digest, note.id, claimed_id=claimed), note)
        return _Read(Entry(source.mtime_ns, source.size, digest, note.id), note, read.document)

    def _demote(self, holder: str, note_id: str, winner: str, progress: IndexProgress) -> None:
        """`winner`'s path sorts before `holder`'s, and both ask for `note_id`:
        a clean build reads files in path order, so the first path holds the
        id whatever the order the files appeared in. The holder's document
        goes with the winner's upsert (same id); the holder is read again in
        this pass and indexed under its path."""
        log.warning("duplicate_note_id", space=self.config.name, path=holder, id=note_id, owner=winner)
        self.manifest.entries[holder] = Entry(-1, -1, "", None)  # no document of its own any more
        self._touched_paths.add(holder)
        self._touched_ids.add(note_id)
        self._read_again([holder], progress)

    def _read_claimants(self, note_id: str, progress: IndexProgress) -> None:
        """`note_id` came free in this pass: the files that asked for it while
        another held it are read again (the first path takes it, as in a
        clean build), instead of waiting for a later pass."""
        claimants = [p for p, e in self.manifest.entries.items() if e.claimed_id == note_id]
        if claimants:
            self._read_again(claimants, progress)

    def _read_again(self, rel_paths: list[str], progress: IndexProgress) -> None:
        """Add files to the current pass (read after those already listed)."""
        waiting = {s.path for s in self._work[progress.done + 1 :]}
        surveyed = stat_paths(
            self.config.path, [p for p in rel_paths if p not in waiting], self.config.include, self.config.exclude
        )
        if surveyed is None:  # a folder moved meanwhile: the next full pass finds them (their entries changed)
            return
        self._work.extend(surveyed[0])
        progress.total += len(surveyed[0])

    def _skip_read(self, entry: Entry, progress: IndexProgress, rel_path: str, reason: str) -> _Read:
        self._skip(progress, rel_path, reason)
        entry.skip_reason = reason
        return _Read(entry, None)

    def _skip(self, progress: IndexProgress, rel_path: str, reason: str) -> None:
        progress.skipped += 1
        log.warning("note_skipped", space=self.config.name, path=rel_path, reason=reason)

    def _redo_unsettled(self, progress: IndexProgress) -> None:
        """A crash fell between a commit and its manifest: drop the notes it
        touched from both, so that this pass reads them again from the files
        (those whose file is gone stay dropped)."""
        unsettled = self.manifest.load_unsettled()
        if unsettled is None:
            return
        log.warning(
            "space_unsettled_commit", space=self.config.name, notes=len(unsettled.ids), all=unsettled.everything
        )
        ids, paths = set(unsettled.ids), set(unsettled.paths)
        if unsettled.everything:
            ids |= set(self.manifest.ids())
            paths |= set(self.manifest.entries)
            self.lexical.delete_all()
        for note_id in ids:
            self.lexical.delete(note_id)
        for rel_path in [p for p, e in self.manifest.entries.items() if p in paths or e.note_id in ids]:
            del self.manifest.entries[rel_path]
        progress.deleted_ids |= ids
        self.manifest.unread = len(paths)  # read again by the pass that follows
        self.manifest.opstamp = self.lexical.commit()
        self.manifest.save()
        self.manifest.settle()

    def _wrote_nothing(self, progress: IndexProgress, gone: Collection[str]) -> bool:
        """Whether the pass ending found no file to read and none gone, and
        leaves the unread count as it was: then it changed neither the index
        nor the manifest, and commits nothing. The periodic pass when watching
        is off (every `reconcile_interval`), and a watched change to a file
        that is no note, made an empty commit (every follower's searcher
        reloaded) and wrote the whole manifest again (9.8 MB at 50,000 notes,
        ~23 ms). The first pass of a process commits anyway: that commit is
        when status says the space was last indexed."""
        return self._committed and not gone and not self._work and self.manifest.unread == self._unread(progress)

    def _unread(self, progress: IndexProgress) -> int:
        """The files left to read, for the manifest: this pass's and an unfinished earlier pass's."""
        return max(progress.total - progress.done, self._unread_elsewhere)

    def _commit(self, progress: IndexProgress) -> None:
        self._committed = True
        touched = bool(self._touched_ids or self._touched_paths)
        if touched:
            self.manifest.mark_unsettled(self._touched_ids, self._touched_paths)
        self.manifest.opstamp = self.lexical.commit()
        self.manifest.unread = self._unread(progress)
        self.manifest.save()
        self._done_at_commit = progress.done
        if touched:
            self.manifest.settle()
            self._touched_ids.clear()
            self._touched_paths.clear()
        progress.last_indexed = datetime.now(tz=UTC)
        # Counted here, on the writer thread: status readers must not iterate
        # a manifest the writer is changing.
        self._count_skipped()

    def _count_skipped(self) -> None:
        skipped = self.manifest.skipped()
        self.skipped_total = len(skipped)
        self.skipped_notes = named_skipped(skipped)
