"""The semantic channel of one space: its state, its share of the writer
thread's work, and its queries.

State machine (reported by `/status`): `building` (model loading, then
fragments being embedded) → `ready`; `unavailable` with the reason when the
model cannot be had, or when the embedder fails for a reason that trying
again cannot fix (a token refused, vectors of the wrong width). Writes happen
only on the space's writer thread, in slices, so that lexical updates never
wait for a long embedding build.

While it builds, it answers queries from the vectors it has (`ready`), with a
caveat saying the answer is partial, weighed in fusion by the share of the
fragments embedded, squared (`PARTIAL_WEIGHT_POWER`); it is `complete` once
every fragment has its vector. Related notes wait for that.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from msgspec.structs import replace

from notarium_search.channel import ChannelHooks
from notarium_search.errors import ChannelUnavailable
from notarium_search.lexical import stored as stored_notes
from notarium_search.lexical.schema import Payload
from notarium_search.lexical.store import LexicalIndex
from notarium_search.logsetup import get_logger
from notarium_search.semantic import search as semantic_search
from notarium_search.semantic.calibration import query_weight
from notarium_search.semantic.embedder_errors import EmbedderUnavailable, EmbedderUnreachable
from notarium_search.semantic.embedding import Embedder
from notarium_search.semantic.index import SemanticIndex
from notarium_search.semantic.probes import SAMPLE_NOTES, source_words
from notarium_search.storage.backoff import Backoff
from notarium_search.types import ChannelHit, ChannelQuery, ChannelResult, ChannelState, ChannelStatus, Echo, Snippet

SLICE_FRAGMENTS = 64  # embedded between two looks at the writer's queue (~2 s on 2 cores)
# Notes read, chunked and planned between two looks at the writer's queue when
# the model arrives (~60 µs a note: a 50,000-note plan took 2.8-3.4 s in one
# piece, and the first edit after a start waited behind it).
PLAN_SLICE_NOTES = 1_000
# A build whose embedder fails (an embedding server down, semantic/remote.py)
# pauses, and is tried again after this, doubling up to the max: the writer's
# retry intervals for a failed pass (index/writer.py).
PAUSE_FIRST_SECONDS = 5.0
PAUSE_MAX_SECONDS = 300.0
# How long a stopping writer waits for its compaction's thread, which stops
# within one batch of inserts (vector_store.COMPACTION_BATCH: 0.7-1.4 s).
STOP_SECONDS = 30.0

# A partial answer (the index building) is weighed in fusion by the share of
# the fragments embedded to this power. At full weight it made answers worse
# than the lexical channel alone until the build was nearly done: the notes
# embedded first (the longest) took the places of relevant notes not yet
# embedded. Cranfield (460 notes, 622 fragments, 80 queries, MiniLM int8),
# fused recall@10 with 10 / 31 / 51 / 82 / 93 % embedded: full weight 0.327 /
# 0.394 / 0.417 / 0.447 / 0.497, weighed by the share 0.453 / 0.458 / 0.453 /
# 0.457 / 0.494, by its square 0.463 / 0.469 / 0.472 / 0.463 / 0.500; the
# lexical channel alone 0.463, complete 0.503. piaf-fr (150 notes, e5-small,
# 80 questions), nDCG@10 with 43 / 85 % embedded: full weight 0.809 / 0.891,
# squared 0.912 / 0.912; lexical alone 0.903, complete 0.926. One edit's
# fragments waiting in a built space weigh ~1: the channel answers as before.
PARTIAL_WEIGHT_POWER = 2
# What status says between the model's arrival and the plan's first fragments.
PLANNING = "reading the notes to plan their fragments"

log = get_logger(__name__)


@dataclass(slots=True)
class _Replan:
    """A plan of every note, read from one searcher (a snapshot of the index
    when it began) a slice at a time, between the writer's other jobs."""

    payloads: Iterator[Payload]
    seen: set[str] = field(default_factory=set)
    fresher: set[str] = field(default_factory=set)
    """Notes planned or dropped by a pass since the snapshot: its versions are older."""


