"""Lexical channel queries: ranked Spotlight search and the date-ordered feed."""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Sequence

import msgspec
import tantivy
from tantivy import FieldType, Occur, Order, Query

from notarium_search.lexical import known
from notarium_search.lexical.analysis import analyzers
from notarium_search.lexical.cursor import CursorCodec, InvalidCursor
from notarium_search.lexical.filters import folder_query, in_section, name_clauses
from notarium_search.lexical.phrase import phrase_test
from notarium_search.lexical.query import (
    QueryPlan,
    build_filter_terms,
    build_query_across,
    exclusions,
    in_language,
    language_boosts,
    plan_query,
)
from notarium_search.lexical.query_words import absent_terms, common_words, prefix_matches
from notarium_search.lexical.schema import (
    Payload,
    decode_head,
    decode_payload,
    index_date,
    meta_term,
)
from notarium_search.lexical.snippets import MAX_SNIPPETS, located, make_snippets
from notarium_search.lexical.store import LexicalIndex
from notarium_search.lexical.stored import raw_by_id, raw_payload
from notarium_search.lexical.word_matches import HighlightTerms, LanguageTerms, find_matches
from notarium_search.settings import RankingConfig
from notarium_search.types import (
    ChannelHit,
    ChannelResult,
    FeedFilter,
    FeedPage,
    KnownName,
    Snippet,
    TextRange,
)

CHANNEL = "lexical"
# Notes whose name starts with the typed text put before the others: a page
# shows ten, and each costs a stored document read (lexical/known.py).
NAMED_NOTES = 20
# Queries whose plans are kept: a hybrid answer analyses its query twice (the
# lexical channel's search, then the semantic channel's snippets: query_terms),
# search as you type and an assistant's retries again. 4 analyses of ~35 µs a
# query in a space of two languages.
PLANNED_QUERIES = 256
FEED_TIE_SLACK = 32  # extra rows fetched so a page boundary rarely splits equal keys
__all__ = ["InvalidCursor"]  # raised by the feed, from lexical/cursor.py


def search(
    index: LexicalIndex,
    text: str,
    filters: FeedFilter,
    limit: int,
    ranking: RankingConfig,
    with_snippets: bool = True,
    snippet_depth: int | None = None,
    phrase_depth: int = 0,
) -> ChannelResult:
    """The `limit` best notes. Snippets for the first `snippet_depth` (all when
    None), the exact-phrase flag for the first `phrase_depth` (see phrase.py)."""
    searcher = index.searcher()
    plans = _plans(index, searcher, text)
    plan = plans[0]  # the words, quotes and exclusions are the same in every language
    if plan.is_empty:
        return ChannelResult(CHANNEL, ())
    absent = {p.language: absent_terms(searcher, p) for p in plans}
    # A word is a typo (or unfinished) only when no note of any language holds
    # it: a French word is not matched at one typo against the English notes.
    nowhere = set.intersection(*({t.surface for t in terms} for terms in absent.values()))
    absent_stems = {
        language: frozenset(t.stem for t in terms if t.stem and t.surface in nowhere)
        for language, terms in absent.items()
    }
    across = [(p, absent_stems[p.language]) for p in plans]
    majority = index.majority(searcher, [p.language for p in plans])
    # Only a language with either clause (French) asks the dictionary how common its words are.
    weighed = any(language_boosts(ranking, p.language).active for p in plans)
    common = common_words(searcher, plans, ranking.form_max_share) if weighed else frozenset()
    query = _with_filters(build_query_across(across, index.schema, ranking, majority, common), filters, index.schema)
    result = searcher.search(query, limit, count=False)
    read: dict[tuple[int, int], bytes] = {}  # the stored notes _named read, not read twice
    named = _named(index, searcher, text, plans, filters, min(limit, NAMED_NOTES), read)[:limit]
    terms = LanguageTerms.of(plans, lambda p: absent_stems[p.language])
    holds_phrase = phrase_test(unicodedata.normalize("NFC", text)) if phrase_depth else None
    snippet_depth = 0 if not with_snippets else limit if snippet_depth is None else snippet_depth
    # The notes the query names first (lexical/known.py), each at the best
    # score of the list: the order says which comes first, and the channel's
    # spread of scores (fusion's modulation) stays that of its words.
    top = float(result.hits[0][0]) if result.hits else 1.0
    first = {(a.segment_ord, a.doc): name for a, name in named}
    rows: list[tuple[float, tantivy.DocAddress, KnownName | None]] = [(top, a, name) for a, name in named]
    rows += [(float(s), a, None) for s, a in result.hits if (a.segment_ord, a.doc) not in first]
    hits = []
    for rank, (score, address, name) in enumerate(rows[:limit]):
        raw = read.get((address.segment_ord, address.doc)) or raw_payload(searcher, address)
        # The stored note and the query's terms: enough to cut the snippets
        # later (`snippets_of`), for the hits fusion keeps.
        later = Evidence(raw, terms, filters.sections) if with_snippets else None
        if rank < snippet_depth or rank < phrase_depth:
            payload = decode_payload(raw)
            exact = holds_phrase is not None and rank < phrase_depth and holds_phrase(payload.title, payload.text)
            snippets = _cut(payload, terms, sections=filters.sections) if rank < snippet_depth else ()
            language = payload.language if len(plans) > 1 else None
            hits.append(
                ChannelHit(payload.summary(), score, snippets, exact, evidence=later, known=name, language=language)
            )
        else:  # deep: fusion will drop most of these, so only the note's head is decoded now
            head = decode_head(raw)
            language = head.language if len(plans) > 1 else None
            hits.append(ChannelHit(head.summary(), score, (), evidence=later, known=name, language=language))
    missing = [t for t in absent[plan.language] if t.surface in nowhere]
    unmatched = tuple(dict.fromkeys(t.surface for t in missing if not prefix_matches(searcher, plan, t)))
    # A note the query names holds each of its words, whole or as a word's start.
    return ChannelResult(CHANNEL, tuple(hits), () if named else unmatched)


