"""Where a query's words occur in a note's text: the matches snippets are
cut around (lexical/snippets.py) and a note's preview highlights. Pure: no I/O.

Matches are found with the same analyzers as the index, so a query for
`interopérabilité` highlights `Interoperabilites`. Offsets are code points
(Python string indices), never Tantivy's UTF-8 byte ranges, so accents
cannot shift a highlight.

This runs for every hit of every keystroke, so the note is never tokenized
in Python: `str.find` over a folded copy of the note (lowercase, no accents,
one character for one, so offsets carry over) finds the words that may match,
and only those are checked, stems by the real analyzer (cached per word).
The copy is folded by Tantivy's own tokenizer and fold, so that it agrees with
the index; a letter the index spells with several (œ → oe, ß → ss, ﬁ → fi)
cannot fit in one character: the few words holding one are folded whole.
"""

from __future__ import annotations

import codecs
import functools
from collections.abc import Callable, Iterable, Iterator, Set
from typing import NamedTuple

import msgspec

from notarium_search.lexical import analysis
from notarium_search.lexical.analysis import Analyzers
from notarium_search.lexical.query import QueryPlan, Term
from notarium_search.lexical.typos import typo_forms

# Bounds for huge notes. A match deep in a note is still found when nothing matches before
# it, as long as it lies within MAX_SCAN_CHARS and after fewer than MAX_CANDIDATES near misses.
MAX_SCAN_CHARS = 100_000  # a huge note is only searched for highlights this far
MAX_MATCHES = 64  # plenty to choose 3 windows from; a long note's later matches are not needed
MAX_CANDIDATES = 2_000  # words checked per note: bounds a note where every word is a near miss
STEM_CACHE_WORDS = 16_384  # distinct note words whose stem is remembered (~300 bytes each, < 5 MB)
SCAN_CACHE_QUERIES = 256  # candidate literals, one set per recent query
FOLD_CACHE_CHARS = 4_096  # distinct non-Latin-1 characters whose fold is remembered
TYPO_LEAD_CHARS = (2, 4)  # letters before a typo form's 4th letter: 3, one deleted, or one inserted
SCAN_CHUNK_CHARS = 8_192  # a long note is scanned chunk by chunk, until MAX_MATCHES are found
_FOLD_ERRORS = "notarium_search.fold"  # codec error handler folding non-Latin-1 characters
# In the folded copy: word characters never part of an ASCII query form, each its own fold
# (the codec's replacements go through the byte table too), hence these two Latin-1 letters.
_OTHER_LETTER = "µ"  # a letter the index keeps non-ASCII (µ itself, Greek, Cyrillic, CJK…)
_MANY_LETTERS = "ß"  # a letter the index folds to several (ß → ss, œ → oe, æ → ae, ﬁ → fi), or to "G"


class Match(NamedTuple):
    """A NamedTuple, not a frozen dataclass: ~11 are made per hit shown, and a
    frozen dataclass's __init__ (object.__setattr__ per field) costs 3x more."""

    start: int
    end: int
    key: str  # which query term matched, to reward windows with distinct terms


class HighlightTerms(msgspec.Struct, frozen=True):
    """What to highlight for one query, computed once and used for every hit."""

    stems: frozenset[str]
    exact: frozenset[str]  # plain forms matched as whole words (a query made only of stop words)
    typos: frozenset[str]  # plain forms of words no note contains, matched at one edit
    prefix: str | None  # the last word, matched as a prefix of plain forms (as the query matches it)
    prefix_key: str | None = None  # the key of the prefix's matches: its word's (see `keys`)
    # The query's words in order, to find the section a hit opens at (lexical/snippets.py `_Sections`):
    words: tuple[str, ...] = ()  # plain forms, stop words included (a heading equal to the query)
    keys: tuple[str | None, ...] = ()  # the key a match of each word carries (None: a stop word)
    typing: bool = False  # the last word may be unfinished: a heading may start with it

    @classmethod
    def from_plan(cls, plan: QueryPlan, absent_stems: Set[str]) -> HighlightTerms:
        """`absent_stems`: query stems that occur in no note (typos, unfinished words):
        the same words the query matches at one typo."""
        stop_words_only = plan.stop_words_only

        def key(term: Term) -> str | None:
            if stop_words_only or (term.stem is not None and term.stem in absent_stems):
                return term.plain  # matched as written, at one typo or as a prefix
            return term.stem

        prefix = plan.prefix
        return cls(
            stems=frozenset(t.stem for u in plan.units if not u.excluded for t in u.terms if t.stem),
            exact=frozenset(t.plain for t in plan.positive) if stop_words_only else frozenset(),
            typos=typo_forms(plan, absent_stems),
            # The query matches the last word as a prefix whether or not some
            # note holds it whole (`postgres` finds PostgreSQL): so do the highlights.
            prefix=prefix.plain if prefix is not None else None,
            prefix_key=(key(prefix) or prefix.plain) if prefix is not None else None,
            words=tuple(t.plain for t in plan.positive),
            keys=tuple(key(t) for t in plan.positive),
            typing=prefix is not None and bool(plan.positive) and prefix is plan.positive[-1],
        )


