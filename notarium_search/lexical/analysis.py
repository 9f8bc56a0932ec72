"""Tantivy text analyzers, per space language.

Tantivy does not persist custom tokenizers: `register_analyzers` must run on
every open of an index, before any search or write.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import tantivy
from tantivy import Filter, TextAnalyzerBuilder, Tokenizer

MAX_TOKEN_CHARS = 40  # longer "words" are hashes, base64 or URLs: noise in BM25
_SNOWBALL = {"fr": "french", "en": "english"}


@dataclass(frozen=True, slots=True)
class Analyzers:
    """The two analyzers of a language and the names a schema refers to them by."""

    language: str
    stemmed_name: str
    plain_name: str
    stemmed: tantivy.TextAnalyzer
    """lowercase → stop words → ascii_fold → Snowball stemmer: the BM25 field.
    Stop words are removed before folding because the lists are accented;
    folding before stemming makes `interopérabilité`, `interoperabilite` and
    `Interopérabilités` one term."""
    plain: tantivy.TextAnalyzer
    """lowercase → ascii_fold, every word kept: exact phrases, prefixes, typos
    and queries made only of stop words."""


# The plain analyzer's chain without its length limit, for folding single
# characters and words the way the index does (snippets.py): kept beside the
# chains it must agree with.
FOLD = TextAnalyzerBuilder(Tokenizer.simple()).filter(Filter.lowercase()).filter(Filter.ascii_fold()).build()


@cache
def analyzers(language: str) -> Analyzers:
    snowball = _SNOWBALL[language]
    stemmed = (
        TextAnalyzerBuilder(Tokenizer.simple())
        .filter(Filter.remove_long(MAX_TOKEN_CHARS))
        .filter(Filter.lowercase())
        .filter(Filter.stopword(snowball))
        .filter(Filter.ascii_fold())
        .filter(Filter.stemmer(snowball))
        .build()
    )
    plain = (
        TextAnalyzerBuilder(Tokenizer.simple())
        .filter(Filter.remove_long(MAX_TOKEN_CHARS))
        .filter(Filter.lowercase())
        .filter(Filter.ascii_fold())
        .build()
    )
    return Analyzers(language, f"notarium_{language}", "notarium_plain", stemmed, plain)


def register_analyzers(index: tantivy.Index, language: str) -> Analyzers:
    found = analyzers(language)
    index.register_tokenizer(found.stemmed_name, found.stemmed)
    index.register_tokenizer(found.plain_name, found.plain)
    return found
