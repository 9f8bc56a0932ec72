"""The page as a launcher (issue 31), in headless Chromium against a real
server: rows and one selection, the side preview, the actions, the empty
box, filters as people type them, answers asked again while indexing, and
axe-core's accessibility rules on each view. Helpers: tests/api/browser.py."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from msgspec.structs import replace

from notarium_search.api.app import create_app
from notarium_search.service import Service
from notarium_search.settings import load_settings
from notarium_search.types import IndexProgress
from tests.api.browser import READY_SECONDS, opened, pump_until, quiet, serving, started_server
from tests.conftest import Vault

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.slow

PROJECTS = 24  # more rows than a screen holds
RICH = """---
title: Migration vers PostgreSQL
tags: [projet, base-de-données]
created: 2024-03-01
updated: 2024-06-15
---
# Migration vers PostgreSQL

Le contexte de la migration.

## Plan de bascule

La réplication logique copie les tables pendant la bascule.

| étape | durée |
|---|---|
| copie | 2 h |

- [ ] prévenir l'équipe
- [x] tester la réplication

> [!warning] Attention
> Geler les ==écritures== avant la bascule.

### Retour arrière

~~Restaurer la sauvegarde~~ Basculer sur l'ancien primaire[^1].

[^1]: Resté à jour par la réplication inverse.
"""


def project(i: int) -> str:
    return (
        f"---\ntitle: Projet {i:02} de réplication\ntags: [projet]\nupdated: 2024-0{1 + i % 5}-10\n---\n"
        f"# Projet {i:02}\n\n## Suivi\n\nLa réplication du projet {i:02} avance.\n"
    )


@pytest.fixture(scope="module")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    vault = Vault(tmp_path_factory.mktemp("launcher"))
    vault.write("projets/migration-postgres.md", RICH, space="travail")
    for i in range(PROJECTS):
        vault.write(f"projets/suivi/projet-{i:02}.md", project(i), space="travail")
    vault.write(
        "Lectures/protocoles.md",
        "---\ntitle: Protocoles ouverts\ntags: [lecture]\nupdated: 2023-01-01\n---\nHTTP et SMTP.\n",
        space="travail",
    )
    with started_server(quiet(vault)) as url:
        yield url


def selected_title(page: Page) -> str:
    return page.locator("#results li[aria-selected=true] .hit-title").inner_text()


def test_rows_fit_a_screen_with_where_each_hit_is_and_one_selection(browser: Browser, launcher: str):
    from playwright.sync_api import expect

    with opened(browser, launcher, width=1280, height=900) as watched:
        page = watched.page
        box = page.locator("#q")
        box.fill("réplication")
        rows = page.locator("#results li[role=option]")
        expect(rows).to_have_count(20)
        # The first hit is chosen before any key: it is what Enter opens.
        expect(rows.first).to_have_attribute("aria-selected", "true")
        expect(box).to_have_attribute("aria-activedescendant", "hit-0")
        visible = page.evaluate(
            "[...document.querySelectorAll('#results li')]"
            ".filter((li) => li.getBoundingClientRect().bottom <= innerHeight).length"
        )
        assert visible >= 8, f"{visible} rows on a 1280x900 screen"
        # Keys and pointer move the one selection.
        box.press("End")
        expect(rows.last).to_have_attribute("aria-selected", "true")
        box.press("Home")
        expect(rows.first).to_have_attribute("aria-selected", "true")
        box.press("PageDown")
        expect(rows.nth(8)).to_have_attribute("aria-selected", "true")
        box.press("PageUp")
        expect(rows.first).to_have_attribute("aria-selected", "true")
        rows.nth(3).hover()
        expect(rows.nth(3)).to_have_attribute("aria-selected", "true")
        expect(page.locator("#results li[aria-selected=true]")).to_have_count(1)
        box.fill("réplication logique")
        rich = page.locator("#results li", has=page.locator(".hit-title", has_text="Migration vers PostgreSQL"))
        expect(rich.locator(".hit-section")).to_have_text("Plan de bascule")  # below the H1, which is its title
        box.fill("ancien primaire")
        expect(rich.locator(".hit-section")).to_have_text("Plan de bascule › Retour arrière")
        expect(rich.locator(".hit-where")).to_have_text(re.compile(r"^projets/migration-postgres\.md:\d+$"))
        watched.assert_clean()


def test_the_side_preview_shows_the_selected_hit_at_its_section_with_its_words(browser: Browser, launcher: str):
    from playwright.sync_api import expect

    with opened(browser, launcher, width=1280, height=900) as watched:
        page = watched.page
        page.locator("#q").fill("bascule réplication postgresql")
        expect(page.locator("#results .hit-title").first).to_have_text("Migration vers PostgreSQL")
        preview = page.locator("#preview")
        expect(preview.locator("#preview-title")).to_have_text("Migration vers PostgreSQL")
        expect(preview.locator(".matched")).to_have_text("Plan de bascule")
        expect(preview.locator("mark.hit").first).to_be_visible()
        # GFM and Obsidian's syntax, rendered.
        expect(preview.locator("table td").first).to_have_text("copie")
        expect(preview.locator("input[type=checkbox]")).to_have_count(2)
        expect(preview.locator(".callout")).to_contain_text("Attention")
        expect(preview.locator("del, s").first).to_have_text("Restaurer la sauvegarde")
        # Body first, properties after.
        assert page.evaluate(
            "!!(document.getElementById('preview-content').compareDocumentPosition("
            "document.getElementById('preview-meta')) & Node.DOCUMENT_POSITION_FOLLOWING)"
        )
        # A marked word stays in its line (the rows' .hit is a block).
        assert preview.locator("mark.hit").first.evaluate("(mark) => getComputedStyle(mark).display") == "inline"
        # A footnote's link goes to the footnote, not to the page's router.
        address = page.url
        preview.locator("sup.footnote-ref a").first.click()
        expect(preview.locator(".footnotes li").first).to_be_in_viewport()
        assert page.url == address
        expect(page.locator("#search-view")).to_be_visible()
        page.locator("#q").press("ArrowDown")
        chosen = selected_title(page)
        expect(preview.locator("#preview-title")).to_have_text(chosen)
        watched.assert_clean()


def test_on_a_phone_enter_opens_the_note_view_with_its_actions(browser: Browser, launcher: str):
    from playwright.sync_api import expect

    with opened(browser, launcher, width=390, height=844) as watched:
        page = watched.page
        page.locator("#q").fill("bascule réplication postgresql")
        expect(page.locator("#results li").first).to_have_attribute("aria-selected", "true")
        expect(page.locator("#preview")).to_be_hidden()
        page.locator("#q").press("Enter")
        expect(page.locator("#note-title")).to_have_text("Migration vers PostgreSQL")
        expect(page.locator("#note-content .matched")).to_have_text("Plan de bascule")
        expect(page.locator("#note-actions button")).to_have_text(["Copier le lien [[…]]", "Copier le chemin"])
        watched.assert_clean()


def test_enter_opens_the_editor_ctrl_enter_the_note_and_alt_keys_copy(browser: Browser, tmp_path: Path):
    from playwright.sync_api import expect

    vault = Vault(tmp_path)
    vault.write("projets/migration-postgres.md", RICH, space="travail")
    plain = quiet(vault)
    # A link the test browser can follow (an editor's scheme would leave the page).
    settings = replace(plain, spaces=tuple(replace(s, open_url="/healthz?file={path}") for s in plain.spaces))
    with started_server(settings) as url, opened(browser, url) as watched:
        page = watched.page
        page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        box = page.locator("#q")
        box.fill("bascule")
        expect(page.locator("#preview-actions a", has_text="ouvrir dans l'éditeur")).to_be_visible()
        box.press("Alt+KeyL")
        expect(page.locator("#copied")).to_have_text("Copié : [[migration-postgres]]")
        assert page.evaluate("navigator.clipboard.readText()") == "[[migration-postgres]]"
        box.press("Alt+KeyC")
        expect(page.locator("#copied")).to_have_text("Copié : projets/migration-postgres.md")
        box.press("Control+Enter")  # the other action: the page's note view
        expect(page.locator("#note-title")).to_have_text("Migration vers PostgreSQL")
        expect(page.locator("#note-actions a")).to_have_text("ouvrir dans l'éditeur")
        page.go_back()
        expect(box).to_be_focused()  # the list again (the hash change handled), not only the box's old text
        expect(box).to_have_value("bascule")
        box.press("Enter")  # the primary action: the editor
        expect(page).to_have_url(re.compile(r"/healthz\?file=projets%2Fmigration-postgres\.md"))
        # A note opened by its address (a link, a bookmark), not from a hit: the API's open_url.
        page.goto(url + "#/note/travail/projets%2Fmigration-postgres.md")
        expect(page.locator("#note-actions a")).to_have_attribute(
            "href", re.compile(r"^/healthz\?file=projets%2Fmigration-postgres\.md")
        )


def test_the_empty_box_shows_recent_notes_and_the_last_searches(browser: Browser, launcher: str):
    from playwright.sync_api import expect

    with opened(browser, launcher) as watched:
        page = watched.page
        expect(page.locator("#list-label")).to_have_text("Notes récentes")
        expect(page.locator("#results .hit-title").first).to_have_text("Migration vers PostgreSQL")  # 2024-06-15
        page.locator("#q").fill("protocoles")
        expect(page.locator("#results .hit-title").first).to_have_text("Protocoles ouverts")
        page.locator("#q").press("Enter")
        expect(page.locator("#note-title")).to_have_text("Protocoles ouverts")
        page.locator("#back").click()
        # Back to the list (a hash change, handled after the click returns): the box has the focus
        # again. An Escape sent before lands on the note view's page and only goes back.
        expect(page.locator("#q")).to_be_focused()
        page.locator("#q").press("Escape")
        expect(page.locator("#recent-searches button")).to_have_text(["protocoles"])
        page.locator("#recent-searches button").click()
        expect(page.locator("#q")).to_have_value("protocoles")
        expect(page.locator("#results .hit-title").first).to_have_text("Protocoles ouverts")
        watched.assert_clean()


def test_filters_complete_come_off_as_chips_and_report_only_finished_errors(browser: Browser, launcher: str):
    from playwright.sync_api import expect

    with opened(browser, launcher) as watched:
        page = watched.page
        box = page.locator("#q")
        box.press_sequentially("réplication folder:lec", delay=20)
        expect(page.locator("#suggest li").first).to_contain_text("folder:Lectures")
        box.press("Tab")
        expect(box).to_have_value("réplication folder:Lectures ")
        expect(page.locator("#search-filters .chip > span")).to_have_text(["folder:Lectures"])
        page.locator("#search-filters .chip-remove").click()
        expect(box).to_have_value("réplication")
        expect(page.locator("#search-filters .chip")).to_have_count(0)
        # Typed one key at a time, a date is never an error before it is finished, nor said in English.
        shown: list[str] = []
        page.expose_function("seen", lambda text: shown.append(text))
        page.evaluate(
            "new MutationObserver(() => window.seen(document.getElementById('search-info').textContent))"
            ".observe(document.getElementById('search-info'), {childList: true, characterData: true, subtree: true})"
        )
        box.press_sequentially(" after:2024-05", delay=40)
        expect(page.locator("#search-filters .chip > span")).to_have_text(["after:2024-05"])
        assert not [text for text in shown if "Erreur" in text or "Error" in text], shown
        box.fill("réplication after:2024-13 ")
        expect(page.locator("#search-info")).to_contain_text("after:2024-13")
        expect(page.locator("#search-info")).not_to_contain_text("is not")
        expect(page.locator("#search-filters .chip")).to_have_count(0)  # never the chips of the query before
        box.fill("réplication")
        expect(page.locator("#results .hit-title").first).to_have_text("Projet 00 de réplication")
        with page.expect_response(lambda response: "sort=updated" in response.url):
            page.locator("#sort").select_option("updated")
        expect(page.locator("#results .hit-title").first).not_to_have_text("Projet 00 de réplication")
        shown_dates = page.locator("#results .row-head time").evaluate_all("(nodes) => nodes.map((n) => n.dateTime)")
        assert shown_dates == sorted(shown_dates, reverse=True), shown_dates  # the same notes, newest first
        # The browser logs each 400 it was answered (the filters being typed): nothing else went wrong.
        assert [error for error in watched.errors if "status of 400" not in error] == []


def test_a_partial_answer_says_so_and_is_asked_again_as_indexing_goes_on(browser: Browser, tmp_path: Path):
    """Deterministic: the pass is held after its commits at 10 and 30 of 40 notes (held by the
    test's hook, not timed), while the page shows what the index holds at each step."""
    from playwright.sync_api import expect

    vault = Vault(tmp_path)
    for i in range(40):
        rare = " Une note rare." if i % 4 == 0 else ""
        last = " Ultime étape." if i == 39 else ""
        vault.write(f"n{i:02}.md", f"# Note {i}\nInteropérabilité numéro {i}.{rare}{last}\n", space="lent")
    settings = quiet(vault, commit_every=10)
    service = Service(settings)
    held = {10: (threading.Event(), threading.Event()), 30: (threading.Event(), threading.Event())}

    def hold(progress: IndexProgress) -> None:
        if progress.done in held:
            reached, release = held[progress.done]
            reached.set()
            release.wait(READY_SECONDS)

    indexing = threading.Thread(target=service.spaces["lent"].writing.run_reconcile, args=(hold,), daemon=True)
    try:
        with serving(create_app(settings, service, start_indexing=False)) as url, opened(browser, url) as watched:
            page = watched.page
            indexing.start()
            assert held[10][0].wait(READY_SECONDS)
            page.locator("#q").fill("ultime")
            expect(page.locator("#search-info")).to_contain_text("pour l'instant")
            expect(page.locator("#search-info")).to_contain_text("10 / 40 notes")
            page.locator("#q").fill("rare")
            expect(page.locator("#results li")).to_have_count(3)  # n00, n04, n08
            expect(page.locator("#search-info")).to_contain_text("10 / 40 notes")
            held[10][1].set()
            assert held[30][0].wait(READY_SECONDS)
            expect(page.locator("#results li")).to_have_count(8)  # asked again, no key pressed
            expect(page.locator("#search-info")).to_contain_text("30 / 40 notes")
            held[30][1].set()
            indexing.join(READY_SECONDS)
            expect(page.locator("#results li")).to_have_count(10)
            expect(page.locator("#search-info")).not_to_contain_text("construction")
            watched.assert_clean()
    finally:
        for _, release in held.values():
            release.set()  # never leave the pass held, even when a check failed


def axe_violations(page: Page) -> list[dict[str, Any]]:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:3]}
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize(("width", "height"), [(1280, 900), (390, 844)])
def test_axe_finds_nothing_serious_on_the_search_preview_note_and_feed_views(
    browser: Browser, launcher: str, width: int, height: int
):
    from playwright.sync_api import expect

    with opened(browser, launcher, width=width, height=height) as watched:
        page = watched.page
        expect(page.locator("#list-label")).to_be_visible()
        found = axe_violations(page)
        assert found == [], f"empty box: {found}"
        page.locator("#q").fill("réplication tag:projet")
        expect(page.locator("#results li").first).to_have_attribute("aria-selected", "true")
        if width > 1000:
            expect(page.locator("#preview-title")).not_to_be_empty()
        assert axe_violations(page) == [], "search and preview"
        page.locator("#q").press("Enter")
        expect(page.locator("#note-title")).not_to_have_text("…")
        assert axe_violations(page) == [], "note"
        page.locator("#tab-feed").click()
        expect(page.locator("#feed li").first).to_be_visible()
        assert axe_violations(page) == [], "feed"
        watched.assert_clean()


