"""The vector manifest: packed in memory, the same JSON on disk."""

from __future__ import annotations

import sys
import tracemalloc
from collections.abc import Callable

import msgspec
import pytest

from notarium_search.semantic.chunking import fragment_digest, key_of
from notarium_search.semantic.index import text_digest
from notarium_search.semantic.manifest import (
    FragmentTable,
    FrozenFragments,
    ManifestUnreadable,
    Record,
    decode,
    decode_frozen,
    encode,
)
from notarium_search.shared_strings import shared


def record(note_id: str, n: int) -> Record:
    fragment_id = fragment_digest(note_id, f"fragment {n} of {note_id}")
    return Record(fragment_id, key_of(fragment_id), 100 * n, 100 * n + 99, text_digest(f"text {n}"))


def manifest_bytes(notes: dict[str, list[Record]]) -> bytes:
    """The manifest as the records used to be saved, as Python objects."""

    class Saved(msgspec.Struct):
        fingerprint: str
        generation: int
        checksum: str
        notes: dict[str, list[Record]]

    return msgspec.json.encode(Saved("model-chunking", 7, "abc", notes))


def test_decode_then_encode_gives_back_the_same_bytes():
    notes = {f"note-{i}": [record(f"note-{i}", n) for n in range(i % 4 + 1)] for i in range(50)}
    notes["ünïcode/note"] = [record("ünïcode/note", 0)]
    data = manifest_bytes(notes)
    fingerprint, generation, checksum, table = decode(data)
    assert (fingerprint, generation, checksum) == ("model-chunking", 7, "abc")
    assert dict(table) == notes
    assert encode(fingerprint, generation, checksum, table) == data


def test_the_table_finds_adds_replaces_and_drops_records():
    table = FragmentTable()
    a0, a1, b0 = record("a", 0), record("a", 1), record("b", 0)
    table.add("a", a0)
    table.add("a", a1)
    table.replace("b", [b0])
    assert table["a"] == [a0, a1]
    assert table.find(a1.key) == ("a", a1)
    assert sorted(table.keys_of(["a", "b", "missing"])) == sorted([a0.key, a1.key, b0.key])
    assert table.fragment_count() == 3
    table.replace("a", [a1])
    assert table.find(a0.key) is None
    assert table["a"] == [a1]
    assert table.pop("b") == [b0]
    assert table.pop("b") == []
    table.replace("a", [])
    assert "a" not in table
    assert len(table) == 0
    assert table.find(a1.key) is None


def test_a_fragment_is_found_by_its_key_not_by_bytes_elsewhere_in_a_row():
    """`record` searches the packed rows for the key's 8 bytes: the same
    bytes inside another row (its id's end, its digest) are not that key."""
    table = FragmentTable()
    a0 = record("a", 0)
    key_bytes = a0.key.to_bytes(8, "big").hex()
    decoy = record("a", 1)
    decoy = Record(decoy.id, decoy.key, decoy.start, decoy.end, key_bytes)  # a digest that spells a0's key
    table.replace("a", [decoy])
    assert table.record("a", a0.key) is None  # only in the digest
    assert table.find(a0.key) is None
    table.replace("a", [decoy, a0])
    assert table.record("a", a0.key) == a0  # past the decoy's digest, at its row
    assert table.record("a", decoy.key) == decoy
    assert table.note_of(a0.key) == "a"
    assert table.record("b", a0.key) is None


@pytest.mark.parametrize(
    "broken",
    [
        lambda r: Record(r.id, r.key + 1, r.start, r.end, r.digest),  # a key that is not its id's
        lambda r: Record(r.id[:-2], key_of(r.id), r.start, r.end, r.digest),  # a shorter id
        lambda r: Record("zz" + r.id[2:], r.key, r.start, r.end, r.digest),  # not hex
        lambda r: Record(r.id, r.key, -1, r.end, r.digest),  # a negative offset
        lambda r: Record(r.id, r.key, r.start, r.end, r.digest + "00"),  # a longer digest
        lambda r: Record(
            r.id[:8] + " " + r.id[9:] + " ", r.key, r.start, r.end, r.digest
        ),  # spaces: fromhex skips them
        lambda r: Record(r.id, r.key, r.start, r.end, r.digest[:4] + " " + r.digest[5:15] + " "),
        lambda r: Record(r.id.upper(), r.key, r.start, r.end, r.digest),  # this version writes lower case
    ],
)
def test_records_this_version_never_writes_make_the_manifest_unreadable(broken):
    data = manifest_bytes({"a": [record("a", 0), broken(record("a", 1))]})
    for read in (decode, decode_frozen):
        with pytest.raises(ManifestUnreadable):
            read(data)


