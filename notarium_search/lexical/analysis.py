"""Tantivy text analyzers, per space language.

Tantivy does not persist custom tokenizers: `register_analyzers` must run on
every open of an index, before any search or write.
"""

from __future__ import annotations

from functools import cache

import msgspec
import tantivy
from tantivy import Filter, TextAnalyzerBuilder, Tokenizer

MAX_TOKEN_CHARS = 40  # longer "words" are hashes, base64 or URLs: noise in BM25
# settings.LANGUAGES → Tantivy's Snowball stemmer (and stop word list) names.
SNOWBALL = {
    "fr": "french",
    "en": "english",
    "ar": "arabic",
    "da": "danish",
    "de": "german",
    "el": "greek",
    "es": "spanish",
    "fi": "finnish",
    "hu": "hungarian",
    "it": "italian",
    "nl": "dutch",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
}
# Tantivy has no stop word list for these: every word is kept in the BM25 field.
NO_STOP_WORDS = frozenset({"ar", "el", "ro", "ta", "tr"})
# Folded before stemming (measured in French: docs/ranking.md; English has
# hardly any accents). Other languages are stemmed first, as their Snowball
# stemmers are written for accented words: Spanish "corrió" stems to "corr",
# as "correr" does, and folded first to "corri".
FOLD_BEFORE_STEMMING = frozenset({"fr", "en"})
# Words dropped from the BM25 field besides Tantivy's stop word lists: how a
# question is asked ("combien", "what", "does"), and the elided forms the
# tokenizer leaves ("jusqu'à" → "jusqu", "à"). Rare in notes, so each one that
# occurs gets a high idf and lifts whatever note happens to contain it. Measured
# (docs/ranking.md, nDCG@10, multilingual-e5-small vectors unchanged): lexical
# channel alone piaf-fr 0.8131 → 0.8144, cranfield 0.3836 → 0.3892; hybrid
# 0.8511 → 0.8517 and 0.4078 → 0.4103. Snowball's whole English list instead:
# 0.3849 lexical; interrogatives alone ("what … where") 0.3863; French elisions
# alone 0.8130; "est" (also "east") left out: with it 0.8146.
# A query made only of such words still matches on the unstemmed field.
QUESTION_WORDS = {  # lowercase and unaccented: the filter runs before folding
    "fr": (  # noqa: SIM905
        "combien comment pourquoi quand quoi lequel laquelle lesquels lesquelles jusqu lorsqu puisqu quoiqu presqu"
    ).split(),
    "en": (  # noqa: SIM905
        "what which who whom whose how why when where does do did can could would should been being have has had"
        " must may might"
    ).split(),
}


# The raw field holding the language a note's words were analysed in.
LANGUAGE_FIELD = "lang"
# A space of several languages (`language = "auto"`) has its notes' stems
# made in Python, each note by its own language's analyzer, and written as
# words this tokenizer only splits: a Tantivy field has one analyzer. One
# field for every language, not one per language (text_fr, text_en): Tantivy
# counts a field's average length and its terms' idf over every note, so in
# fields of their own the French notes of piaf-fr and cranfield together
# looked 2.8 times longer than average, and piaf-fr lost 0.013 nDCG@10
# (docs/ranking.md, "Languages of the notes"). 0.08 ms a note of 1,000 characters.
STEMS_TOKENIZER = "notarium_stems"
STEMS = TextAnalyzerBuilder(Tokenizer.whitespace()).build()


class Analyzers(msgspec.Struct, frozen=True):
    """The two analyzers of a language and the names a schema refers to them by."""

    language: str
    stemmed_name: str
    plain_name: str
    stemmed: tantivy.TextAnalyzer
    """lowercase → stop words (and QUESTION_WORDS) → ascii_fold → Snowball stemmer: the BM25 field.
    Stop words are removed before folding because the lists are accented;
    folding before stemming makes `interopérabilité`, `interoperabilite` and
    `Interopérabilités` one term. Outside FOLD_BEFORE_STEMMING, the stemmer
    comes before the folding; no stop words where Tantivy has no list."""
    plain: tantivy.TextAnalyzer
    """lowercase → ascii_fold, every word kept: exact phrases, prefixes, typos
    and queries made only of stop words."""


# The plain analyzer's chain without its length limit, for folding single
# characters and words the way the index does (word_matches.py): kept beside the
# chains it must agree with.
FOLD = TextAnalyzerBuilder(Tokenizer.simple()).filter(Filter.lowercase()).filter(Filter.ascii_fold()).build()


@cache
def analyzers(language: str) -> Analyzers:
    snowball = SNOWBALL[language]
    builder = TextAnalyzerBuilder(Tokenizer.simple()).filter(Filter.remove_long(MAX_TOKEN_CHARS))
    builder = builder.filter(Filter.lowercase())
    if language not in NO_STOP_WORDS:
        builder = builder.filter(Filter.stopword(snowball))
    if QUESTION_WORDS.get(language):
        builder = builder.filter(Filter.custom_stopword(QUESTION_WORDS[language]))
    if language in FOLD_BEFORE_STEMMING:
        builder = builder.filter(Filter.ascii_fold()).filter(Filter.stemmer(snowball))
    else:
        builder = builder.filter(Filter.stemmer(snowball)).filter(Filter.ascii_fold())
    stemmed = builder.build()
    plain = (
        TextAnalyzerBuilder(Tokenizer.simple())
        .filter(Filter.remove_long(MAX_TOKEN_CHARS))
        .filter(Filter.lowercase())
        .filter(Filter.ascii_fold())
        .build()
    )
    return Analyzers(language, f"notarium_{language}", "notarium_plain", stemmed, plain)


def register_analyzers(index: tantivy.Index, languages: tuple[str, ...]) -> None:
    index.register_tokenizer(STEMS_TOKENIZER, STEMS)
    for language in languages:
        found = analyzers(language)
        index.register_tokenizer(found.stemmed_name, found.stemmed)
        index.register_tokenizer(found.plain_name, found.plain)
