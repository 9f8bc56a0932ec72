"""A space indexed now, on the calling thread: `notarium-search index` and
tests, never beside a running writer thread."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from notarium_search.types import BuildStep, IndexProgress

if TYPE_CHECKING:
    from notarium_search.index.space_writer import SpaceWriter


def build(writer: SpaceWriter, on_progress: Callable[[BuildStep], None] | None, embedder: Any) -> IndexProgress:
    """The lexical pass (the repair found due at open, if any), then, given
    an embedder, every pending fragment of the channels that need the model.
    The writer's `stop_event` stops it after the current note or slice; what
    was embedded is kept (a checkpoint), and the next run goes on from there."""
    report = on_progress or (lambda step: None)

    def notes(counts: IndexProgress) -> None:
        report(BuildStep("notes", counts.done, counts.total))

    progress = writer.passes.progress if writer.repair_now(notes) else writer.run_reconcile(notes)
    report(BuildStep("notes", progress.done, progress.total))
    semantic = writer.space.semantic
    if semantic is None or embedder is None or writer.stop_event.is_set():
        return progress
    # No writer thread runs beside a build: a compaction runs on this thread.
    semantic.building_in_place = True
    try:
        semantic.attach(embedder)
        index = semantic.index
        assert index is not None  # attach opened it
        total = index.progress.pending
        report(BuildStep("fragments", 0, total))
        while semantic.has_work and not writer.stop_event.is_set():
            semantic.work_slice()
            report(BuildStep("fragments", total - index.progress.pending, total))
        if semantic.has_work:
            index.checkpoint()
    finally:
        semantic.building_in_place = False
        if semantic.wake is not None:
            semantic.on_writer(semantic.wake)  # a writer started later hears of its compactions
    return progress
