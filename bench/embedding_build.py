"""Embedding a space's fragments for a benchmark: `SpaceWriter.build`, as the CLI's
`index` runs it, with the figures a benchmark reports (plan and embedding
time, throughput, checkpoints, the share of the time spent in the embedder)
and a progress line on stderr now and then.

`model_seconds` is the time spent inside `embed_passages` during the build;
`share_in_model` (model_seconds / embed_seconds) is then the build's speed
over that of the bare embedder on the same fragments, in the same calls and
the same run: what planning, usearch inserts, checkpoints and the manifest
cost shows as 1 - share_in_model, free of the machine's load swings between
two separate runs."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from notarium_search.index.space import Space
    from notarium_search.semantic.embedding import Embedder, Vectors
    from notarium_search.semantic.model_config import ModelConfig
    from notarium_search.types import BuildStep

PROGRESS_SECONDS = 30.0  # a progress line this often: a large collection embeds for minutes


@dataclass
class _Clock:
    """When each stage of the build began, read from its progress reports."""

    started: float = field(default_factory=time.perf_counter)
    planned: float | None = None  # the first report of the fragments stage: the plan is made
    cpu_at_plan: float = 0.0
    generation_at_plan: int = 0
    fragments: int = 0
    reported: float = 0.0


class _TimedEmbedder:
    """The embedder, with the time spent in `embed_passages` added up; any
    other attribute (`bulk_fragments` of a remote one) is the embedder's."""

    def __init__(self, embedder: Embedder) -> None:
        self.inner = embedder
        self.seconds = 0.0

    @property
    def config(self) -> ModelConfig:
        return self.inner.config

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        started = time.perf_counter()
        try:
            return self.inner.embed_passages(texts)
        finally:
            self.seconds += time.perf_counter() - started

    def embed_query(self, text: str) -> Vectors:
        return self.inner.embed_query(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def embed_space(space: Space, embedder: Embedder) -> dict[str, Any]:
    """Every fragment of the space embedded on this thread (the lexical pass
    first, if the notes changed); the vectors are then ready to search."""
    if space.semantic is None:
        raise RuntimeError(f"space {space.name} has no semantic channel (build it with vector_search=True)")
    clock = _Clock()
    lexical_done = [clock.started]
    timed = _TimedEmbedder(embedder)

    def on_progress(step: BuildStep) -> None:
        now = time.perf_counter()
        if step.stage == "notes":
            lexical_done[0] = now
            return
        if clock.planned is None:
            clock.planned, clock.reported = now, now
            clock.cpu_at_plan = time.process_time()
            timed.seconds = 0.0  # the reference passages, embedded when the index opened, are not the build's
            clock.fragments = step.total or 0
            assert space.semantic is not None
            assert space.semantic.index is not None
            clock.generation_at_plan = space.semantic.index.generation
        elif now - clock.reported > PROGRESS_SECONDS:
            clock.reported = now
            rate = step.done / (now - clock.planned)
            print(f"  embedded {step.done:,}/{clock.fragments:,} fragments ({rate:.1f}/s)", file=sys.stderr, flush=True)

    space.writing.build(on_progress, timed)
    ended = time.perf_counter()
    index = space.semantic.index
    assert index is not None
    index.embedder = embedder  # the searches that follow use it unwrapped
    assert clock.planned is not None
    embed_s, fragments = ended - clock.planned, clock.fragments
    measured = fragments > 0 and embed_s > 0
    return {
        "fragments": fragments if measured else None,
        "vectors": index.size(),
        "notes_with_vectors": len(index.notes),
        "plan_seconds": round(clock.planned - lexical_done[0], 3),
        "embed_seconds": round(embed_s, 3) if measured else None,
        "fragments_per_second": round(fragments / embed_s, 2) if measured else None,
        "model_seconds": round(timed.seconds, 3) if measured else None,
        "share_in_model": round(timed.seconds / embed_s, 4) if measured else None,
        "cpu_seconds": round(time.process_time() - clock.cpu_at_plan, 3) if measured else None,
        "checkpoints": index.generation - clock.generation_at_plan,
        "reused": not measured,
    }
