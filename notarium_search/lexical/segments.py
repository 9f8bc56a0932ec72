"""The segments of a space's Tantivy index, when Tantivy's merge policy
merges them, and the notes a pass writes again so that it does
(`LastWrites.write_again`). `levels` and `top_ups` are pure.

Why it matters: Tantivy runs a query once per segment, and each segment
costs every clause a look-up whatever its size. On the 50,000-note bench
vault, the bench's French and English questions in process (`Service.search`,
2026-12-07): 3.32-3.75 ms of CPU a search over the 7 segments a first index
leaves (15,691, 13,875, 9,216, 5,088, 2,940, 2,101 and 1,089 notes: the
pass's intermediate commits and Tantivy's flushes of its 64 MB buffer)
against 2.57-2.70 ms over the same notes in one segment; six one-note
segments beside the one cost 0.34 ms more (2.93-2.96).

Tantivy merges segments in the background by its default merge policy
(`LogMergePolicy`; tantivy-py sets no other and has no call to merge): the
segments are grouped in levels of similar sizes, and a level is merged
into one segment once it holds MIN_SEGMENTS_IN_MERGE. A first index ends
with 2 to 7 segments in its lowest level, which only later edits would
bring to 8. So a pass that wrote in several commits writes its last notes
again, one commit each, until the lowest level holds 8: Tantivy merges it
(2 s of one core at 50,000 notes), and `top_ups` says how many that takes.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from notarium_search.lexical.store import LexicalIndex

# LogMergePolicy's defaults (tantivy 0.26, src/indexer/log_merge_policy.rs),
# which tantivy-py's writers use: a level is merged once it holds 8
# segments; a segment's level is its number of notes' log2, those under
# 10,000 notes counting as 10,000; a level spans 0.75 of log2 from its
# largest segment down.
MIN_SEGMENTS_IN_MERGE = 8
MIN_LAYER_SIZE = 10_000
LEVEL_LOG_SIZE = 0.75


class Segment(msgspec.Struct, frozen=True):
    """One segment as meta.json describes it."""

    max_doc: int  # notes written into it, deleted ones included
    notes: int  # those not deleted since


def committed(lexical_dir: Path) -> list[Segment]:
    """The segments of the last commit, or of the merges since (meta.json)."""
    meta = msgspec.json.decode((lexical_dir / "meta.json").read_bytes(), type=_Meta)
    return [Segment(s.max_doc, s.max_doc - (s.deletes.num_deleted_docs if s.deletes else 0)) for s in meta.segments]


def levels(segments: Sequence[Segment]) -> list[list[Segment]]:
    """The merge policy's levels, largest first (its own walk: segments by
    notes written, a new level when one falls LEVEL_LOG_SIZE below the
    level's first)."""
    grouped: list[list[Segment]] = []
    current = math.inf
    for segment in sorted(segments, key=lambda s: s.max_doc, reverse=True):
        size = _log_size(segment.notes)
        if size < current - LEVEL_LOG_SIZE:
            current = size
            grouped.append([])
        grouped[-1].append(segment)
    return grouped


def top_ups(segments: Sequence[Segment]) -> int:
    """How many one-note commits make the policy merge the lowest level: 0
    when there is nothing to merge (that level holds one segment), when it
    is merging already (it holds MIN_SEGMENTS_IN_MERGE), or when a one-note
    segment would start a level of its own (the lowest level's first
    segment is too large for it)."""
    grouped = levels(segments)
    if not grouped:
        return 0
    lowest = grouped[-1]
    if _log_size(1) < _log_size(lowest[0].notes) - LEVEL_LOG_SIZE:
        return 0
    return max(0, MIN_SEGMENTS_IN_MERGE - len(lowest)) if len(lowest) > 1 else 0


def _log_size(notes: int) -> float:
    return math.log2(max(MIN_LAYER_SIZE, notes))


class LastWrites:
    """The last notes a pass wrote, each with how to write it again (its
    same document): the one-note commits `top_ups` asks for."""

    def __init__(self) -> None:
        self._last: deque[tuple[str, str, Callable[[], None]]] = deque(maxlen=MIN_SEGMENTS_IN_MERGE - 1)

    def wrote(self, path: str, note_id: str, again: Callable[[], None]) -> None:
        self._last.append((path, note_id, again))

    def last(self, count: int) -> Iterator[tuple[str, str, Callable[[], None]]]:
        """The last `count` (fewer when fewer were written), the most recent last."""
        yield from list(self._last)[-count:] if count else ()

    def __len__(self) -> int:
        return len(self._last)

    def write_again(
        self, lexical: LexicalIndex, current: Callable[[str, str], bool], commit: Callable[[], None]
    ) -> int:
        """Write as many of the last notes again as `top_ups` asks, each then
        committed by `commit` (which records the commit, as the pass's do),
        when there are that many and `current(path, note_id)` says each is
        still that file's note; then wait for Tantivy's merges and see them.
        Returns how many were written again."""
        needed = top_ups(committed(lexical.directory))
        again = list(self.last(needed))
        rewritten = needed if len(again) == needed and all(current(p, i) for p, i, _ in again) else 0
        for _, _, write in again[:rewritten]:
            write()
            commit()
        lexical.wait_for_merges()
        return rewritten


class _Deletes(msgspec.Struct):
    num_deleted_docs: int = 0


class _SegmentMeta(msgspec.Struct):
    max_doc: int
    deletes: _Deletes | None = None


class _Meta(msgspec.Struct):
    segments: list[_SegmentMeta] = []
