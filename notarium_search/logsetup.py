"""structlog configured once: JSON lines on stdout, stdlib loggers (uvicorn,
litestar) routed through the same renderer. Leaf module."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable

import structlog

_SHARED: list[structlog.types.Processor] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


def configure_logging(level: str = "info", stream: object = None) -> None:
    """Idempotent. `stream` defaults to stdout (stderr for the MCP/stdio case)."""
    numeric = logging.getLevelName(level.upper())
    handler = logging.StreamHandler(stream or sys.stdout)  # type: ignore[arg-type]
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=_SHARED,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(ensure_ascii=False),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "litestar", "_granian", "granian.access"):
        named = logging.getLogger(name)
        named.handlers[:] = []
        named.propagate = True
    structlog.configure(
        processors=[*_SHARED, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


# Messages that repeat once per event while a condition lasts (the server out
# of descriptors): logged once, then once a window with how many were dropped.
# uvicorn logged 260,065 accept errors in 25 s under 1,100 held connections.
FLOODS = (
    ("_granian", "Failed to accept connection"),
    ("asyncio", "socket.accept() out of system resource"),
)
FLOOD_WINDOW_SECONDS = 60.0


class Throttle:
    """At most one event per key and window; counts the ones held back."""

    def __init__(self, window: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.window = window
        self.clock = clock
        self._seen: dict[object, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def admit(self, key: object) -> int | None:
        """None: hold this one back; else how many were held back since the last one admitted."""
        with self._lock:
            now = self.clock()
            last, held = self._seen.get(key, (float("-inf"), 0))
            if now - last < self.window:
                self._seen[key] = (last, held + 1)
                return None
            self._seen[key] = (now, 0)
            return held


class FloodFilter(logging.Filter):
    """Lets the first record of a known flood through, then at most one per
    window, which says how many were dropped meanwhile."""

    def __init__(self, window: float = FLOOD_WINDOW_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.window = window
        self._throttle = Throttle(window, clock)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.msg if isinstance(record.msg, str) else ""
        flood = next((f for f in FLOODS if record.name.startswith(f[0]) and message.startswith(f[1])), None)
        if flood is None:
            return True
        dropped = self._throttle.admit(flood)
        if dropped is None:
            return False
        if dropped:
            record.msg = f"{message} ({dropped} more like it in the last {self.window:.0f} s, not logged)"
            record.exc_info = None
        return True
