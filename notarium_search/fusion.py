"""Reciprocal Rank Fusion of independent channels, modulated by score. Pure: no I/O.

    score(note) = Σ_channels  weight_c · m_c(note) / (k + rank_c(note))
    m_c(note)   = floor + (1 − floor) · (s − s_min) / (s_max − s_min)

where s is the note's own score in channel c (BM25, cosine similarity, graph
weight) and s_min, s_max the lowest and highest scores of that channel's list.
With floor = 1 this is plain RRF (Cormack et al. 2009): rank-only, no score
calibration between channels needed. A floor below 1 lets a channel say how
much better its first hits are than its last ones, still on the channel's own
scale: on piaf-fr and cranfield with multilingual-e5-small this beat both
plain RRF and a min-max score blend (docs/ranking.md). The trace records each
channel's rank, normalised score and contribution; contributions sum to the
fused score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

RRF_K = 60
# Share of a channel's contribution that does not depend on its scores
# (docs/ranking.md: 0.2 was the best of 0.1-0.5 on both collections; 1 = plain RRF).
SCORE_FLOOR = 0.2


@dataclass(frozen=True, slots=True)
class Contribution:
    rank: int  # 1-based rank in the channel
    score: float  # weight * modulation / (k + rank)
    modulation: float = 1.0  # floor + (1 - floor) * normalised own score


@dataclass(frozen=True, slots=True)
class Fused:
    note_id: str
    score: float
    trace: dict[str, Contribution]  # channel → its contribution; sum of scores == score


def rrf(
    rankings: Mapping[str, Sequence[str]],
    k: float = RRF_K,
    weights: Mapping[str, float] | None = None,
    scores: Mapping[str, Sequence[float]] | None = None,
    score_floor: float = 1.0,
) -> list[Fused]:
    """Channel → note ids best first (and, in `scores`, their own scores in the
    same order) → one fused list, best first. A channel without scores, or a
    floor of 1, contributes by rank alone. Ties go to the note with the better
    best rank, then to the smaller id (deterministic)."""
    traces: dict[str, dict[str, Contribution]] = {}
    for channel, ranked in rankings.items():
        weight = 1.0 if weights is None else weights.get(channel, 1.0)
        own = scores.get(channel) if scores is not None else None
        modulations = _modulations(own, len(ranked), score_floor)
        # A note listed twice counts once, at its first place.
        first = dict(reversed(list(zip(ranked, modulations, strict=True))))
        for rank, note_id in enumerate(dict.fromkeys(ranked), start=1):
            modulation = first[note_id]
            traces.setdefault(note_id, {})[channel] = Contribution(rank, weight * modulation / (k + rank), modulation)
    fused = [Fused(note_id, sum(c.score for c in trace.values()), trace) for note_id, trace in traces.items()]
    fused.sort(key=lambda f: (-f.score, min(c.rank for c in f.trace.values()), f.note_id))
    return fused


def _modulations(own: Sequence[float] | None, count: int, floor: float) -> list[float]:
    if own is None or floor >= 1.0 or not own:
        return [1.0] * count
    if len(own) != count:
        raise ValueError("a channel's scores must pair with its ranked notes")
    high, low = max(own), min(own)
    if high <= low:
        return [1.0] * count  # all equal: nothing to tell apart
    return [floor + (1.0 - floor) * (s - low) / (high - low) for s in own]
