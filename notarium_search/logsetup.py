"""structlog configured once: JSON lines on stdout, stdlib loggers (granian,
litestar) routed through the same renderer. Leaf module.

structlog is imported when something first logs, not when a module asks for
its logger: importing it pulls asyncio, rich, attrs and pygments, ~80 ms of a
~0.3 s `notarium-search search` from the shell that logs nothing
(docs/benchmarks.md, CLI start-up). Modules take their logger from
`get_logger`; `configure_logging(..., on_first_use=True)` defers the
configuration to the first line logged.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

_STDLIB_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "litestar", "_granian", "granian.access")
# Clients whose every request is an info line: the model process's probe
# (every 10 s) and the workers' queries to it would fill the log.
_QUIET_LOGGERS = ("httpx", "httpcore")
_lock = threading.Lock()
_deferred: tuple[str, object] | None = None  # configure_logging's arguments, until the first line is logged


def configure_logging(level: str = "info", stream: object = None, *, on_first_use: bool = False) -> None:
    """Idempotent. `stream` defaults to stdout (stderr for the MCP/stdio case).
    `on_first_use`: configure structlog when something first logs through a
    `get_logger` logger (stdlib records meanwhile go to `stream` as plain text)."""
    global _deferred
    if on_first_use:
        with _lock:
            _deferred = (level, stream)
        handler = logging.StreamHandler(stream or sys.stdout)  # type: ignore[arg-type]
        root = logging.getLogger()
        root.handlers[:] = [handler]
        root.setLevel(logging.getLevelName(level.upper()))
        return
    with _lock:
        _deferred = None
        _configure(level, stream)


def _configure(level: str, stream: object) -> None:
    import structlog

    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    handler = logging.StreamHandler(stream or sys.stdout)  # type: ignore[arg-type]
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(ensure_ascii=False),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.getLevelName(level.upper()))
    for name in _STDLIB_LOGGERS:
        named = logging.getLogger(name)
        named.handlers[:] = []
        named.propagate = True
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


def _apply_deferred() -> None:
    global _deferred
    with _lock:
        if _deferred is not None:
            level, stream = _deferred
            _deferred = None
            _configure(level, stream)


class _Logger:
    """A module's structlog logger, made on its first call (`log.info(...)`)."""

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, method: str) -> Any:
        if self._logger is None:
            _apply_deferred()
            import structlog

            self._logger = structlog.get_logger(self._name)
        return getattr(self._logger, method)


def get_logger(name: str) -> Any:
    """The logger of module `name` (structlog's, imported on first use)."""
    return _Logger(name)


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
