"""Raw user text → a Tantivy query that never fails to build.

Raw input never reaches `parse_query` (it raises on `"x`, `(x`, `C:\\temp`,
`-x`, `AND` and on every French apostrophe). We split the text into units
ourselves — words, "quoted phrases", `-exclusions` — and build the query from
the analyzer's own tokens, so what we search for is exactly what was indexed.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
import unicodedata
from collections import Counter
from collections.abc import Hashable, Sequence

import msgspec
import tantivy
from tantivy import Occur, Query

from notarium_search.lexical.analysis import LANGUAGE_FIELD, Analyzers
from notarium_search.lexical.typos import typo_forms
from notarium_search.settings import RankingConfig

MAX_QUERY_UNITS = 32  # more words than this is a pasted paragraph: keep the first ones
PREFIX_MIN_CHARS = 2  # a one-letter prefix expands to most of the dictionary
# Typing re-sends every earlier word at each keystroke: their analysis is
# remembered (a few hundred bytes per entry).
ANALYSED_UNITS_CACHE = 4096
_UNIT_RE = re.compile(r'(-?)"([^"]*)"?|(\S+)')
# Two consecutive query words count as near when at most this many words
# (stop words included: the plain field keeps them) separate them in the note:
# "roi de France" matches "roi France". Slop 0 and 2 measured alike on piaf-fr
# (0.8242, 0.8250 with the exact-form boost), 2 tolerates an adjective between.
PROXIMITY_SLOP = 2


class LanguageBoosts(msgspec.Struct, frozen=True):
    """[ranking] boosts whose measured default depends on the space language."""

    exact_form: float
    proximity: float

    @property
    def active(self) -> bool:
        """Whether a query in this language has either clause."""
        return self.exact_form > 0 or self.proximity > 0


# Measured with bench/eval_collection.py (docs/ranking.md, "Exact forms and
# proximity"). French: Snowball conflates many forms ("élection", "élections",
# "électoral" → "election"), so a word found as written is better evidence:
# the lexical channel alone on piaf-fr 0.8144 → 0.8231 with the exact-form
# boost 0.5 (0.25: 0.8214, 1: 0.8204), 0.8250 with proximity 0.25 too; hybrid
# 0.8534 → 0.8587 (same vectors). English: cranfield 0.3892 → 0.3869 lexical,
# 0.4106 → 0.4077 hybrid with both on (proximity alone: 0.3884-0.3895, noise), so off.
LANGUAGE_BOOSTS: dict[str, LanguageBoosts] = {
    "fr": LanguageBoosts(exact_form=0.5, proximity=0.25),
    "en": LanguageBoosts(exact_form=0.0, proximity=0.0),
}


# Languages with no measurement yet get plain BM25 on stems, as English.
UNMEASURED_BOOSTS = LanguageBoosts(exact_form=0.0, proximity=0.0)


def language_boosts(ranking: RankingConfig, language: str) -> LanguageBoosts:
    """The configured boosts, or the language's measured defaults where unset."""
    default = LANGUAGE_BOOSTS.get(language, UNMEASURED_BOOSTS)
    return LanguageBoosts(
        default.exact_form if ranking.exact_form_boost is None else ranking.exact_form_boost,
        default.proximity if ranking.proximity_boost is None else ranking.proximity_boost,
    )


class Term(msgspec.Struct, frozen=True):
    """One query word as indexed: its stem (text field) and folded form (plain field)."""

    stem: str | None  # None for a stop word
    plain: str
    surface: str  # what the user typed, for reporting


class Unit(msgspec.Struct, frozen=True):
    terms: tuple[Term, ...]
    phrase: bool
    excluded: bool


class QueryPlan(msgspec.Struct, frozen=True):
    """The analysed query; pure data, also used to find matches for snippets."""

    units: tuple[Unit, ...]
    prefix: Term | None  # the last word, still being typed
    positive: tuple[Term, ...] = ()
    typing: bool = False  # no space or closing quote after the last character: a word may be unfinished
    language: str = "fr"  # whose analyzer made the stems: they match that language's notes

    @property
    def is_empty(self) -> bool:
        return not self.units

    @property
    def stop_words_only(self) -> bool:
        return bool(self.positive) and all(t.stem is None for t in self.positive)