def test_folders_left_out_of_the_spaces_root_are_named_on_the_page(browser: Browser, tmp_path: Path):
    from playwright.sync_api import expect

    vault = Vault(tmp_path)
    vault.write("a.md", "# Alpha\n", space="carnet")
    vault.write("b.md", "# Bêta\n", space="Mes Notes")  # not a valid space name
    settings = load_settings(env={"NOTARIUM_SPACES_ROOT": str(vault.root), "NOTARIUM_INDEX_DIR": str(vault.index_dir)})
    with started_server(replace(settings, watch=False)) as url, opened(browser, url) as watched:
        problems = watched.page.locator("#problems")
        expect(problems).to_contain_text("Mes Notes")
        expect(problems).to_contain_text("ignoré")
        expect(watched.page.locator("#space")).to_have_value("carnet")
        watched.assert_clean()


def test_enter_right_after_typing_opens_the_answer_to_what_was_typed(browser: Browser, launcher: str):
    """Deterministic: the search's answer is held until Enter was pressed, while the rows
    shown are the empty box's recent notes; Enter opens the first hit of the answer."""
    from playwright.sync_api import Route, expect

    with opened(browser, launcher) as watched:
        page = watched.page
        expect(page.locator("#list-label")).to_have_text("Notes récentes")
        held: list[Route] = []
        page.route("**/search?*", lambda route: held.append(route))
        page.locator("#q").fill("protocoles")
        pump_until(page, lambda: bool(held), "the search to be sent")
        page.locator("#q").press("Enter")
        expect(page.locator("#search-view")).to_be_visible()  # nothing opened from the rows of before
        held[0].continue_()
        expect(page.locator("#note-title")).to_have_text("Protocoles ouverts")
        watched.assert_clean()


def test_first_letters_find_notes_by_the_starts_of_their_words(browser: Browser, launcher: str):
    from playwright.sync_api import expect

    with opened(browser, launcher) as watched:
        page = watched.page
        page.locator("#q").fill("ou")  # the start of the title's second word
        expect(page.locator("#results .hit-title").first).to_have_text("Protocoles ouverts")
        page.locator("#q").fill("mi po")
        expect(page.locator("#results .hit-title").first).to_have_text("Migration vers PostgreSQL")
        expect(page.locator("#search-info")).not_to_contain_text("introuvable")
        watched.assert_clean()
