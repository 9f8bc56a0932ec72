"""The thread that keeps one worker in step with the others (index/follower.py):
a follower's looks at its writer, a writer's look at the others' requests and
its status published.

A quiet loop slows down. Waking is what an idle loop costs: on the 2-vCPU
machine of docs/benchmarks.md a thread that only waits on an Event with a 0.1 s
timeout took 1.4 ms of CPU a second, and the steps themselves 0.02-0.08 ms a
round. So after QUIET_SECONDS in which no step saw anything new, each wait
is twice the last, up to IDLE_INTERVAL_SECONDS; a step that sees something (a
commit followed, a request taken, a status that changed) brings the loop back
to FOLLOW_INTERVAL_SECONDS. A follower's answers do not wait for its looks:
it catches up with the writer's commit and status before each request
(`Space.catch_up`); what waits is its channels' following of a commit, and a
request file's way to the writer."""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable, Iterable

from notarium_search.logsetup import Throttle, get_logger
from notarium_search.storage.faults import IndexFolderMissing, StorageFault, fault_code

# How often a follower looks at the writer's files (a stat each, ~5 µs here) and a
# writer at its readers' requests: an edit reaches every worker's channels within
# this of the writer's commit (IDLE_INTERVAL_SECONDS after a quiet spell).
FOLLOW_INTERVAL_SECONDS = 0.1
# After this long with nothing new, the waits grow, to this at most (see above).
QUIET_SECONDS = 5.0
IDLE_INTERVAL_SECONDS = 0.5
# A writer publishes its status at most this often; state changes wait at most
# this long to be seen by followers (IDLE_INTERVAL_SECONDS after a quiet spell).
PUBLISH_INTERVAL_SECONDS = 0.25
# A round that fails fails again every FOLLOW_INTERVAL_SECONDS while the cause
# lasts (too many open files: 600 lines a minute per step): one line a minute
# per kind of failure says so, with how many were not logged.
ROUND_FAILURE_LOG_SECONDS = 60.0

log = get_logger(__name__)

# A round's step: whether it saw something new (None: nothing to say).
Step = Callable[[], bool | None]


def next_wait(last: float, quiet: float) -> float:
    """The wait before the next round, after one that waited `last`, when
    nothing new was seen for `quiet` seconds."""
    if quiet < QUIET_SECONDS:
        return FOLLOW_INTERVAL_SECONDS
    return min(max(last, FOLLOW_INTERVAL_SECONDS) * 2, IDLE_INTERVAL_SECONDS)


class PeerLoop:
    """The thread that keeps one worker in step with the others."""

    def __init__(
        self,
        rounds: Iterable[Step],
        publish: Iterable[Step],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`rounds`: run every FOLLOW_INTERVAL_SECONDS (followers' looks, writers' requests);
        `publish`: every PUBLISH_INTERVAL_SECONDS (writers' status); each step returns
        whether it saw something new (see above). `clock`: the rounds' and the failures' log windows'."""
        self._rounds = list(rounds)
        self._publish = list(publish)
        self._stop = threading.Event()
        self._clock = clock
        self._failures = Throttle(ROUND_FAILURE_LOG_SECONDS, clock)
        self._started = False
        self._thread = threading.Thread(target=self._run, name="peers", daemon=True)

    def start(self) -> None:
        self._started = True
        if (self._rounds or self._publish) and not self._thread.is_alive():
            self._thread.start()

    def add(self, rounds: Iterable[Step], publish: Iterable[Step]) -> None:
        """Steps of a space opened later (it could not open at first): in the
        next round. The lists are replaced, never changed, under the running thread."""
        self._rounds = [*self._rounds, *rounds]
        self._publish = [*self._publish, *publish]
        if self._started and not self._stop.is_set():
            self.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        wait, published, new_at = 0.0, float("-inf"), self._clock()
        while not self._stop.wait(wait):
            now = self._clock()
            publish = now - published >= PUBLISH_INTERVAL_SECONDS
            published = now if publish else published
            if self.run(self._rounds + (self._publish if publish else [])):
                new_at = now
            wait = next_wait(wait, now - new_at)

    def run(self, steps: Iterable[Step]) -> bool:
        """One round of `steps`: one that fails is tried again next round.
        Whether a step saw something new."""
        new = False
        for step in steps:
            try:
                new |= bool(step())
            except (StorageFault, IndexFolderMissing, OSError, ValueError) as exc:  # the next round tries again
                self._failed(exc, expected=True)
            except Exception as exc:  # noqa: BLE001 - a fault of ours: logged with its traceback, tried again
                self._failed(exc, expected=False)
        return new

    def _failed(self, exc: Exception, expected: bool) -> None:
        """Logged once a window per kind (the OS error's name, else the
        exception's type), with how many like it were not."""
        code = fault_code(exc)
        kind = errno.errorcode.get(code, str(code)) if code is not None else type(exc).__name__
        not_logged = self._failures.admit(kind)
        if not_logged is None:
            return
        if expected:
            log.warning("peer_round_failed", kind=kind, error=str(exc), not_logged_since_last=not_logged)
        else:
            log.error("peer_round_failed", kind=kind, not_logged_since_last=not_logged, exc_info=exc)
