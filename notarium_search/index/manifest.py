"""Per-space manifest: what the lexical index holds, by file.

It lets a restart skip unchanged files (same mtime and size, or same content
hash) and tells which note id a path had, so edits and deletions reach the
index. Written atomically: a crash leaves the previous manifest, never half
of one.

The manifest and the Tantivy commit are two files, so a crash can fall
between them. Before each commit the writer records which note ids and paths
the commit touches (`unsettled.json`) and removes that record once the
manifest matches the commit; a record found at the next start names exactly
the notes whose index state is uncertain, and those are redone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import msgspec

from notarium_search.logsetup import get_logger
from notarium_search.shared_strings import shared
from notarium_search.storage.atomic import fsync_directory, write_atomic
from notarium_search.storage.faults import StorageFault, describe, is_passing
from notarium_search.types import SkippedNote

# Status names this many of a space's skipped files (the count says how many
# there are): a vault of scanned notes can skip thousands.
SKIPPED_SHOWN = 20

log = get_logger(__name__)


class Entry(msgspec.Struct, array_like=True):
    mtime_ns: int
    size: int
    digest: str
    note_id: str | None  # None: the file was skipped (binary, not UTF-8, too large)
    skip_reason: str | None = None
    # The frontmatter id this file asked for while another file held it: the
    # note is indexed under its path, and takes the id back once it is free.
    claimed_id: str | None = None


class Unsettled(msgspec.Struct):
    """Notes a commit was writing when the process stopped."""

    ids: list[str]
    paths: list[str]
    everything: bool = False  # the record itself is unreadable: nothing is certain


class _File(msgspec.Struct):
    fingerprint: str
    entries: dict[str, Entry]
    opstamp: int | None = None  # absent from manifests written before it was recorded
    unread: int | None = None  # likewise


class _Saved(_File):
    """What `save` writes: the records and their counts, which a search reads
    instead of them (`load_counted`). `load` reads a `_File`: a bad count
    never costs the records."""

    files: int = 0
    indexed: int = 0


class _Head(msgspec.Struct):
    """A manifest without its records: msgspec skips `entries` without making them."""

    fingerprint: str
    opstamp: int | None = None
    unread: int | None = None


class _CountedHead(_Head):
    """`_Head` with the records' counts, taken as they come: checked by `load_counted`."""

    files: Any = None
    indexed: Any = None


_Stored = TypeVar("_Stored", _File, _Head, _CountedHead)


