"""The vector manifest: which fragments of which notes have their vector saved.

On disk it is JSON (`vectors.json`: the fingerprint, the generation and
checksum of the vector file, and per note its fragments' records). In
memory the records are packed, 32 bytes a fragment, and a `Record` object
is made only for what a caller reads (a search's hits, one note's
fragments). As Python objects (a `Record` each, with its strings and ints,
and a key → (note, record) map) they took 518 bytes a fragment, measured
with tracemalloc on 25,728 fragments of the 50,000-note benchmark vault:
~55 MiB at its 111,091 fragments, in the writer and again in every worker
that follows it. Packed, with the key → note map: 207 bytes a fragment on
the same manifest (its decoding 0.04 s instead of 0.02).

A record's key is the first 8 bytes of its id (chunking.key_of), so it is
not stored twice; a manifest whose records disagree with that, or whose ids
and digests are not the hex of 16 and 8 bytes, is unreadable (the writer
then embeds again, as for any damaged manifest).
"""

from __future__ import annotations

import re
import struct
from abc import abstractmethod
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence

import msgspec

from notarium_search.semantic.chunking import key_of
from notarium_search.semantic.probes import Calibration
from notarium_search.shared_strings import shared


class Record(msgspec.Struct, array_like=True, frozen=True):
    """A fragment whose vector is in the index."""

    id: str
    key: int
    start: int
    end: int
    digest: str  # of the fragment text: detects a note text that moved on since


class _Head(msgspec.Struct, omit_defaults=True):
    fingerprint: str
    generation: int
    checksum: str
    # What noise scores against this space (semantic/probes.py). Absent from
    # the manifests written before it (and omitted while not measured): the
    # floor is then the model's margin alone, and the writer measures it.
    calibration: Calibration | None = None
    # How the vector file's graph was built (vector_store.GRAPH_BUILD); ""
    # in the manifests written before it.
    graph: str = ""


class _Saved(msgspec.Struct):
    fingerprint: str
    generation: int
    checksum: str
    graph: str = ""
    calibration: msgspec.Raw = msgspec.Raw(b"null")  # decoded apart: a bad one is measured again, the vectors kept
    notes: dict[str, msgspec.Raw] = {}  # decoded note by note: all the records at once as objects would be the peak


class ManifestUnreadable(ValueError):
    """The manifest's bytes are not a manifest this version writes."""


_ROW = struct.Struct("<16sII8s")  # id, start, end, digest


_ID = re.compile(r"[0-9a-f]{32}")
_DIGEST = re.compile(r"[0-9a-f]{16}")


def _pack(record: Record) -> bytes:
    # Checked before `bytes.fromhex`, which skips spaces: "0011 2233…" would
    # pack as another id (and a key_of ValueError escaped as a crash at start).
    if not (_ID.fullmatch(record.id) and _DIGEST.fullmatch(record.digest)) or key_of(record.id) != record.key:
        raise ManifestUnreadable(f"fragment record {record!r}: not an id, key and digest of this version")
    try:
        return _ROW.pack(bytes.fromhex(record.id), record.start, record.end, bytes.fromhex(record.digest))
    except struct.error as exc:  # an offset out of range
        raise ManifestUnreadable(f"fragment record {record!r}: {exc}") from None


def _key_at(rows: bytes, at: int) -> int:
    """The vector key of the row at `at`: its id's first 8 bytes (chunking.key_of)."""
    return int.from_bytes(rows[at : at + 8], "big")


def _unpack(rows: bytes, at: int) -> Record:
    raw_id, start, end, digest = _ROW.unpack_from(rows, at)
    return Record(raw_id.hex(), _key_at(rows, at), start, end, digest.hex())


def _find_row(rows: bytes, key: int) -> Record | None:
    """The record of this vector key among a note's packed rows, or None."""
    needle = key.to_bytes(8, "big")
    at = rows.find(needle)
    while at >= 0 and at % _ROW.size:  # within another row's id or digest: look further
        at = rows.find(needle, at + 1)
    return None if at < 0 else _unpack(rows, at)


