"""A vault's PDFs and canvases on the page (issue 32), in headless Chromium
against a real server: a hit in a PDF says its page in the row and opens the
preview at that page, its text shown as written; a hit in a canvas says its
group and shows the cards. Helpers: tests/api/browser.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.api.browser import opened, quiet, started_server
from tests.conftest import Vault
from tests.notes.test_pdf import written

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.slow

CANVAS = {
    "nodes": [
        {"id": "a1b2c3d4e5f60718", "type": "group", "x": 0, "y": 0, "width": 800, "height": 400, "label": "Idées"},
        {
            "id": "0f1e2d3c4b5a6978",
            "type": "text",
            "x": 20,
            "y": 40,
            "width": 300,
            "height": 120,
            "text": "## Algues\n\nLa photosynthèse des algues brunes.",
        },
        {"id": "9a8b7c6d5e4f3a2b", "type": "file", "x": 400, "y": 40, "width": 300, "height": 120, "file": "lien.md"},
    ],
    "edges": [],
}
LONG_PAGE = "\n".join(f"Ligne {i} du préambule sur le climat." for i in range(40))  # one A4 page of fpdf2 lines


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    vault = Vault(tmp_path_factory.mktemp("documents"))
    raw = written([LONG_PAGE, "Le protocole de Kyoto, ratifié par la Russie.\n*pas* <b>gras</b>"], "Climat 2005")
    vault.write("docs/climat.pdf", raw, space="travail")
    vault.write("lien.md", "# Lien\n\nVoir [[climat.pdf]].\n", space="travail")
    vault.write("Plan.canvas", json.dumps(CANVAS, indent="\t"), space="travail")
    with started_server(quiet(vault)) as url:
        yield url


def test_a_hit_in_a_pdf_says_its_page_and_the_preview_opens_there(browser: Browser, documents: str):
    from playwright.sync_api import expect

    with opened(browser, documents, width=1280, height=900) as watched:
        page = watched.page
        page.locator("#q").fill("Russie")
        row = page.locator("#results li[role=option]").first
        expect(row.locator(".hit-title")).to_have_text("Climat 2005")
        expect(row.locator(".hit-section")).to_have_text("page 2")
        expect(row.locator(".hit-where")).to_have_text("docs/climat.pdf:2")
        preview = page.locator("#preview")
        expect(preview.locator("#preview-title")).to_have_text("Climat 2005")
        expect(preview.locator(".matched")).to_have_text("page 2")
        expect(preview.locator(".matched")).to_be_in_viewport()  # past page 1's forty lines
        expect(preview.locator("mark.hit").first).to_have_text("Russie")
        # The PDF's text as written: no emphasis or HTML made of it.
        expect(preview.locator("#preview-content")).to_contain_text("*pas* <b>gras</b>")
        expect(preview.locator("#preview-content em, #preview-content b")).to_have_count(0)
        watched.assert_clean()


def test_a_hit_in_a_canvas_says_its_group_and_the_preview_shows_the_cards(browser: Browser, documents: str):
    from playwright.sync_api import expect

    with opened(browser, documents, width=1280, height=900) as watched:
        page = watched.page
        page.locator("#q").fill("photosynthèse")
        row = page.locator("#results li[role=option]").first
        expect(row.locator(".hit-title")).to_have_text("Plan")
        expect(row.locator(".hit-section")).to_have_text("Idées")  # the card's id is its anchor, not shown
        preview = page.locator("#preview")
        expect(preview.locator("#preview-title")).to_have_text("Plan")
        expect(preview.locator("#preview-content h2", has_text="Idées")).to_have_count(1)
        expect(preview.locator("mark.hit").first).to_have_text("photosynthèse")
        expect(preview.locator("#preview-content")).to_contain_text("lien")  # the file card, as a link
        watched.assert_clean()