class LanguageTerms(msgspec.Struct, frozen=True):
    """A query's terms in each language of the space's notes (lexical/search.py
    analyses it in each): a note is highlighted with its own language's stems,
    as it was matched."""

    by_language: tuple[tuple[str, HighlightTerms], ...]  # the fallback's first

    @classmethod
    def of(cls, plans: Iterable[QueryPlan], absent: Callable[[QueryPlan], Set[str]]) -> LanguageTerms:
        return cls(tuple((plan.language, HighlightTerms.from_plan(plan, absent(plan))) for plan in plans))

    def of_note(self, language: str) -> tuple[HighlightTerms, Analyzers]:
        """The terms and analyzers for a note in `language` (the first
        language's for one the query was not analysed in)."""
        found = next((pair for pair in self.by_language if pair[0] == language), self.by_language[0])
        return found[1], analysis.analyzers(found[0])


def is_query(heading: str, terms: HighlightTerms, analyzers: Analyzers) -> bool:
    """Whether the heading is the query, case, accents and punctuation aside
    (and the query's last word, if it may be unfinished, a prefix of its last)."""
    wanted = terms.words
    if not wanted:
        return False
    folded = fold(heading)
    if _MANY_LETTERS in folded or _OTHER_LETTER in folded:
        words = [token.text for token in analyzers.plain.pre_tokenize(heading).tokens]
    else:
        words = folded.split()
    if len(words) != len(wanted):
        return False
    if not terms.typing:
        return tuple(words) == wanted
    return tuple(words[:-1]) == wanted[:-1] and words[-1].startswith(wanted[-1])


def find_matches(
    text: str,
    terms: HighlightTerms,
    analyzers: Analyzers,
    max_matches: int = MAX_MATCHES,
    max_candidates: int = MAX_CANDIDATES,
) -> list[Match]:
    """Matched words in order of position, within the bounds above (a whole
    note's preview asks for more matches than a hit's three snippets)."""
    return find_matches_bounded(text, terms, analyzers, max_matches, max_candidates)[0]


def find_matches_bounded(
    text: str,
    terms: HighlightTerms,
    analyzers: Analyzers,
    max_matches: int = MAX_MATCHES,
    max_candidates: int = MAX_CANDIDATES,
) -> tuple[list[Match], bool]:
    """`find_matches`, and whether every match within MAX_SCAN_CHARS was found (no other bound was met)."""
    matches: list[Match] = []
    candidates = _candidates(text[:MAX_SCAN_CHARS], terms, analyzers)
    for checked, (start, end, folded) in enumerate(candidates):
        if checked >= max_candidates or len(matches) >= max_matches:
            return matches, False
        key = _classify(text[start:end], folded, terms, analyzers.language)
        if key is not None:
            matches.append(Match(start, end, key))
    return matches, True


class _Scan(msgspec.Struct, frozen=True):
    """How to find candidate words for one query (cached per query)."""

    starts: tuple[str, ...]  # folded beginnings of the words that may match
    ends: tuple[str, ...]  # folded endings of the words that may be a typo with a wrong first letter
    tokenize: bool  # a non-Latin query word: let Tantivy fold and split the note instead


