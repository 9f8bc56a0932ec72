"""Frontmatter queries, activations and collections, over real indexes and HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from litestar.testing import TestClient

from notarium_search.api.app import create_app
from notarium_search.lexical import stored as stored_notes
from notarium_search.notes.parse import MAX_META_ITEMS, clean_frontmatter, flatten_meta
from notarium_search.semantic.chunking import chunk_note
from notarium_search.service import Service
from notarium_search.settings import CollectionConfig
from notarium_search.types import FeedFilter
from tests.conftest import HashEmbedder, Vault, build_semantic, ids

NOTES = {
    "dora-1.md": "---\ntitle: Registre DORA\ntags: [dora, risque]\nstatus: Draft\ncreated: 2024-01-10\n"
    "updated: 2024-03-01\nused_in:\n  - 2024-05-02 Newsletter 12\n  - {where: Blog, date: 2024-06-01}\n---\n"
    "Le registre des prestataires.\n",
    "dora-2.md": "---\ntitle: Tests de résilience\ntags: [dora]\ncreated: 2023-06-01\nupdated: 2024-02-01\n---\n"
    "Les tests de résilience opérationnelle.\n",
    "nis2.md": "---\ntitle: NIS2\ntags: [nis2, risque]\ncreated: 2024-02-01\nupdated: 2024-04-01\n"
    "utilisé_dans: [Conférence Lyon]\nsource: {url: 'https://example.org/nis2'}\n---\nLa directive NIS2.\n",
    "journal/2024-05.md": "---\ntitle: Journal de mai\ntags: [journal]\nupdated: 2024-05-31\n"
    "used_in: []\n---\nRien de publié.\n",
}
ARTICLES = CollectionConfig("articles", folder="publications", pattern=r"^Article.+\.md$", chunking="section")
TOP_LEVEL = CollectionConfig("racine", folder="", root_only=True)
BOOK = (
    "---\ntitle: Article Livre\n---\n"
    + "Avant-propos du livre, assez long pour un fragment.\n\n"
    + "\n\n".join(f"## Chapitre {i}\n\n" + f"Texte du chapitre {i}. " * 30 for i in range(3))
    + "\n"
)


@pytest.fixture
def service(vault: Vault) -> Iterator[Service]:
    for path, text in NOTES.items():
        vault.write(path, text)
    vault.write("publications/Article Livre.md", BOOK)
    vault.write("publications/Brouillon.md", "---\ntitle: Brouillon\n---\nArticle pas encore prêt.\n")
    vault.write("publications/anciens/Article Ancien.md", "---\ntitle: Article Ancien\n---\nUn vieil article.\n")
    service = vault.service(collections=(ARTICLES, TOP_LEVEL))
    yield service
    service.stop()


def note_ids(page: object) -> list[str]:
    return [r.note.id for r in page.items]  # type: ignore[attr-defined]


def test_tags_any_and_all(service: Service):
    both = service.notes("notes", FeedFilter(tags=("dora", "risque")), 20, None)
    assert note_ids(both) == ["dora-1.md"]
    either = service.notes("notes", FeedFilter(tags=("dora", "nis2"), tags_any=True), 20, None)
    assert sorted(note_ids(either)) == ["dora-1.md", "dora-2.md", "nis2.md"]


def test_fields_values_dates_and_folder(service: Service):
    def found(**filters: object) -> list[str]:
        return sorted(note_ids(service.notes("notes", FeedFilter(**filters), 20, None)))  # type: ignore[arg-type]

    assert found(fields=(("status", "draft"),)) == ["dora-1.md"]  # values match without regard to case
    assert found(fields=(("STATUS", "DRAFT"),)) == ["dora-1.md"]
    assert found(fields=(("status", None),)) == ["dora-1.md"]  # has the field
    assert found(fields=(("source.url", "https://example.org/nis2"),)) == ["nis2.md"]  # nested mapping
    assert found(fields=(("tags", "risque"),)) == ["dora-1.md", "nis2.md"]  # list items
    assert found(created_since=datetime(2024, 1, 1, tzinfo=UTC), tags=("risque",)) == ["dora-1.md", "nis2.md"]
    assert found(since=datetime(2024, 3, 15, tzinfo=UTC), folder="journal") == ["journal/2024-05.md"]
    assert found(fields=(("status", "final"),)) == []


def test_activated_means_a_recorded_use_under_any_configured_name(service: Service):
    used = note_ids(service.notes("notes", FeedFilter(activated=True), 20, None))
    assert sorted(used) == ["dora-1.md", "nis2.md"]  # utilisé_dans is an alias; an empty list is no use
    never = service.notes("notes", FeedFilter(tags=("dora",), activated=False), 20, None)
    assert note_ids(never) == ["dora-2.md"]  # "tagged dora, never used in a publication"
    (record,) = service.notes("notes", FeedFilter(fields=(("status", None),)), 20, None).items
    assert [(a.where, a.date.date().isoformat(), a.dated) for a in record.activations] == [
        ("Blog", "2024-06-01", True),
        ("Newsletter 12", "2024-05-02", True),
    ]
    assert record.frontmatter["status"] == "Draft"


def test_activation_fields_are_configurable(vault: Vault):
    vault.write("a.md", "---\npublié_dans: [Revue]\n---\nx\n")
    vault.write("b.md", "---\nused_in: [Blog]\n---\ny\n")
    service = vault.service(activation_fields=("publié_dans",))
    assert note_ids(service.notes("notes", FeedFilter(activated=True), 20, None)) == ["a.md"]
    service.stop()


def test_activations_window_newest_first(service: Service):
    recent = service.activations("notes", FeedFilter(), datetime(2024, 5, 15, tzinfo=UTC), 20)
    assert next((n.note.id, [a.where for a in n.activations]) for n in recent) == ("dora-1.md", ["Blog"])
    # The undated use of nis2 counts as of its last update (2024-04-01): outside this window.
    assert "nis2.md" not in [n.note.id for n in recent]
    everything = service.activations("notes", FeedFilter(), None, 20)
    assert [n.note.id for n in everything] == ["dora-1.md", "nis2.md"]
    assert [a.where for a in everything[1].activations] == ["Conférence Lyon"]
    assert not everything[1].activations[0].dated


def test_pagination_of_metadata_queries(service: Service):
    first = service.notes("notes", FeedFilter(), 3, None)
    assert len(first.items) == 3
    assert first.next_cursor
    second = service.notes("notes", FeedFilter(), 20, first.next_cursor)
    assert not set(note_ids(first)) & set(note_ids(second))
    assert len(note_ids(first) + note_ids(second)) == len(NOTES) + 3


def test_collection_membership_and_counts(service: Service):
    status = service.spaces["notes"].status()
    # root_only: the four notes directly at the root; the pattern keeps out "Brouillon",
    # sub-folders of `publications` belong to it unless root_only.
    assert status.collections == {"articles": 2, "racine": 3}
    articles = service.notes("notes", FeedFilter(collections=("articles",)), 20, None)
    assert sorted(note_ids(articles)) == ["publications/Article Livre.md", "publications/anciens/Article Ancien.md"]
    assert articles.items[0].collections == ("articles",)


def test_collection_filter_on_search_feed_and_related(vault: Vault, service: Service):
    within = ids(service.search("notes", "article", FeedFilter(collections=("articles",)), 10))
    assert set(within) == {"publications/anciens/Article Ancien.md", "publications/Article Livre.md"}
    everywhere = ids(service.search("notes", "article", FeedFilter(), 10))
    assert "publications/Brouillon.md" in everywhere
    feed = service.feed("notes", "", FeedFilter(collections=("racine", "articles")), 20, None)
    assert {n.id for n in feed.items} == {"dora-1.md", "dora-2.md", "nis2.md"} | {
        "publications/Article Livre.md",
        "publications/anciens/Article Ancien.md",
    }
    service.stop()  # one writer per space: the vector-enabled service takes over
    vector_service = vault.service(collections=(ARTICLES, TOP_LEVEL), vector_search=True)
    build_semantic(vector_service, HashEmbedder())
    related = vector_service.related("notes", "dora-1.md", 10, filters=FeedFilter(collections=("articles",)))
    assert related
    assert {e.note.id for e in related} <= {
        "publications/Article Livre.md",
        "publications/anciens/Article Ancien.md",
    }
    vector_service.stop()


def test_section_chunking_makes_one_fragment_per_section(service: Service):
    payload = stored_notes.payloads_by_id(service.spaces["notes"].lexical, ["publications/Article Livre.md"])
    note = payload["publications/Article Livre.md"].to_note()
    assert note.chunking == "section"
    fragments = chunk_note(note)
    assert [f.text.splitlines()[0] for f in fragments] == [
        "Avant-propos du livre, assez long pour un fragment.",
        "Chapitre 0",
        "Chapitre 1",
        "Chapitre 2",
    ]


def test_changing_collections_reindexes(vault: Vault, service: Service):
    service.stop()
    again = vault.service(collections=(CollectionConfig("articles", folder="publications"),))
    assert again.spaces["notes"].status().collections == {"articles": 3}
    again.stop()


def test_http_notes_and_activations(service: Service):
    with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
        body = client.get("/spaces/notes/notes", params={"tags": ["dora", "nis2"], "tags_mode": "any"}).json()
        assert sorted(i["id"] for i in body["items"]) == ["dora-1.md", "dora-2.md", "nis2.md"]
        item = next(i for i in body["items"] if i["id"] == "dora-1.md")
        assert item["fields"]["status"] == "Draft"
        assert item["activations"][0] == {"where": "Blog", "date": "2024-06-01T00:00:00Z", "dated": True}
        never = client.get("/spaces/notes/notes", params={"tag": "dora", "activated": "false"}).json()
        assert [i["id"] for i in never["items"]] == ["dora-2.md"]
        window = client.get("/spaces/notes/activations", params={"since": "2024-05-15"}).json()
        assert [n["id"] for n in window["notes"]] == ["dora-1.md"]
        for params, detail in [
            ({"tags_mode": "some"}, "tags_mode"),
            ({"value": "x"}, "field"),
            ({"updated_since": "hier"}, "updated_since"),
            ({"collection": "inconnue"}, "unknown collection"),
            ({"activated": "peut-être"}, "activated"),
        ]:
            response = client.get("/spaces/notes/notes", params=params)
            assert response.status_code == 400, params
            assert detail in response.json()["detail"], response.json()
        assert client.get("/spaces/nope/notes").status_code == 404
        assert client.get("/spaces/notes/search", params={"q": "x", "collection": "inconnue"}).status_code == 400


def test_frontmatter_is_kept_json_safe_and_bounded():
    cleaned = clean_frontmatter({"a": float("nan"), "b": {"c": [1, True, None]}, "d": 10**400, "É": "x"})
    assert cleaned == {"a": None, "b": {"c": [1, True, None]}, "d": None, "é": "x"}
    huge = clean_frontmatter({"list": list(range(10 * MAX_META_ITEMS))})
    assert len(huge["list"]) <= MAX_META_ITEMS
    assert flatten_meta({"b": {"c": [1, True]}, "n": None}) == (("b.c", "1"), ("b.c", "true"))


def test_collection_counts_follow_each_pass(vault: Vault, service: Service):
    """The status's counts are made once per searcher (lexical/store.py
    `counted`: the status is published 4 times a second): a pass's commit
    counts again."""
    space = service.spaces["notes"]
    assert space.status().collections == {"articles": 2, "racine": 3}
    vault.write("publications/Article Neuf.md", "---\ntitle: Article Neuf\n---\nUn nouvel article.\n")
    vault.remove("publications/anciens/Article Ancien.md")
    vault.write("Racine neuve.md", "Une note de plus à la racine.\n")
    space.writing.run_reconcile()
    assert space.status().collections == {"articles": 2, "racine": 4}
    vault.remove("publications/Article Livre.md")
    space.writing.run_reconcile()
    assert space.status().collections == {"articles": 1, "racine": 4}
