"""Freed heap memory goes back to the operating system after activity."""

from __future__ import annotations

import sys
import threading

import pytest

from notarium_search.collector import IDLE_SECONDS, FrozenHeap
from notarium_search.malloc_trim import MemoryTrimmer
from tests.conftest import eventually


def rss_anon_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("RssAnon"))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountedStop(threading.Event):
    """The trimmer's stop event, counting the ticks of its thread (each tick waits on it once)."""

    def __init__(self) -> None:
        super().__init__()
        self.ticks = 0

    def wait(self, timeout: float | None = None) -> bool:
        stopped = super().wait(timeout)
        self.ticks += 1
        return stopped


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc_trim and /proc")
def test_trim_returns_freed_heap_and_runs_only_after_activity():
    # A heap of its own, on a clock that stands still. With the process's HEAP
    # the trimmer also trims after a due full collection (`heap.tick()`): in
    # the suite, HEAP is stale from test_collector's writer job and overdue
    # (MAX_FROZEN_SECONDS since its import) once a loaded machine has run the
    # tests before this one for 15 minutes, and the first tick trimmed: 2 == 1.
    trimmer = MemoryTrimmer(interval=0.05, heap=FrozenHeap(Clock()))
    assert trimmer.available  # glibc: CI and the Docker image
    # ~200 MiB of blocks, then all but every 16th freed: the survivors pin the
    # heap's top, so glibc keeps the holes between them until trimmed.
    blocks = [bytearray(4000) for _ in range(50_000)]
    survivors = blocks[::16]
    del blocks
    before = rss_anon_kib()
    trimmer.trim()
    assert rss_anon_kib() < before - 100_000  # > 100 MiB of the ~190 MiB freed given back
    assert len(survivors) == 3125
    # Ticks counted rather than a sleep: on a loaded machine the thread may not
    # have ticked at all after a fixed delay, and "no trim" would prove nothing.
    stop = trimmer._stop = CountedStop()
    trimmer.start()
    try:
        eventually(lambda: stop.ticks >= 3)  # two whole ticks have run since the start, without activity
        idle = trimmer.trims
        assert idle == 1  # nothing happened: no trim
        trimmer.note_activity()
        eventually(lambda: trimmer.trims > idle)
        assert trimmer.trims == idle + 1
    finally:
        trimmer.stop()


def test_a_due_full_collection_is_followed_by_a_trim():
    """A full collection frees memory too: the tick that runs one trims."""
    clock = Clock()
    heap = FrozenHeap(clock)
    trimmer = MemoryTrimmer(interval=0.05, heap=heap)
    stop = trimmer._stop = CountedStop()
    heap.after_job()  # a writer job ran: stale, and busy a moment ago
    trimmer.start()
    try:
        eventually(lambda: stop.ticks >= 3)
        assert (trimmer.trims, heap.full_collections) == (0, 0)  # not idle yet: no collection, no trim
        clock.now += IDLE_SECONDS
        eventually(lambda: heap.full_collections == 1)
        eventually(lambda: trimmer.trims == 1 or not trimmer.available)
        assert trimmer.trims == (1 if trimmer.available else 0)
    finally:
        trimmer.stop()
