"""Which query words are also matched at one typo. Pure: no I/O.

One rule for the query (lexical/query.py: a fuzzy clause per word) and the
highlights (lexical/snippets.py: the same words found at one edit), so that
what is highlighted is what was matched.
"""

from __future__ import annotations

from collections.abc import Set
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # query.py builds its clauses from this module's rule
    from notarium_search.lexical.query import QueryPlan

FUZZY_MIN_CHARS = 5  # shorter words have too many neighbours at edit distance 1


def typo_forms(plan: QueryPlan, absent_stems: Set[str]) -> frozenset[str]:
    """The plain forms of the query words matched at one typo: words no note
    contains (`absent_stems`: their stems occur in no note) of FUZZY_MIN_CHARS
    letters or more. A word that matches something needs no typo tolerance,
    and a fuzzy clause costs more than every other clause together."""
    if plan.stop_words_only:
        return frozenset()
    return frozenset(t.plain for t in plan.positive if t.stem in absent_stems and len(t.plain) >= FUZZY_MIN_CHARS)
