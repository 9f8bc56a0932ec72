"""The note preview (`?render=1`, api/preview.py): Markdown rendered, wiki-links
made links inside the page, and nothing a note holds can run in the page; a
long body rendered only in part, so that no note, however pathological
(tests/pathological.py), holds a request for seconds."""

from __future__ import annotations

import re

import pytest
from litestar.testing import TestClient

from notarium_search.api.app import create_app
from notarium_search.api.preview import MAX_PREVIEW_CHARS, MAX_PREVIEW_HITS, MAX_PREVIEW_MARKS, bounded, render
from notarium_search.notes.parse import body_of
from tests.conftest import Vault
from tests.pathological import GENERATORS, SIZE, file_name

HOSTILE = (
    "---\nid: hostile\ntitle: Piège\n---\n"
    "# Titre\n\n"
    "<script>alert(1)</script>\n\n"
    '<img src=x onerror="alert(2)">\n\n'
    "[clic](javascript:alert(3)) et [ailleurs](https://example.org/a?b=1)\n\n"
    "Voir [[Cible]], [[Cible|l'autre note]], [[Absente]] et [[Cible#Partie]].\n\n"
    "```\n[[Cible]] reste du code <b>\n```\n"
)


@pytest.fixture
def client(vault: Vault):
    vault.write("hostile.md", HOSTILE)
    vault.write("cible.md", "---\nid: cible\n---\n# Partie\n\nLa cible.\n")
    service = vault.service()
    with TestClient(create_app(service.settings, service, start_indexing=False)) as test_client:
        yield test_client
    service.stop()


def test_nothing_in_a_note_can_run_in_the_page(client):
    html = client.get("/spaces/notes/notes/hostile", params={"render": 1}).json()["html"]
    tags = re.findall(r"<[^>]*>", html)  # what the browser would read as markup
    assert not [t for t in tags if re.match(r"<(script|img|iframe|object|style)\b", t, re.I)], tags
    assert not [t for t in tags if re.search(r"\son\w+\s*=|javascript:", t, re.I)], tags
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown as the text it is
    assert '<a href="https://example.org/a?b=1" rel="noopener noreferrer">ailleurs</a>' in html
    assert '<h1 id="md-titre">Titre</h1>' in html  # with an id to scroll to (issue 31)
    assert "title: Piège" not in html  # the frontmatter is shown as properties, not text


def test_wiki_links_open_the_linked_note_in_the_page(client):
    body = client.get("/spaces/notes/notes/hostile", params={"render": 1}).json()
    html = body["html"]
    assert '<a href="#/note/notes/cible" rel="noopener noreferrer">Cible</a>' in html
    assert '<a href="#/note/notes/cible" rel="noopener noreferrer">l\'autre note</a>' in html
    assert '<span class="dangling">Absente</span>' in html
    assert "Cible &gt; Partie</a>" in html
    assert "<code>[[Cible]] reste du code &lt;b&gt;\n</code>" in html  # code stays code
    assert body["content"] is None  # the Markdown only with ?content=1


# -- pathological notes (issue 28): a render is bounded, and each of them answers -------------------


