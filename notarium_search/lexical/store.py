"""One space's Tantivy index on disk: open, write, commit, read.

Only the space's writer thread calls the write methods; any thread may call
`searcher()`. After every commit the reader is reloaded (and the shared
searcher replaced) so that results are fresh at once.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path

import msgspec
import tantivy

from notarium_search.lexical.analysis import LANGUAGE_FIELD, register_analyzers
from notarium_search.lexical.schema import build_schema, to_document
from notarium_search.logsetup import get_logger
from notarium_search.storage.faults import (
    IndexFolderMissing,
    IndexLocked,
    StorageFault,
    describe,
    is_lock_busy,
    is_passing,
)
from notarium_search.types import ParsedNote

__all__ = ["IndexLocked", "IndexUnreadable", "LexicalIndex", "WriterFailed"]  # IndexLocked: storage/faults.py

WRITER_HEAP_BYTES = 64_000_000  # Tantivy's per-writer buffer; 1 thread keeps RSS low
WRITER_THREADS = 1

log = get_logger(__name__)


class IndexUnreadable(RuntimeError):
    """A read-only open could not open the index; nothing was touched."""


class WriterFailed(StorageFault):
    """Tantivy's writer failed (a full disk, an I/O error): the pass stops at
    the first failure (a dead writer fails every later note: 12,688 tracebacks
    in 26 s in the attack review) and the next pass makes a new writer."""


class LexicalIndex:
    def __init__(self, directory: Path, languages: str | tuple[str, ...], read_only: bool = False) -> None:
        """`languages`: those the notes are analysed in, the fallback first
        (one: every note in it). `read_only`: open what another process
        writes; never create, delete or write anything (IndexUnreadable when
        it cannot be opened)."""
        self.directory = directory
        self.read_only = read_only
        if not read_only:
            directory.mkdir(parents=True, exist_ok=True)
        # Tantivy silently creates an empty index when meta.json is missing:
        # callers must then forget their manifest and re-index from the files.
        self.created = not (directory / "meta.json").exists()
        self.languages: tuple[str, ...] = (languages,) if isinstance(languages, str) else tuple(languages)
        self.index = self._open()
        self.schema = self.index.schema
        self._writer: tantivy.IndexWriter | None = None
        # Creating a searcher costs ~1.5 ms (measured at 10,000 notes): one is
        # shared by every reader until the next commit replaces it.
        self._searcher = self.index.searcher()
        self._generation = 0  # how many times the searcher was replaced (`counted`)
        self._counts: dict[Hashable, tuple[int, int]] = {}  # key → (generation, count)

    def _open(self) -> tantivy.Index:
        if self.read_only:
            if self.created:
                raise IndexUnreadable(f"no index in {self.directory}")
            try:
                index = tantivy.Index(build_schema(self.languages), path=str(self.directory), reuse=True)
            except (OSError, ValueError) as exc:
                raise IndexUnreadable(f"cannot open the index in {self.directory}: {describe(exc)}") from exc
            register_analyzers(index, self.languages)
            return index
        try:
            index = tantivy.Index(build_schema(self.languages), path=str(self.directory), reuse=True)
        except (OSError, ValueError) as exc:
            if is_passing(exc):  # says nothing of the files: never a reason to delete them
                raise StorageFault(f"cannot open the index in {self.directory}: {describe(exc)}") from exc
            log.warning("lexical_index_unreadable", directory=str(self.directory), error=str(exc))
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory.mkdir(parents=True)
            self.created = True
            index = tantivy.Index(build_schema(self.languages), path=str(self.directory), reuse=False)
        register_analyzers(index, self.languages)
        return index

    def searcher(self) -> tantivy.Searcher:
        return self._searcher

    def notes_per_language(self) -> dict[str, int]:
        """How many notes are analysed in each of the space's languages (status)."""
        return {
            language: self.counted(("language", language), functools.partial(self._notes_in, language))
            for language in self.languages
        }

    def _notes_in(self, language: str) -> int:
        query = tantivy.Query.term_query(self.schema, LANGUAGE_FIELD, language)
        # `count` exists at run time but is missing from tantivy-py 0.27's stubs.
        return int(getattr(self._searcher.search(query, 1, count=True), "count", 0) or 0)

    def counted(self, key: Hashable, count: Callable[[], int]) -> int:
        """`count()` of the notes the searcher sees, made once per searcher
        (each reload after a commit counts again). A shared writer publishes
        its status 4 times a second (index/peers.py), and counting the notes
        of each language by a search took 0.78 ms at 50,000 notes: most of
        an idle service's CPU (docs/benchmarks.md, "An idle service")."""
        generation = self._generation  # read first: a count made across a reload is made again
        known = self._counts.get(key)
        if known is not None and known[0] == generation:
            return known[1]
        value = count()
        self._counts[key] = (generation, value)
        return value

    def present(self, searcher: tantivy.Searcher) -> tuple[str, ...]:
        """The languages of the notes `searcher` sees, in the space's order:
        a query is analysed in each (lexical/search.py). The fallback when
        there is no note; one language without a lookup."""
        if len(self.languages) == 1:
            return self.languages
        found = tuple(lang for lang in self.languages if searcher.doc_freq(LANGUAGE_FIELD, lang) > 0)
        return found or self.languages[:1]

    def majority(self, searcher: tantivy.Searcher, present: Sequence[str]) -> str | None:
        """The language among `present` of more than half the notes `searcher`
        sees (deleted ones not yet merged away count: a choice of filter, not of notes)."""
        if len(present) < 2:
            return None
        counts = {lang: searcher.doc_freq(LANGUAGE_FIELD, lang) for lang in present}
        language = max(counts, key=counts.__getitem__)
        return language if 2 * counts[language] > sum(counts.values()) else None

    def reload(self, keep_if_emptied: bool = False) -> bool:
        """See the last commit (and finished merges) from now on; returns
        whether it does. `keep_if_emptied`: a reader of another process's
        index keeps its searcher when the last commit holds no notes while
        the one it has does (a repair's empty new index, which its writer does
        not publish to its own readers either: `recreate`)."""
        try:
            self.index.reload()
        except ValueError as exc:
            raise self._failure("reload", exc) from exc
        fresh = self.index.searcher()
        if keep_if_emptied and fresh.num_docs == 0 and self._searcher.num_docs > 0:
            return False
        self._searcher = fresh
        self._generation += 1
        return True

    @property
    def folder_missing(self) -> bool:
        """Its folder (or meta.json) was deleted under the running service:
        readers still see the open files, but nothing can be committed."""
        return not (self.directory / "meta.json").exists()

    def committed_opstamp(self) -> int | None:
        """The opstamp meta.json names (None: no readable meta.json)."""
        try:
            meta = msgspec.json.decode((self.directory / "meta.json").read_bytes())
        except OSError as exc:
            if is_passing(exc):
                raise StorageFault(f"cannot read {self.directory / 'meta.json'}: {describe(exc)}") from exc
            return None
        except msgspec.DecodeError:
            return None
        opstamp = meta.get("opstamp") if isinstance(meta, dict) else None
        return opstamp if isinstance(opstamp, int) else None

    # -- writer side (the space's writer thread only) --------------------

    def _get_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            try:
                writer = self.index.writer(WRITER_HEAP_BYTES, WRITER_THREADS)
            except ValueError as exc:
                if is_lock_busy(exc):
                    raise IndexLocked(f"index {self.directory} is in use by another process") from exc
                raise self._failure("open its writer", exc) from exc
            self._collect_orphans(writer)
            self._writer = writer
        return self._writer

    def _collect_orphans(self, writer: tantivy.IndexWriter) -> None:
        """Delete the files no commit names, as Tantivy does after each commit.
        A process killed (or a commit failed) between writing a commit's files
        and meta.json leaves them; the next writer redoes the same work, reaches
        the same opstamp and names the same `<segment>.<opstamp>.del`: every
        commit then failed with FileAlreadyExists (tests/lexical/test_store.py)."""
        try:
            writer.garbage_collect_files()
        except ValueError as exc:  # the commit will say what is wrong, if anything is
            log.warning("index_orphans_not_collected", index=str(self.directory), error=describe(exc))

    def _write(self, what: str, step: Callable[[tantivy.IndexWriter], object]) -> None:
        writer = self._get_writer()
        try:
            step(writer)
        except ValueError as exc:
            self._drop_writer(writer)
            raise self._failure(what, exc) from exc

    def upsert(self, note: ParsedNote, previous_id: str | None = None) -> None:
        """Index `note` in place of `previous_id`'s (or of its own id's)."""
        self.upsert_document(note.id, to_document(note, self.languages), previous_id)

    def upsert_document(self, note_id: str, document: tantivy.Document, previous_id: str | None = None) -> None:
        """`upsert` with the note's document made already (schema.to_document,
        in a process parsing ahead: index/parse_ahead.py)."""

        def step(writer: tantivy.IndexWriter) -> None:
            writer.delete_documents_by_term("id", previous_id or note_id)
            if previous_id is not None and previous_id != note_id:
                writer.delete_documents_by_term("id", note_id)
            writer.add_document(document)

        self._write("index a note", step)

    def delete(self, note_id: str) -> None:
        self._write("delete a note", lambda writer: writer.delete_documents_by_term("id", note_id))

    def delete_all(self) -> None:
        self._write("empty the index", lambda writer: writer.delete_all_documents())

    def commit(self) -> int:
        """Publish pending changes and return the commit's opstamp; on failure
        the writer is dropped (a failed commit leaves Tantivy's writer
        unusable: the next write makes a new one) and the error raised."""
        writer = self._get_writer()
        try:
            opstamp: int = writer.commit()
        except BaseException as exc:
            self._drop_writer(writer)
            if isinstance(exc, ValueError):
                raise self._failure("commit", exc) from exc
            raise
        self.reload()
        return opstamp

    def _drop_writer(self, writer: tantivy.IndexWriter) -> None:
        self._writer = None
        _release(writer)

    def _failure(self, what: str, exc: ValueError) -> Exception:
        """What a write error means: the index folder deleted under us, or a
        writer failure to retry (disk full, I/O)."""
        if self.folder_missing:
            return IndexFolderMissing(f"the index folder {self.directory} was deleted")
        return WriterFailed(f"the index of {self.directory.parent.name} could not {what}: {describe(exc)}")

    def recreate(self) -> None:
        """Throw the index away and start an empty one (its files are damaged,
        or do not match their manifest). Readers keep the last searcher, and
        its open files, until the rebuild's first commit replaces it: an
        empty index published at once answered "no results" to everyone."""
        self._writer = None  # a writer over damaged segments cannot be trusted to close cleanly
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.index = tantivy.Index(build_schema(self.languages), path=str(self.directory), reuse=False)
        register_analyzers(self.index, self.languages)
        self.schema = self.index.schema
        self.created = True

    def wait_for_merges(self) -> None:
        """Let Tantivy's background merges finish and see their segments
        (lexical/segments.py). The writer is let go to wait for them: the
        next write opens another."""
        self.close()
        self.reload()

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