def _plans(index: LexicalIndex, searcher: tantivy.Searcher, text: str) -> tuple[QueryPlan, ...]:
    """The query analysed in each language of the notes `searcher` sees, the
    fallback's first when it has notes (`plans_in`)."""
    return plans_in(text, index.present(searcher))


@functools.lru_cache(maxsize=PLANNED_QUERIES)
def plans_in(text: str, languages: tuple[str, ...]) -> tuple[QueryPlan, ...]:
    """The query analysed in each of `languages` (plans are frozen: one copy
    serves every thread).

    A word that is a stop word in one of these languages is one in all: a
    French question's "l'", "de", "comment" are not searched in the English
    notes, nor an English question's "the", "is" in the French ones, where
    they are rare words that lift any note holding one. Measured with piaf-fr
    and cranfield in one space (docs/ranking.md, "Languages of the notes"),
    nDCG@10 lexical: without it cranfield 0.3239 (0.3892 alone), with it
    0.3902 and piaf-fr 0.8216 (0.8250 alone); only the stop words of the
    language whose stop words the query holds most: piaf-fr 0.8199. A plan
    none of whose words is another language's stop word is kept as made:
    analysed again, it would come out the same."""
    plans = [plan_query(text, analyzers(language)) for language in languages]
    if len(plans) == 1:
        return tuple(plans)
    stop_words = frozenset(t.plain for p in plans for u in p.units for t in u.terms if t.stem is None)
    return tuple(
        plan_query(text, analyzers(p.language), stop_words) if _gains_stop_words(p, stop_words) else p for p in plans
    )


def _gains_stop_words(plan: QueryPlan, stop_words: frozenset[str]) -> bool:
    return any(t.stem is not None and t.plain in stop_words for u in plan.units for t in u.terms)


def query_terms(index: LexicalIndex, text: str) -> LanguageTerms:
    """A query's terms to highlight notes of every language with (no word taken as absent)."""
    return LanguageTerms.of(_plans(index, index.searcher(), text), lambda _: frozenset())


def _named(
    index: LexicalIndex,
    searcher: tantivy.Searcher,
    text: str,
    plans: Sequence[QueryPlan],
    filters: FeedFilter,
    count: int,
    read: dict[tuple[int, int], bytes],
) -> list[tuple[tantivy.DocAddress, KnownName]]:
    """The notes the query names, best first (lexical/known.py), within its exclusions and filters."""
    wanted = known.NameQuery.of(text, plans[0])
    if wanted is None:
        return []
    excluded = [(Occur.MustNot, q) for q in exclusions(plans, index.schema)]

    def within(query: Query) -> Query:
        """The query within the exclusions and filters: itself when there are none."""
        if not excluded and filters.is_empty:
            return query
        return _with_filters(Query.boolean_query([(Occur.Must, query), *excluded]), filters, index.schema)

    def head(address: tantivy.DocAddress) -> tuple[str, str, str, tuple[str, ...]]:
        raw = read[address.segment_ord, address.doc] = raw_payload(searcher, address)
        note = decode_head(raw)
        return note.id, note.path, note.title, note.aliases

    return known.find(searcher, index.schema, wanted, count, within, head)


