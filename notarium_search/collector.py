"""Keep the cyclic garbage collector's full passes off the request path.

A full (generation 2) collection walks every container object the process
holds, with the GIL held: every thread, the event loop included, waits for
it. At 50,000 notes with GRAPH_BOOST the service holds ~170,000 tracked
containers (the link graph, the vector manifest, the lexical bookkeeping),
and one full collection took 175 ms on an idle machine, 210–490 ms under
load. Measured over HTTP (1 client, 1,500 searches, 2026-12-01): five to
eight such pauses in 30 s, each freeing nothing (`collected: 0`), made the
p99 and the maximum (498 ms) — the tail issue 17 point 3 asked about.

The structures that make those passes long are built by the writer thread
and live as long as the index. So after each writer job the young
generations are collected (~0.2 ms) and everything still alive is moved to
the permanent generation (`gc.freeze()`, O(1)), which collections skip;
requests' short-lived objects are still collected as before, now cheaply.

What freezing costs: a reference cycle that becomes garbage after being
frozen is not reclaimed until the collector looks at the permanent
generation again. So `tick()` (called every second by the memory thread)
unfreezes and runs one full collection once the service has been idle for
IDLE_SECONDS, or after MAX_FROZEN_SECONDS of continuous activity — a pause
when nobody waits, or one every 15 minutes instead of one every few seconds.

Leaf module: imports nothing from the package.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable

# No request and no writer job for this long: a full collection now delays nobody.
IDLE_SECONDS = 30.0
# Under continuous activity, a full collection anyway this often, so that
# cycles that died while frozen are reclaimed (one pause of ~0.2–0.5 s at
# 50,000 notes with the graph, instead of one every 3–11 s).
MAX_FROZEN_SECONDS = 900.0


class FrozenHeap:
    """The process's policy for its long-lived objects (the collector is
    process-wide, and so is this: one instance, HEAP)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        now = clock()
        self._last_activity = now
        self._last_full = now
        # Set by any job or request: something may have died while frozen since
        # the last full collection. An idle service's collections stop there.
        self._stale = False
        self.full_collections = 0
        """Full collections run by tick() (for tests and logs)."""

    def after_job(self) -> None:
        """A writer job ended: what it built to keep is out of every future
        collection's way (its young garbage is collected first)."""
        gc.collect(1)
        gc.freeze()
        with self._lock:
            self._stale = True
            self._last_activity = self._clock()

    def note_activity(self) -> None:
        """A request was answered: not idle."""
        with self._lock:
            self._stale = True
            self._last_activity = self._clock()

    def tick(self) -> bool:
        """One full collection over the frozen objects too, when due (see the
        module's docstring); returns whether it ran."""
        with self._lock:
            now = self._clock()
            idle = now - self._last_activity >= IDLE_SECONDS
            overdue = now - self._last_full >= MAX_FROZEN_SECONDS
            if not (self._stale and (idle or overdue)):
                return False
            self._last_full = now
            self._stale = False
        gc.unfreeze()
        gc.collect()
        gc.freeze()  # what survived is long-lived again
        self.full_collections += 1
        return True


HEAP = FrozenHeap()
