"""The PDFium processes a service reads PDFs with (the parent's side of
notes/pdf_pages.py), and what their ends mean.

A document is sent to an idle child (a new one when none is idle) with its
bounds: pages, characters, and a processor-time budget the child sets as its
own RLIMIT_CPU, so that a document that makes PDFium spin is stopped by the
kernel even when nobody waits for it any more (the child also dies with its
parent: PR_SET_PDEATHSIG). What an end means is what decides between a skip
and a retry — a transient failure is never damage:

- an answer: the document's text, or why it has none (`NotANote` upstream);
- SIGXCPU: the document took its whole budget — skipped until it changes;
- a crash (SIGSEGV, SIGABRT, SIGBUS…, or a non-zero exit): skipped until it changes;
- anything else — SIGTERM or SIGKILL from outside (a `systemctl stop`, the
  OOM killer), no answer within the wall-clock bound (a machine so loaded
  the child did not get its processor time), no child to be had (too many
  open files, processes, or every child busy for a request) or an answer
  that is no answer — `ReadLater`: the file is tried again at the next pass.

Children run in a session of their own (Ctrl+C in the service's terminal is
not theirs); at most MAX_BUSY read at once, the writers waiting their turn,
a request giving up after `wait` seconds; two are kept idle.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from notarium_search.notes.parse import NotANote, ReadLater
from notarium_search.notes.pdf_pages import HEADER, MAX_PAGE_CHARS, MAX_TEXT_CHARS, REQUEST

MAX_BUSY = 2  # PDFium processes reading at once: the machine's two cores, shared with search
_IDLE_CHILDREN = 2
# Wall-clock bound on an answer: this many times the processor-time budget,
# plus a start. A child on a loaded 2-core machine gets a fraction of a core;
# past this it is killed and the file tried again later (never skipped for it).
WALL_FACTOR = 4.0
WALL_SLACK_SECONDS = 10.0
# The most an answer may be: the characters asked for and the page that
# crossed that bound, each at most 6 bytes once in JSON (a `\u001f` escape),
# and the metadata. A bigger header is no answer.
MAX_ANSWER_BYTES = 6 * (MAX_TEXT_CHARS + MAX_PAGE_CHARS) + 2**20
_CHUNK = 2**20
_CRASHES = frozenset(
    {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGSYS, signal.SIGTRAP}
)


class _Child:
    """One PDFium process, answering one document at a time."""

    def __init__(self) -> None:
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "notarium_search.notes.pdf_pages"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "PYTHONSAFEPATH": "1"},
                start_new_session=True,
            )
        except OSError as exc:  # EMFILE, EAGAIN, ENOMEM: the machine's, not the document's
            raise ReadLater(f"no PDFium process could start ({exc.strerror})") from exc
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.requests, self.answers = self.process.stdin.fileno(), self.process.stdout.fileno()
        os.set_blocking(self.requests, False)

    def ask(self, raw: bytes, bounds: tuple[int, int, int], wall_seconds: float) -> dict[str, Any]:
        """The answer for one document; `bounds` are its pages, characters and
        processor seconds. `NotANote` or `ReadLater` when the child ends without one."""
        until = time.monotonic() + wall_seconds
        cpu_seconds = bounds[2]
        self._write(HEADER.pack(len(raw)) + raw + REQUEST.pack(*bounds), until, cpu_seconds)
        size = HEADER.unpack(self._read(HEADER.size, until, cpu_seconds))[0]
        if size > MAX_ANSWER_BYTES:
            self.kill()
            raise ReadLater(f"PDFium's process answered {size} bytes, more than an answer may be")
        data = self._read(size, until, cpu_seconds)
        try:
            answer = json.loads(data)
        except ValueError as exc:
            self.kill()
            raise ReadLater("PDFium's process answered no JSON") from exc
        if not isinstance(answer, dict):
            self.kill()
            raise ReadLater("PDFium's process answered no object")
        return answer

    def _write(self, data: bytes, until: float, cpu_seconds: int) -> None:
        view = memoryview(data)
        with selectors.DefaultSelector() as selector:
            selector.register(self.requests, selectors.EVENT_WRITE)
            while view:
                if not selector.select(max(until - time.monotonic(), 0)):
                    raise self._late()
                try:
                    view = view[os.write(self.requests, view[:_CHUNK]) :]
                except BlockingIOError:
                    continue
                except OSError as exc:  # BrokenPipeError: it died reading
                    raise self._ended(cpu_seconds) from exc

    def _read(self, size: int, until: float, cpu_seconds: int) -> bytes:
        chunks: list[bytes] = []
        with selectors.DefaultSelector() as selector:
            selector.register(self.answers, selectors.EVENT_READ)
            while size:
                if not selector.select(max(until - time.monotonic(), 0)):
                    raise self._late()
                chunk = os.read(self.answers, min(size, _CHUNK))
                if not chunk:
                    raise self._ended(cpu_seconds)
                chunks.append(chunk)
                size -= len(chunk)
        return b"".join(chunks)

    def _late(self) -> ReadLater:
        self.kill()
        return ReadLater("PDFium did not answer in time (the machine busy?): tried again at the next pass")

    def _ended(self, cpu_seconds: int) -> Exception:
        """What the child's end says of the document."""
        code = self.process.wait()
        self._close()
        if code == -signal.SIGXCPU:
            return NotANote(f"took more than {cpu_seconds} s of processor time to read: skipped until the file changes")
        if code > 0 or -code in _CRASHES:
            how = f"exit code {code}" if code > 0 else signal.Signals(-code).name
            return NotANote(f"PDFium crashed reading it ({how}): skipped until the file changes")
        how = signal.Signals(-code).name if code < 0 else "it exited"
        return ReadLater(f"PDFium's process was stopped from outside ({how}): tried again at the next pass")

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.alive:
            self.process.kill()
        self.process.wait()
        self._close()

    def _close(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None and not stream.closed:
                stream.close()


class _Children:
    """At most MAX_BUSY PDFium processes reading; a few kept idle between documents."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Child] = []
        self._busy = threading.BoundedSemaphore(MAX_BUSY)

    @contextmanager
    def child(self, wait: float | None) -> Iterator[_Child]:
        """A child for one document; `wait`: the most seconds to wait for one (None: as long as it takes)."""
        if not self._busy.acquire(timeout=-1 if wait is None else wait):
            raise ReadLater("PDFium is busy with other documents: try again")
        try:
            with self._lock:
                child = self._idle.pop() if self._idle else None
            if child is None or not child.alive:
                child = _Child()
            answered = False
            try:
                yield child
                answered = True
            finally:
                self._release(child, answered)
        finally:
            self._busy.release()

    def _release(self, child: _Child, answered: bool) -> None:
        """Back to the idle ones only after a whole exchange: a child left
        mid-answer would give its rest to the next document."""
        with self._lock:
            if answered and child.alive and len(self._idle) < _IDLE_CHILDREN:
                self._idle.append(child)
                return
        child.kill()

    def stop(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for child in idle:
            child.kill()


CHILDREN = _Children()
atexit.register(CHILDREN.stop)


def ask(raw: bytes, bounds: tuple[int, int, int], *, wait: float | None = None) -> dict[str, Any]:
    """One document read by a child: its pages, characters and processor
    seconds bounded by `bounds`; `wait` as `_Children.child`."""
    wall = WALL_FACTOR * bounds[2] + WALL_SLACK_SECONDS
    with CHILDREN.child(wait) as child:
        return child.ask(raw, bounds, wall)
