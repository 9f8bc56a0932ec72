"""Notes parsed ahead in worker processes while a pass reads many files.

The writer thread did everything a note costs in Python — Markdown, the
line anchors, the frontmatter, its language, its stems — about 1.4 ms a
note, with the GIL held: at 50,000 notes on 2 cores the first index took
67 s on one core (py-spy: Markdown 22 %, stems 18 %, language 15 %, line
anchors 8 %, YAML 5 %). A pass that reads at least PARSE_AHEAD_MIN_FILES
files hands that work to `parse_processes` spawned processes, a window of
batches ahead of the writer, and takes their answers in path order.

What a process returns is what the writer would compute from the file: it
reads it with the same function and checks (index/note_file.py: scan.open_note,
the size bound, the digest), and the writer takes that answer in place of
its own read. The writer still checks what needs its state (the format,
the marks of index/quarantine.py, the budget) and parses on its own thread
whatever has no answer — a format not built in (a plug-in registered in
this process only), a file set aside, an error, a process that died
(BrokenProcessPool: every later note is read on the writer thread, so
that a note that kills its reader takes the writer down and is set aside
by index/quarantine.py, as before). The writer marks each note before
waiting for its answer, so a note that holds a process holds the writer
under its own mark.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from datetime import datetime
from typing import NamedTuple

import msgspec

from notarium_search.index import note_file
from notarium_search.lexical.schema import DocumentParts, document_parts
from notarium_search.logsetup import get_logger
from notarium_search.notes import formats
from notarium_search.notes.canvas import CANVAS
from notarium_search.notes.collection import CollectionRules
from notarium_search.notes.parse import MARKDOWN, NotANote
from notarium_search.settings import CollectionConfig
from notarium_search.types import SourceFile

# Below this many files a pass parses on the writer thread: a spawned
# process takes ~0.5 s to start and import the parsers (the time of ~350
# notes), and a watcher's pass reads one file.
PARSE_AHEAD_MIN_FILES = 512
# Files per task: one round trip through the pool's queues costs ~0.2 ms,
# a note ~1.4 ms; 32 notes make it ~0.5 %.
BATCH_FILES = 32
# Batches asked for ahead of the writer, per process: enough that the
# processes go on parsing while the writer commits. A commit holds the writer
# 0.2-1.5 s at 50,000 notes; with 4 batches (~0.15 s of parsing) the
# processes then waited, and a first index's two cores ran at 1.1-1.7 for a
# second around each commit (per-thread CPU each second, docs/benchmarks.md).
BATCHES_AHEAD_PER_PROCESS = 16
# ...and no further than this many bytes of files beyond the batch being
# taken, so that the answers held (~3.5 times a note's size each) stay tens
# of MiB when the notes are large. One batch a process is always asked for.
AHEAD_BYTES = 24 * 2**20
# The built-in formats whose read is pure and in process (notes/formats.py):
# a PDF is read by its own child process under a budget, on the writer.
POOLED_FORMATS = (MARKDOWN, CANVAS)
_PR_SET_PDEATHSIG = 1  # linux/prctl.h

log = get_logger(__name__)


class Job(msgspec.Struct, frozen=True):
    source: SourceFile
    limit: int  # the most bytes read (formats.byte_limit)


class NoteHead(NamedTuple):
    """What the writer needs of a note parsed elsewhere, its document made
    there. Not the whole ParsedNote: unpickling its nested records (dataclasses then) took
    the writer's process ~0.24 ms a note (py-spy, 10,000 notes), a sixth of
    what parsing it costs. A note the writer must change (its id taken by
    another file) is parsed again on the writer's thread."""

    id: str
    updated: datetime
    warnings: tuple[str, ...]
    collections: tuple[str, ...]


class Parsed(NamedTuple):
    """A process's reading of one file (opened with scan.open_note's checks, like the writer's)."""

    digest: str
    head: NoteHead | None  # None: not a note, `not_a_note` says why
    not_a_note: str  # "" for a note
    cpu_seconds: float  # the parse's CPU time in its process (the budget of index/quarantine.py)
    parts: DocumentParts | None  # the note's document (schema.document builds it)


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0))


