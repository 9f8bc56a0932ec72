"""One file of a pass, read into a note: SpaceIndexer's "read + parse" stage.

The file is opened safely (scan.open_note), bounded in size, hashed, parsed
by its format and timed against its budget (index/quarantine.py) — on the
writer thread, or taken from a process that did the same ahead of it
(index/parse_ahead.py). Which note id it gets among the space's is the
indexer's business, not this stage's.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import tantivy

from notarium_search.index import note_file
from notarium_search.index.manifest import Entry
from notarium_search.index.parse_ahead import POOLED_FORMATS, Job, NoteHead, Parsed
from notarium_search.index.quarantine import Marks, read_budget
from notarium_search.lexical.schema import document
from notarium_search.logsetup import get_logger
from notarium_search.notes import formats
from notarium_search.notes.collection import CollectionRules
from notarium_search.notes.parse import NotANote, ReadLater
from notarium_search.notes.scan import OutsideSpace
from notarium_search.settings import Settings
from notarium_search.storage.faults import stop_if_short
from notarium_search.types import ParsedNote, SourceFile

log = get_logger(__name__)


class Skip(msgspec.Struct):
    """Not indexed, recorded with its reason until the file changes."""

    entry: Entry
    reason: str


class Later(msgspec.Struct):
    """Not read now, not recorded: the next pass tries again."""

    reason: str


class Read(msgspec.Struct):
    entry: Entry  # its note_id not yet set: the indexer decides it
    note: ParsedNote | NoteHead  # a head: parsed in another process, `document` made there
    document: tantivy.Document | None = None


class NoteReader:
    """Reads the files of one space for its writer."""

    def __init__(self, space: str, settings: Settings, collections: CollectionRules) -> None:
        self.space = space
        self.settings = settings
        self.collections = collections
        self.root_real = ""  # the space folder's real path, resolved once per pass

    def job_for(self, source: SourceFile, marks: Marks) -> Job | None:
        """What a process may parse ahead for `source`: a built-in format's
        file not set aside, that `read` will parse (not skipped for its size)."""
        fmt = formats.for_path(source.path)
        if fmt is None or not any(fmt is pooled for pooled in POOLED_FORMATS):
            return None
        limit, for_size = self._size_rule(fmt, source)
        if for_size is not None or marks.quarantined(source) is not None:
            return None
        return Job(source, limit)

    def _size_rule(self, fmt: formats.NoteFormat, source: SourceFile) -> tuple[int, str | None]:
        """The most of `source` read, and why it is not parsed for its size
        (None: it is, cut to that many bytes when larger): decided here only,
        for `read` and for what a process may parse ahead (`job_for`)."""
        limit = formats.byte_limit(fmt, self.settings.max_file_bytes)
        if source.size <= limit:
            return limit, None
        if fmt.max_bytes is not None:  # the format needs whole files: never cut one
            return limit, f"larger than {limit} bytes, the most a {fmt.name} file is read at ({source.size})"
        if self.settings.oversize == "skip":
            return limit, f"larger than max_file_bytes ({source.size} > {limit})"
        return limit, None

    def read(
        self, source: SourceFile, marks: Marks, clock: Callable[[], float], ahead: Parsed | None = None
    ) -> Read | Skip | Later:
        """`source` read and parsed (`ahead`: what a process made of it, the
        file read there with the same checks); `clock` times the parse."""
        fmt = formats.for_path(source.path)
        bare = Entry(source.mtime_ns, source.size, "", None)
        if fmt is None:  # only an `include` naming other files gets here; never read as another format
            return Skip(bare, formats.unread_reason(source.path))
        set_aside = marks.quarantined(source)
        if set_aside is not None:
            return Skip(bare, set_aside)
        limit, for_size = self._size_rule(fmt, source)
        if for_size is not None and fmt.max_bytes is not None:  # not even read
            return Skip(bare, for_size)
        if ahead is not None and for_size is None:  # else read here: skipped, its digest recorded
            entry = Entry(source.mtime_ns, source.size, ahead.digest, None)
            if ahead.head is None:
                return Skip(entry, ahead.not_a_note)
            read: Read | Skip | Later = Read(entry, ahead.head, document(ahead.parts) if ahead.parts else None)
            took = ahead.cpu_seconds
        else:
            read, took = self._parse_here(fmt, source, limit, clock, for_size)
        if not isinstance(read, Read):
            return read
        if source.size > limit:
            log.warning("note_truncated", space=self.space, path=source.path, size=source.size, kept=limit)
        budget = read_budget(source.size)
        if took > budget:  # every edit and rebuild would pay it again
            why = f"took {took:.1f} s to read (the budget is {budget:.1f} s): skipped until the file changes"
            return Skip(read.entry, why)
        for warning in read.note.warnings:
            log.warning("note_warning", space=self.space, path=source.path, warning=warning)
        return read

    def _parse_here(
        self, fmt: formats.NoteFormat, source: SourceFile, limit: int, clock: Callable[[], float], for_size: str | None
    ) -> tuple[Read | Skip | Later, float]:
        try:
            raw, too_big = note_file.read_bounded(self.root_real, source, limit)
        except OutsideSpace as exc:  # swapped for a symlink out of the space since the scan
            return Skip(Entry(source.mtime_ns, source.size, "", None), str(exc.strerror)), 0.0
        except OSError as exc:  # vanished or unreadable: retried at the next reconcile
            stop_if_short(exc, source.path)
            return Later(f"cannot read: {exc.strerror}"), 0.0
        entry = Entry(source.mtime_ns, source.size, note_file.digest(raw), None)
        if for_size is not None:
            return Skip(entry, for_size), 0.0
        started = clock()
        try:
            note = note_file.parse(fmt, raw, source, too_big)
        except NotANote as exc:
            return Skip(entry, str(exc)), 0.0
        except ReadLater as exc:  # not the file's fault (a reader's process killed from outside): next pass
            return Later(str(exc)), 0.0
        took = clock() - started
        return Read(entry, note_file.with_collections(note, self.collections)), took
