"""Where a place of a note's plain text is in its file (notes/location.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from notarium_search.notes.location import heading_path, line_and_column, pack, unpack
from notarium_search.notes.parse import parse_note

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