class ParseAhead:
    """The answers for one pass's files (`sources`, in the order the writer
    takes them). `job_for` says what to parse for a file, or None to leave
    it to the writer; it is called when the file's batch is asked for."""

    def __init__(
        self,
        executor: ProcessPoolExecutor,
        processes: int,
        sources: Sequence[SourceFile],
        job_for: Callable[[SourceFile], Job | None],
    ) -> None:
        self._executor: ProcessPoolExecutor | None = executor
        self._sources = tuple(sources)  # files added to the pass later are parsed by the writer
        self._job_for = job_for
        self._processes = processes
        # Each batch asked for and not yet taken: its answers to come, and its files' bytes.
        self._batches: dict[int, tuple[Future[list[Parsed | None]], int]] = {}
        self._asked = 0  # batches asked for so far
        self._answers: tuple[int, list[Parsed | None]] | None = None  # the batch being consumed

    def parsed(self, index: int, source: SourceFile) -> Parsed | None:
        """The answer for `source`, the pass's `index`th file, waiting for it
        if needed; None when the writer must parse it itself."""
        if self._executor is None or index >= len(self._sources) or self._sources[index] is not source:
            return None  # a file added to the pass (read again): never asked for
        batch = index // BATCH_FILES
        try:
            if self._answers is None or self._answers[0] != batch:
                self._ask_ahead(batch)
                asked = self._batches.pop(batch, None)
                if asked is None:
                    return None
                self._answers = (batch, asked[0].result())
        except Exception as exc:  # noqa: BLE001 - a process died (BrokenProcessPool), an answer did not pickle
            log.warning("parse_ahead_stopped", reason=f"{type(exc).__name__}: {exc}")
            self.close()
            return None
        return self._answers[1][index % BATCH_FILES]

    def _ask_ahead(self, taken: int) -> None:
        """Ask for the batches after `taken` (the one the writer takes now):
        BATCHES_AHEAD_PER_PROCESS a process, fewer when their files pass
        AHEAD_BYTES, never fewer than one a process."""
        executor = self._executor
        assert executor is not None
        for passed in [b for b in self._batches if b < taken]:  # passed over by the writer
            del self._batches[passed]
        ahead_bytes = sum(size for batch, (_, size) in self._batches.items() if batch > taken)
        self._asked = max(self._asked, taken)  # none for a batch the writer is past
        while self._asked * BATCH_FILES < len(self._sources):
            ahead = self._asked - taken
            if ahead > self._processes * BATCHES_AHEAD_PER_PROCESS or (
                ahead > self._processes and ahead_bytes >= AHEAD_BYTES
            ):
                break
            sources = self._sources[self._asked * BATCH_FILES : (self._asked + 1) * BATCH_FILES]
            size = sum(s.size for s in sources)
            self._batches[self._asked] = (executor.submit(parse_batch, [self._job_for(s) for s in sources]), size)
            ahead_bytes += size if ahead > 0 else 0
            self._asked += 1

    def close(self) -> None:
        """Stop the processes at once (an interrupted pass does not wait for
        the batches asked ahead). Idempotent."""
        executor, self._executor = self._executor, None
        self._batches.clear()
        self._answers = None
        if executor is None:
            return
        workers = list(executor._processes.values()) if executor._processes else []
        executor.shutdown(wait=False, cancel_futures=True)
        for process in workers:
            process.terminate()
        for process in workers:  # SIGTERM ends them at once: nothing of theirs outlives the pass
            process.join()


def start(
    sources: Sequence[SourceFile],
    processes: int,
    root_real: str,
    languages: tuple[str, ...],
    collections: Sequence[CollectionConfig],
    job_for: Callable[[SourceFile], Job | None],
) -> ParseAhead | None:
    """A ParseAhead for the pass, or None: too few files, one process asked
    for, or processes that cannot start here (logged)."""
    if processes <= 1 or len(sources) < PARSE_AHEAD_MIN_FILES:
        return None
    try:
        # spawn: the writer is a thread of a process with others (fork would
        # copy their locks held); the processes import only the parsers.
        executor = ProcessPoolExecutor(
            max_workers=processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_process,
            initargs=(root_real, languages, tuple(collections)),
        )
        ahead = ParseAhead(executor, processes, sources, job_for)
        ahead._ask_ahead(0)  # starts the processes now, before the writer needs them
    except (OSError, ImportError, RuntimeError) as exc:  # no /dev/shm, no processes left: the writer parses alone
        log.warning("parse_ahead_unavailable", reason=f"{type(exc).__name__}: {exc}")
        return None
    return ahead


# --- in the worker processes ---------------------------------------------------

_ROOT_REAL = ""
_LANGUAGES: tuple[str, ...] = ()
_COLLECTIONS = CollectionRules(())


def _start_process(root_real: str, languages: tuple[str, ...], collections: tuple[CollectionConfig, ...]) -> None:
    global _ROOT_REAL, _LANGUAGES, _COLLECTIONS
    _ROOT_REAL, _LANGUAGES, _COLLECTIONS = root_real, languages, CollectionRules(collections)
    # Dies with the writer's thread that started it: a writer killed must
    # not leave processes parsing for nobody.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def parse_batch(jobs: list[Job | None]) -> list[Parsed | None]:
    return [None if job is None else _parse(job) for job in jobs]


def _parse(job: Job) -> Parsed | None:
    """What SpaceIndexer._read computes from the file's bytes; None for
    anything unexpected (the writer reads the file again and says why)."""
    source = job.source
    fmt = formats.for_path(source.path)
    if fmt is None:
        return None
    try:
        raw, too_big = note_file.read_bounded(_ROOT_REAL, source, job.limit)
        digest = note_file.digest(raw)
        started = time.thread_time()
        try:
            note = note_file.parse(fmt, raw, source, too_big)
        except NotANote as exc:
            return Parsed(digest, None, str(exc), time.thread_time() - started, None)
        took = time.thread_time() - started
        note = note_file.with_collections(note, _COLLECTIONS)
        head = NoteHead(note.id, note.updated, tuple(note.warnings), note.collections)
        return Parsed(digest, head, "", took, document_parts(note, _LANGUAGES))
    except Exception:  # noqa: BLE001 - the writer reads it again: its error, logged there
        return None
