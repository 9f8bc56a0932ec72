"""A canvas in the link graph of a real service: notes link to it as
Obsidian writes it (`[[Plan.canvas]]`), and it is a backlink of the notes
its file cards show and its edges point at (notes/canvas.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from notarium_search.service import Service
from notarium_search.settings import SpaceConfig
from notarium_search.types import FeedFilter
from tests.conftest import Vault, eventually
from tests.notes.test_canvas import PLAN

CANVAS_ID = "Projets/Plan.canvas"


@pytest.fixture
def arranged(vault: Vault) -> Iterator[Service]:
    """A space of notes and the canvas that arranges them (include not set: every format's files)."""
    vault.write("Notes/Projet.md", "---\nid: projet\n---\n# Projet\n\nLe projet en bref.\n")
    vault.write("Notes/Réunion.md", "---\nid: reunion\n---\n# Réunion\n\n## Décisions\n\nOn garde le cap.\n")
    vault.write("Budget 2024.md", "---\nid: budget\n---\nLes chiffres.\n")
    vault.write("Accueil.md", "---\nid: accueil\n---\nLe plan d'ensemble : [[Plan.canvas]], ou ![[Plan.canvas]].\n")
    vault.write("Sommaire.md", "---\nid: sommaire\n---\nVoir [[Projets/Plan.canvas|le plan]].\n")
    vault.write("Projets/Plan.canvas", PLAN)
    service = vault.service(spaces=(SpaceConfig("notes", vault.root / "notes", include=()),))
    yield service
    service.stop()


def test_a_note_links_to_a_canvas_by_its_file_name_or_path(arranged: Service):
    accueil = arranged.note("notes", "accueil")
    assert [(link.target, link.note.id if link.note else None) for link in accueil.links] == [
        ("Plan.canvas", CANVAS_ID),
        ("Plan.canvas", CANVAS_ID),
    ]
    assert accueil.dangling == ()
    sommaire = arranged.note("notes", "sommaire")
    assert [link.note.id for link in sommaire.links if link.note] == [CANVAS_ID]
    assert {n.id for n in arranged.note("notes", CANVAS_ID).backlinks} == {"accueil", "sommaire"}


def test_a_canvas_is_a_backlink_of_what_its_cards_show_and_its_edges_point_at(arranged: Service):
    plan = arranged.note("notes", CANVAS_ID)
    assert [(link.target, link.heading, link.alias, link.note.id if link.note else None) for link in plan.links] == [
        ("Budget 2024", None, None, "budget"),  # a wiki-link in a text card
        ("Notes/Projet.md", None, None, "projet"),  # a file card
        ("Notes/Réunion.md", "Décisions", None, "reunion"),  # a file card showing a heading
        ("Notes/Projet.md", None, "détaille", "projet"),  # an edge pointing at a file card, its label the alias
        ("Notes/Réunion.md", "Décisions", "suivi en réunion", "reunion"),
    ]
    assert plan.dangling == ()
    for note_id in ("projet", "reunion", "budget"):
        assert [n.id for n in arranged.note("notes", note_id).backlinks] == [CANVAS_ID], note_id


def test_a_canvas_edited_live_updates_its_links(vault: Vault):
    """A file card removed under a watcher: the note loses the canvas as a backlink."""
    vault.write("Notes/Projet.md", "---\nid: projet\n---\nLe projet.\n")
    vault.write("Notes/Réunion.md", "---\nid: reunion\n---\nLa réunion.\n")
    vault.write("Projets/Plan.canvas", PLAN)
    settings = vault.settings(spaces=(SpaceConfig("notes", vault.root / "notes", include=()),), watch_debounce_ms=100)
    service = Service(settings)
    service.start()
    space = service.spaces["notes"]
    try:
        assert space.writing.wait_ready(30)
        eventually(lambda: space.status().watch == "watching")
        assert [n.id for n in service.note("notes", "reunion").backlinks] == [CANVAS_ID]
        plan = json.loads(PLAN)
        plan["nodes"] = [n for n in plan["nodes"] if n.get("file") != "Notes/Réunion.md"]
        vault.write("Projets/Plan.canvas", json.dumps(plan, indent="\t"))
        eventually(lambda: service.note("notes", "reunion").backlinks == ())
        assert [n.id for n in service.note("notes", "projet").backlinks] == [CANVAS_ID]
        assert service.search("notes", "cartographie", FeedFilter(), 10).results[0].note.id == CANVAS_ID
    finally:
        service.stop()
