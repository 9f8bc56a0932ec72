"""Known items: the query names a note, and that note comes first.

The Spotlight's first job is a quick switcher's: type a note's file name, its
title, an alias or its id and that note is the first hit, whatever the
channels think of its words (BM25 puts "Espaces de travail" above "Espace de
travail" for `Espace de travail`: one stem for both, and a longer note). So
each note's names are indexed folded (case, accents and punctuation away, a
".md" suffix dropped: `name_key`) as whole terms of one raw field, and a query
is looked up there, once as a whole and, while its last word is typed, as the
start of a name:

1. the notes one of whose names *is* the query, ranked as wiki-links resolve
   (graph/links.py, as Obsidian does): path, then file name, title, alias,
   id; then the shortest path;
2. while typing, the notes one of whose names *starts with* it, the shortest
   name first ("Paramètres" before "Paramètres de langue" for `Paramètres`),
   then as above. Once the last word is finished (a trailing space, a closed
   quote), only names going on with a new word count: `rust ` is not `rustc`.

Fusion keeps them first in every mode (fusion.ranking): the semantic and
graph channels never push a named note down. Exclusions and filters apply to
them as to any hit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import tantivy
from tantivy import Occur, Query

from notarium_search.lexical import analysis
from notarium_search.lexical.query import QueryPlan
from notarium_search.types import KnownName

FIELD = "names"
# A name is folded to at most this many characters: longer titles are
# sentences, and a raw term must stay far below Tantivy's 65,530-byte limit.
NAME_KEY_MAX_CHARS = 200
# Names that share the query, or start with it, looked at per query: notes
# beyond these are found by their words like any other.
EXACT_NOTES = 50
PREFIX_NAMES = 50  # the shortest names starting with the typed text
# Searches for them: more than one when some names first taken were only
# deleted notes' (the term dictionary keeps them until segments merge), each
# for the names still missing. A vault where many notes were just deleted or
# moved needs a few (tests/index/test_crash.py: one deleted name in 50 of a
# folder, then another among the next); past this bound, fewer are listed.
PREFIX_ROUNDS = 16
# While typing, the names starting with the text are read from the term
# dictionary (~3 per note). One letter is enough, as in a quick switcher:
# `H` lists the shortest names starting with h (the words' prefix clause
# needs two, lexical/query.py, so it answered nothing). It reads a twentieth
# of the names or so: +2.4 ms a one-letter query at 10,000 notes, measured.
PREFIX_KEY_MIN_CHARS = 1
# Typing re-sends the query at each keystroke, and the same notes come back:
# their names' folded forms are remembered (8.5 µs each to fold; ~200 bytes).
NAME_KEYS_CACHED = 16_384
# How the names of one note rank, best first: as wiki-links resolve them.
LEVELS = ("path", "file_name", "title", "alias", "id")
# A heading names a place in a note, as `[[note#heading]]` does: a query that
# is one of a note's headings brings that note next, after the notes whose
# name it is or starts, unless more notes than this share the heading
# ("Introduction", "Sources": such a heading names no place in particular).
# On the generated vaults of bench/known_items.py, a heading typed as is
# brought its note first 82.8 % (fr) and 70.0 % (en) of the time by its words
# alone (other notes' names held the same words), 100 % so. Before the name
# prefixes, it cost the typed share (46 → 57 % fr, 46 → 54 % en): a name
# typed passes through words that are some note's heading.
HEADINGS_FIELD = "heading_names"
HEADING_NOTES = 3
HEADINGS_PER_NOTE = 1_000  # a note's headings indexed as names (a pathological note has 33,000)
_EXACT, _PREFIX, _HEADING = 0, 1, 2


@functools.lru_cache(maxsize=NAME_KEYS_CACHED)
def name_key(text: str) -> str:
    """The folded form names and queries are compared by: the words of the
    text as the index's plain analyzer reads them (lowercase, accents folded,
    punctuation a separator), one space apart; a trailing ".md" dropped."""
    text = text.strip()
    if text[-3:].casefold() == ".md":
        text = text[:-3]
    return " ".join(analysis.FOLD.analyze(text[: NAME_KEY_MAX_CHARS * 2]))[:NAME_KEY_MAX_CHARS].rstrip()


def note_names(note_id: str, path: str, title: str, aliases: Iterable[str]) -> dict[str, str]:
    """Each folded name of a note → its best level (LEVELS). A path is a name
    of its own only below the root (a root note's path is its file name)."""
    stem = path.rsplit("/", 1)[-1]
    named = [("path", path if "/" in path else ""), ("file_name", stem), ("title", title)]
    named += [("alias", alias) for alias in aliases]
    named.append(("id", note_id))
    keys: dict[str, str] = {}
    for level, name in named:
        key = name_key(name)
        if key:
            keys.setdefault(key, level)
    return keys


@dataclass(frozen=True, slots=True)
class NameQuery:
    """What a query says as a name: its folded form, and whether its last word is still being typed."""

    key: str
    typing: bool

    @property
    def goes_on(self) -> str:
        """What a longer name starts with: the text itself while its last word
        is typed, else the text and a space (a new word)."""
        return self.key if self.typing else self.key + " "

    @classmethod
    def of(cls, text: str, plan: QueryPlan) -> NameQuery | None:
        """None when the query is no name: no word to search for."""
        words = [t.surface for u in plan.units if not u.excluded for t in u.terms]
        stripped = text.rstrip()
        if words and words[-1].casefold() == "md" and stripped[-3:].casefold() == ".md":
            words.pop()  # "Accueil.md": the file's name
        key = name_key(" ".join(words))
        if not key:
            return None
        return cls(key, typing=plan.typing)


def find(
    searcher: tantivy.Searcher,
    schema: tantivy.Schema,
    wanted: NameQuery,
    count: int,
    within: Callable[[Query], Query],
    heads: Callable[[tantivy.DocAddress], tuple[str, str, str, tuple[str, ...]]],
) -> list[tuple[tantivy.DocAddress, KnownName]]:
    """The notes the query names, best first: every note one of whose names
    it is (up to EXACT_NOTES), about `count` of those whose name starts with
    it, then the notes one of whose headings it is (up to HEADING_NOTES).
    `within` adds the query's exclusions and filters to a query; `heads`
    reads a found note's (id, path, title, aliases)."""
    ranked: dict[tuple[int, int], tuple[tantivy.DocAddress, KnownName]] = {}

    def take(keys: list[str], limit: int) -> set[str]:
        """Rank the notes bearing these names; the names some live note bears."""
        named = Query.boolean_query([(Occur.Should, Query.term_query(schema, FIELD, key)) for key in keys])
        borne: set[str] = set()
        for _, address in searcher.search(within(named), limit, count=False).hits:
            note_id, path, title, aliases = heads(address)
            names = note_names(note_id, path, title, aliases)
            known = rank(wanted, names, path)
            if known is not None:
                ranked[address.segment_ord, address.doc] = (address, known)
                borne.update(names)
        return borne

    if searcher.doc_freq(FIELD, wanted.key):  # most queries name no note: no search then
        take([wanted.key], EXACT_NOTES)
    _take_names_starting(searcher, wanted, count, within, take)
    for address in _heading_notes(searcher, schema, wanted, within):
        if (address.segment_ord, address.doc) not in ranked:
            path = heads(address)[1]
            ranked[address.segment_ord, address.doc] = (address, KnownName("heading", (_HEADING, len(path), path)))
    return sorted(ranked.values(), key=lambda item: item[1].order)


def _heading_notes(
    searcher: tantivy.Searcher, schema: tantivy.Schema, wanted: NameQuery, within: Callable[[Query], Query]
) -> list[tantivy.DocAddress]:
    """The notes one of whose headings the query is, when few notes share it."""
    if not 0 < searcher.doc_freq(HEADINGS_FIELD, wanted.key) <= HEADING_NOTES:
        return []
    found = searcher.search(within(Query.term_query(schema, HEADINGS_FIELD, wanted.key)), HEADING_NOTES, count=False)
    return [address for _, address in found.hits]


def rank(wanted: NameQuery, names: dict[str, str], path: str) -> KnownName | None:
    """How well the query names a note with these names (note_names), if it does."""
    level = names.get(wanted.key)
    if level is not None:
        return KnownName(level, (_EXACT, LEVELS.index(level), len(path), path))
    go_on = wanted.goes_on
    starting = [(len(key), LEVELS.index(level)) for key, level in names.items() if key.startswith(go_on)]
    if not starting:
        return None
    length, best = min(starting)
    return KnownName(LEVELS[best] + "_prefix", (_PREFIX, length, best, len(path), path))


def _take_names_starting(
    searcher: tantivy.Searcher,
    wanted: NameQuery,
    count: int,
    within: Callable[[Query], Query],
    take: Callable[[list[str], int], set[str]],
) -> None:
    """The notes of the shortest names going on from the query, enough of
    them for about `count` notes, and the names as long as the last one
    (PREFIX_NAMES at most). The term dictionary says how many notes bear each
    name (within the filters), so only those notes are read; it also keeps
    the names of deleted notes until segments merge, so names no live note
    bears are passed over and the next ones taken: an index that lived
    through deletions answers as a fresh one. None for a text too short."""
    if len(wanted.key) < PREFIX_KEY_MIN_CHARS:
        return
    go_on = wanted.goes_on
    everything = Query.all_query()
    narrowed = within(everything)
    # Counting within filters reads each name's notes: only when there are filters.
    bearing = searcher.terms_with_prefix(FIELD, go_on, filter_query=None if narrowed is everything else narrowed)
    names = sorted((len(name), name, notes) for name, notes in bearing if notes and name != wanted.key)
    live: list[str] = []  # names some live note bears, in order
    notes_taken = 0
    start = 0
    for _ in range(PREFIX_ROUNDS):
        if start >= len(names) or len(live) >= PREFIX_NAMES:
            return
        batch: list[str] = []
        wanted_notes = 0
        for length, name, notes in names[start:]:
            last = batch[-1] if batch else live[-1] if live else None
            enough = last is not None and notes_taken + wanted_notes >= count and length > len(last)
            if enough or len(live) + len(batch) >= PREFIX_NAMES:
                break
            batch.append(name)
            wanted_notes += notes
        if not batch:
            return
        start += len(batch)
        borne = take(batch, wanted_notes)
        found = [name for name in batch if name in borne]
        live += found
        notes_taken += sum(notes for _, name, notes in names[start - len(batch) : start] if name in borne)
