"""An answer's hits, assembled from the channels' results: the fused ranking
with its notes, the kept notes' snippets, and each hit's editor link."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from notarium_search.channel import Channel
from notarium_search.fusion import FETCH_SLACK, Fused, carried, enough_snippets, found_by, merge_snippets, ranking
from notarium_search.lexical import search as lexical
from notarium_search.types import ChannelResult, NoteSummary, SearchHit, Snippet

if TYPE_CHECKING:
    from notarium_search.index.space import Space


def fused_notes(space: Space, results: list[ChannelResult], count: int) -> tuple[list[Fused], dict[str, NoteSummary]]:
    """The fused ranking's first `count` (and FETCH_SLACK more, standing in
    for notes deleted since a channel listed them), with their notes: those
    the hits carry, and those fetched from the lexical index."""
    ranked = ranking(results, space.settings.fusion)[: count + FETCH_SLACK]
    notes, missing = carried(results, ranked)
    if missing:
        notes.update(lexical.summaries_by_id(space.lexical, missing))
    return ranked, notes


def answer_snippets(
    channels: Sequence[Channel], results: Sequence[ChannelResult], note_ids: Sequence[str]
) -> dict[str, tuple[Snippet, ...]]:
    """The snippets of the answer's notes: a single channel's own, whole;
    with several, each channel's in turn (lexical first), cut only while the
    earlier ones leave room (fusion.merge_snippets)."""
    single = sum(1 for r in results if r.hits) == 1
    found = found_by(results)
    by_name = {channel.name: channel for channel in channels}
    out: dict[str, tuple[Snippet, ...]] = {}
    for note_id in note_ids:
        per_channel: list[tuple[Snippet, ...]] = []
        for name, hit in found[note_id].items():
            if not single and enough_snippets(per_channel):
                break
            per_channel.append(hit.snippets or by_name[name].snippets(hit))
        out[note_id] = per_channel[0] if single else merge_snippets(per_channel)
    return out


def open_url(space: Space, hit: SearchHit) -> str | None:
    """The hit's editor link, at its best match (its first snippet placed in the body)."""
    best = hit.placed()
    if best is None:
        return space.open_url(hit.note.path)
    return space.open_url(hit.note.path, best.heading[-1] if best.heading else "", best.line)