def highlights(
    index: LexicalIndex, query: str, text: str, limit: int, max_words: int, note_id: str = ""
) -> tuple[TextRange, ...]:
    """Where the query's words occur in `text` (the note `note_id`'s, read in
    its language) as search matches them (stems, accents folded, the last word
    as a prefix, a word no note holds at one typo), as snippets highlight them:
    the first `limit`, among the first `max_words` words that may match, in
    the first MAX_SCAN_CHARS of `text`."""
    language = index.languages[0]
    if len(index.languages) > 1 and note_id:
        # Only the stored note's head is decoded: its language, not its text.
        language = next((decode_head(raw).language for _, raw in raw_by_id(index, [note_id])), language)
    plan = plan_query(query, analyzers(language))
    if plan.is_empty:
        return ()
    absent = frozenset(t.stem for t in absent_terms(index.searcher(), plan) if t.stem)
    terms = HighlightTerms.from_plan(plan, absent)
    found = find_matches(text, terms, analyzers(language), max_matches=limit, max_candidates=max_words)
    return tuple(TextRange(match.start, match.end) for match in found)


def feed(
    index: LexicalIndex, text: str, filters: FeedFilter, limit: int, cursor: str | None, cursors: CursorCodec
) -> FeedPage:
    """Notes where the words really occur, newest first, keyset-paginated on
    (feed key, id) so that pages stay stable while notes change; each with an
    excerpt: where the words occur, else its opening lines."""
    payloads, next_cursor = feed_payloads(index, text, filters, limit, cursor, cursors)
    # Every word occurs in a listed note: none is absent.
    terms = query_terms(index, text)
    sections = filters.sections
    excerpts = {p.id: s[0] for p in payloads if (s := _cut(p, terms, limit=1, sections=sections))}
    return FeedPage(tuple(p.summary() for p in payloads), next_cursor, partial=False, excerpts=excerpts)


def feed_payloads(
    index: LexicalIndex,
    text: str,
    filters: FeedFilter,
    limit: int,
    cursor: str | None,
    cursors: CursorCodec | None,
) -> tuple[list[Payload], str | None]:
    """`feed`, with each note's whole payload (metadata queries need its
    frontmatter). `cursors` None: one page, no cursor in or out."""
    after = cursors.decode(cursor) if cursor and cursors is not None else None
    searcher = index.searcher()
    clauses = _every_word(index, searcher, text)
    if after is not None:
        clauses.append((Occur.Must, Query.range_query(index.schema, "feed_key", FieldType.Integer, None, after[0])))
    query = _with_filters(_conjunction(clauses), filters, index.schema)
    fetch = limit + 1 + FEED_TIE_SLACK
    while True:
        result = searcher.search(query, fetch, count=False, order_by_field="feed_key", order=Order.Desc)
        rows: list[tuple[int, tantivy.DocAddress]] = result.hits
        exhausted = len(rows) < fetch
        if not exhausted:  # notes sharing the last key may go on past this batch
            rows = [row for row in rows if row[0] != rows[-1][0]]
        # Ordered on the id from each stored note's head (3x faster to decode);
        # only the notes of the page are decoded whole, not the slack behind it.
        raws = ((key, raw_payload(searcher, address)) for key, address in rows)
        items = sorted(((key, decode_head(raw).id, raw) for key, raw in raws), key=lambda item: (-item[0], item[1]))
        if after is not None:
            items = [i for i in items if i[0] < after[0] or (i[0] == after[0] and i[1] > after[1])]
        if exhausted or len(items) > limit:
            break
        fetch *= 4
    page = items[:limit]
    more = len(items) > limit
    next_cursor = cursors.encode(page[-1][0], page[-1][1]) if more and page and cursors is not None else None
    return [decode_payload(raw) for _, _, raw in page], next_cursor


def _every_word(index: LexicalIndex, searcher: tantivy.Searcher, text: str) -> list[tuple[Occur, Query]]:
    """The feed's clauses: a note holds every word of the query, analysed in its language."""
    plans = _plans(index, searcher, text)
    if len(plans) == 1:
        return build_filter_terms(plans[0], index.schema)
    each = [in_language(_conjunction(build_filter_terms(p, index.schema)), p.language, index.schema) for p in plans]
    return [(Occur.Must, Query.boolean_query([(Occur.Should, q) for q in each]))]


def note_ids_matching(index: LexicalIndex, filters: FeedFilter) -> set[str] | None:
    """Ids of the notes a filter allows; None when there is no filter."""
    if filters.is_empty:
        return None
    searcher = index.searcher()
    query = _with_filters(Query.all_query(), filters, index.schema)
    total = max(int(searcher.num_docs), 1)
    return {decode_head(raw_payload(searcher, a)).id for _, a in searcher.search(query, total, count=False).hits}


