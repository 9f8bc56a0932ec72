"""The wiki-link graph of one space. Pure: no I/O.

Links resolve the way Obsidian resolves them: a target names a note by its
path (whole, or a suffix of it), its file name, its title, an alias or its id,
ignoring case, accents and a trailing ".md". Resolution happens on read, from
key → notes maps kept up to date by `upsert`/`remove`: a change of one note
never re-resolves the others, yet a dangling `[[Beta]]` resolves as soon as a
note named Beta arrives, and dangles again when it goes or is renamed.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

import msgspec

from notarium_search.shared_strings import shared
from notarium_search.types import ParsedNote, WikiLink

# Precedence levels, best first. Path keys always contain a "/" (a note at the
# root is reached by its file name), so a bare `[[Alpha]]` never hits a path
# level and the same-folder preference among file names applies.
_LEVELS = range(6)
_PATH, _PATH_SUFFIX, _STEM, _TITLE, _ALIAS, _ID = _LEVELS


def normalise(target: str) -> str:
    """The key a written target or a note name is compared by."""
    if not target.isascii():
        target = "".join(c for c in unicodedata.normalize("NFKD", target) if not unicodedata.combining(c))
    key = " ".join(target.casefold().split())
    while key.startswith(("./", "/")):
        key = key[2:] if key.startswith("./") else key[1:]
    return key.removesuffix(".md").rstrip()


def _hashed(key: str) -> int:
    """What the graph keeps of a key: its hash (the process's 64-bit SipHash).
    A key as a string was 100-165 bytes and an entry in the interpreter's
    table of interned strings; its hash is one 36-byte int, shared by the
    places that hold it (bench/graph_memory.py, the 50,000-note benchmark
    vault: 74.8 → 60.9 MiB held, built in 3.08 → 2.83 s). Two keys of a space with the same hash, one chance in ~10^9 at
    200,000 keys, would only make one name resolve as the other. The graph is
    never saved nor sent: the process's hash seed is all it needs. The empty
    key (`[[#heading]]`, `[[ ]]`: never a note's name) is 0, and no other."""
    return (hash(key) or 1) if key else 0


class _Named(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def aliases(self) -> tuple[str, ...]: ...


@runtime_checkable
class StoredNote(_Named, Protocol):
    """A note as an index stores it (e.g. the lexical `Payload`)."""

    def wikilinks(self) -> tuple[WikiLink, ...]: ...


class WrittenNote(_Named, Protocol):
    @property
    def links(self) -> tuple[WikiLink, ...]: ...


class NoteLinks(msgspec.Struct, frozen=True):
    """What the graph needs of a note: its names and its written links."""

    id: str
    path: str  # POSIX, relative to the space root
    title: str
    aliases: tuple[str, ...]
    links: tuple[WikiLink, ...]

    @classmethod
    def of(cls, note: ParsedNote | StoredNote | WrittenNote) -> NoteLinks:
        if isinstance(note, ParsedNote):
            return cls(note.id, note.path, note.title, tuple(note.aliases), tuple(note.links))
        links = note.wikilinks() if isinstance(note, StoredNote) else note.links
        return cls(note.id, note.path, note.title, tuple(note.aliases), tuple(links))


class Link(msgspec.Struct, frozen=True):
    """An outgoing link: where it resolves (None: dangling) and how it is written."""

    target_id: str | None
    target: str
    heading: str | None = None
    alias: str | None = None


class GraphStats(msgspec.Struct, frozen=True):
    notes: int
    links: int  # written links, resolved or not
    resolved: int
    dangling: int


class _Entry(msgspec.Struct, frozen=True):
    """What the graph keeps of a note: not its title, aliases or path, only the
    keys made of them (the note's names, hashed), and not its links as written
    (a note's page reads them from its stored note: `outgoing`), only their
    targets, hashed. The written links were 9 MiB of the writer's 50,000-note
    graph at one link a note (bench/graph_memory.py), more in a vault of links."""

    note_id: str
    folder: str
    order: tuple[int, int]  # (depth, length) of the path: the shorter wins a tie
    # The note's distinct (level, key) pairs, as two sequences: a tuple per
    # pair cost 56 bytes, ~2 MiB at 10,000 notes.
    keys: tuple[int, ...]
    levels: bytes
    targets: tuple[int, ...]  # the hashed normalised target of each link, in order

    def named(self) -> Iterable[tuple[int, int]]:
        """(level, key) of each of the note's names."""
        return zip(self.levels, self.keys, strict=True)


def _entry(note: NoteLinks, folders: dict[str, str]) -> _Entry:
    """The note's entry; `folders` holds one string per folder name (a few
    hundred in a vault), not one a note."""
    folder, _, _name = note.path.rpartition("/")
    path = normalise(note.path)
    parts = path.split("/")
    keys = [(_STEM, parts[-1]), (_TITLE, normalise(note.title)), (_ID, normalise(note.id))]
    keys.extend((_ALIAS, normalise(alias)) for alias in note.aliases)
    if len(parts) > 1:
        keys.append((_PATH, path))
        keys.extend((_PATH_SUFFIX, "/".join(parts[i:])) for i in range(1, len(parts) - 1))
    # Hashed (`_hashed`): a key is also a dict key of `_by_key`, a target of
    # other notes' links and a key of `_sources`. With the entry no longer
    # holding the note's title, aliases and path, and the keys without a tuple
    # each: 23.0 → 14.5 MiB at 10,000 notes as interned strings, bench/graph_memory.py.
    # A key is kept at the best level the note has it at: resolution stops at the
    # first level holding a key, so the note's others could never be reached
    # (a file named as its title, a note's id and path: 60.9 → 51.9 MiB held at
    # 50,000 notes, bench/graph_memory.py).
    best = {_hashed(key): level for level, key in sorted(keys, reverse=True) if key}
    named = sorted(((level, key) for key, level in best.items()), key=lambda pair: pair[0])
    return _Entry(
        note_id=shared(note.id),  # one copy with the manifest's and the vectors' (shared_strings.py)
        folder=folders.setdefault(folder, folder),
        order=(len(parts), len(note.path)),
        keys=tuple(key for _, key in named),
        levels=bytes(level for level, _ in named),
        targets=tuple(_hashed(normalise(link.target)) for link in note.links),
    )


# key → the note(s) it names. Nearly every key names one note: a bare id
# instead of a one-element set (216 bytes) saves ~75 MB at 50,000 notes.
_Ids = str | set[str]


def _put(index: dict[int, _Ids], key: int, note_id: str) -> None:
    have = index.get(key)
    if have is None:
        index[key] = note_id
    elif isinstance(have, str):
        if have != note_id:
            index[key] = {have, note_id}
    else:
        have.add(note_id)


def _take(index: dict[int, _Ids], key: int, note_id: str) -> None:
    have = index.get(key)
    if isinstance(have, str):
        if have == note_id:
            del index[key]
    elif have is not None:
        have.discard(note_id)
        if len(have) == 1:
            index[key] = have.pop()


class LinkGraph:
    """The link graph of one space, updated note by note.

    One writer calls `upsert`/`remove` while request threads read: every
    method holds one lock for its whole (short) duration, so a read sees the
    graph before or after a write, never halfway. No read scans all notes.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._by_key: tuple[dict[int, _Ids], ...] = tuple({} for _ in _LEVELS)
        self._sources: dict[int, _Ids] = {}  # written key → notes that wrote it
        self._written: dict[int, int] = {}  # written key → links, so stats never re-resolve
        self._folders: dict[str, str] = {}  # changed by the one writer only, outside the lock
        self._links = 0
        self._resolved = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, note_id: object) -> bool:
        with self._lock:
            return note_id in self._entries

    def upsert(self, note: NoteLinks) -> None:
        entry = _entry(note, self._folders)  # outside the lock: readers wait only for the dict updates
        with self._lock:
            self._drop(note.id)
            self._add(entry)

    def remove(self, note_id: str) -> None:
        with self._lock:
            self._drop(note_id)

    def resolve(self, source_id: str, target: str) -> str | None:
        """The note `target` names when written in `source_id` (its folder breaks ties)."""
        with self._lock:
            source = self._entries.get(source_id)
            return self._resolve(source.folder if source else "", _hashed(normalise(target)))

    def outgoing(self, note_id: str, written: Iterable[WikiLink]) -> tuple[Link, ...]:
        """The links `written` in `note_id` (as its stored note has them),
        each with the note it resolves to from there (None: dangling); () for
        a note the graph does not hold."""
        with self._lock:
            entry = self._entries.get(note_id)
            if entry is None:
                return ()
            return tuple(
                Link(
                    self._resolve(entry.folder, _hashed(normalise(link.target))), link.target, link.heading, link.alias
                )
                for link in written
            )

    def dangling(self, note_id: str, written: Iterable[WikiLink]) -> tuple[Link, ...]:
        return tuple(link for link in self.outgoing(note_id, written) if link.target_id is None)

    def backlinks(self, note_id: str) -> tuple[str, ...]:
        """Notes with a link that resolves to `note_id` (itself excluded), sorted."""
        with self._lock:
            return self._backlinks(note_id)

    def neighbours(self, note_id: str) -> set[str]:
        linked_from, links_to = self.adjacent(note_id)
        return {*linked_from, *links_to}

    def adjacent(self, note_id: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(notes it links to, notes linking to it), both sorted, itself excluded: one consistent read."""
        with self._lock:
            entry = self._entries.get(note_id)
            out: set[str] = set()
            if entry is not None:
                resolved = (self._resolve(entry.folder, key) for key in entry.targets)
                out = {target for target in resolved if target is not None and target != note_id}
            return tuple(sorted(out)), self._backlinks(note_id)

    def degrees(self, note_ids: Iterable[str]) -> dict[str, int]:
        """Each note's links written (out) plus the notes that wrote one of its
        names (in): its number of links, counted without resolving them (a
        hub linked from thousands of notes costs one lookup per name)."""
        with self._lock:
            return {note_id: self._degree(note_id) for note_id in note_ids}

    def stats(self) -> GraphStats:
        with self._lock:
            return GraphStats(len(self._entries), self._links, self._resolved, self._links - self._resolved)

    # Callers hold the lock.

    def _degree(self, note_id: str) -> int:
        entry = self._entries.get(note_id)
        if entry is None:
            return 0
        written = 0
        for key in set(entry.keys):
            sources = self._sources.get(key, ())
            written += 1 if isinstance(sources, str) else len(sources)
        return written + len(entry.targets)

    def _resolve(self, folder: str, key: int) -> str | None:
        if not key:
            return None
        for index in self._by_key:
            ids = index.get(key)
            if ids is None:
                continue
            if isinstance(ids, str):
                return ids
            entries = self._entries
            return min(ids, key=lambda i: (entries[i].folder != folder, entries[i].order, i))
        return None

    def _backlinks(self, note_id: str) -> tuple[str, ...]:
        entry = self._entries.get(note_id)
        if entry is None:
            return ()
        found: set[str] = set()
        # Only sources that wrote one of this note's keys can link to it; each
        # is resolved, since a better-ranked note may own the same key.
        for key in set(entry.keys):
            sources = self._sources.get(key, ())
            for source_id in (sources,) if isinstance(sources, str) else sources:
                if source_id != note_id and self._resolve(self._entries[source_id].folder, key) == note_id:
                    found.add(source_id)
        return tuple(sorted(found))

    def _add(self, entry: _Entry) -> None:
        note_id = entry.note_id
        self._entries[note_id] = entry
        for level, key in entry.named():
            written = self._written.get(key)
            if written and not self._named(key):
                self._resolved += written
            _put(self._by_key[level], key, note_id)
        self._links += len(entry.targets)
        for key in entry.targets:
            if not key:
                continue  # `[[#heading]]` or `[[ ]]`: dangling, never a backlink
            _put(self._sources, key, note_id)
            self._written[key] = self._written.get(key, 0) + 1
            if self._named(key):
                self._resolved += 1

    def _drop(self, note_id: str) -> None:
        # The exact reverse of `_add`: links first, then keys, so the resolved
        # count stays the number of written links whose key some note owns.
        entry = self._entries.pop(note_id, None)
        if entry is None:
            return
        self._links -= len(entry.targets)
        for key in entry.targets:
            if not key:
                continue
            if self._named(key):
                self._resolved -= 1
            _take(self._sources, key, note_id)
            if self._written[key] == 1:
                del self._written[key]
            else:
                self._written[key] -= 1
        for level, key in entry.named():
            _take(self._by_key[level], key, note_id)
            written = self._written.get(key)
            if written and not self._named(key):
                self._resolved -= written

    def _named(self, key: int) -> bool:
        """Whether some note owns `key`, i.e. whether a link written so resolves."""
        for index in self._by_key:  # noqa: SIM110 - a loop: 13% off a 50,000-note build, against any()
            if key in index:
                return True
        return False