def _candidates(text: str, terms: HighlightTerms, analyzers: Analyzers) -> Iterator[tuple[int, int, str]]:
    """(start, end, folded form) of the words that may match, in order; chunk by
    chunk, so that a long note is only scanned until enough matches are found."""
    scan = _scan_for(terms)
    if scan.tokenize:
        for token in analyzers.plain.pre_tokenize(text).tokens:
            yield token.char_offset_from, token.char_offset_to, token.text
        return
    # Folding turns every separator into a space; with one more at each end, every
    # word sits between two spaces, and padded[i + 1] is text[i].
    padded = f" {fold(text)} "
    many_letters = _MANY_LETTERS in padded  # most notes have no œ, æ, ß…: nothing more to do
    for low in range(0, len(text), SCAN_CHUNK_CHARS):
        spans = _word_spans(padded, scan, low, low + SCAN_CHUNK_CHARS)
        if many_letters:
            _add_words_folding_longer(text, padded, scan, low, low + SCAN_CHUNK_CHARS, spans)
        for start in sorted(spans):
            end = spans[start]
            folded = padded[start + 1 : end + 1]
            yield start, end, _fold_word(text[start:end]) if many_letters and _MANY_LETTERS in folded else folded


def _word_spans(padded: str, scan: _Scan, low: int, high: int) -> dict[int, int]:
    """start → end (in `text`) of the candidate words starting in [low, high).
    `str.find` per literal is several times faster than a regex over the note."""
    spans: dict[int, int] = {}
    for literal in scan.starts:
        _add_words_starting(padded, literal, low, high, spans)
    for literal in scan.ends:
        _add_words_ending(padded, literal, low, high, spans)
    return spans


def _add_words_starting(padded: str, literal: str, low: int, high: int, spans: dict[int, int]) -> None:
    needle = " " + literal  # found at padded[i]: a word starts at text[i]
    stop = high + len(needle) - 1  # `find` wants the whole needle before `stop`
    pos = padded.find(needle, low, stop)
    while pos != -1:
        if pos not in spans:
            spans[pos] = padded.find(" ", pos + len(needle)) - 1
        pos = padded.find(needle, pos + len(needle), stop)


def _add_words_ending(padded: str, literal: str, low: int, high: int, spans: dict[int, int]) -> None:
    """Words made of TYPO_LEAD_CHARS letters, then `literal` (see `_typo_literals`)."""
    shortest, longest = TYPO_LEAD_CHARS
    needle = literal + " "  # found at padded[i]: a word ends with it at text[i - 1 + len(literal)]
    stop = high + longest + len(needle)
    pos = padded.find(needle, low + shortest, stop)
    while pos != -1:
        space = padded.rfind(" ", max(0, pos - longest - 1), pos)  # before the word: text[space] starts it
        if space != -1 and low <= space < high and pos - space - 1 >= shortest:
            spans.setdefault(space, pos - 1 + len(literal))
        pos = padded.find(needle, pos + 1, stop)


def _add_words_folding_longer(text: str, padded: str, scan: _Scan, low: int, high: int, spans: dict[int, int]) -> None:
    """Words holding a letter the index folds to several (cœur → coeur): the copy
    cannot spell them, so each is folded whole and checked against the literals.
    They are few, hence no cache."""
    stop = padded.find(" ", min(high, len(padded) - 1))  # past the last word starting before `high`
    pos = padded.find(_MANY_LETTERS, low + 1, stop)
    while pos != -1:
        start = padded.rfind(" ", low, pos)  # -1 for a word that started in the previous chunk
        end = padded.find(" ", pos) - 1
        if start >= low and start not in spans and _may_match(_fold_word(text[start:end]), scan):
            spans[start] = end
        pos = padded.find(_MANY_LETTERS, end + 1, stop)


def _may_match(folded: str, scan: _Scan) -> bool:
    """Whether the scan's literals would find this folded word (see `_word_spans`)."""
    if folded.startswith(scan.starts):
        return True
    shortest, longest = TYPO_LEAD_CHARS
    return any(folded.endswith(end) and shortest <= len(folded) - len(end) <= longest for end in scan.ends)


