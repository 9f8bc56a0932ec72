"""Reciprocal Rank Fusion of independent channels. Pure: no I/O.

    score(note) = Σ_channels  weight_c / (k + rank_c(note))

k = 60 (Cormack et al. 2009): a rank-only fusion needs no score calibration
between BM25 and cosine similarities, and k = 60 keeps the top few ranks of a
channel from drowning the others. The trace records each channel's rank and
contribution; their sum is the fused score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

RRF_K = 60


@dataclass(frozen=True, slots=True)
class Contribution:
    rank: int  # 1-based rank in the channel
    score: float  # weight / (k + rank)


@dataclass(frozen=True, slots=True)
class Fused:
    note_id: str
    score: float
    trace: dict[str, Contribution]  # channel → its contribution; sum of scores == score


def rrf(
    rankings: Mapping[str, Sequence[str]],
    k: float = RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Channel → note ids best first → one fused list, best first. Ties go to
    the note with the better best rank, then to the smaller id (deterministic)."""
    traces: dict[str, dict[str, Contribution]] = {}
    for channel, ranked in rankings.items():
        weight = 1.0 if weights is None else weights.get(channel, 1.0)
        for rank, note_id in enumerate(dict.fromkeys(ranked), start=1):
            traces.setdefault(note_id, {})[channel] = Contribution(rank, weight / (k + rank))
    fused = [Fused(note_id, sum(c.score for c in trace.values()), trace) for note_id, trace in traces.items()]
    fused.sort(key=lambda f: (-f.score, min(c.rank for c in f.trace.values()), f.note_id))
    return fused
