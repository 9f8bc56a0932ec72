"""The peer thread's rounds (index/peers.py PeerLoop): a round that fails
is tried again at the next, and a failure that lasts (too many open files,
every 0.1 s) is one log line a minute per kind, which counts those not logged."""

from __future__ import annotations

import errno
import io
import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest

from notarium_search.index.peers import (
    FOLLOW_INTERVAL_SECONDS,
    IDLE_INTERVAL_SECONDS,
    PUBLISH_INTERVAL_SECONDS,
    QUIET_SECONDS,
    PeerLoop,
    next_wait,
)
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


class Waits:
    """Stands for the loop's stop event: records each wait, moves the clock
    by it, and says "stop" after `rounds` of them."""

    def __init__(self, now: list[float], rounds: int) -> None:
        self.now, self.rounds = now, rounds
        self.waits: list[float] = []

    def wait(self, seconds: float) -> bool:
        self.waits.append(round(seconds, 3))
        self.now[0] += seconds
        return len(self.waits) > self.rounds

    def set(self) -> None: ...


def test_a_quiet_loop_slows_down_and_comes_back_at_the_first_news():
    """Waking is an idle loop's cost (1.4 ms of CPU a second at 10 rounds a
    second, docs/benchmarks.md "An idle service"): after QUIET_SECONDS with
    nothing new, each wait doubles up to IDLE_INTERVAL_SECONDS; a step that
    sees something new brings back FOLLOW_INTERVAL_SECONDS at once."""
    now = [0.0]
    news_at = {80}  # the 80th round's step sees a commit
    rounds: list[float] = []

    def look() -> bool:
        rounds.append(now[0])
        return len(rounds) in news_at

    published: list[float] = []
    loop = PeerLoop([look], [lambda: published.append(now[0])], clock=lambda: now[0])
    waits = Waits(now, 100)
    loop._stop = waits  # type: ignore[assignment]
    loop._run()
    assert waits.waits[0] == 0  # the first round at once
    slower = next(i for i, w in enumerate(waits.waits) if w > FOLLOW_INTERVAL_SECONDS)
    assert set(waits.waits[1:slower]) == {FOLLOW_INTERVAL_SECONDS}
    assert sum(waits.waits[:slower]) >= QUIET_SECONDS - 1e-6  # quiet that long first
    assert waits.waits[slower : slower + 3] == [0.2, 0.4, IDLE_INTERVAL_SECONDS]
    assert set(waits.waits[slower + 3 : 80]) == {IDLE_INTERVAL_SECONDS}
    assert set(waits.waits[80:]) == {FOLLOW_INTERVAL_SECONDS}  # the 80th round's news: fast again
    # Publications at most every PUBLISH_INTERVAL_SECONDS, and at each slow round.
    gaps = [round(b - a, 3) for a, b in itertools.pairwise(published)]
    assert min(gaps) >= PUBLISH_INTERVAL_SECONDS
    assert IDLE_INTERVAL_SECONDS in gaps


def test_next_wait():
    assert next_wait(0.0, 0.0) == FOLLOW_INTERVAL_SECONDS
    assert next_wait(IDLE_INTERVAL_SECONDS, QUIET_SECONDS - 0.01) == FOLLOW_INTERVAL_SECONDS
    assert next_wait(FOLLOW_INTERVAL_SECONDS, QUIET_SECONDS) == 2 * FOLLOW_INTERVAL_SECONDS
    assert next_wait(IDLE_INTERVAL_SECONDS, 3600.0) == IDLE_INTERVAL_SECONDS


def test_a_round_says_whether_a_step_saw_something_new():
    loop = PeerLoop([], [])
    assert loop.run([lambda: None, lambda: False]) is False
    assert loop.run([lambda: None, lambda: True, disk_full]) is True
    assert loop.run([disk_full, lambda: None]) is False  # a failure is not news
