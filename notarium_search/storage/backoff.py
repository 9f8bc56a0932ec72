"""Growing waits before trying again what failed for a passing reason (a
pass on a full disk, a model server down, an embedding server gone mid-build):
each failure doubles the wait up to a maximum, a success brings it back to the
first. One mechanism for the writer's passes, the service's model load and the
semantic build's pauses."""

from __future__ import annotations

import threading
from collections.abc import Callable


class Backoff:
    def __init__(self, first_seconds: float, max_seconds: float) -> None:
        self.first_seconds = first_seconds
        self.max_seconds = max_seconds
        self.seconds = first_seconds
        """The wait before the next try."""
        self._timer: threading.Timer | None = None

    def later(self, action: Callable[[], object]) -> float:
        """Run `action` on a timer thread after the current wait (which then
        doubles); returns the wait."""
        delay, self.seconds = self.seconds, min(self.seconds * 2, self.max_seconds)
        timer = threading.Timer(delay, action)
        timer.daemon = True
        timer.start()
        self._timer = timer
        return delay

    def succeeded(self) -> None:
        """It went through: the next failure is tried again soon."""
        self.seconds = self.first_seconds

    def cancel(self) -> None:
        """Drop the try that is waiting, if any (stopping)."""
        if self._timer is not None:
            self._timer.cancel()
