"""One space's vector index: fragments → embeddings → usearch, with a manifest.

The manifest records, per note, the fragments whose vectors are in the
index, the fingerprint they were made with (model + chunking) and the
checksum of the vector file. Only the space's writer thread calls `plan`,
`embed_pending` and `checkpoint`; request threads call `search` and
`related`, serialised with the writer by a lock (usearch is not documented
as safe for searches during inserts).

Crash safety: vectors are saved to a new generation file, then the manifest
naming it is replaced atomically, then the old file is deleted. A crash at
any point leaves a manifest and the vector file it names, consistent, and
loses the embedding done since the last checkpoint (CHECKPOINT_* below).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from notarium_search.logsetup import get_logger
from notarium_search.semantic.chunking import CHUNKING_FINGERPRINT, chunk_note
from notarium_search.semantic.compaction import GraphRebuild, WriterJobs
from notarium_search.semantic.embedding import Embedder
from notarium_search.semantic.manifest import (
    FragmentTable,
    FrozenFragments,
    ManifestUnreadable,
    Record,
    decode_calibrated,
    decode_frozen,
    encode,
)
from notarium_search.semantic.pending import PendingFragments
from notarium_search.semantic.probes import Calibration, measured, probe_queries
from notarium_search.semantic.reference import REFERENCE_PASSAGES
from notarium_search.semantic.vector_file import VectorStoreCorrupt
from notarium_search.semantic.vector_store import GRAPH_BUILD, VectorStore
from notarium_search.storage.atomic import write_atomic
from notarium_search.storage.faults import StorageFault, describe, is_passing
from notarium_search.types import Fragment, ParsedNote

CHECKPOINT_FRAGMENTS = 512  # a checkpoint once this much is embedded (~15 s of e5-small on 2 cores)
CHECKPOINT_SECONDS = 60.0  # or once this long has passed, whatever was embedded
# A checkpoint rewrites the whole vector file and manifest, so its cost grows
# with the index and a build's checkpoints add up quadratically: 2.7 µs a
# stored vector (0.03 s at 11,000, ~0.3 s at 111,091; 1.3 s for the 44
# checkpoints of a 22,467-fragment build, a projected 33 s for the 217 of a
# 111,091-fragment one, 1 % of its hour at 31 fragments/s; more with a faster
# embedder). So a checkpoint also waits until the time since the last one is
# CHECKPOINT_COST_FACTOR times what that one took to save: checkpoints then
# cost at most 1 % of a build, whatever its size. A crash loses at most
# max(CHECKPOINT_FRAGMENTS fragments or CHECKPOINT_SECONDS, CHECKPOINT_COST_FACTOR
# × the last save) of embedding: ~30 s of work at 111,091 vectors.
CHECKPOINT_COST_FACTOR = 100
COMPACT_CHECK_EVERY = 4  # checkpoints between tombstone checks

log = get_logger(__name__)


@dataclass(slots=True)
class SemanticProgress:
    pending: int = 0  # fragments waiting for their embedding
    embedded: int = 0  # fragments embedded since the current build started
    started_at: float = field(default_factory=time.monotonic)
    last_checkpoint: float = field(default_factory=time.monotonic)


def text_digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


class SemanticIndex:
    def __init__(
        self, directory: Path, embedder: Embedder, read_only: bool = False, reference: np.ndarray | None = None
    ) -> None:
        """`read_only`: the vectors another process writes (the HTTP server's
        other workers, semantic/follower.py): read what its manifest names, never
        delete or write anything. `reference`: the reference passages' vectors
        when already embedded with this model."""
        self.directory = directory
        self.embedder = embedder
        self.read_only = read_only
        self.fingerprint = f"{embedder.fingerprint}-{CHUNKING_FINGERPRINT}"
        self._lock = threading.Lock()
        self._pending = PendingFragments()
        self._dirty = False  # changes not yet checkpointed
        self._since_compaction = 0
        self._rebuild = GraphRebuild(directory)
        self.writer_jobs: WriterJobs | None = None
        """Runs a job on the writer thread (the channel's `wake`): a compaction
        then runs in a thread of its own and says so through it. None (the
        CLI): a compaction runs in the checkpoint that finds it due."""
        self._since_checkpoint = 0
        self._checkpoint_seconds = 0.0  # how long the last checkpoint took to save
        self.progress = SemanticProgress()
        # The reference passages' vectors, embedded once per model (~0.3 s):
        # what unrelated text scores against a query (semantic/calibration.py).
        if reference is None and embedder.config.relevance_margin is not None:
            reference = embedder.embed_passages(list(REFERENCE_PASSAGES))
        self.reference = reference if embedder.config.relevance_margin is not None else None
        # What noise scores against this space's fragments (semantic/probes.py),
        # kept in the manifest; None until measured (the model's margin alone).
        self.calibration: Calibration | None = None
        self.repaired: str | None = None  # why the index was rebuilt at open, for status
        self.unread: str | None = None  # read-only: why the saved vectors could not be used
        if not read_only:
            directory.mkdir(parents=True, exist_ok=True)
        self._load()

    # -- open / save -------------------------------------------------------

    @property
    def _manifest_path(self) -> Path:
        return self.directory / "vectors.json"

    def _vector_path(self, generation: int) -> Path:
        return self.directory / f"vectors-{generation}.usearch"

    def _load(self) -> None:
        self.generation = 0
        # A follower's table is read-only and compact (manifest.FrozenFragments: half the memory).
        self.notes: FragmentTable | FrozenFragments = FrozenFragments(()) if self.read_only else FragmentTable()
        self.store = VectorStore(self.embedder.config.dim)
        self._dirty = True  # until a manifest matching this fingerprint is read
        decode = decode_frozen if self.read_only else decode_calibrated
        try:
            fingerprint, generation, checksum, notes, calibration, graph = decode(self._manifest_path.read_bytes())
        except FileNotFoundError:
            return
        except OSError as exc:
            if is_passing(exc):  # a passing fault, not damage: the vectors are kept (storage/faults.py)
                raise StorageFault(f"cannot read {self._manifest_path}: {describe(exc)}") from exc
            self._reset(f"vector manifest unreadable ({exc}): rebuilding")
            return
        except ManifestUnreadable as exc:
            self._reset(f"vector manifest unreadable ({exc}): rebuilding")
            return
        if fingerprint != self.fingerprint:
            log.info("vector_fingerprint_changed", old=fingerprint, new=self.fingerprint)
            self._reset(None)
            return
        try:
            # Mapped, in the writer too: its first change copies them into memory.
            store = VectorStore.load(
                self._vector_path(generation), self.embedder.config.dim, checksum, view=True, graph=graph
            )
        except VectorStoreCorrupt as exc:
            self._reset(f"vector index corrupt ({exc}): rebuilding from the notes")
            return
        self.store, self.generation, self.notes = store, generation, notes
        self.calibration = calibration
        self._dirty = False
        if graph != GRAPH_BUILD and not self.read_only:
            # The vectors are kept; their graph is rebuilt at the first checkpoint (vector_store.GRAPH_BUILD).
            log.info("vector_graph_outdated", directory=str(self.directory), graph=graph, wanted=GRAPH_BUILD)

    def _writable(self) -> FragmentTable:
        """The writer's table (a follower never changes its own)."""
        if not isinstance(self.notes, FragmentTable):
            raise TypeError("a follower's vector manifest is read-only")
        return self.notes

    def _reset(self, reason: str | None) -> None:
        if self.read_only:  # the writer repairs; a reader answers without vectors meanwhile
            self.unread = reason or "vectors of another model or chunking"
            log.info("vector_index_not_read", directory=str(self.directory), reason=self.unread)
            return
        if reason:
            log.warning("vector_index_repair", directory=str(self.directory), reason=reason)
            self.repaired = reason
        for stale in self.directory.glob("vectors-*.usearch"):
            stale.unlink(missing_ok=True)
        self._manifest_path.unlink(missing_ok=True)

    def checkpoint(self) -> None:
        """Persist the vectors and the manifest that names them (see module doc).
        Nothing is written when nothing changed since the last checkpoint."""
        if self.read_only:
            return
        self._compact_if_due()
        if not self._dirty:
            return
        self.directory.mkdir(parents=True, exist_ok=True)  # deleted under the service: written anew
        with self._lock:
            started = time.monotonic()
            generation = self.generation + 1
            # Idle (nothing left to embed): the vectors become pages of the file
            # just written, shared with the followers (vector_store.py).
            checksum = self.store.save(self._vector_path(generation), view=not self._pending)
        # Encoded outside the lock (searches go on): only this thread changes the records.
        # How the graph saved was built (a compaction may have ended since the save).
        manifest = encode(self.fingerprint, generation, checksum, self.notes, self.calibration, self.store.saved_graph)
        write_atomic(self._manifest_path, manifest)
        self._vector_path(self.generation).unlink(missing_ok=True)
        self.generation = generation
        self._dirty = False
        self._since_compaction += 1
        self._since_checkpoint = 0
        self.progress.last_checkpoint = time.monotonic()
        self._checkpoint_seconds = self.progress.last_checkpoint - started

    def _compact_if_due(self) -> None:
        """Rebuild the graph from its vectors (semantic/compaction.py) when a
        quarter of it is removed vectors, or when it was built in a way that
        strands some (vector_store.GRAPH_BUILD). Left out of the save's
        duration, which spaces out the next checkpoints."""
        if not self._rebuild.may_start:
            return
        if self.store.graph == GRAPH_BUILD and not (
            self._since_compaction >= COMPACT_CHECK_EVERY and self.store.needs_compaction()
        ):
            return
        self._since_compaction = 0
        if self.writer_jobs is None:
            self._dirty = self._rebuild.now(self.store) or self._dirty
        else:
            self._rebuild.start(self.store, self.writer_jobs, self._compacted)

    def _compacted(self, rebuilt: bool) -> None:
        """On the writer thread, once the rebuild's thread has ended: save the new graph."""
        self._rebuild.ended(rebuilt)
        if rebuilt:
            self._dirty = True
            self.checkpoint()

    def stop_compaction(self, timeout: float) -> None:
        """The writer stops: end a rebuild's thread (GraphRebuild.stop)."""
        self._rebuild.stop(timeout)

    @property
    def compacting(self) -> bool:
        """Whether a thread rebuilds the graph."""
        return self._rebuild.running

    def save_again(self) -> None:
        """Write the vectors held in memory anew (their folder was deleted)."""
        self._dirty = True
        self.checkpoint()

    # -- writer side -------------------------------------------------------

    def plan(self, notes: Iterable[ParsedNote], deleted: Iterable[str] = (), first: bool = False) -> None:
        """Bring the wanted fragments of these notes in line: vanished fragments
        leave the index now, new ones wait for `embed_pending` (`first`: before
        every fragment planned without it)."""
        for note_id in deleted:
            self._drop_note(note_id)
        for note in notes:
            wanted = {f.id: f for f in chunk_note(note)}
            saved = self.notes.get(note.id, [])
            kept = [r for r in saved if r.id in wanted]
            gone = [r.key for r in saved if r.id not in wanted]
            if gone:
                with self._lock:
                    self.store.remove(gone)
                    self._writable().replace(note.id, kept)
                self._dirty = True
            kept_ids = {r.id for r in kept}
            self._pending.set(note.id, {fid: f for fid, f in wanted.items() if fid not in kept_ids}, first)
        self.progress.pending = len(self._pending)

    def forget_missing(self, present: set[str]) -> None:
        """Drop notes the lexical index no longer has (a full pass)."""
        for note_id in [n for n in self.notes if n not in present]:
            self._drop_note(note_id)
        for note_id in [n for n in self._pending.notes() if n not in present]:
            self._pending.set(note_id, {})
        self.progress.pending = len(self._pending)

    def _drop_note(self, note_id: str) -> None:
        with self._lock:
            records = self._writable().pop(note_id)
            self.store.remove([r.key for r in records])
        self._dirty = self._dirty or bool(records)
        self._pending.set(note_id, {})

    @property
    def has_pending(self) -> bool:
        return len(self._pending) > 0

    @property
    def has_first_pending(self) -> bool:
        """Whether fragments planned `first` wait for their embedding."""
        return self._pending.has_first

    def embed_pending(self, budget: int) -> int:
        """Embed up to `budget` pending fragments; checkpoint when due. Returns
        how many were embedded (the writer interleaves other work between calls).

        The fragments go to the embedder in one call, so that it can group them
        by length (a batch pads to its longest member)."""
        batch = self._pending.take(budget)
        if batch:
            vectors = self.embedder.embed_passages([f.embed_text for f in batch])
            self._add(batch, vectors)
            self.progress.embedded += len(batch)
            self._since_checkpoint += len(batch)
        self.progress.pending = len(self._pending)
        if batch and (not self._pending or self._checkpoint_due()):
            self.checkpoint()
        return len(batch)

    def _checkpoint_due(self) -> bool:
        since = time.monotonic() - self.progress.last_checkpoint
        enough = since > CHECKPOINT_SECONDS or self._since_checkpoint >= CHECKPOINT_FRAGMENTS
        return enough and since >= CHECKPOINT_COST_FACTOR * self._checkpoint_seconds

    def _add(self, batch: Sequence[Fragment], vectors: np.ndarray) -> None:
        keys = np.array([f.key for f in batch], dtype=np.uint64)
        with self._lock:
            self.store.remove(int(k) for k in keys if int(k) in self.store)
            self.store.add(keys, vectors.astype(np.float32))
            for fragment in batch:
                record = Record(fragment.id, fragment.key, fragment.start, fragment.end, text_digest(fragment.text))
                self._writable().add(fragment.note_id, record)
        self._dirty = True
        self._pending.done(batch)

    # -- calibration (semantic/probes.py) ----------------------------------

    @property
    def calibration_due(self) -> bool:
        """Whether the writer should measure this space's noise now: never
        measured, or the space has changed enough since (probes.REFRESH_SHARE)."""
        if self.read_only or self.reference is None or not self.size():
            return False
        return self.calibration is None or self.calibration.stale(self.size())

    def calibrate(self, words: Sequence[str]) -> Calibration:
        """Measure what made-up words (some spliced from `words`, the space's
        own) score against this space above unrelated text, and keep it: the
        next checkpoint writes it with the vectors. ~1 s with e5-small (the
        probes embedded one by one, as queries are), whatever the space's size."""
        assert self.reference is not None
        excess = []
        for text in probe_queries(words):
            vector = self.embedder.embed_query(text)
            hits = self.search(vector, 1)
            if hits:
                excess.append(hits[0][2] - float(np.mean(self.reference @ vector)))
        self.calibration = measured(self.size(), excess)
        self._dirty = True
        log.info("semantic_calibrated", directory=str(self.directory), margin=round(self.calibration.margin(), 4))
        return self.calibration

    def margin(self) -> float | None:
        """The relevance margin of this space: the model's, raised to what its
        own noise reaches (its calibration) where that is higher; None when the
        model has no margin (no floor at all)."""
        model = self.embedder.config.relevance_margin
        if model is None:
            return None
        if self.calibration is None:
            return model
        return max(model, self.calibration.margin())

    # -- readers -----------------------------------------------------------

    def search(
        self, query: np.ndarray, k: int, allowed_notes: set[str] | None = None
    ) -> list[tuple[str, Record, float]]:
        """Fragments nearest to the query: (note id, fragment, similarity), best first."""
        with self._lock:
            allowed = None
            if allowed_notes is not None:
                allowed = self.notes.keys_of(allowed_notes)
                if not allowed:
                    return []
            hits = self.store.search(query, k, allowed)
            found = [(self.notes.find(key), score) for key, score in hits]
            return [(*where, score) for where, score in found if where is not None]

    def nearest(self, query: np.ndarray, k: int, allowed_notes: set[str] | None = None) -> list[tuple[str, int, float]]:
        """`search` without the fragments' records: (note id, vector key,
        similarity), best first; `record` reads those a caller shows (a
        hybrid search's 400 hits as records were 15 % of its CPU outside the model)."""
        with self._lock:
            allowed = None
            if allowed_notes is not None:
                allowed = self.notes.keys_of(allowed_notes)
                if not allowed:
                    return []
            hits = self.store.search(query, k, allowed)
            notes = [(self.notes.note_of(key), key, score) for key, score in hits]
            return [(note_id, key, score) for note_id, key, score in notes if note_id is not None]

    def record(self, note_id: str, key: int) -> Record | None:
        """The note's fragment of this key (None: the note was embedded again since)."""
        with self._lock:
            return self.notes.record(note_id, key)

    def fragments_of(self, note_id: str) -> list[Record]:
        with self._lock:
            return self.notes.get(note_id, [])

    def vectors(self, records: Sequence[Record]) -> np.ndarray:
        with self._lock:
            return np.asarray(self.store.vectors([r.key for r in records]), dtype=np.float32)

    def size(self) -> int:
        return len(self.store)
