"""Does a note hold the whole query? Pure: no I/O.

The exact-phrase signal of fusion (docs/ranking.md): a note whose title or
text contains every word of the query, in order, must not be outranked by
notes another channel merely finds similar. Matching is case-insensitive and
tolerates punctuation and spacing between the words ("l'agent, sans API" holds
"agent sans api"); accents must match, because an exact match is what is
protected here (the lexical channel already folds accents for ranking).
"""

from __future__ import annotations

import re
from collections.abc import Callable

_WORD_RE = re.compile(r"\w+")
# One word is too common to protect in a body (every lexical hit contains it):
# a one-word query protects title matches only.
MIN_BODY_PHRASE_WORDS = 2
# Queries longer than this are pasted text, not phrases anyone expects verbatim.
MAX_PHRASE_WORDS = 12

PhraseTest = Callable[[str, str], bool]


def phrase_test(query: str) -> PhraseTest | None:
    """A test (title, text) → bool for this query, or None when the query has
    no phrase to protect (no words, or too many)."""
    words = _WORD_RE.findall(query)
    if not words or len(words) > MAX_PHRASE_WORDS:
        return None
    pattern = re.compile(r"(?<!\w)" + r"\W+".join(map(re.escape, words)) + r"(?!\w)", re.IGNORECASE)
    in_body = len(words) >= MIN_BODY_PHRASE_WORDS

    def holds(title: str, text: str) -> bool:
        return pattern.search(title) is not None or (in_body and pattern.search(text) is not None)

    return holds
