"""Channel results → one ranked list of hits (fusion by note id)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from notarium_search.fusion import rrf
from notarium_search.models import ChannelHit, ChannelResult, ChannelTrace, NoteSummary, SearchHit, Snippet
from notarium_search.settings import FusionConfig

PHRASE = "phrase"  # the exact-phrase list: lexical hits flagged `exact`
SNIPPETS_PER_HIT = 3
# Extra fused notes whose summaries are fetched, standing in for notes deleted
# since a channel listed them.
FETCH_SLACK = 5

FetchNotes = Callable[[Sequence[str]], Mapping[str, NoteSummary]]


def merge(
    results: Sequence[ChannelResult], limit: int, config: FusionConfig, fetch: FetchNotes | None = None
) -> tuple[SearchHit, ...]:
    """One channel: its own order and scores. Several: Reciprocal Rank Fusion
    over the channels and the exact-phrase list, with each note's trace (rank,
    own score and contribution per channel; contributions sum to the score)
    and the snippets of the channels that found it, lexical ones first.
    `fetch` supplies the notes that channels knew by id only; a note it cannot
    find (deleted meanwhile) is left out."""
    answering = [r for r in results if r.hits]
    found: dict[str, dict[str, ChannelHit]] = {}
    for result in answering:
        for hit in result.hits:
            found.setdefault(hit.note_id, {}).setdefault(result.channel, hit)
    if len(answering) == 1:
        notes = _notes(found, [h.note_id for h in answering[0].hits[: limit + FETCH_SLACK]], fetch)
        return _alone(answering[0], limit, notes)
    rankings = {r.channel: [h.note_id for h in r.hits] for r in answering}
    scores = {r.channel: [h.score for h in r.hits] for r in answering}
    exact = [h.note_id for r in answering for h in r.hits if h.exact]
    if exact:
        rankings[PHRASE] = exact  # no scores: every exact match is as exact as the others
    fused = rrf(rankings, config.k, config.weights(), scores, config.score_floor)[: limit + FETCH_SLACK]
    notes = _notes(found, [entry.note_id for entry in fused], fetch)
    merged: list[SearchHit] = []
    for entry in (e for e in fused if e.note_id in notes):
        if len(merged) == limit:
            break
        by_channel = found[entry.note_id]
        trace = {
            channel: ChannelTrace(c.rank, _own_score(by_channel, channel), c.score)
            for channel, c in entry.trace.items()
        }
        merged.append(
            SearchHit(
                note=notes[entry.note_id],
                score=entry.score,
                snippets=_snippets(by_channel.values()),
                channels={channel: c.rank for channel, c in entry.trace.items() if channel != PHRASE},
                trace=trace,
                reason=next((h.reason for h in by_channel.values() if h.reason), None),
            )
        )
    return tuple(merged)


def _alone(result: ChannelResult, limit: int, notes: Mapping[str, NoteSummary]) -> tuple[SearchHit, ...]:
    kept = [(rank, hit) for rank, hit in enumerate(result.hits, start=1) if hit.note_id in notes][:limit]
    return tuple(
        SearchHit(
            note=notes[hit.note_id],
            score=hit.score,
            snippets=hit.all_snippets(),
            channels={result.channel: rank},
            trace={result.channel: ChannelTrace(rank, hit.score, hit.score)},
            reason=hit.reason,
        )
        for rank, hit in kept
    )


def _notes(
    found: Mapping[str, Mapping[str, ChannelHit]], note_ids: Sequence[str], fetch: FetchNotes | None
) -> dict[str, NoteSummary]:
    """The notes of these ids: from the hits that carry them, else fetched."""
    notes: dict[str, NoteSummary] = {}
    missing = []
    for note_id in note_ids:
        known = next((h.note for h in found[note_id].values() if h.note is not None), None)
        if known is not None:
            notes[note_id] = known
        else:
            missing.append(note_id)
    if missing and fetch is not None:
        notes.update(fetch(missing))
    return notes


def _own_score(by_channel: dict[str, ChannelHit], channel: str) -> float:
    if channel == PHRASE:
        return 1.0
    return by_channel[channel].score


def _snippets(hits: Iterable[ChannelHit]) -> tuple[Snippet, ...]:
    seen: set[str] = set()
    out: list[Snippet] = []
    for hit in hits:
        if len(out) >= SNIPPETS_PER_HIT:
            break  # the next channel's snippets would not be shown: do not cut them
        for snippet in hit.all_snippets():
            key = snippet.text.strip("…")
            if key not in seen and not any(key in s or s in key for s in seen):
                seen.add(key)
                out.append(snippet)
    return tuple(out[:SNIPPETS_PER_HIT])
