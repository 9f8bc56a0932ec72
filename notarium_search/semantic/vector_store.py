"""Fragment embeddings of one space, in one usearch HNSW file.

The semantic channel keeps one `VectorStore` per space: fragment key (uint64)
→ embedding, searchable by cosine similarity. It is saved to one file whose
checksum `load` verifies before usearch reads it; every problem with a stored
file raises `VectorStoreCorrupt` (both in vector_file.py).

A store either owns its graph in memory or maps a saved file (`view`):
rewriting a memory-mapped index file kills the process (measured: SIGSEGV
when usearch saves over it, SIGBUS when it is cut short), so only files that
are never rewritten are mapped: each save writes a new file (a generation,
semantic/index.py) and the old one is only unlinked, which a mapping
survives. A mapped store that must change is first copied into memory
(`Index.copy`: 16 ms for 20,000 vectors), once; `save(..., view=True)` maps
the file just written in its place. That is how an idle writer holds its
vectors: as pages of the file, shared with the workers that follow it and
the kernel's to reclaim, instead of a private copy (177 MiB at 111,091
vectors).

Thread safety: every method may be called from any thread, including while
another thread adds or removes. usearch 2.26 releases the GIL during a search
(measured: a pure-Python thread kept its full speed while another searched)
and hands each search the worker context of its thread index — 0 for a
single query — without locking it, so two concurrent native searches would
share scratch buffers (usearch's index_dense takes no lock for an explicit
thread index). One internal lock therefore serialises every native call (a
search takes about 3 ms on 20,000 384-d vectors); a second lock serialises
mutations. `compact` builds its new graph holding neither: searches go on in
the old graph, and adds and removes too, into the old graph and into a log
replayed onto the new one before it takes the old one's place.

numpy and usearch (the optional "semantic" extra) are imported on first use:
importing this module needs neither.
"""

from __future__ import annotations

import math
import mmap
import threading
from collections.abc import Collection, Iterable, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from notarium_search.logsetup import get_logger
from notarium_search.semantic import vector_arrays
from notarium_search.semantic.load_order import before_usearch
from notarium_search.semantic.vector_file import checksum_of, map_file, read_verified, restore
from notarium_search.storage.atomic import write_atomic

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from usearch.index import Index

    from notarium_search.semantic.vector_arrays import KeyArray

    FloatArray: TypeAlias = npt.NDArray[np.float32]

METRIC: Final = "cos"
# f16 halves the memory of f32 and costs almost nothing: an exact scan of the
# f16 copies finds 0.998–0.9997 of the true (f32) top 10 (measured as below).
# i8 measured 0.80 recall@10 even with an exact scan: do not use it.
SCALAR_KIND: Final = "f16"

# HNSW parameters. Measured on 20,000 normalised 384-d vectors, 300 fresh
# queries, recall@10 against an exact numpy scan of the f32 vectors, f16
# storage, usearch 2.26 on 2 cores (building the 20,000 takes 5–12 s):
#   uniform random, the worst case (every neighbour nearly equidistant),
#     M=32 efc=256: ef=256 0.876, ef=768 0.992, ef=1024 0.998 (3.4 ms/query);
#   200 Gaussian clusters, sigma 0.5 / 1.0 around unit-variance centres,
#     M=32 efc=256 ef=1024: 0.998 / 0.9997, the f16 ceiling (2.8 ms/query);
#     clustered data reaches that ceiling from ef=64 (0.3 ms/query).
# M=24 stays at 0.990–0.993 on random data with ef=1024; M=48 reaches 0.999
# from ef=768 but needs 51 MB instead of 34 MB for the 20,000. Three rounds of
# removing 30 % and adding as many new vectors kept recall@10 at 0.999–1.0.
# Real note embeddings are clustered, not uniform: on the 22,467 e5-small
# fragment vectors of the 10,000-note benchmark (docs/benchmarks.md), the 80
# nearest of a query came back at 0.992 (ef=256, 0.6 ms), 0.998 (ef=512,
# 0.9 ms) and 0.998 (ef=1024, 1.5 ms, slower than the 1.2 ms exact scan).
CONNECTIVITY: Final = 32  # "M": graph edges per node
EXPANSION_ADD: Final = 256  # "efConstruction": a better graph, paid once per insertion
EXPANSION_SEARCH: Final = 512  # "ef": candidates kept per query; usearch raises it to k when k is larger

