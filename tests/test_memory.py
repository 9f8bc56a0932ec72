"""Freed heap memory goes back to the operating system after activity."""

from __future__ import annotations

import sys
import time

import pytest

from notarium_search.memory import MemoryTrimmer


def rss_anon_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("RssAnon"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc_trim and /proc")
def test_trim_returns_freed_heap_and_runs_only_after_activity():
    trimmer = MemoryTrimmer(interval=0.05)
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
    trimmer.start()
    time.sleep(0.3)
    idle = trimmer.trims
    assert idle == 1  # nothing happened: no trim
    trimmer.note_activity()
    deadline = time.monotonic() + 5
    while trimmer.trims == idle and time.monotonic() < deadline:
        time.sleep(0.02)
    assert trimmer.trims == idle + 1
    trimmer.stop()