def plan_query(text: str, analyzers: Analyzers, stop_words: frozenset[str] = frozenset()) -> QueryPlan:
    """The query analysed in the analyzers' language; `stop_words` (plain
    forms): words taken as stop words besides the language's own (those of
    the space's other languages: lexical/search.py)."""
    # Notes are indexed in NFC; a decomposed accent would split a word in two.
    text = unicodedata.normalize("NFC", text)
    units: list[Unit] = []
    for match in _UNIT_RE.finditer(text):
        minus, quoted, word = match.groups()
        if word is not None:
            excluded = word.startswith("-") and len(word) > 1
            unit = _unit(word[1:] if excluded else word, analyzers, stop_words, phrase=False, excluded=excluded)
        else:
            unit = _unit(quoted, analyzers, stop_words, phrase=True, excluded=bool(minus))
        if unit.terms:
            units.append(unit)
        if len(units) >= MAX_QUERY_UNITS:
            break
    positive = tuple(t for u in units if not u.excluded for t in u.terms)
    # The word being typed is the last one the user searches for: exclusions
    # typed after it do not end it ("postgres -mysql" keeps "postgres" a
    # prefix, as "-mysql postgres" does); a space or a closing quote does.
    last = next((u for u in reversed(units) if not u.excluded), None)
    typing = bool(text) and not text[-1].isspace() and not text.endswith('"')
    prefix = None
    if typing and last is not None and not last.phrase:
        candidate = last.terms[-1]
        prefix = candidate if len(candidate.plain) >= PREFIX_MIN_CHARS else None
    return QueryPlan(units=tuple(units), prefix=prefix, positive=positive, typing=typing, language=analyzers.language)


def _unit(text: str, analyzers: Analyzers, stop_words: frozenset[str], phrase: bool, excluded: bool) -> Unit:
    # Fresh Term objects every time: `plan.prefix` is told apart by identity.
    terms = tuple(
        Term(None if plain in stop_words else stem, plain, surface)
        for stem, plain, surface in _analyse(analyzers, text)
    )
    return Unit(terms=terms, phrase=phrase, excluded=excluded)


@functools.lru_cache(maxsize=ANALYSED_UNITS_CACHE)
def _analyse(analyzers: Analyzers, text: str) -> tuple[tuple[str | None, str, str], ...]:
    """(stem, plain form, surface) of each token of a query unit."""
    analysed = []
    for token in analyzers.plain.pre_tokenize(text).tokens:
        surface = text[token.char_offset_from : token.char_offset_to]
        stems = analyzers.stemmed.analyze(surface)
        analysed.append((stems[0] if stems else None, token.text, surface))
    return tuple(analysed)


def build_query_across(
    plans: Sequence[tuple[QueryPlan, frozenset[str]]],
    schema: tantivy.Schema,
    ranking: RankingConfig,
    majority: str | None = None,
    common_words: frozenset[str] = frozenset(),
) -> Query:
    """The ranked query of a space whose notes are in several languages: each
    plan (the query analysed in one language, with its absent stems) matched
    against the notes of that language only, so that every note is scored by
    its own language's stems, stop words and boosts, and the notes of every
    language compete in one list.
    One plan: `build_query` itself (a space of one language).

    A clause every plan has alike (a word with the same stem in each
    language, "Shanghai", "1998"; the phrase of the words as typed) scores a
    note the same whichever plan holds it, and every note belongs to exactly
    one plan: it is asked once, outside the language filters, which then hold
    only what differs. Same hits, same scores (summed in another order), and
    a filtered clause costs about twice an unfiltered one: on the 50,000-note
    bench vault (French and English notes, the bench's questions, 73 % of
    whose words stem alike in both) Tantivy's part of a query went 2.93 → 2.26 ms.
    With a quoted phrase or an exclusion (required and forbidden clauses),
    each plan stays whole in its filter.

    `majority`: the language of more than half the notes, if one is: its
    filter is "none of the other plans' languages" (in_language), the same
    notes since every note is in the language of one plan."""
    if len(plans) == 1:
        return build_query(plans[0][0], schema, ranking, plans[0][1], common_words)
    whole = any(u.phrase or u.excluded for p, _ in plans for u in p.units)
    grouped = [] if whole else [(p.language, _ranked_clauses(p, schema, ranking, a, common_words)) for p, a in plans]
    keys = [Counter(key for key, _ in groups) for _, groups in grouped]
    common = functools.reduce(operator.and_, keys) if keys else Counter()
    languages = [p.language for p, _ in plans]

    def only(query: Query, language: str) -> Query:
        others = [other for other in languages if other != language] if language == majority else ()
        return in_language(query, language, schema, others)

    if not common:
        each = [only(build_query(p, schema, ranking, a, common_words), p.language) for p, a in plans]
        return Query.boolean_query([(Occur.Should, query) for query in each])
    shared, _ = _take(grouped[0][1], common)
    clauses = [(Occur.Should, query) for query in shared]
    for language, groups in grouped:
        _, own = _take(groups, common)
        if own:
            only_here = Query.boolean_query([(Occur.Should, query) for query in own])
            clauses.append((Occur.Should, only(only_here, language)))
    return Query.boolean_query(clauses)


