"""The typo rule (lexical/typos.py), over a real Tantivy index: a query none of
whose words is in any note is as likely a made-up word as a misspelt one, so
only its longer words are matched at one typo (issue 29: 20 of the stray
answers to made-up words on a held-out collection were one-typo matches)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from notarium_search.lexical import analysis
from notarium_search.lexical.query import plan_query
from notarium_search.lexical.typos import FUZZY_MIN_CHARS_ALL_UNKNOWN, typo_forms
from notarium_search.service import Service
from notarium_search.types import FeedFilter
from tests.conftest import Vault, ids

NO_FILTER = FeedFilter()
EN = analysis.analyzers("en")


def stems(text: str) -> frozenset[str]:
    return frozenset(t.stem for t in plan_query(text, EN).positive if t.stem is not None)


@pytest.fixture
def crazy(vault: Vault) -> Iterator[Service]:
    vault.write("c.md", "---\nid: crazy\n---\nIt would be crazy to rewrite the compiler.\n", space="en-notes")
    vault.write("t.md", "---\nid: tomatoes\n---\nRipe tomatoes from the garden.\n", space="en-notes")
    service = vault.service()
    yield service
    service.stop()


def test_a_short_made_up_word_alone_finds_nothing_through_a_typo(crazy: Service):
    # "grazy" is one edit from "crazy": a made-up word, not a typo.
    assert ids(crazy.search("en-notes", "grazy ", NO_FILTER, 10)) == []
    assert ids(crazy.search("en-notes", "grazy vobul ", NO_FILTER, 10)) == []


def test_a_short_misspelt_word_beside_a_known_one_is_still_forgiven(crazy: Service):
    assert ids(crazy.search("en-notes", "compiler grazy ", NO_FILTER, 10)) == ["crazy"]


def test_a_long_misspelt_word_alone_is_still_forgiven(crazy: Service):
    assert ids(crazy.search("en-notes", "tomatoez ", NO_FILTER, 10)) == ["tomatoes"]


def test_the_rule_demands_more_letters_only_when_every_word_is_unknown():
    alone = plan_query("grazy", EN)
    assert typo_forms(alone, stems("grazy")) == frozenset()
    beside = plan_query("compiler grazy", EN)
    assert typo_forms(beside, stems("grazy")) == {"grazy"}
    long_word = "x" * FUZZY_MIN_CHARS_ALL_UNKNOWN
    assert typo_forms(plan_query(long_word, EN), stems(long_word)) == {long_word}
    # Stop words are neither known nor unknown words: "the grazy" is still all unknown.
    assert typo_forms(plan_query("the grazy", EN), stems("the grazy")) == frozenset()
