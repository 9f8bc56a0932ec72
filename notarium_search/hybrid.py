"""Channel results → one ranked list of hits (fusion by note id)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from notarium_search.fusion import rrf
from notarium_search.models import ChannelHit, ChannelResult, SearchHit, Snippet


def merge(results: Sequence[ChannelResult], limit: int) -> tuple[SearchHit, ...]:
    """One channel: its own order and scores. Several: Reciprocal Rank Fusion,
    the note's fused score, its rank in each channel, and the snippets of the
    channels that found it (lexical highlights first, no duplicates)."""
    answering = [r for r in results if r.hits]
    if len(answering) <= 1:
        only = answering[0] if answering else None
        if only is None:
            return ()
        return tuple(
            SearchHit(hit.note, hit.score, hit.snippets, {only.channel: rank})
            for rank, hit in enumerate(only.hits[:limit], start=1)
        )
    found: dict[str, dict[str, ChannelHit]] = {}
    for result in answering:
        for hit in result.hits:
            found.setdefault(hit.note.id, {}).setdefault(result.channel, hit)
    fused = rrf({r.channel: [h.note.id for h in r.hits] for r in answering})
    merged = []
    for entry in fused[:limit]:
        by_channel = found[entry.note_id]
        first = next(iter(by_channel.values()))
        ranks = {channel: contribution.rank for channel, contribution in entry.trace.items()}
        merged.append(SearchHit(first.note, entry.score, _snippets(by_channel.values()), ranks))
    return tuple(merged)


def _snippets(hits: Iterable[ChannelHit]) -> tuple[Snippet, ...]:
    seen: set[str] = set()
    out: list[Snippet] = []
    for hit in hits:
        for snippet in hit.snippets:
            key = snippet.text.strip("…")
            if key not in seen and not any(key in s or s in key for s in seen):
                seen.add(key)
                out.append(snippet)
    return tuple(out[:3])
