"""The name filters of a query as Tantivy clauses: the folder, ignoring case,
and Obsidian's `path:`, `file:` and `section:` (typed_filters.py), so that
they narrow the index query itself and limits and pages stay right.

`path:x` and `file:x` look for x anywhere in the note's folded path or file
name (each note's one term of `PATH_KEY`, `FILE_KEY`: lexical/schema.py;
the file name as the path's last part, `(.*/)?[^/]*x[^/]*`, made an automaton
too big for 99 emoji), `section:x` in its folded
headings (`known.HEADINGS_FIELD`: case, accents and punctuation aside), each
by a regular expression run over the field's terms: one term per note, so a
scan of the term dictionary, not of the notes' text.
"""

from __future__ import annotations

import threading

import tantivy
from msgspec.structs import replace
from tantivy import Occur, Query

from notarium_search.errors import InvalidFilter
from notarium_search.lexical import known
from notarium_search.lexical.analysis import Analyzers
from notarium_search.lexical.schema import FILE_KEY, FOLDER_KEY, PATH_KEY, Payload, folded
from notarium_search.lexical.snippets import located, make_snippets
from notarium_search.lexical.word_matches import HighlightTerms
from notarium_search.types import FeedFilter, Snippet

# Sections whose heading holds a `section:` value cut per hit, at most.
SECTIONS_TRIED = 4
# Compiling an automaton took 5.5 ms (`path:sous3`, 10,000 notes), and one
# search compiles it 2-3 times (its words, then the notes it names: lexical/
# known.py); a filter is sent again with each word typed after it. The last
# ones are kept, a Tantivy query being immutable (it holds its schema).
COMPILED_KEPT = 64
_COMPILED: dict[tuple[int, str, str], tuple[tantivy.Schema, Query]] = {}
_COMPILED_LOCK = threading.Lock()


def folder_query(folder: str, schema: tantivy.Schema) -> Query:
    """The notes in `folder` or below it, whatever its case (`Lectures` is `lectures`)."""
    return Query.term_query(schema, FOLDER_KEY, folded(folder.strip("/")))


def name_clauses(filters: FeedFilter, schema: tantivy.Schema) -> list[tuple[Occur, Query]]:
    """One clause per `path:`, `file:` and `section:` value: all must hold."""
    clauses = []
    for value in filters.paths:
        clauses.append(_matching(schema, "path", value, PATH_KEY, f".*{literal(folded(value))}.*"))
    for value in filters.files:
        clauses.append(_matching(schema, "file", value, FILE_KEY, f".*{literal(folded(value))}.*"))
    for value in filters.sections:
        # Folded as headings are (a value of punctuation alone keeps its
        # text, which no folded heading holds: nothing matches it).
        key = known.name_key(value) or value.casefold()
        clauses.append(_matching(schema, "section", value, known.HEADINGS_FIELD, f".*{literal(key)}.*"))
    return [(Occur.Must, clause) for clause in clauses]


def _matching(schema: tantivy.Schema, name: str, value: str, field: str, pattern: str) -> Query:
    key = (id(schema), field, pattern)
    with _COMPILED_LOCK:
        known_query = _COMPILED.get(key)
    if known_query is not None and known_query[0] is schema:  # the same schema, not one at a reused address
        return known_query[1]
    try:
        query = Query.regex_query(schema, field, pattern)
    except ValueError as exc:
        # An automaton past Tantivy's 1,000 states: the value is too long to
        # look for. Refused here, never raised on: the read path takes an
        # unexplained ValueError for possible damage (reading.py).
        why = f"{name}:{value[:40]}…: too long to look for"
        raise InvalidFilter(why, name=name, value=value, reason="too_long") from exc
    with _COMPILED_LOCK:
        if len(_COMPILED) >= COMPILED_KEPT:
            del _COMPILED[next(iter(_COMPILED))]  # the oldest
        _COMPILED[key] = (schema, query)
    return query


def literal(text: str) -> str:
    """`text` matched as written in a Tantivy regular expression (Rust's
    regex syntax): every character but ASCII letters and digits escaped by
    its code point, which that syntax reads in any context."""
    return "".join(c if c.isascii() and c.isalnum() else f"\\x{{{ord(c):x}}}" for c in text)


def in_section(
    payload: Payload, terms: HighlightTerms, analyzers: Analyzers, values: tuple[str, ...]
) -> tuple[Snippet, ...]:
    """With `section:` filters, the hit's excerpts cut from the first section
    whose heading holds one of their values and the query's words (down to
    the next heading of its level or above): the hit opens there
    (SearchHit.placed). None when no such section holds the words: the
    note's excerpts are then cut as without the filter. At most
    SECTIONS_TRIED sections are cut: a note may repeat a heading thousands
    of times."""
    keys = [known.name_key(value) or value.casefold() for value in values]
    if not keys:
        return ()
    sections, text = payload.sections, payload.text
    tried = 0
    for index, (start, level, heading) in enumerate(sections):
        if tried == SECTIONS_TRIED:
            break
        if not any(key in known.name_key(heading) for key in keys):
            continue
        tried += 1
        end = next((at for at, deeper, _ in sections[index + 1 :] if deeper <= level), len(text))
        within = tuple((at - start, lv, h) for at, lv, h in sections[index:] if at < end)
        cut = make_snippets(text[start:end], terms, analyzers, sections=within)
        if any(snippet.highlights for snippet in cut):
            return located((replace(s, at=s.at + start) if s.at >= 0 else s for s in cut), sections, payload.lines)
    return ()
