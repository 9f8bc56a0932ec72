"""The graph channel and the note endpoint end to end: real Tantivy, real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from litestar.testing import TestClient

from notarium_search.api.app import create_app
from notarium_search.service import Service
from notarium_search.types import BUILDING_MESSAGE, FeedFilter
from tests.conftest import Vault, ids

NO_FILTER = FeedFilter()


def note(note_id: str, title: str, body: str, folder_tags: str = "") -> str:
    return f"---\nid: {note_id}\ntitle: {title}\n{folder_tags}---\n{body}\n"


@pytest.fixture
def linked(vault: Vault) -> Vault:
    """hub and appui mention résilience; plan and annexe do not, but are linked with them."""
    vault.write(
        "zettel/hub.md",
        note(
            "hub",
            "Résilience opérationnelle",
            "La résilience passe par [[Plan de continuité|le plan]] et [[Inexistante]].",
        ),
    )
    vault.write("zettel/appui.md", note("appui", "Appui", "Encore la résilience, voir [[plan#Étapes]]."))
    vault.write("projets/plan.md", note("plan", "Plan de continuité", "Les étapes du plan.\n\n## Étapes\n\nUne, deux."))
    vault.write("projets/annexe.md", note("annexe", "Annexe", "Complète [[hub]] (par son id)."))
    vault.write("isole.md", note("isole", "Isolé", "Rien à voir, aucun lien."))
    return vault


@pytest.fixture
def boosted(linked: Vault) -> Iterator[Service]:
    service = linked.service(graph_boost=True)
    yield service
    service.stop()


def test_graph_surfaces_linked_notes_no_text_channel_found(boosted: Service):
    response = boosted.search("notes", "résilience", NO_FILTER, 10)
    found = {hit.note.id: hit for hit in response.results}
    assert {"hub", "appui"} <= set(found)
    plan = found["plan"]
    assert plan.channels == {"graph": plan.channels["graph"]}  # the graph alone found it
    assert plan.reason == "linked from: Résilience opérationnelle, Appui"  # two good hits point to it
    assert found["annexe"].reason == "links to: Résilience opérationnelle"  # a backlink of a hit
    assert ids(response).index("plan") < ids(response).index("annexe")  # more, better hits point to plan
    assert "isole" not in found
    assert response.channels_used == ("lexical", "graph")
    assert sum(t.contribution for t in plan.trace.values()) == pytest.approx(plan.score)


def test_graph_off_finds_only_text_matches(linked: Vault):
    service = linked.service()
    assert set(ids(service.search("notes", "résilience", NO_FILTER, 10))) == {"hub", "appui"}
    assert service.spaces["notes"].status().graph.state == "disabled"
    service.stop()


def test_without_graph_boost_links_are_read_on_first_need(linked: Vault):
    service = linked.service()
    status = service.spaces["notes"].status().graph
    assert (status.state, status.links, status.dangling) == ("disabled", None, None)  # nothing read yet
    assert {n.id for n in service.note("notes", "plan").backlinks} == {"appui", "hub"}
    status = service.spaces["notes"].status().graph
    assert (status.state, status.links, status.dangling) == ("disabled", 4, 1)
    linked.write("inexistante.md", note("inex", "Inexistante", "Elle existe."))
    service.spaces["notes"].writing.run_reconcile()  # once read, the graph follows the notes
    assert service.spaces["notes"].status().graph.dangling == 0
    service.stop()


def test_graph_never_invents_results(boosted: Service):
    assert ids(boosted.search("notes", "xylophone", NO_FILTER, 10)) == []
    assert ids(boosted.search("notes", "", NO_FILTER, 10)) == []


def test_graph_results_honour_filters(boosted: Service):
    within = ids(boosted.search("notes", "résilience", FeedFilter(folder="zettel"), 10))
    assert set(within) == {"hub", "appui"}  # plan and annexe are in projets/


def test_links_backlinks_dangling_and_status(boosted: Service):
    hub = boosted.note("notes", "hub")
    assert [(link.target, link.alias, link.note.id if link.note else None) for link in hub.links] == [
        ("Plan de continuité", "le plan", "plan")
    ]
    assert [link.target for link in hub.dangling] == ["Inexistante"]
    assert [n.id for n in hub.backlinks] == ["annexe"]
    plan = boosted.note("notes", "plan")
    assert {n.id for n in plan.backlinks} == {"appui", "hub"}
    assert plan.content is None
    status = boosted.spaces["notes"].status().graph
    assert (status.state, status.links, status.dangling) == ("ready", 4, 1)


def test_graph_follows_the_notes(linked: Vault, boosted: Service):
    space = boosted.spaces["notes"]
    linked.write("inexistante.md", note("inex", "Inexistante", "Maintenant elle existe."))
    linked.remove("projets/annexe.md")
    space.writing.run_reconcile()
    hub = boosted.note("notes", "hub")
    assert hub.dangling == ()
    assert [link.note.id for link in hub.links if link.note] == ["plan", "inex"]
    assert [n.id for n in hub.backlinks] == []
    assert space.status().graph.dangling == 0
    # A retitled note is no longer reached by its old title.
    linked.write("projets/plan.md", note("plan", "Continuité d'activité", "Les étapes du plan."))
    space.writing.run_reconcile()
    assert [link.target for link in boosted.note("notes", "hub").dangling] == ["Plan de continuité"]
    assert [n.id for n in boosted.note("notes", "plan").backlinks] == ["appui"]  # [[plan#Étapes]]: by file name


def test_note_endpoint_over_http(boosted: Service):
    with TestClient(create_app(boosted.settings, boosted, start_indexing=False)) as client:
        body = client.get("/spaces/notes/notes/hub").json()
        assert body["note"]["title"] == "Résilience opérationnelle"
        assert body["links"] == [
            {
                "target": "Plan de continuité",
                "heading": None,
                "alias": "le plan",
                "id": "plan",
                "path": "projets/plan.md",
                "title": "Plan de continuité",
            }
        ]
        assert body["dangling"][0]["target"] == "Inexistante"
        assert body["dangling"][0]["id"] is None
        assert body["backlinks"] == [{"id": "annexe", "path": "projets/annexe.md", "title": "Annexe"}]
        assert body["content"] is None
        full = client.get("/spaces/notes/notes/hub", params={"content": "1"}).json()
        assert full["content"].startswith("---\nid: hub\n")
        assert client.get("/spaces/notes/notes/nope").json()["error"] == "note_not_found"
        assert client.get("/spaces/notes/notes/..%2F..%2Fetc%2Fpasswd").status_code == 404
        explained = client.get("/spaces/notes/search", params={"q": "résilience", "explain": "1"}).json()
        plan = next(r for r in explained["results"] if r["id"] == "plan")
        assert set(plan["explain"]) == {"graph"}
        assert plan["reason"].startswith("linked from:")
        assert client.get("/status").json()["spaces"][0]["graph"]["dangling"] == 1


def test_status_says_building_until_the_graph_is_read(linked: Vault):
    service = Service(linked.settings(graph_boost=True))
    space = service.spaces["notes"]
    space.writing.indexer.reconcile(space.writing.stop_event)  # the lexical pass alone: the graph is read after it
    status = space.status()
    assert (status.lexical.state, status.graph.state) == ("ready", "building")
    assert status.message == BUILDING_MESSAGE  # any index of the space still building
    space.writing.run_reconcile()
    status = space.status()
    assert (status.graph.state, status.message) == ("ready", None)
    service.stop()