def _fold_word(word: str) -> str:
    """The word as the index spells it before stemming, e.g. Cœur → coeur."""
    return "".join(analysis.FOLD.analyze(word))


def _classify(word: str, folded: str, terms: HighlightTerms, language: str) -> str | None:
    """Which query term `word` (`folded` once folded) matches, if any."""
    if terms.stems:
        stem = _stem(language, word)
        if stem in terms.stems:
            return stem
    if terms.prefix is not None and folded.startswith(terms.prefix):
        return terms.prefix_key or terms.prefix
    if folded in terms.exact:
        return folded
    for form in terms.typos:
        if abs(len(folded) - len(form)) <= 1 and _within_one_edit(folded, form):
            return form
    return None


@functools.lru_cache(maxsize=STEM_CACHE_WORDS)
def _stem(language: str, word: str) -> str | None:
    """The stem the index holds for `word`; None for a stop word or several tokens.
    One analyzer per language (`analysis.analyzers` is cached), hence the key."""
    stems = analysis.analyzers(language).stemmed.analyze(word)
    return stems[0] if len(stems) == 1 else None


@functools.lru_cache(maxsize=SCAN_CACHE_QUERIES)
def _scan_for(terms: HighlightTerms) -> _Scan:
    """A Snowball stem is the folded word's prefix except, sometimes, for its
    last letter (happy → happi), so stem candidates start with the stem minus
    one letter; `_classify` then checks each."""
    starts = {stem if len(stem) <= 3 else stem[:-1] for stem in terms.stems} | terms.exact
    if terms.prefix is not None:
        starts.add(terms.prefix)
    typo_starts, typo_ends = _typo_literals(terms.typos)
    starts |= typo_starts
    return _Scan(
        starts=tuple(sorted(starts)),
        ends=tuple(sorted(typo_ends)),
        tokenize=not all(form.isascii() for form in (*starts, *typo_ends)),
    )


def _typo_literals(forms: frozenset[str]) -> tuple[set[str], set[str]]:
    """A word within one edit of a form of 5+ letters keeps the form's first two
    letters, or else (an edit among those) ends with the form from its fourth
    letter on, after 2 to 4 other letters (TYPO_LEAD_CHARS)."""
    return {form[:2] for form in forms}, {form[3:] for form in forms}


def fold(text: str) -> str:
    """Lowercase, accent-free letters and digits, every other character a space,
    one character for one, so that offsets in the copy are offsets in `text`
    (see `_fold_char`). Latin-1 goes through a byte table (C speed); other
    characters through a cached per-character fold."""
    return text.encode("latin-1", _FOLD_ERRORS).translate(_LATIN1_FOLD).decode("latin-1")


@functools.lru_cache(maxsize=FOLD_CACHE_CHARS)
def _fold_char(char: str) -> str:
    """One Latin-1 character standing for `char`, as the index's tokenizer and fold
    see it: a space for a separator (anything not alphanumeric, "_" too), the
    ASCII letter or digit it folds to (É → e, ø → o, ł → l, ² → 2), _MANY_LETTERS
    if it folds to several (œ → oe) or, as ǧ does, to an uppercase letter (which
    the byte table would lowercase), else _OTHER_LETTER (γ, я, 字)."""
    if "\ud800" <= char <= "\udfff":
        return " "  # a lone surrogate: Tantivy cannot even be given it
    tokens = analysis.FOLD.analyze(char)
    if not tokens:
        return " "
    folded = tokens[0]
    if not folded.isascii():
        return _OTHER_LETTER
    return folded if len(folded) == 1 and folded.isalnum() and not folded.isupper() else _MANY_LETTERS


def _fold_unencodable(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return "".join(map(_fold_char, error.object[error.start : error.end])), error.end


_LATIN1_FOLD = "".join(_fold_char(chr(code)) for code in range(256)).encode("latin-1")
codecs.register_error(_FOLD_ERRORS, _fold_unencodable)


def _within_one_edit(a: str, b: str) -> bool:
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1 :] == b[i + 1 :] or (
            i + 1 < len(a) and a[i] == b[i + 1] and a[i + 1] == b[i] and a[i + 2 :] == b[i + 2 :]
        )
    return a[i:] == b[i + 1 :]
