"""The graph channel's ranking: the notes linked with the best text hits, read
from a `LinkGraph`. Pure: no I/O.

The channel scores a note by the text hits it is linked with:

    score(note) = Σ_{seed r ≤ fusion.GRAPH_SEEDS adjacent to note}  1 / (k + r)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import msgspec

from notarium_search.graph.links import LinkGraph

Direction = Literal["linked_from", "links_to"]


class Via(msgspec.Struct, frozen=True):
    seed_id: str
    seed_rank: int  # 1-based rank of the seed in the text ranking
    direction: Direction  # "linked_from": the seed links to the hit; "links_to": the hit links to the seed


class GraphHit(msgspec.Struct, frozen=True):
    note_id: str
    score: float
    via: tuple[Via, ...]  # by seed rank


# A note with more links than this is a hub (a home note every note links to,
# a map of content listing hundreds): a seed spreads its share over its links
# (HUB_DEGREE / degree each, past HUB_DEGREE), and a neighbour that many notes
# link to gets the same fraction from each seed, so that a hub and its
# neighbours do not enter every answer. Measured with bench/graph_hubs.py
# (docs/relevance.md): a home note linked from every note was in the top 10 of
# 99.9 % of the answers without it.
HUB_DEGREE = 20


def rank_neighbours(graph: LinkGraph, seeds: Sequence[str], k: float, max_seeds: int) -> list[GraphHit]:
    """Seeds (note ids, best first) → the notes linked with them, best first.

    `k` is the fusion's RRF constant ([fusion] k): a neighbour of the rank-1
    seed scores what a channel's rank 1 scores, so the graph list fuses with the
    text channels without calibration, and the top seed cannot drown the others.

    Each of the first `max_seeds` seeds at rank r adds 1 / (k + r) to every
    neighbour once, whichever the direction(s), weighed down past HUB_DEGREE
    links of the seed or of the neighbour (`hub_share`). A seed can be a hit:
    linked with a better seed, it is boosted. Ties go to the note with the
    better best seed, then to the smaller id. No seeds, no hits."""
    scores: dict[str, float] = {}
    vias: dict[str, list[Via]] = {}
    for rank, seed in enumerate(list(dict.fromkeys(seeds))[: max(max_seeds, 0)], start=1):
        linked_from, links_to = graph.adjacent(seed)
        sides: tuple[tuple[Direction, tuple[str, ...]], ...] = (("linked_from", linked_from), ("links_to", links_to))
        for direction, ids in sides:
            for note_id in ids:
                vias.setdefault(note_id, []).append(Via(seed, rank, direction))
        neighbours = {*linked_from, *links_to}
        spread = hub_share(len(neighbours)) / (k + rank)
        for note_id, degree in graph.degrees(neighbours).items():
            scores[note_id] = scores.get(note_id, 0.0) + spread * hub_share(degree)
    hits = [GraphHit(note_id, score, tuple(vias[note_id])) for note_id, score in scores.items()]
    hits.sort(key=lambda h: (-h.score, h.via[0].seed_rank, h.note_id))
    return hits


def hub_share(degree: int) -> float:
    """1 for a note with at most HUB_DEGREE links, less and less past it."""
    return min(1.0, HUB_DEGREE / degree) if degree > 0 else 1.0


def explain(hit: GraphHit, titles: Mapping[str, str]) -> str:
    """Why the graph found `hit`, e.g. "linked from: Alpha, Gamma; links to: Beta"."""
    parts = []
    for direction, label in (("linked_from", "linked from"), ("links_to", "links to")):
        names = dict.fromkeys(titles.get(v.seed_id) or v.seed_id for v in hit.via if v.direction == direction)
        if names:
            parts.append(f"{label}: {', '.join(names)}")
    return "; ".join(parts)
