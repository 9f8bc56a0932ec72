"""What the launcher page keeps, drops and draws again between one action and
the next (issue 31's review), in headless Chromium against a real server: the
language switched over any view, a hit's section used only by the note view it
opened, an answer or a suggestion landing after the user moved on, the toast
and the focus. Helpers: tests/api/browser.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from msgspec.structs import replace

from notarium_search.settings import Settings
from tests.api.browser import opened, pump_until, quiet, started_server
from tests.conftest import Vault

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Route

pytestmark = pytest.mark.slow

FILLER = "\n\n".join(f"Paragraphe {i} du journal, sans rapport avec la suite." for i in range(60))
LONG = f"""---
title: Journal de la migration
reason: parce que le serveur vieillit
results: 3
---
# Journal de la migration

{FILLER}

## Retour arrière

Basculer sur l'ancien primaire.
"""
EDITOR = "/healthz?file={path}"  # an editor link the test browser can follow and read back


def space_settings(vault: Vault, open_url: str = "") -> Settings:
    plain = quiet(vault)
    return replace(plain, spaces=tuple(replace(s, open_url=open_url) for s in plain.spaces))


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    vault = Vault(tmp_path_factory.mktemp("journal"))
    vault.write("journal.md", LONG, space="travail")
    vault.write("Lectures/protocoles.md", "---\ntitle: Protocoles ouverts\n---\nHTTP et SMTP.\n", space="travail")
    with started_server(space_settings(vault)) as url:
        yield url


def test_the_language_switch_redraws_the_empty_box_and_leaves_the_note_where_it_is(browser: Browser, journal: str):
    from playwright.sync_api import expect

    with opened(browser, journal) as watched:
        page = watched.page
        expect(page.locator("#list-label")).to_have_text("Notes récentes")
        page.locator("#lang").click()  # threw: the recent notes were drawn as an answer to a query
        expect(page.locator("#list-label")).to_have_text("Recent notes")
        expect(page.locator("#results li")).to_have_count(2)
        page.locator("#q").fill("retour arrière")
        page.locator("#q").press("Enter")
        expect(page.locator("#note-content .matched")).to_have_text("Retour arrière")
        assert page.evaluate("scrollY") > 0  # opened at the hit's section, far down
        page.evaluate("scrollTo(0, 0)")
        page.locator("#lang").click()  # scrolled back to the section at each switch
        expect(page.locator("#back")).to_have_text("← Retour")
        expect(page.locator("#note-content .matched")).to_have_text("Retour arrière")
        assert page.evaluate("scrollY") == 0
        watched.assert_clean()


def test_frontmatter_fields_are_shown_under_their_own_names(browser: Browser, journal: str):
    from playwright.sync_api import expect

    with opened(browser, journal + "#/note/travail/journal.md") as watched:
        page = watched.page
        # `reason` and `results` are also names in the page's strings table (functions there): the note view threw.
        expect(page.locator("#note-meta dt", has_text=re.compile("^reason$"))).to_have_count(1)
        expect(page.locator("#note-meta dd", has_text="parce que le serveur vieillit")).to_have_count(1)
        expect(page.locator("#note-meta dt", has_text=re.compile("^results$"))).to_have_count(1)
        expect(page.locator("#note-meta dt").first).to_have_text("Chemin")
        watched.assert_clean()


def test_a_hit_sent_to_the_editor_leaves_no_section_for_the_next_note_view(browser: Browser, tmp_path: Path):
    from playwright.sync_api import expect

    vault = Vault(tmp_path)
    vault.write("journal.md", LONG, space="travail")
    # An editor's own scheme: the browser hands it over (here: to nothing) and the page stays.
    settings = space_settings(vault, "obsidian://open?vault=travail&file={path_heading}")
    with started_server(settings) as url, opened(browser, url) as watched:
        page = watched.page
        page.locator("#q").fill("retour arrière")
        expect(page.locator("#results .hit-title")).to_have_text(["Journal de la migration"])
        page.locator("#q").press("Enter")  # to the editor
        expect(page.locator("#search-view")).to_be_visible()
        page.evaluate("location.hash = '#/note/travail/journal.md'")  # later, by a link: the note at its top
        expect(page.locator("#note-title")).to_have_text("Journal de la migration")
        expect(page.locator("#note-content h1")).to_have_text("Journal de la migration")
        expect(page.locator("#note-content .matched")).to_have_count(0)  # was the section of the hit sent away
        assert page.evaluate("scrollY") == 0
        # The browser's word for a scheme with no handler is not the page's error.
        assert [e for e in watched.errors if "scheme does not have a registered handler" not in e] == []


def test_enter_on_a_recent_note_opens_it_in_the_editor(browser: Browser, tmp_path: Path):
    from playwright.sync_api import expect

    vault = Vault(tmp_path)
    vault.write("journal.md", LONG, space="travail")
    with started_server(space_settings(vault, EDITOR)) as url, opened(browser, url) as watched:
        page = watched.page
        expect(page.locator("#list-label")).to_have_text("Notes récentes")
        expect(page.locator("#preview-actions a", has_text="ouvrir dans l'éditeur")).to_be_visible()
        page.locator("#q").press("Enter")  # opened the page's note view: feed items had no editor link
        expect(page).to_have_url(re.compile(r"/healthz\?file=journal\.md"))


def test_a_suggestion_is_chosen_with_the_arrows_and_never_comes_back_after_escape(browser: Browser, journal: str):
    from playwright.sync_api import expect

    with opened(browser, journal) as watched:
        page = watched.page
        box = page.locator("#q")
        pump_until(page, lambda: page.locator("#results li").count() > 0, "the recent notes")
        held_answers: list[Route] = []
        page.route("**/feed?*", lambda route: held_answers.append(route))
        page.route("**/search?*", lambda route: held_answers.append(route))
        box.press_sequentially("folder:lec", delay=20)
        expect(page.locator("#suggest li")).to_have_text([re.compile("^folder:Lectures")])
        expect(box).to_have_attribute("aria-controls", "suggest")
        box.press("ArrowDown")
        expect(box).to_have_attribute("aria-activedescendant", "suggest-0")
        # The rows' answer landing now (late, on a loaded machine) leaves the chosen value chosen.
        pump_until(page, lambda: bool(held_answers), "the rows to be asked for")
        for answered in held_answers:
            with page.expect_response(answered.request.url):
                answered.continue_()
        page.unroute("**/feed?*")
        page.unroute("**/search?*")
        page.evaluate("new Promise((done) => setTimeout(done, 0))")
        expect(box).to_have_attribute("aria-activedescendant", "suggest-0")
        box.press("Enter")
        expect(box).to_have_value("folder:Lectures ")
        expect(box).to_have_attribute("aria-controls", "results")
        expect(page.locator("#results .hit-title")).to_have_text(["Protocoles ouverts"])
        # An answer on its way when Esc is pressed is dropped.
        held: list[Route] = []
        page.route("**/values?*", lambda route: held.append(route))
        box.fill("")
        box.press_sequentially("folder:lec", delay=20)
        pump_until(page, lambda: bool(held), "the values to be asked for")
        box.press("Escape")
        with page.expect_response(re.compile(r"/values\?")):
            held[0].continue_()
        page.evaluate("new Promise((done) => setTimeout(done, 0))")  # the answer's handler has run
        expect(page.locator("#suggest")).to_be_hidden()
        watched.assert_clean()


def test_a_box_holding_only_a_filter_being_typed_shows_the_recent_notes(browser: Browser, journal: str):
    from playwright.sync_api import expect

    with opened(browser, journal) as watched:
        page = watched.page
        with page.expect_response(re.compile(r"/search\?.*after")):
            page.locator("#q").fill("after:2024-0")
        expect(page.locator("#list-label")).to_have_text("Notes récentes")
        expect(page.locator("#search-info")).to_have_text("")  # said "no note matches “”"
        assert [error for error in watched.errors if "status of 400" not in error] == []


def test_a_filter_quoted_with_spaces_comes_off_with_its_chip(browser: Browser, journal: str):
    from playwright.sync_api import expect

    with opened(browser, journal) as watched:
        page = watched.page
        page.locator("#q").fill('HTTP folder:" Lectures "')
        expect(page.locator("#search-filters .chip > span")).to_have_text(["folder:Lectures"])
        page.locator("#search-filters .chip-remove").click()
        expect(page.locator("#q")).to_have_value("HTTP")
        watched.assert_clean()


def test_the_toast_is_seen_from_the_note_view_and_focus_stays_where_it_was(browser: Browser, journal: str):
    from playwright.sync_api import expect

    with opened(browser, journal + "#/note/travail/Lectures/protocoles.md") as watched:
        page = watched.page
        copy = page.locator("#note-actions button", has_text="Copier le chemin")
        copy.focus()
        page.evaluate("delete Navigator.prototype.clipboard")  # no clipboard API: the older copy command
        copy.press("Enter")
        expect(page.locator("#copied")).to_have_text("Copié : Lectures/protocoles.md")
        expect(page.locator("#copied")).to_be_visible()  # was inside the hidden search view
        expect(copy).to_be_focused()  # was moved to the search box, in another view
        watched.assert_clean()
