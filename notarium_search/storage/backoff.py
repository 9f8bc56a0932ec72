"""Growing waits before trying again what failed for a passing reason (a
pass on a full disk, a model server down, an embedding server gone mid-build):
each failure doubles the wait up to a maximum, a success brings it back to the
first. One mechanism for the writer's passes, the service's model load, the
spaces that could not open and the semantic build's pauses.

A wait can be cut short: given a cheap check that the condition has passed
(descriptors free again, disk space back: storage/faults.py `eased_check`),
the waiting thread makes it every PROBE_SECONDS and tries again as soon as it
holds. Without one, a fault that passed a minute into a wait grown to five
left the index stale for four more."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

PROBE_SECONDS = 1.0  # a check costs ~50 µs: the retry comes within a second of the condition passing


class Backoff:
    def __init__(
        self,
        first_seconds: float,
        max_seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        probe_seconds: float = PROBE_SECONDS,
    ) -> None:
        self.first_seconds = first_seconds
        self.max_seconds = max_seconds
        self.seconds = first_seconds
        """The wait before the next try."""
        self._clock = clock
        self._probe_seconds = probe_seconds
        self._waits: set[threading.Event] = set()  # one per try waiting; set: cancelled
        self._lock = threading.Lock()

    def later(self, action: Callable[[], object], passed: Callable[[], bool] | None = None) -> float:
        """Run `action` on a thread of its own after the current wait (which
        then doubles), or as soon as `passed()` holds; returns the wait."""
        delay, self.seconds = self.seconds, min(self.seconds * 2, self.max_seconds)
        cancelled = threading.Event()
        with self._lock:
            self._waits.add(cancelled)
        deadline = self._clock() + delay
        threading.Thread(
            target=self._wait, args=(deadline, action, passed, cancelled), name="retry", daemon=True
        ).start()
        return delay

    def _wait(
        self,
        deadline: float,
        action: Callable[[], object],
        passed: Callable[[], bool] | None,
        cancelled: threading.Event,
    ) -> None:
        while (left := deadline - self._clock()) > 0:
            if cancelled.wait(left if passed is None else min(left, self._probe_seconds)):
                return
            if passed is not None and passed():
                break
        with self._lock:
            if cancelled.is_set():
                return
            self._waits.discard(cancelled)
        action()

    def succeeded(self) -> None:
        """It went through: the next failure is tried again soon."""
        self.seconds = self.first_seconds

    def cancel(self) -> None:
        """Drop the tries that are waiting, if any (stopping)."""
        with self._lock:
            for waiting in self._waits:
                waiting.set()
            self._waits.clear()