def _stored(path: Path, fingerprint: str, shape: type[_Stored]) -> _Stored | None:
    """The manifest at `path` decoded as `shape`; None when missing, invalid or
    of another fingerprint (Manifest.load says why). Raises StorageFault."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        if is_passing(exc):
            raise StorageFault(f"cannot read the manifest {path}: {describe(exc)}") from exc
        data = b""  # something else in its place (a folder): invalid, like bad bytes
    try:
        stored = msgspec.json.decode(data, type=shape)
    except msgspec.DecodeError as exc:
        log.warning("manifest_unreadable", path=str(path), error=str(exc))
        return None
    if stored.fingerprint != fingerprint:
        log.info("manifest_fingerprint_changed", old=stored.fingerprint, new=fingerprint)
        return None
    return stored


class Manifest(msgspec.Struct):
    path: Path
    fingerprint: str
    entries: dict[str, Entry] = msgspec.field(default_factory=dict)
    opstamp: int | None = None
    """Tantivy's opstamp of the commit these entries describe: an index whose
    meta.json names an older one (restored, or a file swapped) lost notes."""
    unread: int | None = None
    """How many files the pass that made this commit had still to read: 0 once
    a pass read them all, more while one is under way or after one was cut
    short (a pass over a few reported files keeps what an unfinished pass
    over every file left), None when not recorded. A read-only reader (a search from the
    shell) runs no pass of its own: this is how it knows its answers are partial."""
    counts: tuple[int, int] | None = None
    """(files, notes indexed) of a manifest loaded without its records
    (`load_counted`), as its writer counted them; None when `entries` is
    what there is."""
    records: bool = True
    """Whether `entries` are the records (False: loaded without them, by
    `load_head` or `load_counted`; such a manifest is never saved)."""

    @classmethod
    def load(cls, path: Path, fingerprint: str) -> Manifest:
        """The stored manifest, or an empty one when it is missing, invalid or
        was written for another fingerprint (forcing a rebuild). Raises
        StorageFault when it could not be read (too many open files, an I/O
        error): that says nothing of what it holds, and an empty manifest in
        its place once left deleted notes in the index for good."""
        stored = _stored(path, fingerprint, _File)
        if stored is None:
            return cls(path, fingerprint)
        return cls(path, fingerprint, interned(stored.entries), stored.opstamp, stored.unread)

    @classmethod
    def load_head(cls, path: Path, fingerprint: str) -> Manifest:
        """`load` without the records (`entries` empty), for a worker that
        follows another's writer (index/follower.py): its status and
        readiness are the writer's, and nothing it runs reads a file's
        record. Loaded whole, they were 31.5 MiB of RssAnon in every such
        worker at 50,000 notes (28.8 by tracemalloc; 10 MiB of RssAnon was
        still held after letting them go: not read at all instead)."""
        stored = _stored(path, fingerprint, _Head)
        if stored is None:
            return cls(path, fingerprint)
        return cls(path, fingerprint, {}, stored.opstamp, stored.unread, records=False)

    @classmethod
    def load_counted(cls, path: Path, fingerprint: str) -> Manifest:
        """`load_head` with how many files and notes the records hold, for a
        search from the shell, which reads no record but checks the index
        against their count: the records' decoding was ~12 of its ~165 ms at
        10,000 notes (load 16–17 ms, this 5 ms; 61–62 and 16–17 ms at 50,000).
        The whole manifest when it was written before the counts were, or
        when they are not two counts that can be (edited by hand, say)."""
        stored = _stored(path, fingerprint, _CountedHead)
        if stored is None:
            return cls(path, fingerprint)
        files, indexed = stored.files, stored.indexed
        if not (type(files) is int and type(indexed) is int and 0 <= indexed <= files):
            return cls.load(path, fingerprint)
        return cls(path, fingerprint, {}, stored.opstamp, stored.unread, (files, indexed), records=False)

    def save(self) -> None:
        if not self.records:  # it would write no record: every file read again, every note id lost
            raise RuntimeError(f"{self.path}: a manifest loaded without its records is never saved")
        entries = self.entries
        saved = _Saved(self.fingerprint, entries, self.opstamp, self.unread, len(entries), self.indexed_notes())
        write_atomic(self.path, msgspec.json.encode(saved))

    def forget(self) -> None:
        """No record of the index any more (it is rebuilt from the files)."""
        self.entries.clear()
        self.opstamp = None
        self.unread = None
        self.counts = None
        self.records = True  # none: what a rebuild starts from

    def indexed_notes(self) -> int:
        """How many documents the index holds when it matches this manifest."""
        if self.counts is not None:
            return self.counts[1]
        return sum(1 for e in self.entries.values() if e.note_id is not None)

    def file_count(self) -> int:
        """How many files the records name (0: the space was never indexed)."""
        return self.counts[0] if self.counts is not None else len(self.entries)

    @property
    def unsettled_path(self) -> Path:
        return self.path.with_name("unsettled.json")

    def mark_unsettled(self, ids: set[str], paths: set[str]) -> None:
        """Written before a commit that touches these notes."""
        write_atomic(self.unsettled_path, msgspec.json.encode(Unsettled(sorted(ids), sorted(paths))))

    def settle(self) -> None:
        """The commit and this manifest agree again (called after `save`)."""
        self.unsettled_path.unlink(missing_ok=True)
        fsync_directory(self.path.parent)

    def load_unsettled(self) -> Unsettled | None:
        """The record a crash left, if any. Raises StorageFault when it could
        not be read: only a record read and found invalid means "redo everything"."""
        try:
            data = self.unsettled_path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            if is_passing(exc):
                raise StorageFault(f"cannot read {self.unsettled_path}: {describe(exc)}") from exc
            data = b""  # something else in its place: invalid, so nothing is certain
        try:
            return msgspec.json.decode(data, type=Unsettled)
        except msgspec.DecodeError as exc:
            log.warning("unsettled_record_unreadable", path=str(self.unsettled_path), error=str(exc))
            return Unsettled([], [], everything=True)

    def left_behind(self) -> list[str]:
        """What the last pass left undone, from the records alone (no file
        stat'ed): files it had still to read, a commit it was writing."""
        missing = []
        if self.unread:
            missing.append(f"{self.unread} files left to read by an indexing pass under way or cut short")
        try:
            if self.load_unsettled() is not None:
                missing.append("a commit under way, or cut short by a crash")
        except StorageFault as exc:
            missing.append(str(exc))
        return missing

    def skipped(self) -> dict[str, str]:
        """path → why it is not indexed."""
        return {p: e.skip_reason or "skipped" for p, e in self.entries.items() if e.note_id is None}

    def ids(self) -> dict[str, str]:
        """note id → path, for the notes currently indexed."""
        return {e.note_id: p for p, e in self.entries.items() if e.note_id is not None}


def interned(entries: dict[str, Entry]) -> dict[str, Entry]:
    """`entries` with their paths and note ids shared with the writer's other tables (shared_strings.py)."""
    out: dict[str, Entry] = {}
    for path, entry in entries.items():
        intern(entry)
        out[shared(path)] = entry
    return out


def intern(entry: Entry) -> Entry:
    """`entry` with its note id shared with the writer's other tables (shared_strings.py)."""
    if entry.note_id is not None:
        entry.note_id = shared(entry.note_id)
    return entry


def named_skipped(skipped: dict[str, str], shown: int = SKIPPED_SHOWN) -> tuple[SkippedNote, ...]:
    """The first `shown` of `skipped` (Manifest.skipped), by path, with why (for status)."""
    return tuple(SkippedNote(path, skipped[path]) for path in sorted(skipped)[:shown])