def test_malformed_json_is_unreadable_not_a_crash():
    for data in (b'{"fingerprint": 3', b"[]", b'{"fingerprint":"f","generation":1,"checksum":"c","notes":{"a":[[1]]}}'):
        for read in (decode, decode_frozen):
            with pytest.raises(ManifestUnreadable):
                read(data)


def held_by(read: Callable[[bytes], tuple[object, ...]], data: bytes, notes: dict[str, list[Record]]) -> int:
    """Bytes the table `read` makes of `data` holds, its note ids included.
    The ids are interned before tracing: when `sys.intern`'s own table grows
    (megabytes at once) depends on the tests run before, not on this table."""
    interned = {note_id: shared(note_id) for note_id in notes}
    tracemalloc.start()
    try:
        table = read(data)[3]
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(table, FragmentTable | FrozenFragments)
    assert table.fragment_count() == sum(map(len, notes.values()))
    return held + sum(sys.getsizeof(note_id) for note_id in table if note_id is interned[note_id])


def test_the_records_held_take_a_fraction_of_their_objects_memory():
    """518 bytes a fragment as Record objects with a key → (note, record) map
    (measured on the benchmark vault's manifest); packed, under half."""
    notes = {f"folder/note-{i:05d}.md": [record(f"n{i}", n) for n in range(2)] for i in range(5_000)}
    assert held_by(decode, manifest_bytes(notes), notes) / 10_000 < 260


def test_a_followers_frozen_table_reads_as_the_writers():
    """decode_frozen (a follower's, read-only) answers every read as decode's table does."""
    notes = {f"note-{i}": [record(f"note-{i}", n) for n in range(i % 4 + 1)] for i in range(50)}
    notes["ünïcode/note"] = [record("ünïcode/note", 0)]
    notes["\U0001d518nicode/note"] = [record("\U0001d518nicode/note", 0)]  # past the BMP: sorted as code points still
    notes["\uffefnote"] = [record("\uffefnote", 0)]
    notes["empty"] = []
    data = manifest_bytes(notes)
    writer, frozen = decode(data)[3], decode_frozen(data)[3]
    assert isinstance(frozen, FrozenFragments)
    assert dict(frozen) == dict(writer) == {k: v for k, v in notes.items() if v}
    assert list(frozen) == sorted(writer)
    assert len(frozen) == len(writer)
    assert frozen.fragment_count() == writer.fragment_count()
    assert decode(encode("model-chunking", 7, "abc", frozen))[3] == writer
    for note_id, records in notes.items():
        assert (note_id in frozen) == (note_id in writer)
        assert frozen.keys_of([note_id]) == writer.keys_of([note_id])
        for r in records:
            assert frozen.find(r.key) == writer.find(r.key) == (note_id, r)
            assert frozen.note_of(r.key) == note_id
            assert frozen.record(note_id, r.key) == r
    stranger = record("stranger", 0)
    assert frozen.find(stranger.key) is None
    assert frozen.note_of(stranger.key) is None
    assert frozen.record("note-1", stranger.key) is None
    assert "stranger" not in frozen
    assert "note-1\udcff" not in frozen  # an undecodable file name's id
    assert not frozen.__contains__(3)  # not a note id at all
    with pytest.raises(KeyError):
        frozen["stranger"]


def test_a_frozen_table_finds_a_key_at_its_row_not_elsewhere():
    a0 = record("a", 0)
    decoy = record("a", 1)
    decoy = Record(decoy.id, decoy.key, decoy.start, decoy.end, a0.key.to_bytes(8, "big").hex())
    frozen = decode_frozen(manifest_bytes({"a": [decoy]}))[3]
    assert frozen.record("a", a0.key) is None
    assert frozen.find(a0.key) is None
    frozen = decode_frozen(manifest_bytes({"a": [decoy, a0]}))[3]
    assert frozen.record("a", a0.key) == a0
    assert frozen.find(a0.key) == ("a", a0)


def test_a_followers_table_takes_just_over_half_of_the_writers_or_less():
    """162 bytes a fragment in the writer's table here, 83 in a follower's
    (note ids packed in one bytes object, their hashes and the keys in sorted
    arrays: no dict entry, str, int or bytes object each); 98 with the ids a
    sorted list of str, which is over the bound."""
    notes = {f"folder/note-{i:05d}.md": [record(f"n{i}", n) for n in range(2)] for i in range(5_000)}
    data = manifest_bytes(notes)
    held = {read.__name__: held_by(read, data, notes) for read in (decode, decode_frozen)}
    assert held["decode_frozen"] < 0.55 * held["decode"], held
