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
   quote), only names going on with a new word count: `rust ` is not `rustc`;
3. the notes one of whose headings the query is (few notes sharing it);
4. when a word of the query is abbreviated (two letters at most, or no
   note's word: `mi po`, `proto`), the notes whose title, file name or an
   alias has words starting with the query's words, in order ("Migration vers
   PostgreSQL" for `mi po`, "Protocoles ouverts" for `ouv`): the first word
   of the name matched first, then the shortest name, as above.

Fusion keeps them first in every mode (fusion.ranking): the semantic and
graph channels never push a named note down. Exclusions and filters apply to
them as to any hit.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

import msgspec
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
# Word starts, as a launcher matches them: `mi po` is "Migration vers
# PostgreSQL", `ouv` is "Protocoles ouverts". Each name a note is called by
# (its file name, title and aliases: not its path or id) is also indexed from
# each of its later words on, whole terms of a raw field ("vers postgresql",
# "postgresql"): the term dictionary then lists the names a word starts
# within, and the rest of each such term says whether the query's next words
# start the name's next words, without reading a note.
WORD_STARTS_FIELD = "name_word_starts"
# A name's later words indexed so (a title that is a sentence has more words
# than anyone abbreviates): each term is a suffix of a folded name, at most
# NAME_KEY_MAX_CHARS, so a note adds at most this many terms per name.
WORD_STARTS_PER_NAME = 15
# A query word of at most this many letters is taken for an abbreviation even
# where some note holds it whole ("p" of "p. 12", "po" of the river Po).
ABBREVIATION_CHARS = 2
# Abbreviations are short: a query of more words is a question or a name
# typed out, which the names and the words answer (and a question's first
# word, "a" or "le", would walk a twentieth of the dictionary for nothing).
ABBREVIATED_WORDS = 4
# Dictionary entries read per field and query for word starts: one letter
# could list every name word starting with it. Past this bound the entries
# borne by the most notes are read (tantivy's `terms_with_prefix(limit=...)`:
# its walk still visits each entry starting with the word, in Rust, but no
# more than this many reach Python to be checked and sorted). Word starts
# only fill a page the names starting with the text left short, so the walk
# is rare where it is long: a letter many names start with fills the page.
WORD_START_TERMS = 2_000
# Notes read per note wanted: a word many names share ("3" of a thousand
# "Note (3)", "avances" of every "X avancés") would read every note bearing
# it. The best scored are read (BM25's length norm: the fewest names' words),
# then ranked by their names; twice the notes wanted keeps the shortest names
# among them (bench/word_starts.py: "later word" in the top 10 72.7 % of
# vault-fr's names reading as many notes as wanted, 75.3 % twice, 76.7 % all).
WORD_START_READS = 2
_EXACT, _PREFIX, _HEADING, _WORDS = 0, 1, 2, 3


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


def called(path: str, title: str, aliases: Iterable[str]) -> list[tuple[str, str]]:
    """(level, folded name) of the names word starts are matched in: the
    file name, the title, each alias (WORD_LEVELS)."""
    named = [("file_name", path.rsplit("/", 1)[-1]), ("title", title), *(("alias", a) for a in aliases)]
    return [(level, key) for level, name in named if (key := name_key(name))]


def word_starts(path: str, title: str, aliases: Iterable[str]) -> set[str]:
    """The terms of WORD_STARTS_FIELD for a note: each of its names from each
    of its later words on (the first WORD_STARTS_PER_NAME of them)."""
    terms: set[str] = set()
    for _, key in called(path, title, aliases):
        at = 0
        for _ in range(WORD_STARTS_PER_NAME):
            at = key.find(" ", at) + 1
            if not at:
                break
            terms.add(key[at:])
    return terms


def starts_words(words: tuple[str, ...], name: str, typing: bool) -> int | None:
    """The index of the name's word the first query word starts when each of
    the query's words starts one of the name's words, in order (the earliest
    such match); None if they do not. A last word no longer typed must be a
    whole word of the name, as `rust ` is not `rustc`."""
    have = name.split(" ")
    at, first = 0, None
    for n, word in enumerate(words):
        whole = not typing and n == len(words) - 1
        while at < len(have) and not (have[at] == word if whole else have[at].startswith(word)):
            at += 1
        if at == len(have):
            return None
        first = at if first is None else first
        at += 1
    return first


class NameQuery(msgspec.Struct, frozen=True):
    """What a query says as a name: its folded form, and whether its last word is still being typed."""

    key: str
    typing: bool
    content: tuple[str, ...] = ()  # the query's words that are no stop words, folded

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(self.key.split(" "))

    @property
    def goes_on(self) -> str:
        """What a longer name starts with: the text itself while its last word
        is typed, else the text and a space (a new word)."""
        return self.key if self.typing else self.key + " "

    @classmethod
    def of(cls, text: str, plan: QueryPlan) -> NameQuery | None:
        """None when the query is no name: no word to search for."""
        terms = [t for u in plan.units if not u.excluded for t in u.terms]
        stripped = text.rstrip()
        if terms and terms[-1].surface.casefold() == "md" and stripped[-3:].casefold() == ".md":
            terms.pop()  # "Accueil.md": the file's name
        key = name_key(" ".join(t.surface for t in terms))
        if not key:
            return None
        return cls(key, typing=plan.typing, content=tuple(t.plain for t in terms if t.stem is not None))


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
    it, then the notes one of whose headings it is (up to HEADING_NOTES),
    then, if these are fewer than `count` and a word of the query is
    abbreviated, those whose names' words it starts (up to `count` in all).
    `within` adds the query's exclusions and filters to a query; `heads`
    reads a found note's (id, path, title, aliases)."""
    ranked: dict[tuple[int, int], tuple[tantivy.DocAddress, KnownName]] = {}

    def taker(field: str, words: bool, most: int | None = None) -> Callable[[list[str], int], set[str]]:
        def take(keys: list[str], limit: int) -> set[str]:
            """Rank the notes bearing these terms of `field` (`most` of them at
            most, the best scored); the terms some live note bears."""
            named = Query.boolean_query([(Occur.Should, Query.term_query(schema, field, key)) for key in keys])
            borne: set[str] = set()
            limit = limit if most is None else min(limit, most)
            for _, address in searcher.search(within(named), limit, count=False).hits:
                note_id, path, title, aliases = heads(address)
                names = note_names(note_id, path, title, aliases)
                known = rank(wanted, names, path) or (rank_words(wanted, path, title, aliases) if words else None)
                if known is None:
                    continue
                at = address.segment_ord, address.doc
                if at not in ranked or known.order < ranked[at][1].order:
                    ranked[at] = (address, known)
                borne.update(names if field == FIELD else word_starts(path, title, aliases))
            return borne

        return take

    if searcher.doc_freq(FIELD, wanted.key):  # most queries name no note: no search then
        taker(FIELD, words=False)([wanted.key], EXACT_NOTES)
    _take_names_starting(searcher, wanted, count, within, taker(FIELD, words=False))
    for address in _heading_notes(searcher, schema, wanted, within):
        if (address.segment_ord, address.doc) not in ranked:
            path = heads(address)[1]
            ranked[address.segment_ord, address.doc] = (address, KnownName("heading", (_HEADING, len(path), path)))
    if len(ranked) < count and abbreviated(searcher, wanted):
        narrowed = _narrowed(within)
        for field in (FIELD, WORD_STARTS_FIELD):  # a name's first word, then its later words
            if len(ranked) >= count:
                break
            names = _names_words_start(searcher, wanted, field, narrowed)
            wanted_notes = count - len(ranked)
            _take_shortest(names, wanted_notes, taker(field, words=True, most=WORD_START_READS * wanted_notes))
    found = sorted(ranked.values(), key=lambda item: item[1].order)
    # Word starts fill up to `count`, the names before them as they came.
    return [item for n, item in enumerate(found) if n < count or item[1].order[0] != _WORDS]


def abbreviated(searcher: tantivy.Searcher, wanted: NameQuery) -> bool:
    """Whether the query's words may be the starts of words: each one of at
    most ABBREVIATION_CHARS letters, or one of its words (stop words aside)
    that short or in no note's text as a whole word (`mi po`, `proto`). A
    query of words notes hold whole is searched by its words alone: its
    ranking is the words' (BM25, and the names it is or starts). At most
    ABBREVIATED_WORDS words."""
    if len(wanted.words) > ABBREVIATED_WORDS:
        return False
    if all(len(word) <= ABBREVIATION_CHARS for word in wanted.words):
        return True
    return any(len(word) <= ABBREVIATION_CHARS or not searcher.doc_freq("plain", word) for word in wanted.content)


def _narrowed(within: Callable[[Query], Query]) -> Query | None:
    """The exclusions and filters alone, for counting a term's notes within
    them; None when there are none (counting within filters reads each term's notes)."""
    everything = Query.all_query()
    narrowed = within(everything)
    return None if narrowed is everything else narrowed


def _names_words_start(
    searcher: tantivy.Searcher, wanted: NameQuery, field: str, narrowed: Query | None
) -> list[tuple[int, str, int]]:
    """(length, term, notes) of the terms of `field` (whole names, or names
    from a later word on) whose first words the query's words start, in
    order, the shortest first; at most WORD_START_TERMS of them are read.
    Whole names the query starts are left out: they were taken as such."""
    words = wanted.words
    if field == FIELD and len(words) == 1:
        return []  # a name whose first word one word starts is a name it starts
    bearing = searcher.terms_with_prefix(field, words[0], filter_query=narrowed, limit=WORD_START_TERMS)
    starts = _starts_pattern(words, wanted.typing).match
    return sorted(
        (len(term), term, notes)
        for term, notes in bearing
        if notes and starts(term) and not (field == FIELD and (term == wanted.key or term.startswith(wanted.goes_on)))
    )


def _starts_pattern(words: tuple[str, ...], typing: bool) -> re.Pattern[str]:
    """`starts_words(words, term, typing) == 0` as one regular expression, for
    the thousands of terms a word may start: the first word at the start,
    each next one at the start of the earliest later word it starts (an
    atomic group: the earliest is always right, so nothing is tried twice)."""
    whole = "" if typing else "(?= |$)"  # a last word no longer typed is whole
    pattern = ""
    for n, word in enumerate(words):
        end = whole if n == len(words) - 1 else ""
        pattern += f"{re.escape(word)}{end}" if n == 0 else f"(?>.*? {re.escape(word)}{end})"
    return re.compile(pattern)


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


def rank_words(wanted: NameQuery, path: str, title: str, aliases: Iterable[str]) -> KnownName | None:
    """How well the query's words start the words of a note's file name,
    title or an alias (`starts_words`), if they do: a name whose first word
    the first query word starts before one where it starts a later word, then
    the shortest name, then as wiki-links resolve."""
    matched = []
    for level, key in called(path, title, aliases):
        first = starts_words(wanted.words, key, wanted.typing)
        if first is not None:
            matched.append((int(first > 0), len(key), LEVELS.index(level)))
    if not matched:
        return None
    later, length, best = min(matched)
    return KnownName(LEVELS[best] + "_words", (_WORDS, later, length, best, len(path), path))


def _take_names_starting(
    searcher: tantivy.Searcher,
    wanted: NameQuery,
    count: int,
    within: Callable[[Query], Query],
    take: Callable[[list[str], int], set[str]],
) -> None:
    """The notes of the shortest names going on from the query, enough of
    them for about `count` notes (`_take_shortest`). None for a text too short."""
    if len(wanted.key) < PREFIX_KEY_MIN_CHARS:
        return
    # Counting within filters reads each name's notes: only when there are filters.
    bearing = searcher.terms_with_prefix(FIELD, wanted.goes_on, filter_query=_narrowed(within))
    names = sorted((len(name), name, notes) for name, notes in bearing if notes and name != wanted.key)
    _take_shortest(names, count, take)


def _take_shortest(names: list[tuple[int, str, int]], count: int, take: Callable[[list[str], int], set[str]]) -> None:
    """The notes of the first of these names (length, name, notes: the
    shortest first), enough of them for about `count` notes, and the names
    as long as the last one (PREFIX_NAMES at most). The term dictionary says
    how many notes bear each name (within the filters), so only those notes
    are read; it also keeps the names of deleted notes until segments merge,
    so names no live note bears are passed over and the next ones taken: an
    index that lived through deletions answers as a fresh one."""
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
