"""Fragments for embedding: a pure function over parsed notes."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from notarium_search.notes.parse import parse_note
from notarium_search.semantic.chunking import (
    MIN_FRAGMENT_CHARS,
    OVERLAP_CHARS,
    TARGET_CHARS,
    chunk_note,
)

MTIME = datetime(2024, 1, 1, tzinfo=UTC)


def chunks(markdown: str, rel_path: str = "n.md"):
    return chunk_note(parse_note(markdown, rel_path, MTIME))


def paragraph(i: int, length: int = 300) -> str:
    words = f"Paragraphe {i} sur la gestion des risques numériques et la résilience. "
    return (words * (length // len(words) + 1))[:length].rsplit(" ", 1)[0] + "."


def test_short_note_is_one_fragment_with_title_context():
    (fragment,) = chunks("---\ntitle: L'agent sans API est aveugle\n---\nUn agent sans API ne voit rien.\n")
    assert fragment.text == "Un agent sans API ne voit rien."
    assert fragment.embed_text == "L'agent sans API est aveugle\nUn agent sans API ne voit rien."


def test_tiny_fragments_are_dropped():
    assert chunks("---\ntitle: T\n---\nok\n") == ()
    assert all(len(f.text) >= MIN_FRAGMENT_CHARS for f in chunks("# T\n\nVoir.\n\n" + paragraph(1)))


def test_paragraphs_are_packed_to_the_target_with_overlap():
    body = "\n\n".join(paragraph(i) for i in range(12))  # ~3,600 characters
    fragments = chunks(f"---\ntitle: Long\n---\n{body}\n")
    assert 3 <= len(fragments) <= 6
    for fragment in fragments:
        assert len(fragment.text) <= TARGET_CHARS + OVERLAP_CHARS + 50
    for first, second in itertools.pairwise(fragments):
        overlap = first.end - second.start
        assert 0 < overlap <= OVERLAP_CHARS + 1  # the next fragment repeats the end of the previous one
    note_text = parse_note(f"---\ntitle: Long\n---\n{body}\n", "n.md", MTIME).text
    assert fragments[0].start == 0
    assert fragments[-1].end == len(note_text)  # nothing lost at the end


def test_long_paragraph_is_split_at_sentence_ends():
    sentence = "La résilience opérationnelle est une exigence du règlement. "
    body = sentence * 60  # one 3,600-character paragraph
    fragments = chunks(f"---\ntitle: T\n---\n{body}\n")
    assert len(fragments) >= 3
    for fragment in fragments[:-1]:
        assert fragment.text.endswith("règlement.")


def test_sentence_longer_than_target_is_cut_at_words():
    body = " ".join(f"mot{i}" for i in range(800))  # no sentence end at all
    fragments = chunks(f"---\ntitle: T\n---\n{body}\n")
    assert len(fragments) >= 4
    for fragment in fragments:
        assert not fragment.text.startswith("ot")  # cut between words
        assert len(fragment.text) <= TARGET_CHARS + OVERLAP_CHARS + 50


def test_code_block_is_never_split():
    code = "\n".join(f"def fonction_{i}(x):\n\n    return x + {i}" for i in range(80))  # blank lines inside
    text = f"---\ntitle: Code\n---\n{paragraph(1)}\n\n```python\n{code}\n```\n\n{paragraph(2)}\n"
    fragments = chunks(text)
    holding = [f for f in fragments if "def fonction_0" in f.text]
    assert len(holding) == 1
    assert "return x + 79" in holding[0].text  # the whole block in one fragment


def test_heading_path_is_prepended():
    text = (
        "---\ntitle: Règlement DORA\n---\n# Règlement DORA\n\n## Registre\n\n### Contrats\n\n"
        + paragraph(1, 900)
        + "\n\n## Tests\n\n"
        + paragraph(2, 900)
    )
    fragments = chunks(text)
    first, second = fragments
    assert first.embed_text.startswith("Règlement DORA\n\nRegistre")  # the title is not repeated
    assert second.text.startswith("Tests\n\nParagraphe 2")  # a heading starts a new fragment
    assert second.embed_text.startswith("Règlement DORA\nTests\n\nParagraphe 2")
    deep = chunks(
        "---\ntitle: T\n---\n## Registre\n\n### Contrats\n\n" + paragraph(1, 900) + "\n\n" + paragraph(3, 900)
    )
    assert deep[-1].embed_text.startswith("T\nRegistre > Contrats\n")  # the heading path of a later fragment


def test_ids_are_stable_and_only_changed_text_gets_a_new_id():
    body = "\n\n".join(paragraph(i) for i in range(12))
    before = chunks(f"---\nid: z1\ntitle: T\n---\n{body}\n")
    assert [f.id for f in before] == [f.id for f in chunks(f"---\nid: z1\ntitle: T\n---\n{body}\n")]
    edited = body.replace("Paragraphe 11 sur", "Paragraphe 11 à propos de")  # a typo fix near the end
    after = chunks(f"---\nid: z1\ntitle: T\n---\n{edited}\n")
    changed = {f.id for f in after} - {f.id for f in before}
    assert 1 <= len(changed) <= 2
    assert len({f.key for f in after}) == len(after)
    renamed = chunks(f"---\nid: z1\ntitle: Autre titre\n---\n{body}\n")
    assert not {f.id for f in renamed} & {f.id for f in before}  # the context changed: re-embed


def test_same_text_in_two_notes_has_two_ids():
    a = chunks("---\nid: a\ntitle: T\n---\nLe même paragraphe exactement.\n")
    b = chunks("---\nid: b\ntitle: T\n---\nLe même paragraphe exactement.\n")
    assert a[0].id != b[0].id


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=400), max_size=12))
def test_fragments_are_spans_of_the_text(paragraphs):
    markdown = "---\ntitle: T\n---\n" + "\n\n".join(paragraphs)
    note = parse_note(markdown, "n.md", MTIME)
    fragments = chunk_note(note)
    for fragment in fragments:
        assert fragment.text == note.text[fragment.start : fragment.end].strip()
        assert len(fragment.text) >= MIN_FRAGMENT_CHARS
    assert len({f.id for f in fragments}) == len(fragments)
    if len(note.text.strip()) >= MIN_FRAGMENT_CHARS and fragments:
        assert fragments[0].start <= note.text.find(note.text.strip()[:1]) + 1