def count_notes(index: LexicalIndex, filters: FeedFilter | None = None) -> int:
    searcher = index.searcher()
    if filters is None or filters.is_empty:
        return int(searcher.num_docs)
    query = _with_filters(Query.all_query(), filters, index.schema)
    # `count` exists at run time but is missing from tantivy-py 0.27's stubs.
    counted: int | None = getattr(searcher.search(query, 1, count=True), "count", None)
    return counted or 0


class Evidence(msgspec.Struct, frozen=True):
    """What a lexical hit keeps to cut its snippets later: its stored note, undecoded, and the query's terms."""

    raw: bytes
    terms: LanguageTerms
    sections: tuple[str, ...] = ()  # `section:` filters: the excerpts cut from such a section


def snippets_of(index: LexicalIndex, hit: ChannelHit) -> tuple[Snippet, ...]:
    """The snippets of a hit `search` made without them (none when it was asked for no snippets)."""
    if hit.snippets or not isinstance(hit.evidence, Evidence):
        return hit.snippets
    evidence = hit.evidence
    return _cut(decode_payload(evidence.raw), evidence.terms, sections=evidence.sections)


def _cut(
    payload: Payload,
    language_terms: LanguageTerms,
    limit: int = MAX_SNIPPETS,
    sections: tuple[str, ...] = (),
) -> tuple[Snippet, ...]:
    terms, analyzers = language_terms.of_note(payload.language)
    # `section:` filters: cut from such a section when it holds the words (lexical/filters.py).
    found = in_section(payload, terms, analyzers, sections) if sections else ()
    if found:
        return found
    # A note with a title and no body (yet) shows its title as its snippet.
    snippets = make_snippets(payload.text, terms, analyzers, limit, fallback=payload.title, sections=payload.sections)
    return located(snippets, payload.sections, payload.lines)


def _conjunction(clauses: list[tuple[Occur, Query]]) -> Query:
    if not any(occur == Occur.Must for occur, _ in clauses):
        clauses = [*clauses, (Occur.Must, Query.all_query())]
    return Query.boolean_query(clauses)


def _with_filters(query: Query, filters: FeedFilter, schema: tantivy.Schema) -> Query:
    if filters.is_empty:
        return query
    # Filters must not change scores: wrap them as a constant-score conjunction.
    return Query.boolean_query(
        [
            (Occur.Must, query),
            (Occur.Must, Query.const_score_query(_conjunction(_filter_clauses(filters, schema)), 0.0)),
        ]
    )


def _filter_clauses(filters: FeedFilter, schema: tantivy.Schema) -> list[tuple[Occur, Query]]:
    clauses: list[tuple[Occur, Query]] = []
    folder = (filters.folder or "").strip("/")
    if folder:
        clauses.append((Occur.Must, folder_query(folder, schema)))
    clauses.extend(name_clauses(filters, schema))
    tags = [Query.term_query(schema, "tag_path", normalise_tag(tag)) for tag in filters.tags]
    if filters.tags_any and tags:
        clauses.append((Occur.Must, Query.boolean_query([(Occur.Should, q) for q in tags])))
    else:
        clauses.extend((Occur.Must, q) for q in tags)
    clauses.extend(
        (Occur.MustNot, Query.term_query(schema, "tag_path", normalise_tag(tag))) for tag in filters.exclude_tags
    )
    if filters.since is not None or filters.until is not None:
        since, until = (index_date(d) if d is not None else None for d in (filters.since, filters.until))
        clauses.append((Occur.Must, Query.range_query(schema, "updated", FieldType.Date, since, until)))
    if filters.created_since is not None or filters.created_until is not None:
        since, until = (
            index_date(d) if d is not None else None for d in (filters.created_since, filters.created_until)
        )
        clauses.append((Occur.Must, Query.range_query(schema, "created", FieldType.Date, since, until)))
    for field, value in filters.fields:
        if value is None:
            clauses.append((Occur.Must, Query.term_query(schema, "meta_keys", field.strip().casefold())))
        else:
            clauses.append((Occur.Must, Query.term_query(schema, "meta", meta_term(field, value))))
    if filters.activated is not None and filters.activation_fields:
        used = [Query.term_query(schema, "meta_keys", f.casefold()) for f in filters.activation_fields]
        clauses.append(
            (Occur.Must if filters.activated else Occur.MustNot, Query.boolean_query([(Occur.Should, q) for q in used]))
        )
    if filters.collections:
        within = [Query.term_query(schema, "collections", name) for name in filters.collections]
        clauses.append((Occur.Must, Query.boolean_query([(Occur.Should, q) for q in within])))
    return clauses


def normalise_tag(tag: str) -> str:
    return tag.strip().lstrip("#").strip("/").lower()