def _take(groups: list[tuple[Hashable, list[Query]]], common: Counter[Hashable]) -> tuple[list[Query], list[Query]]:
    """The clauses of `groups` whose keys `common` counts (as many times as it
    counts each: a repeated word counts twice), and the others."""
    left = common.copy()
    taken: list[Query] = []
    rest: list[Query] = []
    for key, group in groups:
        if left[key] > 0:
            left[key] -= 1
            taken.extend(group)
        else:
            rest.extend(group)
    return taken, rest


def in_language(query: Query, language: str, schema: tantivy.Schema, others: Sequence[str] = ()) -> Query:
    """`query` over the notes of one language: the filter adds nothing to the score.

    `others`: every other language a note may be in, for a language most
    notes are in: "in none of those" selects the same notes, and Tantivy
    skips the few notes a short list names faster than it checks a long list
    for each candidate. On the 50,000-note bench vault (42,553 French notes,
    7,447 English), the French plan's part excluding the English notes
    instead of requiring French ones: a query 2.28 → 1.99-2.05 ms."""
    if others:
        excluded = [(Occur.MustNot, Query.term_query(schema, LANGUAGE_FIELD, other)) for other in others]
        return Query.boolean_query([(Occur.Must, query), *excluded])
    only = Query.const_score_query(Query.term_query(schema, LANGUAGE_FIELD, language), 0.0)
    return Query.boolean_query([(Occur.Must, only), (Occur.Must, query)])


def build_query(
    plan: QueryPlan,
    schema: tantivy.Schema,
    ranking: RankingConfig,
    absent_stems: frozenset[str],
    common_words: frozenset[str] = frozenset(),
) -> Query:
    """Ranked query: every word optional (more matched words rank higher),
    quoted phrases required, excluded words and phrases removed.

    `absent_stems`: query stems that occur in no note. Only those words are
    also matched at one typo: a word that matches something needs no typo
    tolerance, and a fuzzy clause costs more than every other clause together.
    The plan's language picks the measured defaults of the exact-form and
    proximity boosts (LANGUAGE_BOOSTS)."""
    must = [_exact(unit, schema) for unit in plan.units if unit.phrase and not unit.excluded]
    must_not = [_exact(unit, schema) for unit in plan.units if unit.excluded]
    groups = _ranked_clauses(plan, schema, ranking, absent_stems, common_words)
    should = [query for _, group in groups for query in group]
    # One flat boolean query, every word's options side by side: the same matches
    # and scores as one nested query per word (scores add up either way), faster.
    # Without a required phrase, a note must match at least one Should clause.
    clauses = [(Occur.Must, q) for q in must] + [(Occur.MustNot, q) for q in must_not]
    clauses += [(Occur.Should, q) for q in should]
    if not must and not should:
        clauses.append((Occur.Must, Query.all_query()))
    return Query.boolean_query(clauses)


def _ranked_clauses(
    plan: QueryPlan,
    schema: tantivy.Schema,
    ranking: RankingConfig,
    absent_stems: frozenset[str],
    common_words: frozenset[str] = frozenset(),
) -> list[tuple[Hashable, list[Query]]]:
    """The plan's optional (Should) clauses, in groups keyed by all that makes
    them: two plans' groups of equal keys are the same clauses (build_query_across)."""
    plain_only = plan.stop_words_only
    typos = typo_forms(plan, absent_stems)
    free = [t for u in plan.units if not u.excluded and not u.phrase for t in u.terms]  # unquoted, not excluded
    groups: list[tuple[Hashable, list[Query]]] = []
    for term in free:
        is_prefix, typo = term is plan.prefix, term.plain in typos
        word: Hashable = ("word", term.stem, term.plain, is_prefix, plain_only, typo)
        groups.append((word, _word(term, schema, ranking, is_prefix, plain_only, typo)))
    if not plain_only:
        content = [t.plain for t in free if t.stem is not None]
        boosts = language_boosts(ranking, plan.language)
        common = frozenset(common_words.intersection(content))
        clauses = _form_and_proximity(content, schema, boosts, common)
        groups.append((("form", boosts, tuple(content), common), clauses))
    plain_words: list[str | tuple[int, str]] = [t.plain for t in free]
    if len(plain_words) >= 2 and ranking.phrase_boost > 0:
        phrase = Query.phrase_query(schema, "plain", plain_words)
        groups.append((("phrase", tuple(plain_words)), [Query.boost_query(phrase, ranking.phrase_boost)]))
    stems = [t for t in free if t.stem is not None]
    named = _name_holds_every_word(stems, schema)
    if named is not None and ranking.name_words_boost > 0:
        groups.append((("names", tuple(t.stem for t in stems)), [Query.boost_query(named, ranking.name_words_boost)]))
    return groups