class _PackedRows(Mapping[str, list[Record]]):
    """Note id → its fragments' records (a new list each time), from each
    note's packed rows: the reads both tables answer alike."""

    __slots__ = ()

    @abstractmethod
    def _note_rows(self, note_id: str) -> bytes | None:
        """The note's packed rows, or None when the table has no such note."""

    @abstractmethod
    def note_of(self, key: int) -> str | None:
        """The note whose fragment has this vector key (None: none has)."""

    @abstractmethod
    def fragment_count(self) -> int:
        """The fragments the table holds."""

    def __getitem__(self, note_id: str) -> list[Record]:
        rows = self._note_rows(note_id)
        if rows is None:
            raise KeyError(note_id)
        return [_unpack(rows, at) for at in range(0, len(rows), _ROW.size)]

    def __contains__(self, note_id: object) -> bool:
        return isinstance(note_id, str) and self._note_rows(note_id) is not None

    def find(self, key: int) -> tuple[str, Record] | None:
        """The note and record of a vector key, or None when no note has it."""
        note_id = self.note_of(key)
        if note_id is None:
            return None
        record = self.record(note_id, key)
        return None if record is None else (note_id, record)

    def record(self, note_id: str, key: int) -> Record | None:
        """The note's fragment of this vector key, or None. Its key is searched
        for in the packed rows by `bytes.find` (C): a row at a time in Python
        was 15 % of a hybrid answer's CPU outside the model, for 400 hits."""
        return _find_row(self._note_rows(note_id) or b"", key)

    def keys_of(self, note_ids: Iterable[str]) -> list[int]:
        """The vector keys of these notes' fragments."""
        keys = []
        for note_id in note_ids:
            rows = self._note_rows(note_id) or b""
            keys += [_key_at(rows, at) for at in range(0, len(rows), _ROW.size)]
        return keys


class FragmentTable(_PackedRows):
    """The writer's table. Only the space's writer thread changes it (semantic/index.py)."""

    __slots__ = ("_note_of", "_rows")

    def __init__(self) -> None:
        self._rows: dict[str, bytes] = {}
        self._note_of: dict[int, str] = {}  # vector key → note id

    def _note_rows(self, note_id: str) -> bytes | None:
        return self._rows.get(note_id)

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def fragment_count(self) -> int:
        return len(self._note_of)

    def note_of(self, key: int) -> str | None:
        return self._note_of.get(key)

    def replace(self, note_id: str, records: Sequence[Record]) -> None:
        """The note's records are now `records` (none: the note leaves)."""
        note_id = shared(note_id)  # one copy with the writer's other tables (shared_strings.py)
        self.pop(note_id)
        if records:
            self._rows[note_id] = _packed(records)
            for record in records:
                self._note_of[record.key] = note_id

    def add(self, note_id: str, record: Record) -> None:
        note_id = shared(note_id)
        self._rows[note_id] = self._rows.get(note_id, b"") + _pack(record)
        self._note_of[record.key] = note_id

    def pop(self, note_id: str) -> list[Record]:
        """The note's records, which leave the table (none when it had none)."""
        records = self[note_id] if note_id in self._rows else []
        self._rows.pop(note_id, None)
        for record in records:
            self._note_of.pop(record.key, None)
        return records


class FrozenFragments(_PackedRows):
    """The same table, read-only, for a worker that follows the writer (it
    reads the writer's manifest again after each change): the note ids sorted
    and packed in one bytes object (UTF-8), their rows in another, the vector
    keys sorted in one array with their notes' positions, and the ids' hashes
    sorted in another with theirs, all found by bisection, where
    `FragmentTable` keeps a dict entry and an int object a fragment, and a
    dict entry, a str and a bytes object a note. A str a note was 8.1 MiB of
    a follower's 50,000-note manifest (~170 bytes each); packed, the ids take
    the bytes of their text, and 12 bytes of hash and position find one by
    a bisection in C (a bisection over the packed ids, a slice at each step,
    took twice as long: a broad filter's 5,000 ids 26 against 12–15 ms, a
    list of str 12.7). Iterated in the notes' order.
    tests/semantic/test_manifest.py measures both tables."""

    __slots__ = ("_by_hash", "_hashes", "_id_starts", "_ids", "_keys", "_owners", "_rows", "_starts")

    def __init__(self, notes: Iterable[tuple[str, bytes]]) -> None:
        given = list(notes)
        packed_ids = [_utf8(note_id) for note_id, _ in given]
        ordered = sorted(range(len(given)), key=packed_ids.__getitem__)
        self._ids = b"".join(packed_ids[at] for at in ordered)
        self._id_starts = _starts_of(packed_ids[at] for at in ordered)
        self._rows = b"".join(given[at][1] for at in ordered)
        self._starts = _starts_of(given[at][1] for at in ordered)
        hashes = [hash(given[at][0]) for at in ordered]
        by_hash = sorted(range(len(hashes)), key=hashes.__getitem__)
        self._hashes = array("q", [hashes[at] for at in by_hash])
        self._by_hash = array("I", by_hash)
        owners = [at for at in range(len(self)) for _ in range(self._starts[at], self._starts[at + 1], _ROW.size)]
        keys = [_key_at(self._rows, at) for at in range(0, len(self._rows), _ROW.size)]
        order = sorted(range(len(keys)), key=keys.__getitem__)
        self._keys = array("Q", [keys[i] for i in order])
        self._owners = array("I", [owners[i] for i in order])

    def _id_bytes(self, position: int) -> bytes:
        return self._ids[self._id_starts[position] : self._id_starts[position + 1]]

    def _id_at(self, position: int) -> str:
        return self._id_bytes(position).decode("utf-8", "surrogatepass")

    def _position(self, note_id: str) -> int | None:
        """The note's position in id order (None: not in the table): its
        hash's first entry, then the entries of the same hash, compared by bytes."""
        wanted, needle = hash(note_id), None
        at = bisect_left(self._hashes, wanted)
        while at < len(self._hashes) and self._hashes[at] == wanted:
            needle = needle or _utf8(note_id)
            if self._id_bytes(self._by_hash[at]) == needle:
                return self._by_hash[at]
            at += 1
        return None

    def _rows_at(self, position: int) -> bytes:
        return self._rows[self._starts[position] : self._starts[position + 1]]

    def _note_rows(self, note_id: str) -> bytes | None:
        position = self._position(note_id)
        return None if position is None else self._rows_at(position)

    def _owner(self, key: int) -> int | None:
        at = bisect_left(self._keys, key)
        return self._owners[at] if at < len(self._keys) and self._keys[at] == key else None

    def find(self, key: int) -> tuple[str, Record] | None:
        """The note of the key's row found once, not again by its id (a search's 400 hits)."""
        owner = self._owner(key)
        record = None if owner is None else _find_row(self._rows_at(owner), key)
        return None if owner is None or record is None else (self._id_at(owner), record)

    def __iter__(self) -> Iterator[str]:
        return map(self._id_at, range(len(self)))

    def __len__(self) -> int:
        return len(self._id_starts) - 1

    def fragment_count(self) -> int:
        return len(self._keys)

    def note_of(self, key: int) -> str | None:
        owner = self._owner(key)
        return None if owner is None else self._id_at(owner)


