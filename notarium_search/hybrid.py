"""Channel results → one ranked list of hits (fusion by note id)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from notarium_search.fusion import rrf
from notarium_search.models import ChannelHit, ChannelResult, ChannelTrace, SearchHit, Snippet
from notarium_search.settings import FusionConfig

PHRASE = "phrase"  # the exact-phrase list: lexical hits flagged `exact`
SNIPPETS_PER_HIT = 3


def merge(results: Sequence[ChannelResult], limit: int, config: FusionConfig) -> tuple[SearchHit, ...]:
    """One channel: its own order and scores. Several: Reciprocal Rank Fusion
    over the channels and the exact-phrase list, with each note's trace (rank,
    own score and contribution per channel; contributions sum to the score)
    and the snippets of the channels that found it, lexical ones first."""
    answering = [r for r in results if r.hits]
    if len(answering) == 1:
        return _alone(answering[0], limit)
    found: dict[str, dict[str, ChannelHit]] = {}
    for result in answering:
        for hit in result.hits:
            found.setdefault(hit.note.id, {}).setdefault(result.channel, hit)
    rankings = {r.channel: [h.note.id for h in r.hits] for r in answering}
    scores = {r.channel: [h.score for h in r.hits] for r in answering}
    exact = [h.note.id for r in answering for h in r.hits if h.exact]
    if exact:
        rankings[PHRASE] = exact  # no scores: every exact match is as exact as the others
    merged = []
    for entry in rrf(rankings, config.k, config.weights(), scores, config.score_floor)[:limit]:
        by_channel = found[entry.note_id]
        first = next(iter(by_channel.values()))
        trace = {
            channel: ChannelTrace(c.rank, _own_score(by_channel, channel), c.score)
            for channel, c in entry.trace.items()
        }
        merged.append(
            SearchHit(
                note=first.note,
                score=entry.score,
                snippets=_snippets(by_channel.values()),
                channels={channel: c.rank for channel, c in entry.trace.items() if channel != PHRASE},
                trace=trace,
                reason=next((h.reason for h in by_channel.values() if h.reason), None),
            )
        )
    return tuple(merged)


def _alone(result: ChannelResult, limit: int) -> tuple[SearchHit, ...]:
    return tuple(
        SearchHit(
            note=hit.note,
            score=hit.score,
            snippets=hit.snippets,
            channels={result.channel: rank},
            trace={result.channel: ChannelTrace(rank, hit.score, hit.score)},
            reason=hit.reason,
        )
        for rank, hit in enumerate(result.hits[:limit], start=1)
    )


def _own_score(by_channel: dict[str, ChannelHit], channel: str) -> float:
    if channel == PHRASE:
        return 1.0
    return by_channel[channel].score


def _snippets(hits: Iterable[ChannelHit]) -> tuple[Snippet, ...]:
    seen: set[str] = set()
    out: list[Snippet] = []
    for hit in hits:
        for snippet in hit.snippets:
            key = snippet.text.strip("…")
            if key not in seen and not any(key in s or s in key for s in seen):
                seen.add(key)
                out.append(snippet)
    return tuple(out[:SNIPPETS_PER_HIT])
