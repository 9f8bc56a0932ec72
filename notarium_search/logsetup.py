"""structlog configured once: JSON lines on stdout, stdlib loggers (uvicorn,
litestar) routed through the same renderer. Leaf module."""

from __future__ import annotations

import logging
import sys

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
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "litestar"):
        named = logging.getLogger(name)
        named.handlers[:] = []
        named.propagate = True
    structlog.configure(
        processors=[*_SHARED, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