# Insertions use one thread. usearch 2.26's concurrent `add` strands nodes:
# stored, but no search reaches them (unum-cloud/USearch#735, fix not
# released). Measured on 2 cores: 2,000 random vectors added with every core
# left one or more vectors its own query could not find in 29 of 30 builds,
# one thread in none; on 20,000 fragments of the 50,000-note benchmark, 2 of
# 5,000 sampled were unreachable with every core, 0 with one. One thread took
# 13.0 s for those 20,000 instead of 5.5 s: the same CPU on one core, paid
# while the model (the slow part of building) keeps the other busy.
ADD_THREADS: Final = 1
# How the graph was built, kept in the vector manifest: a writer that opens
# vectors saved under another value rebuilds the graph from them at its first
# checkpoint (no embedding; semantic/index.py). "" is what manifests written
# before it say: graphs built with every core, which may hold stranded nodes.
GRAPH_BUILD: Final = "serial"
SEARCH_THREADS: Final = 1

# A removed vector stays in the graph as a tombstone (usearch reuses its slot
# for a later insertion). Tombstones cost memory and search time without ever
# being returned, so rebuild once they exceed a quarter of the live vectors.
COMPACT_RATIO: Final = 0.25
# A compaction inserts this many vectors a call, and looks whether it must
# stop between two: 0.7-1.4 s at ~100,000 vectors (0.65-1.4 ms an insert on
# one thread), the longest a stopping service waits for it.
COMPACTION_BATCH: Final = 1024
# Adds and removes made during a compaction are replayed onto its new graph
# in rounds without the write lock while more than this many vectors wait;
# the last ones with it held, which the writer's next change (and, through
# the index's lock, its searches) wait for. A replay inserts as slowly as the
# build: 2,000 replayed at once held searches for 8.6 s at 40,000 vectors.
REPLAY_HELD: Final = 64
REPLAY_ROUNDS: Final = 8  # then the rest is replayed held, whatever is left: an embedder faster than the replay

# Up to this many allowed keys, `search` scores exactly those vectors with
# numpy (7 ms for 2,000 384-d vectors, mostly converting f16 to f32) instead of
# over-fetching from the graph, which for a small subset must fetch index size
# / subset size times k neighbours (400 for 2,000 of 20,000: about 3 ms) and
# more for a subset far from the query.
EXACT_SEARCH_MAX: Final = 2_000
# Over-fetch for a large allowed subset: first ask for k × OVERFETCH_FACTOR ×
# (index size / subset size) neighbours, then OVERFETCH_GROWTH times more
# until k of them are allowed; once that would reach the size of the subset
# (or of the index), an exact scan of the subset is cheaper, and exact.
OVERFETCH_FACTOR: Final = 4
OVERFETCH_GROWTH: Final = 4

log = get_logger(__name__)


