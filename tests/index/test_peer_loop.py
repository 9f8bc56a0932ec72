"""The peer thread's rounds (index/peers.py PeerLoop): a round that fails
is tried again at the next, and a failure that lasts (too many open files,
every 0.1 s) is one log line a minute per kind, which counts those not logged."""

from __future__ import annotations

import errno
import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from notarium_search.index.peers import PeerLoop
from notarium_search.logsetup import configure_logging
from notarium_search.storage.faults import StorageFault


@pytest.fixture
def logged() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging("info", stream)
    try:
        yield stream
    finally:
        configure_logging("warning")  # as tests/conftest.py leaves it


def emfile_read() -> None:
    """What a follower's look raises under EMFILE: the OSError is the cause."""
    try:
        raise OSError(errno.EMFILE, "Too many open files")
    except OSError as exc:
        raise StorageFault("cannot read status.json: EMFILE (Too many open files)") from exc


def emfile_tantivy() -> None:
    raise ValueError("Failed to open file for read: Os { code: 24, kind: TooManyOpenFiles }")


def disk_full() -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def a_bug() -> None:
    raise KeyError("published")


def test_a_lasting_failure_logs_a_line_a_minute_per_kind(logged: io.StringIO):
    now = [0.0]
    loop = PeerLoop([], [], clock=lambda: now[0])
    done: list[int] = []
    for turn in range(600):  # a minute of rounds, one each FOLLOW_INTERVAL_SECONDS
        now[0] = turn * 0.1
        loop.run([emfile_read, emfile_tantivy, disk_full, a_bug, lambda: done.append(1)])
    assert len(done) == 600  # a failing step does not stop the round's others
    now[0] = 60.0
    loop.run([emfile_tantivy, a_bug])
    lines: list[dict[str, Any]] = [json.loads(line) for line in logged.getvalue().splitlines()]
    failures = [(r["kind"], r["not_logged_since_last"], r["level"]) for r in lines if r["event"] == "peer_round_failed"]
    assert failures == [
        ("EMFILE", 0, "warning"),
        ("ENOSPC", 0, "warning"),
        ("KeyError", 0, "error"),
        ("EMFILE", 1199, "warning"),  # a minute later: both EMFILE steps' held-back lines counted
        ("KeyError", 599, "error"),
    ]
    bugs = [r for r in lines if r["event"] == "peer_round_failed" and r["kind"] == "KeyError"]
    assert all("KeyError: 'published'" in r["exception"] for r in bugs)  # a fault of ours keeps its traceback
