"""What the index's dictionary says of a query's words: those no note holds
(a typo, or a word still being typed), those most notes hold (no exact-form
or proximity clause for them), whether the word being typed starts some word."""

from __future__ import annotations

from collections.abc import Sequence

import tantivy

from notarium_search.lexical.query import QueryPlan, Term

# A word in fewer notes costs its exact-form clause a few microseconds: only a
# word held by more notes than this (and than RankingConfig.form_max_share of
# them) loses its exact-form and proximity clauses; a small vault keeps them all.
COMMON_WORD_MIN_NOTES = 1_000


def absent_terms(searcher: tantivy.Searcher, plan: QueryPlan) -> list[Term]:
    """Query words that occur in no note of the plan's language as such (typos, or words still being typed)."""
    absent = []
    for term in plan.positive:
        if term.stem is None and not plan.stop_words_only:
            continue
        field, value = ("text", term.stem) if term.stem else ("plain", term.plain)
        if searcher.doc_freq(field, value) == 0:
            absent.append(term)
    return absent


def common_words(searcher: tantivy.Searcher, plans: Sequence[QueryPlan], share: float) -> frozenset[str]:
    """The query's words (stop words aside) that more than `share` of the
    notes hold as written, and more than COMMON_WORD_MIN_NOTES: no exact-form
    clause for them, nor a proximity clause for two of them in a row
    (lexical/query.py `_form_and_proximity`)."""
    most = max(share * searcher.num_docs, COMMON_WORD_MIN_NOTES)
    if searcher.num_docs <= most:  # a share of 1, or a small vault: no word is that common
        return frozenset()
    words = {t.plain for p in plans for t in p.positive if t.stem is not None}
    return frozenset(w for w in words if searcher.doc_freq("plain", w) > most)


def prefix_matches(searcher: tantivy.Searcher, plan: QueryPlan, term: Term) -> bool:
    return term is plan.prefix and bool(searcher.terms_with_prefix("plain", term.plain, limit=1))
