"""The embedding model given to a channel that needs it, on the space's
writer thread: its vectors opened or built there, and tried again later when
their files could not be read for a passing reason or the embedding server
could not be reached."""

from __future__ import annotations

from typing import Any

from notarium_search.channel import Channel
from notarium_search.errors import EmbedderUnavailable, EmbedderUnreachable
from notarium_search.index.writer import Job, Writer
from notarium_search.logsetup import get_logger
from notarium_search.storage.faults import StorageFault

log = get_logger(__name__)


def attach_job(writer: Writer, space: str, channel: Channel, embedder: Any) -> Job:
    """The job that hands `embedder` to `channel` (queued on `writer`)."""

    def attach() -> None:
        try:
            channel.attach(embedder, in_slices=True)
        except (StorageFault, EmbedderUnreachable) as exc:
            delay = writer.later(lambda: writer.put(attach), exc)
            log.error("semantic_open_failed", space=space, error=str(exc), retry_seconds=delay)
            if isinstance(exc, EmbedderUnreachable):
                channel.model_unavailable(f"{exc}; retrying in {delay:g} s")
        except EmbedderUnavailable as exc:  # a configuration to fix (a 401, a wrong dim): no retry helps
            log.error("semantic_open_failed", space=space, error=str(exc), retry_seconds=None)
            channel.model_unavailable(f"{exc}; not retried (a configuration to fix, then restart)")

    return attach
