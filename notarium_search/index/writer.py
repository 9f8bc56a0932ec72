"""The single writer of one space: a thread that runs queued jobs one at a
time and, while the queue is empty, slices of the derived channels' work
(embedding); requests for a reconcile pass merged into the one queued; and
retries after a failure at growing intervals, brought forward when the
shortage that failed it (descriptors, disk space) has eased."""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from notarium_search.collector import HEAP
from notarium_search.logsetup import get_logger
from notarium_search.storage.backoff import Backoff
from notarium_search.storage.faults import eased_check

RETRY_FIRST_SECONDS = 5.0  # after a failed pass; doubled after each failure
RETRY_MAX_SECONDS = 300.0

Job = Callable[[], object]

log = get_logger(__name__)


class Writer:
    def __init__(
        self,
        space_name: str,
        idle_work: Callable[[], Job | None],
        directory: Path | None = None,
        stop_event: threading.Event | None = None,
        retries: Backoff | None = None,
    ) -> None:
        """`idle_work`: the slice of work to run when no job waits, or None
        (then the thread sleeps until a job); `directory`: the space's index
        folder, whose free space tells when a full disk has room again;
        `stop_event`: set to stop it (shared with the passes it runs);
        `retries`: the waits before a failed job is tried again (tests give
        their own)."""
        self.space_name = space_name
        self.directory = directory
        self._idle_work = idle_work
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self.stop_event = stop_event or threading.Event()
        self._thread: threading.Thread | None = None
        self._pass_queued = threading.Event()  # one pending pass covers any number of requests
        self._pending_lock = threading.Lock()
        self._pending_full_scan = False  # what the queued pass must look at: every file,
        self._pending_paths: set[str] = set()  # or only these
        self._retries = retries or Backoff(RETRY_FIRST_SECONDS, RETRY_MAX_SECONDS)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"writer-{self.space_name}", daemon=True)
        self._thread.start()

    def put(self, job: Job) -> None:
        """Run `job` on the writer thread, after the jobs queued before it."""
        self._jobs.put(job)

    @property
    def running(self) -> bool:
        """Whether its thread runs (started, not ended by a stop or a fault of ours)."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def idle(self) -> bool:
        """Whether no job waits (tests and the exposure checks look)."""
        return self._jobs.empty()

    def request_pass(self, job: Job, paths: Iterable[str] | None) -> None:
        """Queue `job` (a reconcile pass) unless one is queued already, and
        add `paths` to what it covers (None: every file)."""
        with self._pending_lock:
            if paths is None:
                self._pending_full_scan = True
            else:
                self._pending_paths.update(paths)
            if self._pass_queued.is_set():
                return
            self._pass_queued.set()
        self._jobs.put(job)

    def take_pending(self) -> set[str] | None:
        """What the starting pass covers (None: every file, also when nobody
        said what changed); requests from now on need another pass."""
        with self._pending_lock:
            self._pass_queued.clear()
            paths = None if self._pending_full_scan or not self._pending_paths else self._pending_paths
            self._pending_full_scan, self._pending_paths = False, set()
        return paths

    def later(self, action: Callable[[], None], fault: BaseException | None = None) -> float:
        """Run `action` after the current retry delay (which then doubles);
        returns the delay. `fault`: why the job failed (by default the
        exception being handled: callers call this from their `except`).
        Too many open files, or a full disk, is checked while waiting, and
        `action` runs as soon as it has eased (storage/faults.py eased_check)."""
        if fault is None:
            fault = sys.exc_info()[1]
        passed = eased_check(fault, self.directory) if fault is not None else None
        return self._retries.later(action, passed)

    def succeeded(self) -> None:
        """A pass went through: the next failure is retried soon again."""
        self._retries.succeeded()

    def request_stop(self) -> None:
        self.stop_event.set()
        self._retries.cancel()
        self._jobs.put(None)

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        """Jobs first; idle work whenever the queue is empty, so a long vector
        build never delays a lexical update by more than one slice."""
        while not self.stop_event.is_set():
            idle = self._idle_work()
            try:
                job = self._jobs.get(block=idle is None)
            except queue.Empty:
                assert idle is not None
                job = idle
            if job is None or self.stop_event.is_set():
                return
            try:
                job()
            except Exception:  # logged where it happened and shown in status; keep serving jobs
                log.exception("writer_job_failed", space=self.space_name)
            # What the job built to keep (notes, links, vectors' records) is
            # kept out of full collections' way: collector.py has the measurement.
            HEAP.after_job()