class SemanticChannel(ChannelHooks):
    name = semantic_search.CHANNEL
    needs = frozenset({"vector"})  # the query's embedding: the service loads the model for it

    def __init__(self, space_name: str, directory: Path, lexical_index: LexicalIndex) -> None:
        self.space_name = space_name
        self.directory = directory
        self.lexical = lexical_index
        self.index: SemanticIndex | None = None
        self.unavailable: str | None = None
        self._build_started = time.monotonic()
        self._replan: _Replan | None = None
        self.paused: str | None = None
        """Why the build waits (its embedder failed), with when it tries again; None: not paused."""
        self._pauses = Backoff(PAUSE_FIRST_SECONDS, PAUSE_MAX_SECONDS)
        self.wake: Callable[[Callable[[], None]], None] | None = None
        """Runs a job on the writer thread (`on_writer`): how a pause ends by
        itself. Without it (the CLI) a pause ends the build."""
        self.building_in_place = False
        """A build on the calling thread (index/building.py), no writer thread
        beside it: a compaction then runs in the checkpoint that finds it due."""

    def on_writer(self, run: Callable[[Callable[[], None]], None]) -> None:
        self.wake = run
        if self.index is not None:
            self._give_writer(self.index)

    def _give_writer(self, index: SemanticIndex) -> None:
        """Let `index` run jobs on the writer thread (its compactions' ends),
        while it is still this channel's index (an index replaced since has its
        job dropped: it must not write the folder its successor writes)."""
        wake = self.wake
        if wake is None or self.building_in_place:
            index.writer_jobs = None
            return

        def run(job: Callable[[], None]) -> None:
            wake(lambda: job() if self.index is index else None)

        index.writer_jobs = run

    def model_unavailable(self, reason: str) -> None:
        self.unavailable = reason

    def writer_stopped(self) -> None:
        if self.index is not None:
            self.index.stop_compaction(STOP_SECONDS)

    # -- writer thread -----------------------------------------------------

    def attach(self, embedder: Embedder, in_slices: bool = False) -> None:
        """Open (or rebuild) the vector index, then plan every note's fragments:
        now, or (`in_slices`, the service) in `work_slice` calls."""
        if self.index is not None:  # its compaction must not outlive it (its job would be dropped anyway)
            self.index.stop_compaction(STOP_SECONDS)
        self.index = SemanticIndex(self.directory, embedder)
        self._give_writer(self.index)
        self.unavailable = None
        if embedder.config.relevance_margin is None:
            log.warning(
                "semantic_without_floor",
                space=self.space_name,
                model=embedder.config.name,
                why="no relevance_margin measured for this model: every nearest fragment counts (docs/relevance.md)",
            )
        self.replan(in_slices)

    def replan(self, in_slices: bool = False) -> None:
        """Plan every note's fragments again, forgetting notes that are gone."""
        assert self.index is not None
        self._replan = _Replan(stored_notes.all_payloads(self.lexical))
        self._build_started = time.monotonic()
        self.index.progress.embedded = 0
        while not in_slices and self._replan is not None:
            self._plan_slice()

    def _plan_slice(self) -> None:
        assert self.index is not None
        assert self._replan is not None
        replan = self._replan
        notes, taken = [], 0
        for payload in itertools.islice(replan.payloads, PLAN_SLICE_NOTES):
            taken += 1
            replan.seen.add(payload.id)
            if payload.id not in replan.fresher:
                notes.append(payload.to_note())
        self.index.plan(notes)
        if taken == PLAN_SLICE_NOTES:
            return
        self._replan = None
        # Vectors of notes neither in the snapshot nor seen by a pass since
        # belong to notes deleted before it (while the service was down).
        self.index.forget_missing(replan.seen | replan.fresher)
        if not self.index.has_pending:
            self.calibrate_if_due()
            self.index.checkpoint()
        log.info(
            "semantic_planned", space=self.space_name, pending=self.index.progress.pending, vectors=self.index.size()
        )

    def rebuild(self) -> None:
        """Every note was read again (a full reindex, a repair): plan them all
        again, in slices; unchanged fragments keep their vectors."""
        if self.index is not None:
            self.replan(in_slices=True)

    def after_lexical(self, changed: set[str], deleted: set[str]) -> None:
        if self.index is None or not (changed or deleted):
            return
        if self._replan is not None:
            self._replan.fresher |= changed | deleted
        payloads = stored_notes.payloads_by_id(self.lexical, changed)
        self.index.plan([p.to_note() for p in payloads.values()], deleted | (changed - set(payloads)), first=True)
        if not self.index.has_pending:
            self.calibrate_if_due()
            self.index.checkpoint()

    @property
    def has_work(self) -> bool:
        if self.index is None or self.paused is not None or self.unavailable is not None:
            return False
        return self._replan is not None or self.index.has_pending

    def work_slice(self) -> None:
        """Edits' fragments first, then a slice of the plan while there is one
        (it sets what to embed), then the other fragments."""
        assert self.index is not None
        if self._replan is not None and not self.index.has_first_pending:
            self._plan_slice()
            return
        # An embedding server is handed what its requests in flight take at once
        # (semantic/remote.py): a failure then loses at most one round of requests.
        budget = getattr(self.index.embedder, "bulk_fragments", SLICE_FRAGMENTS)
        try:
            embedded = self.index.embed_pending(budget)
        except EmbedderUnreachable as exc:
            self._pause(str(exc))
            return
        except EmbedderUnavailable as exc:
            self._stop(str(exc))
            return
        self._pauses.succeeded()
        if embedded and not self.index.has_pending:
            if self._replan is None:
                self.calibrate_if_due()
                self.index.checkpoint()
            log.info("semantic_ready", space=self.space_name, vectors=self.index.size())

    def calibrate_if_due(self) -> None:
        """Measure what noise scores against this space (semantic/probes.py)
        once every note has its vectors, when never measured or the space has
        changed by a quarter since: ~1 s on the writer thread, O(log n) times
        for a space grown note by note. A failing embedder leaves the last
        calibration (or the model's margin) in force."""
        index = self.index
        if index is None or index.has_pending or not index.calibration_due:
            return
        notes = sorted(index.notes)
        sample = notes[:: max(1, len(notes) // SAMPLE_NOTES)][:SAMPLE_NOTES]
        texts = (payload.text for payload in stored_notes.payloads_by_id(self.lexical, sample).values())
        try:
            index.calibrate(source_words(texts))
        except Exception as exc:  # noqa: BLE001 - a probe the embedder fails (a server gone mid-answer) leaves the margin as it was
            log.warning("semantic_calibration_skipped", space=self.space_name, reason=str(exc) or type(exc).__name__)

    def _pause(self, reason: str) -> None:
        """The embedder failed: keep what is embedded (a checkpoint), stop
        asking it, and try again later on the writer thread (`wake`)."""
        assert self.index is not None
        self.index.checkpoint()
        wake = self.wake
        if wake is None:  # the CLI: the build ends here
            self.paused = f"embedding paused: {reason}"
            log.warning("semantic_paused", space=self.space_name, reason=reason)
            return
        delay = self._pauses.later(lambda: wake(self.resume))
        self.paused = f"embedding paused: {reason}; retrying in {delay:g} s"
        log.warning("semantic_paused", space=self.space_name, reason=reason, retry_seconds=delay)

    def resume(self) -> None:
        """End a pause: the next idle moment of the writer embeds again."""
        self.paused = None

    def _stop(self, reason: str) -> None:
        """The embedder failed for a reason trying again cannot fix (a 401,
        vectors of the wrong width: semantic/remote.py): keep what is embedded,
        stop asking, and say why until a restart with the configuration fixed."""
        assert self.index is not None
        self.index.checkpoint()
        self.unavailable = f"embedding stopped: {reason}; not retried (a configuration to fix, then restart)"
        log.error("semantic_stopped", space=self.space_name, reason=reason)

    # -- readers -----------------------------------------------------------

    @property
    def complete(self) -> bool:
        """Every note planned, every fragment embedded: status READY. An empty
        index whose plan has not yet found its work is not: it said READY with
        0 of 0 fragments between the model's arrival and the plan's first
        slice, and answered semantically from nothing."""
        return self.index is not None and self._replan is None and not self.index.has_pending

    @property
    def ready(self) -> bool:
        """It can answer a query: complete, or building with vectors to answer
        from (those embedded so far, or an earlier run's while the plan reads
        the notes again). One fragment waiting for its embedding turned the
        channel off for every query; its answer is now partial, and says so
        (`caveat`). Not while unavailable: status says why it stopped."""
        if self.unavailable is not None or self.index is None:
            return False
        return self.complete or self.index.size() > 0

    @property
    def building(self) -> bool:
        return not self.unavailable and not self.complete

    def why_not_ready(self) -> str:
        if self.unavailable:
            return self.unavailable
        if self.index is None:
            return "model loading"
        progress = self.index.progress
        done = progress.embedded
        if not progress.pending and self._replan is not None:
            return f"index building: {PLANNING}"
        building = f"index building: {done}/{done + progress.pending} fragments embedded"
        return f"{building}; {self.paused}" if self.paused else building

    def status(self) -> ChannelStatus:
        if self.unavailable and self.index is not None:  # stopped mid-build: where it stopped
            embedded, pending = self.index.size(), self.index.progress.pending
            return ChannelStatus(
                ChannelState.UNAVAILABLE, self.unavailable, embedded=embedded, total=embedded + pending
            )
        if self.unavailable:
            return ChannelStatus(ChannelState.UNAVAILABLE, self.unavailable)
        if self.index is None:
            return ChannelStatus(ChannelState.BUILDING, "model loading")
        progress = self.index.progress
        total = progress.embedded + progress.pending
        if self.complete:
            size = self.index.size()  # every fragment of the space has its vector
            return ChannelStatus(
                ChannelState.READY, self.index.repaired, embedded=size, total=size, relevance_margin=self._margin()
            )
        if not progress.pending:  # the plan has found nothing to embed yet: how much is not known
            return ChannelStatus(ChannelState.BUILDING, PLANNING, relevance_margin=self._margin())
        elapsed = max(time.monotonic() - self._build_started, 1e-6)
        rate = progress.embedded / elapsed
        eta = progress.pending / rate if rate > 0 else None
        return ChannelStatus(
            ChannelState.BUILDING,
            self.paused or self.index.repaired,
            embedded=progress.embedded,
            total=total,
            per_second=round(rate, 1),
            eta_seconds=round(eta, 1) if eta is not None else None,
            relevance_margin=self._margin(),
        )

    def _margin(self) -> float | None:
        return self.index.margin() if self.index is not None else None

    def related(
        self, note_id: str, limit: int, min_seconds_apart: float, allowed: set[str] | None = None
    ) -> list[Echo]:
        """Notes close to this one; only once the build is complete (the note
        itself, or its neighbours, may not have their vectors yet, and the
        answer has no room to say it is partial)."""
        if not self.complete:
            raise ChannelUnavailable(f"related notes need the semantic channel: {self.why_not_ready()}")
        assert self.index is not None
        return semantic_search.related(self.index, self.lexical, note_id, limit, min_seconds_apart, allowed)

    def search(self, query: ChannelQuery) -> ChannelResult:
        """The notes with the nearest fragments to `query.vector`; while the
        index builds, from the vectors it has, weighed down (`PARTIAL_WEIGHT_POWER`)."""
        assert self.index is not None
        result = semantic_search.search(
            self.index, self.lexical, query.vector, query.text, query.filters, query.depth, query.snippet_depth
        )
        share = self.coverage()
        return result if share >= 1.0 else replace(result, weight=result.weight * share**PARTIAL_WEIGHT_POWER)

    def coverage(self) -> float:
        """The share of the space's fragments that have their vector (1 when complete)."""
        if self.complete or self.index is None:
            return 1.0
        size = self.index.size()
        return size / max(size + self.index.progress.pending, 1)

    def snippets(self, hit: ChannelHit) -> tuple[Snippet, ...]:
        return semantic_search.snippets_of(self.lexical, hit)

    def caveat(self, result: ChannelResult) -> str | None:
        """Why this answer counts less: partial (the index is building), hits
        below the relevance floor; None when neither."""
        parts = [why for why in (self.partial(), self._below_floor(result)) if why]
        return "; ".join(parts) or None

    def _below_floor(self, result: ChannelResult) -> str | None:
        below = sum(not hit.confident for hit in result.hits)
        if self.index is None or result.floor is None or result.unrelated is None or not result.hits:
            return None
        config = self.index.embedder.config
        best = max(hit.score for hit in result.hits)
        margin = self.index.margin()
        model_margin = config.relevance_margin
        weight = query_weight(best, result.unrelated, model_margin) if model_margin is not None else 1.0
        if not below and weight >= 1.0:
            return None
        if below == len(result.hits):
            parts = [f"no hit reaches the relevance floor {result.floor:.3f} (best {best:.3f})"]
        else:
            parts = [f"{below} of {len(result.hits)} hits are below the relevance floor {result.floor:.3f}"]
        needs = f"{config.name} needs {margin:g} more"
        if margin != config.relevance_margin:
            needs = (
                f"this space needs {margin:.3f} more (what made-up words score against its notes;"
                f" {config.name} alone: {config.relevance_margin:g})"
            )
        parts.append(
            f"unrelated text scores {result.unrelated:.3f} against this query and {needs};"
            " hits below the floor only add to notes another channel found"
        )
        if weight < 1.0:
            parts.append(f"weighed {weight:.2f} in fusion: its best hit ({best:.3f}) is close to the floor")
        return "; ".join(parts)

    def partial(self) -> str | None:
        """Why an answer now is partial (the index is building), or None."""
        if self.complete or self.index is None:
            return None
        size, pending = self.index.size(), self.index.progress.pending
        if not pending and self._replan is not None:
            return f"partial: answered from the {size} fragments embedded before this start, while {PLANNING}"
        return (
            f"partial: answered from the {size} fragments embedded so far, {pending} more waiting for their"
            " embedding (index building): notes among them are missing or matched on part of their text;"
            f" weighed {self.coverage() ** PARTIAL_WEIGHT_POWER:.2f} in fusion (the share embedded, squared)"
        )
