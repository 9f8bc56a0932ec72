"""Where a place of a note's plain text is in its file (notes/location.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from notarium_search.notes.location import heading_path, line_and_column, pack, unpack
from notarium_search.notes.parse import parse_note
from tests.conftest import PROJECT_ROOT

WHEN = datetime(2024, 1, 1, tzinfo=UTC)


def place(markdown: str, word: str) -> tuple[tuple[int, int] | None, tuple[str, ...]]:
    note = parse_note(markdown, "n.md", WHEN)
    at = note.text.index(word)
    return line_and_column(unpack(pack(note.lines)), at), heading_path(note.sections, at)  # as stored


def test_lines_count_in_the_file_as_saved_frontmatter_included():
    text = "---\ntitle: T\ntags: [a, b]\n---\nPremière ligne.\n\nDeuxième paragraphe ici.\n"
    assert place(text, "Deuxième") == ((7, 1), ())


def test_columns_stay_exact_after_markup_on_the_line():
    text = "Le **registre** [[Prestataires|des tiers]] et `code` puis *fin*.\n"
    for word in ("registre", "des tiers", "code", "fin"):
        where, _ = place(text, word)
        assert where is not None
        line, column = where
        assert line == 1
        assert text.splitlines()[0][column - 1 :].startswith(word.split()[0]), word


def test_headings_nest_and_close_by_level():
    text = "# A\n\n### A3\n\nun\n\n## B\n\ndeux\n\n# C\n\ntrois\n"
    assert place(text, "un")[1] == ("A", "A3")
    assert place(text, "deux")[1] == ("A", "B")  # B closes A3, stays under A
    assert place(text, "trois")[1] == ("C",)


def test_a_hash_in_code_is_not_a_heading_and_crlf_counts_as_one_line():
    text = "# Vrai\r\n\r\n```\r\n# faux\r\nici\r\n```\r\n"
    assert place(text, "ici") == ((5, 1), ("Vrai",))


def test_a_line_the_plain_text_rewrites_takes_the_nearest_line_before():
    # `[[Cible]]` alone is shown as "Cible": found; a table rule has no word at all.
    text = "Avant.\n\n| a | b |\n|---|---|\n| un | deux |\n\nAprès.\n"
    assert place(text, "deux")[0] == (5, 8)
    assert place(text, "Après")[0] == (7, 1)


# -- each line tied to its own place in the plain text (issue 29, item 3) --------------------


def test_a_wrapped_line_that_starts_with_an_elision_is_placed_on_its_own_words():
    # "qu" was found in the previous line's "qui": every word of line 12 was 53 columns off
    # (the sample vault's zettel/agent-sans-api.md: `interopérabilité` reported at 12:93, not 12:40).
    text = (PROJECT_ROOT / "docs/sample-vault/carnet/zettel/agent-sans-api.md").read_text(encoding="utf-8")
    assert place(text, "interopérabilité") == ((12, 40), ("L'agent sans API est aveugle",))
    assert place(text, "qu'on")[0] == (12, 1)


def test_a_callout_title_is_placed_on_its_line():
    # The callout's type was the line's first word, which the plain text does not hold: the
    # title took the place of the line before (the sample vault: 11:61 for line 13).
    text = (PROJECT_ROOT / "docs/sample-vault/carnet/zettel/protocoles-ouverts.md").read_text(encoding="utf-8")
    assert place(text, "Interopérabilités") == ((13, 11), ("Protocoles ouverts",))
    assert place(text, "interopérabilités techniques")[0] == (14, 7)


@pytest.mark.parametrize(
    ("text", "word", "expected"),
    [
        # Prose wrapped at a word the previous line also holds, after its first word.
        ("Le chat de la voisine que je garde\nque tu connais.\n", "tu connais", (2, 5)),
        ("Une ligne avec des mots\ndes mots encore ici.\n", "encore", (2, 10)),
        # An ordered list's number is not in the plain text ("10" was found in "2010").
        ("En 2010 il y a eu ceci\n10. Dix choses\n", "choses", (2, 9)),
        # An HTML tag's name is not shown (it was found as the end of "microprocessor").
        ("Avant\n<processor> A RISC microprocessor.\n", "RISC", (2, 15)),
        # A wiki-link's target is not shown when it has an alias.
        ("Une note\n[[lectures/dora|le règlement DORA]] est là.\nMes lectures.\n", "règlement", (2, 20)),
        # Nor is a tag's attribute (`i` is no word: "id" was the line's first word, found further on).
        ('Avant\n<i id="x"></i> Texte avec un id ici.\n', "Texte", (2, 16)),
        # A code fence's info string is not shown ("js" was found in "circle.js").
        ("Voir:\n\n```js\nconst c = require('./circle.js');\n```\n", "const", (4, 1)),
    ],
)
def test_each_line_is_placed_on_its_own_words(text, word, expected):
    assert place(text, word)[0] == expected


def test_a_comment_line_is_not_tied_to_the_same_words_further_on():
    # The comment's "Notes" was taken for the last line's: the heading and every line before
    # that one were reported on line 2, the comment's.
    prose = "Une phrase assez longue pour remplir la ligne de texte courant.\n" * 4
    text = f"<!--\nNotes de version\n-->\n\n# Projet\n\n{prose}Notes sur le projet.\n"
    assert place(text, "Projet") == ((5, 3), ("Projet",))
    assert place(text, "Une phrase")[0] == (7, 1)
    assert place(text, "Notes sur")[0] == (11, 1)


def test_a_tag_in_a_fenced_code_block_is_shown_as_is():
    # The code is in the plain text as written: its tags' words are placed where they are.
    text = 'Texte.\n\n```html\n<a href="x">lien</a> ici\n```\n'
    assert place(text, "href")[0] == (4, 4)
