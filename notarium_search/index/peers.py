"""The thread that keeps one worker in step with the others (index/follower.py):
a follower's looks at its writer, a writer's look at the others' requests and
its status published."""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable, Iterable

from notarium_search.logsetup import Throttle, get_logger
from notarium_search.storage.faults import IndexFolderMissing, StorageFault, fault_code

# How often a follower looks at the writer's files (a stat each, ~5 µs here) and a
# writer at its readers' requests: an edit reaches every worker within this
# of the writer's commit.
FOLLOW_INTERVAL_SECONDS = 0.1
# A writer publishes its status at most this often (status() reads counts
# from the index); state changes wait at most this long to be seen by followers.
PUBLISH_INTERVAL_SECONDS = 0.25
# A round that fails fails again every FOLLOW_INTERVAL_SECONDS while the cause
# lasts (too many open files: 600 lines a minute per step): one line a minute
# per kind of failure says so, with how many were not logged.
ROUND_FAILURE_LOG_SECONDS = 60.0

log = get_logger(__name__)


class PeerLoop:
    """The thread that keeps one worker in step with the others."""

    def __init__(
        self,
        rounds: Iterable[Callable[[], None]],
        publish: Iterable[Callable[[], None]],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`rounds`: run every FOLLOW_INTERVAL_SECONDS (followers' looks, writers' requests);
        `publish`: every PUBLISH_INTERVAL_SECONDS (writers' status); `clock`: the failures' log windows'."""
        self._rounds = list(rounds)
        self._publish = list(publish)
        self._stop = threading.Event()
        self._failures = Throttle(ROUND_FAILURE_LOG_SECONDS, clock)
        self._started = False
        self._thread = threading.Thread(target=self._run, name="peers", daemon=True)

    def start(self) -> None:
        self._started = True
        if (self._rounds or self._publish) and not self._thread.is_alive():
            self._thread.start()

    def add(self, rounds: Iterable[Callable[[], None]], publish: Iterable[Callable[[], None]]) -> None:
        """Steps of a space opened later (it could not open at first): in the
        next round. The lists are replaced, never changed, under the running thread."""
        self._rounds = [*self._rounds, *rounds]
        self._publish = [*self._publish, *publish]
        if self._started and not self._stop.is_set():
            self.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        every = max(1, round(PUBLISH_INTERVAL_SECONDS / FOLLOW_INTERVAL_SECONDS))
        turn = 0
        while not self._stop.wait(FOLLOW_INTERVAL_SECONDS if turn else 0):
            steps = self._rounds + (self._publish if turn % every == 0 else [])
            turn += 1
            self.run(steps)

    def run(self, steps: Iterable[Callable[[], None]]) -> None:
        """One round of `steps`: one that fails is tried again next round."""
        for step in steps:
            try:
                step()
            except (StorageFault, IndexFolderMissing, OSError, ValueError) as exc:  # the next round tries again
                self._failed(exc, expected=True)
            except Exception as exc:  # noqa: BLE001 - a fault of ours: logged with its traceback, tried again
                self._failed(exc, expected=False)

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
