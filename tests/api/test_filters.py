"""Filters typed in the query through HTTP, over a real index: Obsidian's
`path:`, `file:`, `section:` beside ours, folders ignoring case, the
`created-…` dates and where a note's dates come from, the 400 a filter that
cannot be read gets, and the completion of tag, folder and file values."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from notarium_search.api.app import create_app
from tests.api.test_app import assert_error, fm
from tests.conftest import Vault

TWO_SECTIONS = "# Mise en place\n\nLe registre est ouvert.\n\n# Résultats\n\nLe registre est clos.\n"


@pytest.fixture
def client(vault: Vault) -> Iterator[TestClient[Any]]:
    # Two folders whose names differ only by case (a case-sensitive file system holds both).
    vault.write(
        "Lectures/Dora.md", fm("dora", "Le règlement DORA.", tags="[dora, projet/risque]", updated="2025-01-17")
    )
    vault.write("Lectures/2024/bilan.md", fm("bilan", "Le bilan annuel.", tags="[projet]", created="2023-11-02"))
    vault.write("lectures/vieux/old.md", fm("old", "Une vieille note.", created="2019-05-01", updated="2019-06-01"))
    vault.write("zettel/Agent Aveugle.md", fm("agent", TWO_SECTIONS, tags="[ia, interop]"))
    vault.write("zettel/sans-date.md", "Une note sans frontmatter, interop.\n")
    service = vault.service()
    with TestClient(create_app(service.settings, service, start_indexing=False)) as test_client:
        yield test_client
    service.stop()


def found(client: TestClient[Any], query: str, route: str = "search", **params: Any) -> list[str]:
    response = client.get(f"/spaces/notes/{route}", params={"q": query, **params})
    assert response.status_code == 200, response.text
    key = "results" if route == "search" else "items"
    return sorted(note["id"] for note in response.json()[key])


def test_folders_are_matched_ignoring_case(client):
    # Before: a term query on the folder as written, so `folder:Lectures` missed `lectures/vieux`.
    assert found(client, "folder:lectures") == ["bilan", "dora", "old"]
    assert found(client, "folder:LECTURES/vieux") == ["old"]
    assert found(client, "", route="feed", folder="lectures") == ["bilan", "dora", "old"]
    assert found(client, "note folder:Lectures") == ["old"]  # with words, ranked
    assert found(client, "folder:Lectures/2024") == ["bilan"]
    assert found(client, "folder:Lect") == []  # a folder, not the start of one


def test_path_and_file_contain_their_value_ignoring_case(client):
    assert found(client, "path:VIEUX") == ["old"]
    assert found(client, "path:ures/2024/Bil") == ["bilan"]  # across folders and the file name
    assert found(client, "path:.md") == ["agent", "bilan", "dora", "old", "zettel/sans-date.md"]
    assert found(client, "file:aveugle") == ["agent"]
    assert found(client, 'file:"agent aveugle.md"') == ["agent"]
    assert found(client, "file:lectures") == []  # a folder's name is not the file's
    assert found(client, "file:2024") == []
    assert found(client, "path:zettel file:sans") == ["zettel/sans-date.md"]  # every filter holds
    assert found(client, "path:[(*") == []  # regular expression characters are text
    body = client.get("/spaces/notes/search", params={"q": "path:vieux file:old"}).json()
    assert body["filters"] == [{"name": "path", "value": "vieux"}, {"name": "file", "value": "old"}]


def test_section_keeps_the_notes_with_such_a_heading_and_opens_there(client):
    assert found(client, "section:resultat") == ["agent"]  # accents and case aside, part of a heading
    assert found(client, "section:conclusion") == []
    plain = client.get("/spaces/notes/search", params={"q": "registre"}).json()["results"][0]
    assert (plain["anchor"], plain["line"]) == ("Mise en place", 7)  # the first of two equal sections
    hit = client.get("/spaces/notes/search", params={"q": "registre section:résultats"}).json()["results"][0]
    assert (hit["id"], hit["anchor"], hit["line"]) == ("agent", "Résultats", 11)


def test_name_filters_narrow_the_index_query_so_pages_stay_whole(client):
    # Filtered after the fact, a page of 2 could hold fewer notes than the filter allows.
    first = client.get("/spaces/notes/feed", params={"q": "path:lectures", "limit": 2}).json()
    assert len(first["items"]) == 2
    assert first["next_cursor"]
    rest = client.get("/spaces/notes/feed", params={"q": "path:lectures", "limit": 2, "cursor": first["next_cursor"]})
    ids = [n["id"] for n in first["items"] + rest.json()["items"]]
    assert sorted(ids) == ["bilan", "dora", "old"]
    assert rest.json()["next_cursor"] is None
    assert len(client.get("/spaces/notes/search", params={"q": "path:e", "limit": 3}).json()["results"]) == 3


def test_created_filters_and_where_each_date_comes_from(client):
    assert found(client, "created-after:2023") == ["agent", "bilan", "dora", "zettel/sans-date.md"]
    assert found(client, "created-before:2023-11-03") == ["bilan", "old"]
    assert found(client, "created-after:2023-11-03 created-before:2025-01-18") == ["dora"]
    hits = {h["id"]: h for h in client.get("/spaces/notes/search", params={"q": "path:md"}).json()["results"]}
    assert hits["old"]["dates"] == {"created": "frontmatter", "updated": "frontmatter"}
    assert hits["bilan"]["dates"] == {"created": "frontmatter", "updated": "file"}
    assert hits["dora"]["dates"] == {"created": "frontmatter", "updated": "frontmatter"}  # its `updated`, for both
    assert hits["zettel/sans-date.md"]["dates"] == {"created": "file", "updated": "file"}
    assert hits["dora"]["created"] == hits["dora"]["updated"] == "2025-01-17T00:00:00Z"
    feed = client.get("/spaces/notes/feed", params={"q": "path:old"}).json()["items"][0]
    assert feed["dates"] == {"created": "frontmatter", "updated": "frontmatter"}
    note = client.get("/spaces/notes/notes/zettel/sans-date.md").json()["note"]
    assert note["dates"] == {"created": "file", "updated": "file"}


@pytest.mark.parametrize(
    ("query", "name", "value", "reason"),
    [
        ("bilan after:2", "after", "2", "not_a_date"),
        ("created-before:2024-13", "created-before", "2024-13", "not_a_date"),
        ("folder:zettel folder:lectures", "folder", "lectures", "one_folder_at_a_time"),
        ("path:" + "é" * 101, "path", "é" * 101, "too_long"),
        ("file:" + "😀" * 101, "file", "😀" * 101, "too_long"),
    ],
)
def test_a_filter_that_cannot_be_read_is_a_400_naming_it(client, query: str, name: str, value: str, reason: str):
    for route in ("search", "feed"):
        response = client.get(f"/spaces/notes/{route}", params={"q": query})
        assert response.status_code == 400, response.text
        body = response.json()
        assert (body["error"], body["status"], body["filter"], body["value"], body["reason"]) == (
            "invalid_filter",
            400,
            name,
            value,
            reason,
        )
        assert body["detail"]


def test_the_longest_values_are_looked_for(client):
    # At the bound, in the script that costs the automaton most: looked for, not refused.
    assert found(client, "file:" + "😀" * 100) == []
    assert found(client, "section:" + "é" * 100) == []
    assert found(client, "path:" + "x" * 100) == []


def values(client: TestClient[Any], **params: Any) -> list[tuple[str, int]]:
    response = client.get("/spaces/notes/values", params=params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["field"], body["prefix"], body["partial"]) == (params["field"], params.get("prefix", ""), False)
    return [(v["value"], v["notes"]) for v in body["values"]]


def test_values_complete_tags_folders_and_files_with_their_notes(client):
    # Nested tags count the notes of their children, as `tag:projet` keeps them.
    assert values(client, field="tag", prefix="PRO") == [("projet", 2), ("projet/risque", 1)]
    assert values(client, field="tag", prefix="#i") == [("ia", 1), ("interop", 1)]
    assert values(client, field="tag") == [
        ("projet", 2),
        ("dora", 1),
        ("ia", 1),
        ("interop", 1),
        ("projet/risque", 1),
    ]
    assert values(client, field="tag", limit=2) == [("projet", 2), ("dora", 1)]
    # `Lectures` (2 notes) and `lectures` (1) are one folder for `folder:`: one value, spelt as most notes spell it.
    assert values(client, field="folder", prefix="lec") == [
        ("Lectures", 3),
        ("Lectures/2024", 1),
        ("lectures/vieux", 1),
    ]
    assert values(client, field="folder", prefix="/z") == [("zettel", 2)]
    assert values(client, field="file", prefix="agent") == [("Agent Aveugle.md", 1)]
    assert values(client, field="file", prefix="[") == []  # regular expression characters are text
    for letter in ("a", "é", "日", "😀"):  # the longest prefix, in each script: looked for
        assert values(client, field="folder", prefix=letter * 100) == []


def test_values_refuse_what_they_cannot_complete(client):
    assert_error(client.get("/spaces/notes/values", params={"field": "title"}), 400, "invalid_parameter")
    assert_error(client.get("/spaces/notes/values"), 400, "invalid_parameter")
    params = {"field": "tag", "limit": 0}
    assert_error(client.get("/spaces/notes/values", params=params), 400, "invalid_parameter")
    assert_error(client.get("/spaces/nope/values", params={"field": "tag"}), 404, "unknown_space")
    too_long = {"field": "file", "prefix": "é" * 101}  # 500 were a 500: an automaton Tantivy refused
    assert_error(client.get("/spaces/notes/values", params=too_long), 400, "invalid_parameter")


def test_a_fused_hit_opens_in_the_section_too(vault: Vault):
    # Fused (the graph channel on), a hit's snippets are cut after fusion, from what the lexical hit kept.
    vault.write("zettel/agent.md", fm("agent", TWO_SECTIONS))
    service = vault.service(graph_boost=True)
    service.spaces["notes"].graph.ensure_built()
    with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
        body = client.get("/spaces/notes/search", params={"q": "registre section:résultats"}).json()
    service.stop()
    assert "graph" in body["channels_used"]
    assert (body["results"][0]["anchor"], body["results"][0]["line"]) == ("Résultats", 10)