def _name_holds_every_word(terms: list[Term], schema: tantivy.Schema) -> Query | None:
    """Every word (two at least, stop words aside; the word being typed as it stands) in
    the note's title, file name or an alias, in any order: "style guide" names
    *Guide de style* as much as a note that says "guide" and "style" often."""
    if len(terms) < 2:
        return None
    names = ("title", "file_name", "aliases")
    each = [
        (Occur.Must, Query.boolean_query([(Occur.Should, Query.term_query(schema, f, t.stem)) for f in names]))
        for t in terms
    ]
    return Query.boolean_query(each)


def _form_and_proximity(
    words: list[str], schema: tantivy.Schema, boosts: LanguageBoosts, common: frozenset[str] = frozenset()
) -> list[Query]:
    """The words (unquoted, stop words aside) as written, on the plain field
    on top of their stems, and each pair of consecutive words found near each
    other; `common` (words most notes hold) not as written, nor a pair of two."""
    clauses: list[Query] = []
    if boosts.exact_form > 0:
        # A repeated word counts twice, as its stem clause does.
        clauses.extend(
            Query.boost_query(Query.term_query(schema, "plain", word), boosts.exact_form)
            for word in words
            if word not in common
        )
    if boosts.proximity > 0:
        for first, second in itertools.pairwise(words):
            if first in common and second in common:
                continue
            near = Query.phrase_query(schema, "plain", [first, second], PROXIMITY_SLOP)
            clauses.append(Query.boost_query(near, boosts.proximity))
    return clauses


def build_filter_terms(plan: QueryPlan, schema: tantivy.Schema) -> list[tuple[Occur, Query]]:
    """Strict form for the feed: every word must really occur (no typo, no prefix)."""
    clauses: list[tuple[Occur, Query]] = []
    plain_only = plan.stop_words_only
    for unit in plan.units:
        if unit.phrase or unit.excluded:
            clauses.append((Occur.MustNot if unit.excluded else Occur.Must, _exact(unit, schema)))
            continue
        for term in unit.terms:
            if term.stem is None and not plain_only:
                continue
            clauses.append((Occur.Must, _term(schema, term, plain_only)))
    return clauses


def exclusions(plans: Sequence[QueryPlan], schema: tantivy.Schema) -> list[Query]:
    """The query's excluded words and phrases (a hit may hold none of them),
    their stems in each language the query was analysed in."""
    return [_exact(unit, schema) for plan in plans for unit in plan.units if unit.excluded]


def _term(schema: tantivy.Schema, term: Term, plain: bool) -> Query:
    if plain or term.stem is None:
        return Query.term_query(schema, "plain", term.plain)
    return Query.term_query(schema, "text", term.stem)


def _exact(unit: Unit, schema: tantivy.Schema) -> Query:
    """A phrase (or a single word) as written, on the unstemmed field."""
    if len(unit.terms) == 1:
        term = unit.terms[0]
        if term.stem is not None and not unit.phrase:
            return Query.term_query(schema, "text", term.stem)
        return Query.term_query(schema, "plain", term.plain)
    words: list[str | tuple[int, str]] = [t.plain for t in unit.terms]
    return Query.phrase_query(schema, "plain", words)


def _word(
    term: Term,
    schema: tantivy.Schema,
    ranking: RankingConfig,
    is_prefix: bool,
    plain_only: bool,
    typo: bool,
) -> list[Query]:
    """The word's alternatives (Should clauses): its stem in each field, a typo, a prefix."""
    if term.stem is None:
        # A stop word only counts when the whole query is stop words ("to be or not to be").
        base = Query.term_query(schema, "plain", term.plain) if plain_only else None
        options: list[Query] = [base] if base is not None else []
    else:
        options = [Query.term_query(schema, "text", term.stem)]
        for field_name, boost in (
            ("title", ranking.title_boost),
            ("file_name", ranking.file_name_boost),
            ("aliases", ranking.aliases_boost),
            ("headings", ranking.headings_boost),
        ):
            if boost > 0:
                options.append(Query.boost_query(Query.term_query(schema, field_name, term.stem), boost))
        if typo and ranking.fuzzy_weight > 0:
            fuzzy = Query.fuzzy_term_query(schema, "plain", term.plain, distance=1, transposition_cost_one=True)
            options.append(Query.boost_query(fuzzy, ranking.fuzzy_weight))
    if is_prefix and ranking.prefix_weight > 0:
        prefix = Query.phrase_prefix_query(schema, "plain", [term.plain])
        options.append(Query.boost_query(prefix, ranking.prefix_weight))
    # A word that can match nothing still counts as a clause: a query of an
    # exclusion and a stop word ("-x le") finds nothing, as it always did.
    return options or [Query.empty_query()]