class VectorStore:
    """Embeddings by uint64 key, searchable by cosine similarity."""

    def __init__(self, dim: int) -> None:
        if dim <= 0:
            raise ValueError(f"dimension must be positive, got {dim}")
        self._dim = dim
        self._index = _new_index(dim)
        # What `_index` maps when it views a saved file rather than owns its graph
        # (usearch keeps no reference to it); None: the graph is in memory.
        self._mapping: mmap.mmap | None = None
        self._index_lock = threading.Lock()  # held around every native call
        self._write_lock = threading.Lock()  # one mutation (or save) at a time
        self._compaction_lock = threading.Lock()  # one compaction at a time
        # While a compaction builds its graph: the adds (keys, vectors) and removes (keys, None) made since.
        self._replay: list[tuple[KeyArray, FloatArray | None]] | None = None
        self.graph = GRAPH_BUILD
        """How the graph was built (GRAPH_BUILD; a loaded store's is what its manifest says)."""
        self.saved_graph = GRAPH_BUILD
        """`graph` as it was when the last `save` serialised it: what its manifest must say."""

    @property
    def dim(self) -> int:
        return self._dim

    @classmethod
    def load(cls, path: Path, dim: int, checksum: str, view: bool = False, graph: str = GRAPH_BUILD) -> VectorStore:
        """The store saved at `path`, whose bytes must have `checksum`;
        `view`: mapped from the file rather than copied into memory (a reader
        that never adds: the workers that follow a writer share its pages);
        `graph`: how its graph was built, as its manifest says.

        Raises VectorStoreCorrupt when the file is missing, unreadable, does
        not match the checksum, or holds another dimension or format."""
        data = read_verified(path, checksum, mapped=view)
        store = cls(dim)
        store._index = restore(path, data, _new_index(dim), view)
        store._mapping = data if isinstance(data, mmap.mmap) else None
        store.graph = store.saved_graph = graph
        return store

    @property
    def viewed(self) -> bool:
        """Whether the vectors are pages of a saved file rather than a copy in memory."""
        return self._mapping is not None

    def save(self, path: Path, view: bool = False) -> str:
        """Write the store atomically (temp file, fsync, rename, fsync of the
        directory) and return the checksum of the bytes written. `view`: then
        map that file in place of the graph in memory (the caller never
        rewrites it; see the module doc)."""
        with self._write_lock:
            with self._index_lock:
                serialised = self._index.save()
            self.saved_graph = self.graph
            if serialised is None:  # usearch returns the bytes when given no path
                raise RuntimeError("usearch returned no serialised index")
            data = bytes(serialised)
            write_atomic(path, data)
            if view:
                self._view_saved(path)
        return checksum_of(data)

    def _view_saved(self, path: Path) -> None:
        """Map the file just saved in place of the graph in memory (write lock
        held); a file gone already (its folder deleted) leaves the graph owned."""
        try:
            mapping = map_file(path)
        except (OSError, ValueError) as exc:
            log.warning("vector_file_not_mapped", path=str(path), error=str(exc))
            return
        mapped = _new_index(self._dim)
        mapped.view(memoryview(mapping))
        with self._index_lock:
            self._index, self._mapping = mapped, mapping

    def _own(self) -> None:
        """Copy a mapped graph into memory before changing it (write lock held)."""
        if self._mapping is not None:
            with self._index_lock:
                self._index, self._mapping = self._index.copy(), None

    def add(self, keys: npt.NDArray[np.integer[Any]], vectors: npt.NDArray[np.floating[Any]]) -> None:
        """Store `vectors` (n × dim) under `keys` (n distinct non-negative
        integers). A key already stored gets the new vector: usearch refuses
        duplicate keys, so it is removed first, in the same locked step."""
        import numpy as np

        key_array = vector_arrays.key_array(keys)
        matrix = vector_arrays.vector_matrix(vectors, self._dim)
        if len(key_array) != len(matrix):
            raise ValueError(f"{len(key_array)} keys for {len(matrix)} vectors")
        unique, counts = np.unique(key_array, return_counts=True)
        if (counts > 1).any():
            repeated = unique[counts > 1][:5].tolist()
            raise ValueError(f"duplicate keys in one add call: {repeated}")
        if not len(key_array):
            return
        with self._write_lock:
            self._own()
            if self._replay is not None:  # first: a failed copy changes neither graph
                self._replay.append((key_array, matrix.copy()))
            with self._index_lock:
                _put(self._index, key_array, matrix)

    def remove(self, keys: Iterable[int]) -> None:
        """Remove these keys; keys not stored are ignored."""
        key_array = vector_arrays.key_array(keys)
        if not len(key_array):
            return
        with self._write_lock:
            self._own()
            if self._replay is not None:
                self._replay.append((key_array, None))
            with self._index_lock:
                self._index.remove(key_array)

    def __len__(self) -> int:
        """The number of live (not removed) vectors."""
        with self._index_lock:
            return len(self._index)

    def __contains__(self, key: object) -> bool:
        value = vector_arrays.as_key(key)
        if value is None:
            return False
        with self._index_lock:
            return bool(self._index.contains(value))

    @property
    def tombstones(self) -> int:
        """Removed vectors still in the graph, waiting for `compact`."""
        with self._index_lock:
            return int(self._index.stats.nodes) - len(self._index)

    def needs_compaction(self) -> bool:
        with self._index_lock:
            live = len(self._index)
            dead = int(self._index.stats.nodes) - live
        return dead > COMPACT_RATIO * live

    def compact(self, stop: threading.Event | None = None) -> bool:
        """Rebuild the graph from the live vectors, dropping the tombstones;
        False when `stop` was set first (the old graph is kept).

        Searches keep using the old graph while the new one is built (155 s
        for 111,091 vectors on one thread); adds and removes go on, logged and
        replayed onto the new graph in rounds, the last (a few vectors) with
        the write lock held, before it replaces the old one. The build goes
        COMPACTION_BATCH vectors at a time and looks at `stop` between two:
        a process that exits while usearch inserts is aborted by its runtime."""
        with self._compaction_lock:
            with self._write_lock:
                with self._index_lock:
                    keys, stored = vector_arrays.export(self._index)
                self._replay = []
            try:
                fresh = _new_index(self._dim)
                for start in range(0, len(keys), COMPACTION_BATCH):
                    if stop is not None and stop.is_set():
                        return False
                    # The f16 vectors go back in as f16: no precision is lost.
                    end = start + COMPACTION_BATCH
                    fresh.add(keys[start:end], stored[start:end], threads=ADD_THREADS)
                for _ in range(REPLAY_ROUNDS):
                    with self._write_lock:
                        replay = self._replay
                        if sum(len(changed) for changed, _ in replay) <= REPLAY_HELD:
                            break
                        self._replay = []
                    _replayed(fresh, replay)
                with self._write_lock:
                    _replayed(fresh, self._replay)
                    with self._index_lock:
                        self._index, self._mapping = fresh, None
                    self.graph = GRAPH_BUILD
            finally:
                with self._write_lock:
                    self._replay = None
        return True

    def search(
        self,
        query: npt.NDArray[np.floating[Any]],
        k: int,
        allowed: Collection[int] | None = None,
    ) -> list[tuple[int, float]]:
        """Up to `k` (key, cosine similarity) pairs, most similar first.

        With `allowed`, only those keys are returned. usearch has no filtered
        search: a small subset (≤ EXACT_SEARCH_MAX keys) is scored exactly;
        a larger one over-fetches from the graph and keeps the allowed keys.
        Exact and graph similarities of a key agree within 2e-4 (measured;
        the graph compares in f16)."""
        vector = vector_arrays.query_vector(query, self._dim)
        if k <= 0:
            return []
        if allowed is None:
            with self._index_lock:
                return _graph_search(self._index, vector, k)
        subset = allowed if isinstance(allowed, AbstractSet) else frozenset(allowed)
        if len(subset) <= EXACT_SEARCH_MAX:
            return self._exact_search(vector, subset, k)
        return self._filtered_search(vector, subset, k)

    def vectors(self, keys: Sequence[int]) -> FloatArray:
        """The stored vectors of `keys` (len(keys) × dim, float32, as stored in
        f16). Raises KeyError when a key is not stored."""
        key_array = vector_arrays.key_array(keys)
        with self._index_lock:
            found = vector_arrays.contains(self._index, key_array)
            if not found.all():
                raise KeyError(f"not in the vector store: {key_array[~found][:5].tolist()}")
            return vector_arrays.get(self._index, key_array, self._dim)

    def _exact_search(self, vector: FloatArray, subset: AbstractSet[int], k: int) -> list[tuple[int, float]]:
        import numpy as np

        # A key that cannot be stored cannot match: it is skipped, not an error.
        candidates = np.array([key for key in map(vector_arrays.as_key, subset) if key is not None], dtype=np.uint64)
        with self._index_lock:
            present = candidates[vector_arrays.contains(self._index, candidates)]
            stored = vector_arrays.get(self._index, present, self._dim)
        return vector_arrays.top_k(present, vector_arrays.cosine(stored, vector), k)

    def _filtered_search(self, vector: FloatArray, subset: AbstractSet[int], k: int) -> list[tuple[int, float]]:
        with self._index_lock:
            size = len(self._index)
            count = k * OVERFETCH_FACTOR * math.ceil(size / len(subset))
            # A graph search for `count` neighbours computes several times `count`
            # distances; the exact scan computes one per allowed key.
            while count < min(size, len(subset)):
                hits = [hit for hit in _graph_search(self._index, vector, count) if hit[0] in subset]
                if len(hits) >= k:
                    return hits[:k]
                count *= OVERFETCH_GROWTH
        return self._exact_search(vector, subset, k)


