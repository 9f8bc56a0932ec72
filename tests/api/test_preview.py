"""The note preview (`?render=1`, api/preview.py): Markdown rendered, wiki-links
made links inside the page, and nothing a note holds can run in the page."""

from __future__ import annotations

import re

import pytest
from litestar.testing import TestClient

from notarium_search.api.app import create_app
from tests.conftest import Vault

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
    assert "<h1>Titre</h1>" in html
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