def _utf8(note_id: str) -> bytes:
    """A note id's bytes, in the order of its text (UTF-8 sorts as code points
    do). `surrogatepass`: an id asked for with a lone surrogate (an undecodable
    file name, as os.fsdecode gives it; the manifest never holds one) is not
    found, instead of failing."""
    return note_id.encode("utf-8", "surrogatepass")


def _starts_of(parts: Iterable[bytes]) -> array[int]:
    """Where each part starts in their concatenation, and where the last ends."""
    starts = array("Q", [0])
    for part in parts:
        starts.append(starts[-1] + len(part))
    return starts


def encode(
    fingerprint: str,
    generation: int,
    checksum: str,
    table: Mapping[str, list[Record]],
    calibration: Calibration | None = None,
    graph: str = "",
) -> bytes:
    """The manifest as JSON, one note's records encoded at a time."""
    head = msgspec.json.encode(_Head(fingerprint, generation, checksum, calibration, graph))
    parts = [head[:-1], b',"notes":{']
    for position, note_id in enumerate(table):
        parts += [b"," if position else b"", msgspec.json.encode(note_id), b":", msgspec.json.encode(table[note_id])]
    parts.append(b"}}")
    return b"".join(parts)


def decode(data: bytes) -> tuple[str, int, str, FragmentTable]:
    """(fingerprint, generation, checksum, records) of a manifest's bytes.
    Raises ManifestUnreadable."""
    return decode_calibrated(data)[:4]


def decode_calibrated(data: bytes) -> tuple[str, int, str, FragmentTable, Calibration | None, str]:
    """`decode`, the space's calibration (None in a manifest written
    before it, or when unreadable: measured again, never an error) and how
    its graph was built."""
    try:
        saved = msgspec.json.decode(data, type=_Saved)
        table = FragmentTable()
        for note_id, raw in saved.notes.items():
            table.replace(note_id, msgspec.json.decode(raw, type=list[Record]))
    except msgspec.DecodeError as exc:
        raise ManifestUnreadable(str(exc)) from None
    return saved.fingerprint, saved.generation, saved.checksum, table, _calibration(saved.calibration), saved.graph


def decode_frozen(data: bytes) -> tuple[str, int, str, FrozenFragments, Calibration | None, str]:
    """`decode_calibrated` into a read-only table, for a follower."""
    try:
        saved = msgspec.json.decode(data, type=_Saved)
        rows = [(note_id, _packed(msgspec.json.decode(raw, type=list[Record]))) for note_id, raw in saved.notes.items()]
    except msgspec.DecodeError as exc:
        raise ManifestUnreadable(str(exc)) from None
    table = FrozenFragments((note_id, packed) for note_id, packed in rows if packed)
    return saved.fingerprint, saved.generation, saved.checksum, table, _calibration(saved.calibration), saved.graph


def _packed(records: Sequence[Record]) -> bytes:
    return b"".join(map(_pack, records))


def _calibration(raw: msgspec.Raw) -> Calibration | None:
    try:
        return msgspec.json.decode(raw, type=Calibration | None)
    except msgspec.DecodeError:
        return None


def saved_records(data: bytes) -> tuple[str, Mapping[str, list[Record]]]:
    """(fingerprint, records by note) of a manifest's bytes, for counting
    without the vectors (`notarium-search status`). Raises ManifestUnreadable."""
    fingerprint, _, _, table = decode(data)
    return fingerprint, table
