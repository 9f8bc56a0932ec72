"""One space's Tantivy index on disk: open, write, commit, read.

Only the space's writer thread calls the write methods; any thread may call
`searcher()`. After every commit the reader is reloaded (and the shared
searcher replaced) so that results are fresh at once.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import msgspec
import structlog
import tantivy

from notarium_search.analysis import Analyzers, analyzers, register_analyzers
from notarium_search.lexical.schema import build_schema, to_document
from notarium_search.models import ParsedNote

WRITER_HEAP_BYTES = 64_000_000  # Tantivy's per-writer buffer; 1 thread keeps RSS low
WRITER_THREADS = 1

log = structlog.get_logger(__name__)


class IndexLocked(RuntimeError):
    """Another process (a running service, or `notarium-search index`) holds the writer lock."""


def is_damage(exc: BaseException) -> bool:
    """Whether an exception from a read is the index's files failing (tantivy
    raises a plain ValueError for I/O and decoding errors, and pyo3 turns a
    Rust panic on bad bytes into a PanicException, a BaseException), rather
    than a bad request (our own errors subclass ValueError)."""
    if isinstance(exc, msgspec.DecodeError):  # a stored payload that no longer decodes
        return True
    return type(exc) is ValueError or type(exc).__name__ == "PanicException"


class LexicalIndex:
    def __init__(self, directory: Path, language: str) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        # Tantivy silently creates an empty index when meta.json is missing:
        # callers must then forget their manifest and re-index from the files.
        self.created = not (directory / "meta.json").exists()
        self.analyzers: Analyzers = analyzers(language)
        self.index = self._open()
        self.schema = self.index.schema
        self._writer: tantivy.IndexWriter | None = None
        self._write_lock = threading.Lock()
        # Creating a searcher costs ~1.5 ms (measured at 10,000 notes): one is
        # shared by every reader until the next commit replaces it.
        self._searcher = self.index.searcher()

    def _open(self) -> tantivy.Index:
        try:
            index = tantivy.Index(build_schema(self.analyzers), path=str(self.directory), reuse=True)
        except (OSError, ValueError) as exc:
            log.warning("lexical_index_unreadable", directory=str(self.directory), error=str(exc))
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory.mkdir(parents=True)
            self.created = True
            index = tantivy.Index(build_schema(self.analyzers), path=str(self.directory), reuse=False)
        register_analyzers(index, self.analyzers.language)
        return index

    def searcher(self) -> tantivy.Searcher:
        return self._searcher

    def reload(self) -> None:
        """See the last commit (and finished merges) from now on."""
        self.index.reload()
        self._searcher = self.index.searcher()

    # -- writer side (the space's writer thread only) --------------------

    def _get_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            try:
                self._writer = self.index.writer(WRITER_HEAP_BYTES, WRITER_THREADS)
            except ValueError as exc:
                if "lock" in str(exc).lower():
                    raise IndexLocked(f"index {self.directory} is in use by another process") from exc
                raise
        return self._writer

    def upsert(self, note: ParsedNote, previous_id: str | None = None) -> None:
        writer = self._get_writer()
        doc = to_document(note)
        writer.delete_documents_by_term("id", previous_id or note.id)
        if previous_id is not None and previous_id != note.id:
            writer.delete_documents_by_term("id", note.id)
        writer.add_document(doc)

    def delete(self, note_id: str) -> None:
        self._get_writer().delete_documents_by_term("id", note_id)

    def delete_all(self) -> None:
        self._get_writer().delete_all_documents()

    def commit(self) -> None:
        """Publish pending changes; on failure the writer is recreated (a failed
        commit leaves Tantivy's writer unusable) and the error re-raised."""
        writer = self._get_writer()
        try:
            writer.commit()
        except BaseException:
            self._writer = None
            _release(writer)
            raise
        self.reload()

    def recreate(self) -> None:
        """Throw the index away and start an empty one (its files are damaged);
        readers holding the old searcher keep their open files until done."""
        self._writer = None  # a writer over damaged segments cannot be trusted to close cleanly
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.index = tantivy.Index(build_schema(self.analyzers), path=str(self.directory), reuse=False)
        register_analyzers(self.index, self.analyzers.language)
        self.schema = self.index.schema
        self.created = True
        self._searcher = self.index.searcher()

    def close(self) -> None:
        """Release the writer lock (waits for background merges)."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            try:
                writer.wait_merging_threads()
            except (ValueError, RuntimeError) as exc:
                log.warning("lexical_writer_close_failed", error=str(exc))


def _release(writer: tantivy.IndexWriter) -> None:
    """Drop a failed writer's uncommitted changes and its lock now: the next
    writer would otherwise find the index locked for as long as the failure's
    traceback keeps this one alive (seen after a commit failed on a full disk)."""
    for step in (writer.rollback, writer.wait_merging_threads):
        try:
            step()
        except (ValueError, RuntimeError) as exc:
            log.warning("lexical_writer_release_failed", error=str(exc))
