"""Reciprocal Rank Fusion of independent channels, modulated by score, and the
merge of the channels' results into one ranked list of hits. Pure: no I/O.

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

from collections.abc import Iterable, Mapping, Sequence

import msgspec

from notarium_search.settings import FusionConfig
from notarium_search.types import ChannelHit, ChannelResult, ChannelTrace, NoteSummary, SearchHit, Snippet

# Every ranking constant of a query lives here or in the settings' [fusion] and
# [ranking] tables (k and the score floor are FusionConfig's, measured in
# docs/ranking.md): the service and the channels take them from here.

# Notes each channel contributes when several are fused: a note ranked 40th by
# one channel and 3rd by another belongs in a top 10, and the score modulation
# needs each channel's spread of scores (docs/ranking.md: 100 beat 50 on both
# collections, +0.001 to +0.003 nDCG@10).
CANDIDATES_PER_CHANNEL = 100
# Lexical hits checked for the whole query phrase (lexical/phrase.py); a note holding
# the phrase ranks high lexically anyway (ranking.phrase_boost).
PHRASE_DEPTH = 20
# Only the first page of the fused text ranking seeds the graph: neighbours of
# deeper, weaker hits are mostly noise, and it bounds a query to ten reads.
GRAPH_SEEDS = 10


class Contribution(msgspec.Struct, frozen=True):
    rank: int  # 1-based rank in the channel
    amount: float  # what it adds to the fused score: weight * modulation / (k + rank)
    modulation: float = 1.0  # floor + (1 - floor) * normalised own score


class Fused(msgspec.Struct, frozen=True):
    note_id: str
    score: float
    trace: dict[str, Contribution]  # channel → its contribution; sum of scores == score


def rrf(
    rankings: Mapping[str, Sequence[str]],
    k: float,
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
    fused = [Fused(note_id, sum(c.amount for c in trace.values()), trace) for note_id, trace in traces.items()]
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


# Merging: the channels' results → one ranked list of hits (fusion by note id).
# Pure, in steps: `ranking` orders the note ids; the caller fetches the notes
# it keeps that no hit carries (`carried` says which), and cuts the snippets
# of the kept hits made without them (`snippets`, with `found_by` and
# `enough_snippets`); `hits` builds the answer. No callback into an index.

PHRASE = "phrase"  # the exact-phrase list: lexical hits flagged `exact`
SNIPPETS_PER_HIT = 3
# Extra fused notes whose summaries are fetched, standing in for notes deleted
# since a channel listed them.
FETCH_SLACK = 5


def ranking(results: Sequence[ChannelResult], config: FusionConfig) -> list[Fused]:
    """One channel: its own order and scores. Several: Reciprocal Rank Fusion
    over the channels and the exact-phrase list, with each note's trace (rank,
    contribution per channel; contributions sum to the score). Either way, a
    note only hits that are not `confident` found (a semantic fragment below
    the model's similarity floor) is left out: such a hit adds to a note
    another channel found, never lists one alone."""
    answering = [r for r in results if r.hits]
    standing = {h.note_id for r in answering for h in r.hits if h.confident}
    if len(answering) == 1:
        (alone,) = answering
        return [
            Fused(hit.note_id, hit.score, {alone.channel: Contribution(rank, hit.score)})
            for rank, hit in enumerate(alone.hits, start=1)
            if hit.note_id in standing
        ]
    rankings = {r.channel: [h.note_id for h in r.hits] for r in answering}
    scores = {r.channel: [h.score for h in r.hits] for r in answering}
    exact = [h.note_id for r in answering for h in r.hits if h.exact]
    if exact:
        rankings[PHRASE] = exact  # no scores: every exact match is as exact as the others
    weights = config.weights()
    for result in answering:
        # A channel weak on this query counts less; one `[fusion]` does not name (a plug-in) weighs 1.
        weights[result.channel] = weights.get(result.channel, 1.0) * result.weight
    fused = rrf(rankings, config.k, weights, scores, config.score_floor)
    return named_first([entry for entry in fused if entry.note_id in standing], answering)


def named_first(fused: list[Fused], results: Sequence[ChannelResult]) -> list[Fused]:
    """The notes the query names (a hit's `known`: lexical/known.py) before
    every other, in their own order; the rest as fused. However the other
    channels rank a named note, it stays first: a quick switcher's promise."""
    named = {h.note_id: h.known.order for r in results for h in r.hits if h.known is not None}
    if not named:
        return fused
    return sorted(fused, key=lambda entry: (0, named[entry.note_id]) if entry.note_id in named else (1,))


def found_by(results: Sequence[ChannelResult]) -> dict[str, dict[str, ChannelHit]]:
    """Note id → channel → its hit, channels in the results' order."""
    found: dict[str, dict[str, ChannelHit]] = {}
    for result in results:
        for hit in result.hits:
            found.setdefault(hit.note_id, {}).setdefault(result.channel, hit)
    return found


def carried(results: Sequence[ChannelResult], fused: Sequence[Fused]) -> tuple[dict[str, NoteSummary], list[str]]:
    """The notes of these fused ids that the channels' hits carry, and the ids
    of those no hit carries (the graph channel knows notes by id only): the
    caller fetches those, and leaves out what it cannot find (deleted meanwhile)."""
    found = found_by(results)
    notes: dict[str, NoteSummary] = {}
    missing = []
    for entry in fused:
        known = next((h.note for h in found[entry.note_id].values() if h.note is not None), None)
        if known is not None:
            notes[entry.note_id] = known
        else:
            missing.append(entry.note_id)
    return notes, missing


def kept(fused: Sequence[Fused], notes: Mapping[str, NoteSummary], limit: int) -> list[str]:
    """The ids of the answer: the first `limit` fused notes that were found."""
    return [entry.note_id for entry in fused if entry.note_id in notes][:limit]


def merge_snippets(per_channel: Iterable[tuple[Snippet, ...]]) -> tuple[Snippet, ...]:
    """The snippets shown for a note several channels found: the channels' in
    order (lexical first), without repeats (one inside another counts as a repeat)."""
    seen: set[str] = set()
    out: list[Snippet] = []
    for snippets in per_channel:
        for snippet in snippets:
            key = snippet.text.strip("…")
            if key not in seen and not any(key in s or s in key for s in seen):
                seen.add(key)
                out.append(snippet)
    return tuple(out[:SNIPPETS_PER_HIT])


def enough_snippets(per_channel: Sequence[tuple[Snippet, ...]]) -> bool:
    """Whether the next channel's snippets would not be shown (so need not be cut)."""
    return len(merge_snippets(per_channel)) >= SNIPPETS_PER_HIT


def hits(
    results: Sequence[ChannelResult],
    fused: Sequence[Fused],
    notes: Mapping[str, NoteSummary],
    snippets: Mapping[str, tuple[Snippet, ...]],
    limit: int,
) -> tuple[SearchHit, ...]:
    """The first `limit` fused notes found in `notes`, each with its trace,
    its rank per channel, and its `snippets` (by note id)."""
    found = found_by(results)
    merged: list[SearchHit] = []
    for entry in (e for e in fused if e.note_id in notes):
        if len(merged) == limit:
            break
        by_channel = found[entry.note_id]
        trace = {
            channel: ChannelTrace(
                c.rank,
                _own_score(by_channel, channel),
                c.amount,
                _confident(by_channel, channel),
                by_channel[channel].language if channel in by_channel else None,
            )
            for channel, c in entry.trace.items()
        }
        merged.append(
            SearchHit(
                note=notes[entry.note_id],
                score=entry.score,
                snippets=snippets.get(entry.note_id, ()),
                channels={channel: c.rank for channel, c in entry.trace.items() if channel != PHRASE},
                trace=trace,
                reason=next((h.reason for h in by_channel.values() if h.reason), None),
                known=next((h.known.name for h in by_channel.values() if h.known is not None), None),
            )
        )
    return tuple(merged)


def _confident(by_channel: dict[str, ChannelHit], channel: str) -> bool:
    return channel == PHRASE or by_channel[channel].confident


def _own_score(by_channel: dict[str, ChannelHit], channel: str) -> float:
    if channel == PHRASE:
        return 1.0
    return by_channel[channel].score
