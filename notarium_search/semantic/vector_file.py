"""The file a `VectorStore` is saved to: its checksum, and its verified reading.

A store is saved to one usearch HNSW file whose blake2b checksum the caller
keeps (in its manifest); loading verifies that checksum *before* usearch
parses a single byte, because usearch has no checksum of its own: one flipped
byte made usearch 2.26 segfault while loading (2 of 7 positions tried) or
load silently with other neighbours. Every problem with a stored file raises
`VectorStoreCorrupt`, and the caller rebuilds from the notes.

These helpers are apart from vector_store.py, which keeps the index in
memory (adding, removing, searching, compacting), because they only deal
with the file's bytes: reading or mapping them, checking them, handing them
to usearch. usearch (the optional "semantic" extra) is imported on first
use: importing this module, e.g. for `VectorStoreCorrupt`, does not need it.
"""

from __future__ import annotations

import hashlib
import mmap
from pathlib import Path
from typing import TYPE_CHECKING

from notarium_search.semantic.load_order import before_usearch
from notarium_search.storage.faults import StorageFault, describe, is_passing

if TYPE_CHECKING:
    from usearch.index import Index


class VectorStoreCorrupt(RuntimeError):
    """A stored vector file cannot be used: missing, unreadable, truncated or
    altered (checksum mismatch), or written for another dimension or format.
    The message says which; the caller rebuilds the store from the notes."""


def checksum_of(data: bytes | mmap.mmap) -> str:
    """The checksum `save` returns and `load` expects: blake2b (64-byte digest), hex."""
    return hashlib.blake2b(data).hexdigest()


def map_file(path: Path) -> mmap.mmap:
    """The file mapped read-only. Mapped here rather than by usearch's
    `view(path)`, which, given a file that is gone (a follower reading a
    generation the writer has just replaced), closes file descriptor 0 of the
    process (usearch 2.26.6): whatever was opened next there then failed or
    was written to the wrong file. Raises OSError, or ValueError for an empty file."""
    with path.open("rb") as file:
        return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)


def read_verified(path: Path, checksum: str, mapped: bool = False) -> bytes | mmap.mmap:
    """The file's bytes, read or (`mapped`) mapped, once they have `checksum`:
    a mapped file is hashed through its mapping, so the pages checked are the
    pages usearch reads, with no second lookup of the path."""
    try:
        data = map_file(path) if mapped else path.read_bytes()
    except FileNotFoundError as exc:
        raise VectorStoreCorrupt(f"vector file missing: {path}") from exc
    except ValueError as exc:  # mmap refuses an empty file
        raise VectorStoreCorrupt(f"vector file empty: {path}") from exc
    except OSError as exc:
        if is_passing(exc):  # too many open files, an I/O error: says nothing of the bytes
            raise StorageFault(f"cannot read the vector file {path}: {describe(exc)}") from exc
        raise VectorStoreCorrupt(f"vector file unreadable: {path}: {exc}") from exc  # a folder in its place
    actual = checksum_of(data)
    if actual != checksum:
        raise VectorStoreCorrupt(
            f"vector file checksum mismatch (truncated or altered): {path} has {len(data)} bytes "
            f"with checksum {actual[:16]}…, expected {checksum[:16]}…"
        )
    return data


def restore(path: Path, data: bytes | mmap.mmap, index: Index, view: bool = False) -> Index:
    """`index` (new and empty, of the dimension expected) loaded (copied into
    memory) from verified bytes, or mapped from the file that held them
    (`view`: the file is never rewritten in place, a checkpoint writes a new one)."""
    before_usearch()
    from usearch.compiled import MetricKind, ScalarKind
    from usearch.index import Index

    dim = index.ndim
    try:
        meta = Index.metadata(memoryview(data))
    except Exception as exc:
        raise VectorStoreCorrupt(f"vector file unreadable by usearch: {path}: {exc}") from exc
    if not meta:
        raise VectorStoreCorrupt(f"vector file unreadable by usearch: {path}: no header")
    if meta["dimensions"] != dim:
        raise VectorStoreCorrupt(f"vector file has wrong dim: {path} holds {meta['dimensions']}-d vectors, not {dim}-d")
    if meta["kind_metric"] != MetricKind.Cos or meta["kind_scalar"] != ScalarKind.F16:
        raise VectorStoreCorrupt(
            f"vector file has another format: {path} is {meta['kind_metric']}/{meta['kind_scalar']}, not cos/f16"
        )
    try:
        if view:
            index.view(memoryview(data))
        else:
            index.load(memoryview(data))
    except Exception as exc:
        raise VectorStoreCorrupt(f"vector file unreadable by usearch: {path}: {exc}") from exc
    return index
