"""Which query words are also matched at one typo. Pure: no I/O.

One rule for the query (lexical/query.py: a fuzzy clause per word) and the
highlights (lexical/word_matches.py: the same words found at one edit), so that
what is highlighted is what was matched.
"""

from __future__ import annotations

from collections.abc import Set
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # query.py builds its clauses from this module's rule
    from notarium_search.lexical.query import QueryPlan

FUZZY_MIN_CHARS = 5  # shorter words have too many neighbours at edit distance 1
# When no word of the query is known to any note, the query is as likely a
# made-up word as a misspelt one, and a short word has real neighbours at one
# edit in any large vocabulary ("grazy" → crazy, gray): such a word must be
# longer to be matched at one typo. Measured on the made-up words of
# bench/heldout.py (60 each; docs/relevance.md), those the lexical channel
# answered at 5 / 6 / 7 / 8 letters: a scientific dictionary 8 / 3 / 2 / 2, a
# computing one 2 / 1 / 1 / 1 (what is left at 7 are stems and the prefix of
# the word being typed, not typos); cranfield's none at any. A misspelt word of
# 7 letters or more ("tomatos") is still found, and from 5 beside a known word.
FUZZY_MIN_CHARS_ALL_UNKNOWN = 7


def typo_forms(plan: QueryPlan, absent_stems: Set[str]) -> frozenset[str]:
    """The plain forms of the query words matched at one typo: words no note
    contains (`absent_stems`: their stems occur in no note) of FUZZY_MIN_CHARS
    letters or more, FUZZY_MIN_CHARS_ALL_UNKNOWN when no word of the query is
    in any note (stop words aside). A word that matches something needs no
    typo tolerance, and a fuzzy clause costs more than every other clause together."""
    if plan.stop_words_only:
        return frozenset()
    words = [t for t in plan.positive if t.stem is not None]
    unknown = [t for t in words if t.stem in absent_stems]
    least = FUZZY_MIN_CHARS_ALL_UNKNOWN if len(unknown) == len(words) else FUZZY_MIN_CHARS
    return frozenset(t.plain for t in unknown if len(t.plain) >= least)