def _replayed(index: Index, replay: Sequence[tuple[KeyArray, FloatArray | None]]) -> None:
    """Apply the adds and removes of a compaction's log to its new graph, in order."""
    for changed, vectors in replay:
        if vectors is None:
            index.remove(changed)
        else:
            _put(index, changed, vectors)


def _put(index: Index, keys: KeyArray, vectors: FloatArray) -> None:
    """Add `vectors` under `keys`, a key already stored getting its new vector
    (usearch refuses duplicate keys: it is removed first)."""
    stored = keys[vector_arrays.contains(index, keys)]
    if len(stored):
        index.remove(stored)
    index.add(keys, vectors, threads=ADD_THREADS)


def _new_index(dim: int) -> Index:
    before_usearch()
    from usearch.index import Index

    return Index(
        ndim=dim,
        metric=METRIC,
        dtype=SCALAR_KIND,
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )


def _graph_search(index: Index, vector: FloatArray, count: int) -> list[tuple[int, float]]:
    from usearch.index import Matches

    matches = index.search(vector, count, threads=SEARCH_THREADS)
    if not isinstance(matches, Matches):  # one query gives Matches, a batch BatchMatches
        raise TypeError(f"usearch returned {type(matches).__name__} for one query")
    return [(int(key), 1.0 - float(distance)) for key, distance in zip(matches.keys, matches.distances, strict=True)]
