"""Value completion for the filters typed in the query box (`tag:`,
`folder:`, `file:`): the values a space holds that start with what is typed,
ignoring case, each with how many notes it keeps, most notes first.

Counted by a terms aggregation over the field's fast column (lexical/
schema.py): one pass over the notes, deleted ones left out, exact, as the
filter itself counts them (a tag or a folder keeps its nested ones: `projet`
counts the notes of `projet/dora`). Spellings of one value in different
cases (`Lectures`, `lectures`: two folders on a case-sensitive file system,
one for `folder:`) are one value, shown as most of its notes spell it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tantivy import Query

from notarium_search.errors import InvalidParameter
from notarium_search.lexical.filters import literal
from notarium_search.lexical.store import LexicalIndex

# Which field holds each kind of value, every ancestor of a nested one included.
FIELDS = {"tag": "tag_path", "folder": "folder_path", "file": "file"}
# A prefix is looked for by a regular expression, which Tantivy refuses past
# 1,000 states: 300 emoji or 500 accented letters were refused, 100 of any
# script are looked for (tests/api/test_filters.py).
MAX_PREFIX_CHARS = 100
# Distinct values counted at most. Tantivy's terms aggregation counts exactly
# only the values it keeps per segment (with 20 kept, counts were off by up
# to 37 on 50,000 notes): all of them are kept, up to this bound, and the
# best `limit` chosen here.
MAX_VALUES = 65_000


def values(index: LexicalIndex, kind: str, prefix: str, limit: int) -> list[tuple[str, int]]:
    """The values of `kind` (FIELDS) starting with `prefix` (ignoring case),
    with their notes, most notes first, then alphabetically; at most `limit`."""
    # Rust's regex syntax: `(?i)` folds case by Unicode's simple folding; the
    # pattern is anchored at both ends of each value.
    typed = prefix.strip().lstrip("#" if kind == "tag" else "/")  # `tag:#ia`, `folder:/lectures`
    wanted = f"(?i){literal(typed)}.*"
    request = {"values": {"terms": {"field": FIELDS[kind], "size": MAX_VALUES, "include": wanted}}}
    try:
        answer: dict[str, Any] = index.searcher().aggregate(Query.all_query(), request)
    except ValueError as exc:  # an automaton past Tantivy's 1,000 states: refused, never a 500
        raise InvalidParameter(f"prefix: too long to look for ({len(typed)} characters)") from exc
    counts: Counter[str] = Counter()
    spellings: dict[str, Counter[str]] = {}
    for bucket in answer["values"]["buckets"]:
        value, notes = str(bucket["key"]), int(bucket["doc_count"])
        key = value.casefold()
        counts[key] += notes
        spellings.setdefault(key, Counter())[value] += notes
    best = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]
    return [(spellings[key].most_common(1)[0][0], notes) for key, notes in best]
