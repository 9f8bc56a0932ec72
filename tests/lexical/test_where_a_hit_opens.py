"""Where a hit opens (issue 29, item 3): the section the query matches best,
its line and column, and the editor link that follows them, over a real
index of real files (tests/conftest.py `Vault`)."""

from __future__ import annotations

import shutil

import pytest
from msgspec.structs import replace

from notarium_search.bodies import feed_body
from notarium_search.service import Service
from notarium_search.types import FeedFilter, SearchHit, Snippet
from tests.conftest import PROJECT_ROOT, Vault

TEMPLATE = "vscode://file{abs_path}:{line}#{heading}"

MANAGE = """---
title: Manage notes
---
# Manage notes

You can manage your notes in many ways.

## Rename a note

To rename a note, right-click it. You can also delete a note from this menu, or move the note.

## Move a note

Drag the note to another folder.

## Delete a note

To delete a note, select it and press Delete. Deleted notes go to the system trash.
"""


def service_of(vault: Vault) -> Service:
    """Every space with an editor link that says the line and the section."""
    settings = vault.settings()
    service = Service(replace(settings, spaces=tuple(replace(s, open_url=TEMPLATE) for s in settings.spaces)))
    for space in service.spaces.values():
        space.writing.run_reconcile()
    return service


def hits(vault: Vault, space: str, query: str) -> dict[str, SearchHit]:
    service = service_of(vault)
    try:
        return {hit.note.path: hit for hit in service.search(space, query, FeedFilter(), 10).results}
    finally:
        service.stop()


def placed(hit: SearchHit) -> Snippet:
    best = hit.placed()
    assert best is not None
    return best


@pytest.mark.parametrize("query", ["Delete a note", "delete a note", "DELETE A NOTE!", "Delete a no"])
def test_a_heading_typed_as_is_opens_at_that_heading(vault: Vault, query: str):
    # The words are in the "Rename a note" section too, which came first: the hit opened there.
    vault.write("manage.md", MANAGE, space="en")
    hit = hits(vault, "en", query)["manage.md"]
    best = placed(hit)
    assert best.heading == ("Manage notes", "Delete a note")
    assert (best.line, best.column) == (16, 4)  # the heading's line, "## Delete a note"
    assert hit.snippets[0] is best
    assert hit.open_url is not None
    assert hit.open_url.endswith("/manage.md:16#Delete%20a%20note")


def test_the_section_with_the_most_query_words_comes_first(vault: Vault):
    # A window at "package" in Installation also held the "Configuration" heading: it came first.
    text = (
        "# Guide\n\n## Installation\n\nInstall the package with pip.\n\n## Configuration\n\n"
        "Edit the file as you like.\n\n## Upgrading\n\nInstall the new package, then check the configuration.\n"
    )
    vault.write("guide.md", text, space="en")
    best = placed(hits(vault, "en", "package configuration")["guide.md"])
    assert best.heading == ("Guide", "Upgrading")
    assert best.line == 13


def test_among_sections_with_the_same_words_the_phrase_wins(vault: Vault):
    text = (
        "# Ops\n\n## Notes\n\nBackups of the server happen nightly; the server keeps old backups.\n\n"
        "## Plan\n\nA server backup plan is needed.\n"
    )
    vault.write("ops.md", text, space="en")
    best = placed(hits(vault, "en", "server backup")["ops.md"])
    assert best.heading == ("Ops", "Plan")
    assert (best.line, best.column) == (9, 3)


def test_headings_holding_the_words_win_over_a_body_that_mentions_them(vault: Vault):
    vault.write("manage.md", MANAGE, space="en")
    best = placed(hits(vault, "en", "move note")["manage.md"])
    assert best.heading == ("Manage notes", "Move a note")
    assert best.line == 12


def test_a_word_found_as_a_prefix_is_highlighted_where_it_is(vault: Vault):
    # "postgres" is a whole word of one note, so it was not taken for a word being typed: the
    # note saying PostgreSQL, found through the prefix, had no highlight and opened at its title.
    vault.write("a.md", "# Serveur\n\nInstaller postgres sur le serveur.\n")
    vault.write("b.md", "# Base\n\nIntroduction.\n\nNous utilisons PostgreSQL 16.\n")
    for query in ("postgres", "postgres -mysql"):
        hit = hits(vault, "notes", query)["b.md"]
        best = placed(hit)
        assert [best.text[r.start : r.end] for r in best.highlights] == ["PostgreSQL"], query
        assert (best.line, best.column) == (5, 16), query


def test_the_sample_vaults_headline_query_opens_at_the_word(vault: Vault):
    shutil.copytree(PROJECT_ROOT / "docs/sample-vault/carnet", vault.root / "carnet")
    found = hits(vault, "carnet", "interoperabilite")
    # Reported 12:93 on a 70-character line (a wrapped line starting "qu'on") and 11:61 (a callout).
    first = placed(found["zettel/agent-sans-api.md"])
    assert (first.line, first.column) == (12, 40)
    assert first.heading == ("L'agent sans API est aveugle",)
    second = placed(found["zettel/protocoles-ouverts.md"])
    assert (second.line, second.column) == (13, 11)


def test_the_feeds_notes_open_in_the_editor_at_their_first_line(vault: Vault):
    # The page's empty box lists the feed's newest notes: Enter on one opened the page's note
    # view even in a space with an editor, because feed items carried no link.
    vault.write("manage.md", MANAGE, space="en")
    service = service_of(vault)
    try:
        page = service.feed("en", "", FeedFilter(), 10, None)
    finally:
        service.stop()
    (item,) = feed_body(page).items
    assert item.path == "manage.md"
    assert item.open_url is not None
    assert item.open_url.endswith("/manage.md:1#")