def test_a_long_body_is_cut_at_a_line_with_a_notice():
    line = "Une ligne de texte ordinaire, sans rien de particulier.\n"
    body = line * (MAX_PREVIEW_CHARS // len(line) + 10)
    shown = bounded(body)
    assert len(shown) <= MAX_PREVIEW_CHARS
    assert body.startswith(shown + "\n")  # whole lines
    html = render(body, lambda target: None, "notes")
    assert html.endswith(
        f'<p class="preview-cut">The preview shows the first {len(shown):,} characters'
        f" of the note's {len(body):,}: open the note to read the rest.</p>"
    )
    assert render(line * 10, lambda target: None, "notes").count("preview-cut") == 0


def test_lines_and_brackets_bound_the_render_before_its_length():
    body = "- [[a]]\n" * 10_000  # 80,000 characters: each line and `[` is what markdown-it spends on
    shown = bounded(body)
    marks = shown.count("\n") + 2 * shown.count("[")
    assert MAX_PREVIEW_MARKS - 8 <= marks < MAX_PREVIEW_MARKS
    assert body.startswith(shown + "\n")


NORMAL_NOTES = {
    "normal/dora.md": "# DORA\n\nLe règlement sur la résilience opérationnelle numérique. Voir [[rrf]].\n",
    "normal/rrf.md": "---\nid: rrf\ntags: [recherche]\n---\n# Reciprocal Rank Fusion\n\nFusionner des classements.\n",
}
# Indexing every note then answering: about a minute on the 2-core machine of issue 28; a
# quadratic pass over one of them takes from many minutes to hours (tests/pathological.py).
PATHOLOGICAL_SECONDS = 900


@pytest.fixture(scope="module")
def pathological(tmp_path_factory):
    """A space of every pathological note next to normal ones, indexed by a real service
    (scan, parse, the lexical index), and the page's client over it."""
    vault = Vault(tmp_path_factory.mktemp("pathological"))
    for rel_path, text in NORMAL_NOTES.items():
        vault.write(rel_path, text)
    for name, make in GENERATORS.items():
        vault.write(f"pathological/{file_name(name)}", make(SIZE))
    service = vault.service()
    with TestClient(create_app(service.settings, service, start_indexing=False)) as test_client:
        yield test_client, service.settings.max_file_bytes
    service.stop()


@pytest.mark.slow
@pytest.mark.timeout(PATHOLOGICAL_SECONDS)
def test_pathological_notes_are_indexed_next_to_normal_ones_and_searchable(pathological):
    client, _ = pathological
    status = client.get("/spaces/notes/status").json()
    assert (status["notes"], status["skipped"]) == (len(GENERATORS) + len(NORMAL_NOTES), 0), status
    found = client.get("/spaces/notes/search", params={"q": "résilience opérationnelle"}).json()
    assert [hit["id"] for hit in found["results"]] == ["normal/dora.md"]
    assert "<mark>" in found["results"][0]["snippets"][0]["html"]
    for query, name in (("corps", "frontmatter"), ("debut", "spaced brackets"), ("titre phrase", "long headings")):
        found = client.get("/spaces/notes/search", params={"q": query}).json()
        hits = {hit["id"]: hit for hit in found["results"]}
        hit = hits[f"pathological/{file_name(name)}"]
        assert hit["snippets"], hit
        assert hit["snippets"][0]["line"] is not None, hit  # placed in the file (notes/location.py)


@pytest.mark.slow
@pytest.mark.timeout(PATHOLOGICAL_SECONDS)
@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_the_preview_of_each_pathological_note_answers(pathological, name):
    client, max_file_bytes = pathological
    response = client.get(f"/spaces/notes/notes/pathological/{file_name(name)}", params={"render": 1})
    assert response.status_code == 200, response.text[:300]
    html = response.json()["html"]
    served = GENERATORS[name](SIZE).encode()[:max_file_bytes].decode("utf-8-sig", errors="replace")
    body = body_of(served)
    assert ("preview-cut" in html) == (bounded(body) != body)  # the start of a long body, and a notice


# -- the query's words marked (`?render=1&q=…`, issue 31) ---------------------------------------------

MARKED = (
    "---\nid: marques\ntags: [dora]\n---\n"
    "# Interopérabilité des systèmes\n\n"
    'Les systèmes et l\'interopérabilité, [voir](https://example.org/interoperabilite "interopérabilité").\n\n'
    "`interoperabilite()` dans le code.\n\n"
    "| Colonne | Interopérabilités |\n|---|---|\n| a | b |\n\n"
    "> [!note] Interopérabilité\n> dora\n\n"
    "Ailleurs[^1].\n\n[^1]: Une interopérabilité en note.\n"
)
HIT = '<mark class="hit">'


@pytest.fixture
def marked(vault: Vault):
    vault.write("marques.md", MARKED)
    vault.write("longue.md", "---\nid: longue\n---\n" + "interopérabilité " * 1_500)
    service = vault.service()
    with TestClient(create_app(service.settings, service, start_indexing=False)) as test_client:
        yield test_client
    service.stop()


def test_the_query_words_are_marked_where_the_note_shows_them(marked):
    query = "interoperabilite tag:dora -systemes"  # accents, a plural, a typed filter, an exclusion
    html = marked.get("/spaces/notes/notes/marques", params={"render": 1, "q": query}).json()["html"]
    assert f'<h1 id="md-interopérabilité-des-systèmes">{HIT}Interopérabilité</mark> des systèmes</h1>' in html
    assert f"l'{HIT}interopérabilité</mark>, <a" in html
    assert 'title="interopérabilité"' in html  # never inside an attribute
    assert f"<code>{HIT}interoperabilite</mark>()</code>" in html  # search finds words in code too
    assert f"<th>{HIT}Interopérabilités</mark></th>" in html
    assert f'<p class="callout-title">{HIT}Interopérabilité</mark></p>' in html
    assert f"Une {HIT}interopérabilité</mark> en note." in html
    assert "systèmes</mark>" not in html  # excluded
    assert "dora</mark>" not in html  # a filter, not a word
    assert html.count(HIT) == 6


def test_a_prefix_and_a_typo_are_marked_as_search_matches_them(marked):
    html = marked.get("/spaces/notes/notes/marques", params={"render": 1, "q": "interop"}).json()["html"]
    assert f"{HIT}Interopérabilité</mark> des" in html  # the last word, as it is typed
    typo = marked.get("/spaces/notes/notes/marques", params={"render": 1, "q": "interoprabilite "}).json()["html"]
    assert f"{HIT}Interopérabilité</mark> des" in typo  # a word no note holds, at one edit


def test_nothing_is_marked_without_a_query_and_marks_are_bounded(marked):
    plain = marked.get("/spaces/notes/notes/marques", params={"render": 1}).json()["html"]
    assert "<mark" not in plain
    blank = marked.get("/spaces/notes/notes/marques", params={"render": 1, "q": "  "}).json()["html"]
    assert blank == plain
    many = marked.get("/spaces/notes/notes/longue", params={"render": 1, "q": "interoperabilite"}).json()["html"]
    assert many.count(HIT) == MAX_PREVIEW_HITS  # of 1,500
    too_long = marked.get("/spaces/notes/notes/marques", params={"render": 1, "q": "x" * 1_001})
    assert too_long.status_code == 400


def test_highlight_and_strike_marks_bound_the_render_too():
    """`==` and `~~` each cost about a third of a line (100,000 characters of `==a `: 0.9 s)."""
    for unit in ("==a ", "~~a "):
        body = unit * 25_000
        shown = bounded(body)
        assert MAX_PREVIEW_MARKS - 2 <= shown.count(unit[:2]) < MAX_PREVIEW_MARKS
