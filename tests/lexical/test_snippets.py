"""Snippets and their highlights, with the real French analyzers (and a real index where it matters)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from notarium_search.lexical import analysis
from notarium_search.lexical.query import plan_query
from notarium_search.lexical.snippets import located, make_snippets
from notarium_search.lexical.word_matches import (
    MAX_CANDIDATES,
    MAX_MATCHES,
    MAX_SCAN_CHARS,
    SCAN_CHUNK_CHARS,
    HighlightTerms,
    find_matches,
    fold,
)
from notarium_search.notes.location import pack
from notarium_search.notes.parse import parse_note
from notarium_search.types import FeedFilter, Snippet
from tests.conftest import Vault

FR = analysis.analyzers("fr")
WHEN = datetime(2024, 1, 1, tzinfo=UTC)


def terms_for(query: str, absent: frozenset[str] = frozenset()) -> HighlightTerms:
    """`absent`: the query stems no note holds (typos, a word being typed)."""
    return HighlightTerms.from_plan(plan_query(query, FR), absent)


def marked(snippet: Snippet) -> list[str]:
    return [snippet.text[r.start : r.end] for r in snippet.highlights]


def highlighted(text: str, query: str, absent: frozenset[str] = frozenset()) -> list[str]:
    return [word for snippet in make_snippets(text, terms_for(query, absent), FR) for word in marked(snippet)]


# -- letters the index folds to several (œ → oe) or to one it does not decompose (ø → o) --


@pytest.mark.parametrize(
    ("text", "query", "expected"),
    [
        ("La mise en œuvre du projet.", "œuvre", ["œuvre"]),
        ("La mise en œuvre du projet.", "oeuvre", ["œuvre"]),
        ("Les ŒUVRES COMPLÈTES.", "oeuvres", ["ŒUVRES"]),
        ("Mon cœur bat.", "cœur", ["cœur"]),
        ("Mon cœur bat.", "coeur", ["cœur"]),
        ("Avant la mise en œuvre du projet.", '"la mise en œuvre"', ["mise", "œuvre"]),
        ("Ses deux sœurs.", "sœurs", ["sœurs"]),
        ("Classés ex æquo.", "ex aequo", ["ex", "æquo"]),
        ("Die Straße ist lang.", "straße", ["Straße"]),
        ("Die Straße ist lang.", "strasse", ["Straße"]),
        ("La ﬁn du ﬁlm.", "fin", ["ﬁn"]),
        ("Søren Kierkegaard", "soren", ["Søren"]),
        ("Ðorđe et Łódź", "dorde lodz", ["Ðorđe", "Łódź"]),
    ],
)
def test_letters_tantivy_folds_apart_are_highlighted(text, query, expected):
    assert highlighted(text, query) == expected


def test_a_word_being_typed_or_mistyped_over_a_ligature_is_highlighted():
    assert highlighted("Mise en œuvre.", "oeu", absent=frozenset({"oeu"})) == ["œuvre"]
    assert highlighted("Mise en œuvre.", "œu", absent=frozenset({"oeu"})) == ["œuvre"]
    # A query none of whose words is in a note is matched at one typo from 7 letters (lexical/typos.py).
    assert highlighted("Mise en œuvre.", "oeuvrre", absent=frozenset({"oeuvrr"})) == ["œuvre"]  # stem oeuvrr
    assert highlighted("Mise en œuvre.", "mise oeuvrr", absent=frozenset({"oeuvrr"})) == ["Mise", "œuvre"]


def test_ligature_words_are_highlighted_across_scan_chunks():
    # The note is scanned SCAN_CHUNK_CHARS at a time: a word may start in one chunk
    # and hold its œ in the next. Each must be found once, at its place.
    for start in range(SCAN_CHUNK_CHARS - 5, SCAN_CHUNK_CHARS + 2):
        text = "x" * (start - 1) + " manœuvre puis cœur"
        matches = find_matches(text, terms_for("manœuvre cœur"), FR)
        assert [(m.start, m.end) for m in matches] == [(start, start + 8), (start + 14, start + 18)], start


def test_ligature_words_that_cannot_match_do_not_use_the_candidate_budget():
    text = "Le cœur. " * (MAX_CANDIDATES + 500) + "Enfin la lune."
    assert highlighted(text, "lune") == ["lune"]


def test_fold_agrees_with_the_index_tokenizer():
    """The folded copy's words are the index's tokens at the same offsets, spelt the
    same when each letter folds to one ASCII letter or digit."""
    blocks = [
        (0x20, 0x250),  # ASCII, Latin-1, Latin Extended A and B (ǧ folds to an uppercase G)
        (0x300, 0x3D0),  # combining marks (some are letters to Tantivy), Greek
        (0x400, 0x450),  # Cyrillic
        (0x1E00, 0x1F00),  # Latin Extended Additional
        (0x2070, 0x2190),  # super- and subscripts, letterlike symbols, Roman numerals
        (0x2460, 0x2500),  # enclosed alphanumerics (⑴ folds to "(1)")
        (0xFB00, 0xFB07),  # ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ
        (0xFF10, 0xFF5B),  # full-width letters and digits
    ]
    letters = "".join(chr(c) for low, high in blocks for c in range(low, high))
    text = " ".join(letters[i : i + 7] for i in range(0, len(letters), 7)) + " ﬁn ĳs 字 🎉 x_y"
    folded = fold(text)
    assert len(folded) == len(text)
    words: list[tuple[int, int, str]] = []
    start = None
    for i, char in enumerate(folded + " "):
        if char == " " and start is not None:
            words.append((start, i, folded[start:i]))
            start = None
        elif char != " " and start is None:
            start = i
    tokens = FR.plain.pre_tokenize(text).tokens
    assert [(w[0], w[1]) for w in words] == [(t.char_offset_from, t.char_offset_to) for t in tokens]
    for (_, _, word), token in zip(words, tokens, strict=True):
        if word.isascii():
            assert word == token.text


def test_fold_is_its_own_fold():
    # The codec's replacements for non-Latin-1 letters go through the byte table again.
    text = "cœur γάτα Straße þorn ª µ ½ ﬁn"
    assert fold(fold(text)) == fold(text)


def test_fold_takes_a_lone_surrogate_for_a_separator():
    assert fold("a\ud800b") == "a b"


def test_greek_and_cyrillic_words_are_not_candidates_for_an_ascii_query():
    text = "Η γάτα κοιμάται. " * MAX_CANDIDATES + "Кошка спит. Enfin la lune."
    assert highlighted(text, "lune") == ["lune"]


# -- offsets are code points --


def test_highlights_after_an_emoji_and_accents(vault: Vault):
    vault.write("e.md", "---\nid: emoji\ntitle: Fête\n---\nCafé 🎉 éé — l'été arrive.\n")
    service = vault.service()
    try:
        snippet = service.search("notes", "été", FeedFilter(), 10).results[0].snippets[0]
    finally:
        service.stop()
    assert snippet.text == "Café 🎉 éé — l'été arrive."
    assert [(r.start, r.end) for r in snippet.highlights] == [(14, 17)]
    assert marked(snippet) == ["été"]
    assert snippet.html == "Café 🎉 éé — l&#x27;<mark>été</mark> arrive."


# -- a note with a title and no body --


def test_a_blank_text_falls_back_to_the_title():
    (snippet,) = make_snippets("", terms_for("œuvre"), FR, fallback="Mise en œuvre")
    assert snippet.text == "Mise en œuvre"
    assert marked(snippet) == ["œuvre"]
    assert snippet.html == "Mise en <mark>œuvre</mark>"
    (unmatched,) = make_snippets(" \n", terms_for("lune"), FR, fallback="Mise en œuvre")
    assert unmatched.text == "Mise en œuvre"
    assert unmatched.highlights == ()


def test_no_snippet_without_text_or_title():
    assert make_snippets("", terms_for("lune"), FR) == ()
    assert make_snippets("", terms_for("lune"), FR, fallback="  ") == ()


def test_the_fallback_is_unused_when_the_note_has_text():
    (snippet,) = make_snippets("La lune.", terms_for("lune"), FR, fallback="Titre")
    assert snippet.text == "La lune."


# -- the section a hit opens at (issue 29, item 3; end to end: test_where_a_hit_opens.py) --


def test_a_heading_equal_to_the_query_wins_even_past_the_bound_on_matches():
    # More than MAX_MATCHES matches of its words before it: the heading's words were never found.
    body = "Rename a note: you can delete a note or keep the note. " * MAX_MATCHES
    note = parse_note(f"# Notes\n\n{body}\n\n## Delete a note\n\nGone.\n", "n.md", WHEN)
    snippets = make_snippets(note.text, terms_for("delete a note"), FR, sections=note.sections)
    (first, *_) = located(snippets, note.sections, pack(note.lines))
    assert first.heading == ("Notes", "Delete a note")
    assert (first.line, first.column) == (5, 4)
    assert marked(first)[0] == "Delete"


def test_a_heading_equal_to_the_query_wins_even_past_the_scanned_characters():
    # Highlights are looked for in the first MAX_SCAN_CHARS only: a heading after them was never
    # compared with the query (the Node.js docs' buffer.md: 9.5 % of its headings typed as is).
    filler = "Du texte sans rapport avec la question posée ici. " * (MAX_SCAN_CHARS // 50 + 10)
    note = parse_note(f"# Notes\n\nUne note à supprimer.\n\n{filler}\n\n## Supprimer une note\n\nFini.\n", "n.md", WHEN)
    snippets = make_snippets(note.text, terms_for("supprimer une note"), FR, sections=note.sections)
    (first, *_) = located(snippets, note.sections, pack(note.lines))
    assert first.heading == ("Notes", "Supprimer une note")
    assert (first.line, first.column) == (7, 4)


def test_an_excerpt_starts_within_the_section_of_its_first_match():
    # The window opened LEAD_CHARS before "lune", in the section before, whose "mer" matched
    # too: the excerpt's place (its first match) was in that section.
    note = parse_note("# Mer\n\nLa mer est calme.\n\n# Lune\n\nLa lune et la mer.\n", "n.md", WHEN)
    snippets = make_snippets(note.text, terms_for("lune mer"), FR, sections=note.sections)
    (first, *_) = located(snippets, note.sections, pack(note.lines))
    assert first.heading == ("Lune",)
    assert first.text.startswith("…Lune")
    assert first.line == 5


def test_the_last_word_is_highlighted_as_a_prefix_even_when_a_note_holds_it_whole():
    # The query matches it as a prefix in every case (lexical/query.py): so do the highlights.
    assert highlighted("Nous utilisons PostgreSQL et postgres.", "postgres") == ["PostgreSQL", "postgres"]
    # Both are the same query word: an excerpt holding both has one distinct word, not two.
    terms = terms_for("postgres")
    assert {m.key for m in find_matches("PostgreSQL et postgres", terms, FR)} == {terms.keys[0]}
