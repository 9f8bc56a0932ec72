"""Semantic channel queries: nearest fragments → notes, and related notes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from msgspec.structs import replace

from notarium_search.lexical import search as lexical
from notarium_search.lexical import stored as stored_notes
from notarium_search.lexical.schema import Payload
from notarium_search.lexical.snippets import located, make_snippets
from notarium_search.lexical.store import LexicalIndex
from notarium_search.lexical.word_matches import LanguageTerms
from notarium_search.semantic.calibration import query_weight
from notarium_search.semantic.index import SemanticIndex, text_digest
from notarium_search.semantic.manifest import Record
from notarium_search.types import ChannelHit, ChannelResult, Echo, FeedFilter, Snippet

CHANNEL = "semantic"
FRAGMENTS_PER_RESULT = 4  # nearest fragments fetched per wanted note: several fragments often share a note
MIN_FRAGMENTS = 64
SNIPPETS_PER_NOTE = 3
RELATED_NEIGHBOURS = 20  # nearest fragments looked at for each fragment of the note


def search(
    index: SemanticIndex,
    lexical_index: LexicalIndex,
    query: np.ndarray,
    text: str,
    filters: FeedFilter,
    limit: int,
    snippet_depth: int | None = None,
) -> ChannelResult:
    """The `limit` notes with the nearest fragments. The first `snippet_depth`
    (all when None) come with their summary and snippets; the others by id,
    with snippets cut on demand (fusion keeps few of them)."""
    allowed = lexical.note_ids_matching(lexical_index, filters)
    hits = index.nearest(query, max(limit * FRAGMENTS_PER_RESULT, MIN_FRAGMENTS), allowed)
    by_note: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for note_id, key, score in hits:
        by_note[note_id].append((key, score))
    ranked = sorted(by_note.items(), key=lambda item: -item[1][0][1])[:limit]
    depth = len(ranked) if snippet_depth is None else snippet_depth
    payloads = stored_notes.payloads_by_id(lexical_index, [note_id for note_id, _ in ranked[:depth]])
    terms = lexical.query_terms(lexical_index, text)
    unrelated = unrelated_score(index, query)
    margin = index.margin()  # the model's, or what this space's noise asks (semantic/probes.py)
    floor = None if unrelated is None or margin is None else unrelated + margin
    results = []
    for rank, (note_id, fragments) in enumerate(ranked):
        best = fragments[0][1]
        confident = floor is None or best >= floor
        if rank >= depth:
            later = Evidence(index, tuple(fragments), terms)
            results.append(ChannelHit(None, best, (), note_id=note_id, confident=confident, evidence=later))
            continue
        payload = payloads.get(note_id)
        if payload is None:  # deleted since: the vectors lag the lexical index
            continue
        snippets = _snippets(payload, _records(index, note_id, fragments), terms, lexical_index)
        results.append(ChannelHit(payload.summary(), best, snippets, confident=confident))
    weight = 1.0
    model_margin = index.embedder.config.relevance_margin
    if results and unrelated is not None and model_margin is not None:
        # Weighed by the model's margin: the space's calibration decides what
        # may list a note alone, not how much the channel counts in fusion.
        weight = query_weight(max(hit.score for hit in results), unrelated, model_margin)
    return ChannelResult(CHANNEL, tuple(results), floor=floor, weight=weight, unrelated=unrelated)


def unrelated_score(index: SemanticIndex, query: np.ndarray) -> float | None:
    """What unrelated text scores against this query: its mean similarity to
    the reference passages (semantic/calibration.py); None without a margin."""
    if index.reference is None:
        return None
    return float(np.mean(index.reference @ query))


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a semantic hit keeps to cut its snippets later: its nearest
    fragments' keys and similarities, and the query's terms."""

    index: SemanticIndex
    fragments: tuple[tuple[int, float], ...]
    terms: LanguageTerms


def _records(index: SemanticIndex, note_id: str, fragments: Sequence[tuple[int, float]]) -> list[Record]:
    """The records of the fragments a note's snippets are cut from (its nearest first)."""
    found = (index.record(note_id, key) for key, _ in fragments[:SNIPPETS_PER_NOTE])
    return [record for record in found if record is not None]


def snippets_of(lexical_index: LexicalIndex, hit: ChannelHit) -> tuple[Snippet, ...]:
    """The snippets of a hit `search` made without them: its fragments, read
    from the note as the lexical index holds it now."""
    if hit.snippets or not isinstance(hit.evidence, Evidence):
        return hit.snippets
    payload = stored_notes.payloads_by_id(lexical_index, [hit.note_id]).get(hit.note_id)
    if payload is None:
        return ()
    records = _records(hit.evidence.index, hit.note_id, hit.evidence.fragments)
    return _snippets(payload, records, hit.evidence.terms, lexical_index)


def _snippets(
    payload: Payload, records: Sequence[Record], terms: LanguageTerms, lexical_index: LexicalIndex
) -> tuple[Snippet, ...]:
    found = (_snippet(payload, record, terms, lexical_index) for record in records[:SNIPPETS_PER_NOTE])
    return located((s for s in found if s is not None), payload.sections, payload.lines)


def _snippet(payload: Payload, record: Record, terms: LanguageTerms, lexical_index: LexicalIndex) -> Snippet | None:
    """The fragment's best excerpt, its `at` counted from the note's text (`located` places it)."""
    piece = payload.text[record.start : record.end]
    fragment = piece.strip()
    if text_digest(fragment) != record.digest:
        return None  # the note changed since this fragment was embedded
    note_terms, analyzers = terms.of_note(payload.language)
    found = make_snippets(fragment, note_terms, analyzers, limit=1)
    if not found:
        return None
    if found[0].at < 0:
        return found[0]
    return replace(found[0], at=found[0].at + record.start + len(piece) - len(piece.lstrip()))


def related(
    index: SemanticIndex,
    lexical_index: LexicalIndex,
    note_id: str,
    limit: int,
    min_seconds_apart: float = 0.0,
    allowed: set[str] | None = None,
) -> list[Echo]:
    """Notes whose best fragment pair with this note is the most similar
    (among `allowed` notes when given: a filter such as a collection)."""
    own = index.fragments_of(note_id)
    if not own:
        return []
    best: dict[str, tuple[float, Record, Record]] = {}
    for record, vector in zip(own, index.vectors(own), strict=True):
        for other_id, other, score in index.search(vector, RELATED_NEIGHBOURS, allowed):
            if other_id != note_id and score > best.get(other_id, (-2.0,))[0]:
                best[other_id] = (score, other, record)
    payloads = stored_notes.payloads_by_id(lexical_index, [note_id, *best])
    source = payloads.get(note_id)
    if source is None:
        return []
    source_time = source.updated
    echoes = []
    terms = lexical.query_terms(lexical_index, "")
    for other_id, (score, other, mine) in sorted(best.items(), key=lambda item: -item[1][0]):
        payload = payloads.get(other_id)
        if payload is None or abs(payload.updated - source_time) < min_seconds_apart:
            continue
        theirs = _snippet(payload, other, terms, lexical_index)
        ours = _snippet(source, mine, terms, lexical_index)
        if theirs is not None and ours is not None:
            (theirs,) = located((theirs,), payload.sections, payload.lines)
            (ours,) = located((ours,), source.sections, source.lines)
            echoes.append(Echo(payload.summary(), score, theirs, ours))
        if len(echoes) >= limit:
            break
    return echoes
