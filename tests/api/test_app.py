"""The HTTP API through Litestar's test client, over real indexes."""

from __future__ import annotations

import base64
import json
import re
import string
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from litestar.testing import TestClient

from notarium_search.api.app import create_app
from notarium_search.service import Service
from notarium_search.types import BUILDING_MESSAGE, IndexProgress
from tests.conftest import Vault

DOCS = Path(__file__).parents[2] / "docs"

ERROR_KEYS = {"error", "detail", "status"}


def fm(note_id: str, body: str, **fields: str) -> str:
    extra = "".join(f"{k}: {v}\n" for k, v in fields.items())
    return f"---\nid: {note_id}\n{extra}---\n{body}\n"


@pytest.fixture
def client(vault: Vault) -> Iterator[TestClient[Any]]:
    vault.write("zettel/agent.md", fm("agent", "L'interopérabilité des agents.", title="Agent aveugle", tags="[ia]"))
    vault.write("zettel/proto.md", fm("proto", "Protocoles ouverts et interopérabilité.", tags="[ia, standards]"))
    vault.write("lectures/dora.md", fm("dora", "Le règlement DORA.", tags="[dora]", updated="2025-01-17"))
    vault.write("lectures/vieux/old.md", fm("old", "Une vieille note.", updated="2019-05-01"))
    service = vault.service()
    with TestClient(create_app(service.settings, service, start_indexing=False)) as test_client:
        yield test_client


def service_of(client: TestClient[Any]) -> Service:
    """The service the app gives its handlers (its `service` dependency: api/app.py)."""
    service: Service = client.app.dependencies["service"].dependency()
    return service


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == ERROR_KEYS
    assert (body["status"], body["error"]) == (status, code)
    assert body["detail"]
    return body


def test_healthz(client):
    assert client.get("/healthz").json() == {"status": "ok"}


def test_spaces_and_status(client):
    assert client.get("/spaces").json() == [
        {
            "name": "notes",
            "path": service_of(client).spaces["notes"].config.path.as_posix(),
            "language": "fr",
            "notes": 4,
            "state": "ready",
        }
    ]
    status = client.get("/status").json()
    assert status["message"] is None
    assert (status["vector_search"], status["graph_boost"]) == (False, False)
    space = client.get("/spaces/notes/status").json()
    assert space == status["spaces"][0]
    assert space["lexical"]["state"] == "ready"
    assert (space["semantic"]["state"], space["semantic"]["reason"]) == ("disabled", None)
    assert (space["graph"]["state"], space["graph"]["reason"]) == ("disabled", None)
    assert space["notes"] == 4


def test_explain_returns_each_channels_part(client):
    body = client.get("/spaces/notes/search", params={"q": "interoperabilite", "explain": "1"}).json()
    first = body["results"][0]
    assert set(first["explain"]) == {"lexical"}
    trace = first["explain"]["lexical"]
    assert trace["rank"] == 1
    assert trace["contribution"] == pytest.approx(first["score"], abs=1e-5)
    assert client.get("/spaces/notes/search", params={"q": "x", "explain": "maybe"}).status_code == 400


def test_search_shape(client):
    body = client.get("/spaces/notes/search", params={"q": "interoperabilite"}).json()
    assert set(body) == {
        "query",
        "results",
        "channels_used",
        "degraded",
        "unmatched_terms",
        "partial",
        "took_ms",
        "caveats",
        "filters",
    }
    assert body["caveats"] == {}  # the lexical channel has no floor
    assert body["channels_used"] == ["lexical"]
    assert body["degraded"] == {}
    assert body["partial"] is False
    first = body["results"][0]
    assert set(first) == {
        "id",
        "path",
        "title",
        "score",
        "snippets",
        "tags",
        "folder",
        "created",
        "updated",
        "dates",
        "channels",
        "reason",
        "explain",
        "open_url",
        "heading",
        "anchor",
        "line",
        "column",
        "known",
    }
    assert first["open_url"] is None  # not an Obsidian vault, no template
    assert first["known"] is None  # the query names no note
    assert first["id"] == "agent"
    assert first["channels"] == {"lexical": 1}
    assert first["reason"] is None
    assert first["explain"] is None
    assert first["folder"] == "zettel"
    snippet = first["snippets"][0]
    marked = [snippet["text"][h["start"] : h["end"]] for h in snippet["highlights"]]
    assert marked == ["interopérabilité"]
    assert "<mark>interopérabilité</mark>" in snippet["html"]


def test_search_empty_query_is_empty_list(client):
    body = client.get("/spaces/notes/search", params={"q": ""}).json()
    assert body["results"] == []
    assert client.get("/spaces/notes/search").json()["results"] == []


def test_search_filters(client):
    params: dict[str, Any] = {"q": "interopérabilité", "tag": ["ia", "standards"]}
    assert [r["id"] for r in client.get("/spaces/notes/search", params=params).json()["results"]] == ["proto"]
    params = {"q": "note", "folder": "lectures"}
    assert [r["id"] for r in client.get("/spaces/notes/search", params=params).json()["results"]] == ["old"]


def test_flags_are_reported_and_degrade(vault: Vault):
    vault.write("a.md", fm("a", "texte"))
    service = vault.service(vector_search=True, graph_boost=True)
    service.load_model()  # no NOTARIUM_MODEL_DIR: the semantic channel is unavailable, lexical answers
    with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
        status = client.get("/status").json()
        assert (status["vector_search"], status["graph_boost"]) == (True, True)
        assert status["spaces"][0]["semantic"]["state"] == "unavailable"
        assert "NOTARIUM_MODEL_DIR" in status["spaces"][0]["semantic"]["reason"]
        assert status["spaces"][0]["graph"]["state"] == "ready"
        body = client.get("/spaces/notes/search", params={"q": "texte"}).json()
        assert body["results"][0]["id"] == "a"
        assert set(body["degraded"]) == {"semantic"}  # the graph answers (nothing linked here)
        assert body["channels_used"] == ["lexical", "graph"]
        assert "NOTARIUM_MODEL_DIR" in body["degraded"]["semantic"]


def test_unknown_space_is_404_with_error_body(client):
    assert_error(client.get("/spaces/nope/search", params={"q": "x"}), 404, "unknown_space")
    assert_error(client.get("/spaces/nope/status"), 404, "unknown_space")
    assert_error(client.get("/spaces/nope/feed"), 404, "unknown_space")


@pytest.mark.parametrize(
    "path",
    ["/spaces/..%2F..%2Fetc/search", "/spaces/../../etc/passwd", "/spaces/%2e%2e/status", "/spaces/a%00b/search"],
)
def test_path_traversal_is_a_clean_4xx(client, path):
    response = client.get(path, params={"q": "x"})
    assert 400 <= response.status_code < 500
    assert set(response.json()) == ERROR_KEYS


def test_bad_parameters_are_400(client):
    assert_error(client.get("/spaces/notes/search", params={"q": "x", "limit": 0}), 400, "invalid_parameter")
    assert_error(client.get("/spaces/notes/search", params={"q": "x", "limit": "abc"}), 400, "invalid_parameter")
    assert_error(client.get("/spaces/notes/search", params={"q": "x" * 1001}), 400, "invalid_parameter")
    assert_error(client.get("/spaces/notes/feed", params={"since": "hier"}), 400, "invalid_parameter")
    assert_error(client.get("/spaces/notes/feed", params={"cursor": "!!"}), 400, "invalid_parameter")


def test_unknown_route_and_method(client):
    assert_error(client.get("/nope"), 404, "not_found")
    assert_error(client.post("/spaces/notes/search"), 405, "method_not_allowed")


def test_internal_errors_do_not_leak(client, monkeypatch):
    def boom(*_: object, **__: object) -> None:
        raise RuntimeError("secret path /etc/shadow")

    monkeypatch.setattr(service_of(client), "search", boom)
    body = assert_error(client.get("/spaces/notes/search", params={"q": "x"}), 500, "internal_error")
    assert "secret" not in body["detail"]


def _documented(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)


def test_openapi_schema_and_the_api_docs_list_every_route(client):
    """Every route of the API is in the schema (`/related` was missing: it hid
    behind `/notes/{id}`'s path parameter), and every route the app answers,
    the page's files included, has its mention in docs/api.md."""
    paths = client.get("/schema/openapi.json").json()["paths"]
    answered = {
        (method, _documented(route.path), handler.include_in_schema)
        for route in client.app.routes
        if not route.path.startswith("/schema")  # the explorer's own
        for handler in getattr(route, "route_handlers", ())
        for method in handler.http_methods
        if method != "OPTIONS"
    }
    in_schema = {(method, path) for method, path, listed in answered if listed}
    assert ("GET", "/spaces/{}/related/{}") in in_schema
    assert in_schema == {(method.upper(), _documented(path)) for path, item in paths.items() for method in item}
    doc = (DOCS / "api.md").read_text(encoding="utf-8")
    documented = {(method, _documented(path)) for method, path in re.findall(r"`(GET|POST) (/[^`]*)`", doc)}
    assert {(method, path) for method, path, _ in answered} - documented == set()


def test_related_notes_answer_at_both_addresses(client):
    first = client.get("/spaces/notes/related/anything")
    second = client.get("/spaces/notes/notes/anything/related")
    # VECTOR_SEARCH off here: a documented 4xx, not a 503 ("try again later" will never come true).
    assert first.status_code == second.status_code == 409
    assert first.json() == second.json()
    assert first.json()["error"] == "channel_disabled"
    assert "Retry-After" not in first.headers


def test_a_503_says_when_to_retry(client, monkeypatch):
    space = service_of(client).spaces["notes"]
    monkeypatch.setattr(space.integrity, "damage", lambda: "x.store: checksum mismatch")

    def damaged(*args: object, **kwargs: object) -> None:
        raise ValueError("Data corrupted: 'x'")

    monkeypatch.setattr("notarium_search.lexical.search.search", damaged)
    response = client.get("/spaces/notes/search", params={"q": "x"})
    assert (response.status_code, response.json()["error"]) == (503, "index_repairing")
    assert response.headers["Retry-After"] == "5"


def test_openapi_documents_the_error_body(client):
    schema = client.get("/schema/openapi.json").json()
    search = schema["paths"]["/spaces/{space}/search"]["get"]
    assert search["description"]  # the handler's docstring
    for status in ("400", "404", "500", "503"):
        content = search["responses"][status]["content"]["application/json"]["schema"]
        assert content == {"$ref": "#/components/schemas/ErrorBody"}, (status, content)
    assert set(schema["components"]["schemas"]["ErrorBody"]["properties"]) == ERROR_KEYS


def test_dates_beyond_the_index_range_are_answered(client):
    """Tantivy holds dates from 1677 to 2262 only: a bound outside them is clamped,
    never taken for a damaged index (which would rebuild the space)."""
    everything = {n["id"] for n in client.get("/spaces/notes/feed").json()["items"]}
    for params, expected in (
        ({"since": "0001-01-01"}, everything),
        ({"until": "9999-12-31"}, everything),
        ({"since": "1500-01-01", "until": "2999-01-01T00:00:00-14:00"}, everything),
        ({"since": "9999-12-31T23:59:59+14:00"}, set()),
        ({"until": "0001-01-01T00:00:00-14:00"}, set()),
    ):
        response = client.get("/spaces/notes/feed", params=params)
        assert response.status_code == 200, (params, response.text)
        assert {n["id"] for n in response.json()["items"]} == expected, params
    response = client.get("/spaces/notes/notes", params={"updated_since": "1500-01-01", "created_since": "0001-01-01"})
    assert response.status_code == 200, response.text
    assert client.get("/spaces/notes/status").json()["lexical"]["repaired"] is None


@pytest.mark.parametrize(
    "raw",
    [
        b'[99999999999,"x"]',  # version 1 (seconds, id): from before the feed key
        b'[2,99999999999999999999999,"x"]',  # beyond i64
        b'[2,9223372036854775807,"x"]',  # beyond the dates Tantivy holds
        b'[2,-9223372036854775808,"x"]',
        b'[3,0,"x"]',  # a version we never issued
        b"[2,0]",
        b"{}",
    ],
)
def test_forged_cursors_are_400(client, raw):
    cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    for path in ("/spaces/notes/feed", "/spaces/notes/notes"):
        assert_error(client.get(path, params={"cursor": cursor}), 400, "invalid_parameter")
    assert client.get("/spaces/notes/status").json()["lexical"]["repaired"] is None


def test_listings_never_name_a_deleted_file(vault: Vault):
    """Search and feed check each hit's file; `/notes` and `/activations` did
    not: during a 1,000-file `git checkout` they listed deleted notes for
    3-7 s, until the writer caught up. Here the writer never runs."""
    for name in ("a", "b", "c"):
        vault.write(f"{name}.md", fm(name, "texte", tags="[t]", used_in="[Blog]"))
    service = vault.service(watch=False, reconcile_interval=0)
    with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
        vault.remove("b.md")
        listed = client.get("/spaces/notes/notes", params={"tags": "t"}).json()["items"]
        assert sorted(item["id"] for item in listed) == ["a", "c"]
        used = client.get("/spaces/notes/activations", params={"since": "2000-01-01"}).json()["notes"]
        assert sorted(item["id"] for item in used) == ["a", "c"]
        assert_error(client.get("/spaces/notes/notes/b"), 404, "note_not_found")


def test_a_well_formed_cursor_that_was_never_issued_is_400(vault: Vault):
    """A cursor of the right shape but not issued here (any key, any id; or
    issued for another space) was answered 200 with no items."""
    for i in range(5):
        vault.write(f"n{i}.md", fm(f"n{i}", "texte", tags="[t]"), space="notes")
        vault.write(f"n{i}.md", fm(f"n{i}", "texte", tags="[t]"), space="other")
    service = vault.service()
    with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
        issued = client.get("/spaces/notes/feed", params={"limit": 2}).json()["next_cursor"]
        payload, _, mac = issued.partition(".")
        forged_key = base64.urlsafe_b64encode(json.dumps([3, 0, "n9"]).encode()).decode().rstrip("=")
        for cursor in (f"{forged_key}.{mac}", f"{payload}.{'A' * len(mac)}", payload, f"{payload}."):
            for path in ("/spaces/notes/feed", "/spaces/notes/notes"):
                assert_error(client.get(path, params={"cursor": cursor}), 400, "invalid_parameter")
        assert_error(client.get("/spaces/other/feed", params={"cursor": issued}), 400, "invalid_parameter")
        assert len(client.get("/spaces/notes/feed", params={"limit": 2, "cursor": issued}).json()["items"]) == 2
    service.stop()
    restarted = vault.service()  # the key is kept with the index: pages go on after a restart
    with TestClient(create_app(restarted.settings, restarted, start_indexing=False)) as client:
        assert len(client.get("/spaces/notes/feed", params={"limit": 2, "cursor": issued}).json()["items"]) == 2
    restarted.stop()


def test_feed_is_newest_first_within_a_second(vault: Vault):
    base = 1_700_000_000
    for i in range(30):  # a git clone or a sync gives many files the same second
        vault.write(f"p{i:02}.md", fm(f"p{i:02}", "page"), mtime=base + (i // 10) + (i % 10) / 20)
    service = vault.service()
    with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
        body = client.get("/spaces/notes/feed", params={"limit": 30}).json()
        assert [n["id"] for n in body["items"]] == [f"p{i:02}" for i in reversed(range(30))]


def test_notes_dated_outside_the_index_range_are_kept(vault: Vault):
    vault.write("marignan.md", fm("marignan", "La bataille de Marignan.", date="1515-09-13"))
    vault.write("futur.md", fm("futur", "Un contrat lointain.", updated="2999-01-01"))
    vault.write("now.md", fm("now", "Une note d'aujourd'hui."))
    service = vault.service()
    with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
        hits = client.get("/spaces/notes/search", params={"q": "Marignan"}).json()["results"]
        assert [(h["id"], h["updated"][:10]) for h in hits] == [("marignan", "1515-09-13")]
        assert [h["id"] for h in client.get("/spaces/notes/search", params={"q": "contrat"}).json()["results"]] == [
            "futur"
        ]
        order = [n["id"] for n in client.get("/spaces/notes/feed").json()["items"]]
        assert order == ["futur", "now", "marignan"]
        old = client.get("/spaces/notes/feed", params={"until": "1600-01-01"}).json()["items"]
        assert [n["id"] for n in old] == ["marignan"]


def test_feed_filters_and_order(client):
    def feed(**params: Any) -> list[str]:
        response = client.get("/spaces/notes/feed", params=params)
        assert response.status_code == 200, response.text
        return [n["id"] for n in response.json()["items"]]

    everything = feed()
    assert everything[-2:] == ["dora", "old"]  # newest first; the two dated notes are the oldest
    assert feed(tag="dora") == ["dora"]
    assert set(feed(folder="lectures")) == {"dora", "old"}
    assert feed(folder="lectures/vieux") == ["old"]
    assert feed(since="2020-01-01", until="2025-12-31") == ["dora"]
    assert feed(until="2020-01-01") == ["old"]
    assert set(feed(q="interopérabilité")) == {"agent", "proto"}  # terms must really occur
    assert feed(q="interopérabilité agents") == ["agent"]  # every word, not any
    assert feed(q="interopérabilit") == []  # no prefix, no typo tolerance in the feed
    assert feed(q="-dora", folder="lectures") == ["old"]


def test_each_feed_item_has_an_excerpt_where_its_words_occur(vault: Vault):
    opening = "Un long préambule sans rapport. " * 12
    vault.write("a.md", fm("a", f"{opening}\n\n## Registre\n\nLe registre des tiers DORA."))
    vault.write("b.md", "# Titre seul\n")
    service = vault.service()
    with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
        (found,) = client.get("/spaces/notes/feed", params={"q": "registre tiers"}).json()["items"]
        listed = {item["path"]: item for item in client.get("/spaces/notes/feed").json()["items"]}
    excerpt = found["excerpt"]
    assert "<mark>registre</mark>" in excerpt["html"]  # the place the words occur, not the opening
    assert excerpt["text"].startswith("…")  # cut before the match, not the opening lines
    assert (excerpt["heading"], excerpt["line"]) == (["Registre"], 6)  # its first highlight: the heading
    assert listed["a.md"]["excerpt"]["text"].startswith("Un long préambule")  # no words: the opening lines
    assert listed["a.md"]["excerpt"]["highlights"] == []
    assert listed["b.md"]["excerpt"]["text"] == "Titre seul"  # a note with a title only shows it


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    q=st.one_of(
        st.text(max_size=40),
        st.text(alphabet=string.punctuation + " aéAND-\"'\\:()*~^", max_size=20),
    )
)
@example(q="AFTER:0")  # a filter typed in the query that is no date: its documented body (docs/api.md)
def test_fuzz_queries_never_5xx(client, q):
    for path in ("/spaces/notes/search", "/spaces/notes/feed"):
        response = client.get(path, params={"q": q})
        assert response.status_code < 500, (q, response.text)
        assert response.status_code != 429  # every example really reaches the search
        if response.status_code != 200:
            body = response.json()
            extra = {"filter", "value", "reason"} if body["error"] == "invalid_filter" else set()
            assert set(body) == ERROR_KEYS | extra, body


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    value=st.one_of(
        st.text(max_size=30),
        st.dates().map(str),  # years 1 to 9999: beyond what Tantivy can hold
        st.datetimes().map(lambda moment: moment.isoformat() + "+14:00"),
        st.tuples(st.integers(0, 3), st.integers(), st.text(max_size=5)).map(
            lambda raw: base64.urlsafe_b64encode(json.dumps(raw).encode()).decode()
        ),
    )
)
def test_fuzz_filters_never_5xx(client, value):
    for params in (
        {"tag": value},
        {"folder": value},
        {"since": value},
        {"until": value},
        {"cursor": value},
        {"limit": value},
    ):
        response = client.get("/spaces/notes/feed", params={**params, "q": "note"})
        assert response.status_code < 500, (params, response.text)
    assert client.get("/spaces/notes/status").json()["lexical"]["repaired"] is None


def test_feed_pagination_is_stable_while_notes_change(vault: Vault):
    base = 1_700_000_000
    for i in range(25):
        # Groups of equal timestamps exercise the (updated, id) tie-break.
        vault.write(f"n{i:02}.md", fm(f"n{i:02}", "page"), mtime=base + (i // 3) * 60)
    service = vault.service()
    with TestClient(create_app(service.settings, service, start_indexing=False)) as client:

        def page(cursor: str | None) -> tuple[list[str], str | None]:
            params: dict[str, Any] = {"limit": 4, **({"cursor": cursor} if cursor else {})}
            body = client.get("/spaces/notes/feed", params=params).json()
            return [n["id"] for n in body["items"]], body["next_cursor"]

        seen, cursor = page(None)
        first_page = list(seen)
        # A note already shown is edited (moves to the top) and a new one appears: neither
        # must be repeated or shift the pages that follow.
        vault.write("n24.md", fm("n24", "page modifiée"), mtime=base + 10_000)
        vault.write("new.md", fm("new", "page"), mtime=base + 20_000)
        service.spaces["notes"].writing.run_reconcile()
        while cursor:
            items, cursor = page(cursor)
            seen.extend(items)
        assert len(seen) == len(set(seen)) == 25
        assert seen[:4] == first_page
        groups = [int(n[1:]) // 3 for n in seen]  # notes saved in the same second come in a fixed order
        assert groups == sorted(groups, reverse=True)


def test_status_while_building_says_so(vault: Vault):
    """Deterministic: the pass is held at 150 of 300 notes while status and search are asked."""
    for i in range(300):
        vault.write(f"n{i:03}.md", fm(f"n{i}", "texte " * 50))
    settings_ = vault.settings(commit_every=50)
    service = Service(settings_)
    reached, release = threading.Event(), threading.Event()

    def hold_halfway(progress: IndexProgress) -> None:
        if progress.done == 150:
            reached.set()
            release.wait(60)

    indexing = threading.Thread(target=service.spaces["notes"].writing.run_reconcile, args=(hold_halfway,), daemon=True)
    try:
        with TestClient(create_app(settings_, service, start_indexing=False)) as client:
            indexing.start()
            assert reached.wait(60)
            body = client.get("/status").json()
            assert body["message"] == BUILDING_MESSAGE
            space = client.get("/spaces/notes/status").json()
            assert space["message"] == BUILDING_MESSAGE
            lexical = space["lexical"]
            assert (lexical["state"], lexical["indexed"], lexical["total"]) == ("building", 150, 300)
            assert lexical["eta_seconds"] is not None
            search = client.get("/spaces/notes/search", params={"q": "texte", "limit": 100}).json()
            assert search["partial"] is True  # answered from what is committed so far, and says so
            assert space["notes"] >= 100  # commits every 50 notes: at least 100 of the 150 are searchable
            assert len(search["results"]) == min(space["notes"], 100)
            release.set()
            indexing.join(60)
            final = client.get("/spaces/notes/status").json()
            assert (final["message"], final["lexical"]["state"], final["notes"]) == (None, "ready", 300)
            assert client.get("/status").json()["message"] is None
            assert client.get("/spaces/notes/search", params={"q": "texte"}).json()["partial"] is False
    finally:
        release.set()


def test_until_a_bare_date_takes_the_whole_day(vault: Vault):
    vault.write("afternoon.md", fm("afternoon", "Une note.", updated="2024-05-01T15:30:00+00:00"))
    service = vault.service()
    with TestClient(create_app(service.settings, service, start_indexing=False)) as client:

        def feed(**params: str) -> list[str]:
            return [n["id"] for n in client.get("/spaces/notes/feed", params=params).json()["items"]]

        assert feed(since="2024-05-01", until="2024-05-01") == ["afternoon"]
        assert feed(until="20240501") == ["afternoon"]
        assert feed(until="2024-04-30") == []
        assert feed(until="2024-05-01T15:00:00Z") == []  # a time is taken as written


def test_filters_typed_in_the_query_narrow_search_and_feed_and_come_back(client):
    body = client.get("/spaces/notes/search", params={"q": "interopérabilité tag:standards"}).json()
    assert [r["id"] for r in body["results"]] == ["proto"]
    assert body["filters"] == [{"name": "tag", "value": "standards"}]
    assert body["query"] == "interopérabilité tag:standards"  # as typed
    body = client.get("/spaces/notes/search", params={"q": "interopérabilité -tag:standards"}).json()
    assert [r["id"] for r in body["results"]] == ["agent"]
    feed = client.get("/spaces/notes/feed", params={"q": "folder:lectures after:2020"}).json()
    assert [n["id"] for n in feed["items"]] == ["dora"]  # old.md: updated 2019
    assert feed["filters"] == [{"name": "folder", "value": "lectures"}, {"name": "after", "value": "2020"}]
    # Unknown prefixes are words: nothing matches them, and nothing breaks.
    plain = client.get("/spaces/notes/search", params={"q": "arXiv:2104.08663"}).json()
    assert (plain["results"], plain["filters"]) == ([], [])


def test_filters_alone_list_the_notes_they_allow_newest_first(client):
    body = client.get("/spaces/notes/search", params={"q": "folder:lectures"}).json()
    assert [r["id"] for r in body["results"]] == ["dora", "old"]
    assert all(r["channels"] == {} for r in body["results"])


def test_sort_by_date_keeps_the_notes_newest_first(client):
    ranked = client.get("/spaces/notes/search", params={"q": "note règlement interopérabilité"}).json()["results"]
    newest = client.get(
        "/spaces/notes/search", params={"q": "note règlement interopérabilité", "sort": "updated"}
    ).json()["results"]
    assert sorted(r["id"] for r in newest) == sorted(r["id"] for r in ranked)
    dates = [r["updated"] for r in newest]
    assert dates == sorted(dates, reverse=True)
    assert_error(client.get("/spaces/notes/search", params={"q": "x", "sort": "best"}), 400, "invalid_parameter")


def test_a_typed_date_that_is_not_one_is_a_400(client):
    response = client.get("/spaces/notes/search", params={"q": "after:2024-13"})
    assert response.status_code == 400
    body = response.json()  # the error body, and which filter (tests/api/test_filters.py)
    assert set(body) == {*ERROR_KEYS, "filter", "value", "reason"}
    assert (body["error"], body["filter"], body["value"], body["reason"]) == (
        "invalid_filter",
        "after",
        "2024-13",
        "not_a_date",
    )
    assert "after:2024-13 is not a date" in body["detail"]


NESTED = (
    "---\nid: nested\ntitle: Carnet\ntags: [projet]\n---\n"  # frontmatter: lines 1-5
    "# Projets\n\n"  # line 6
    "Intro.\n\n"
    "## DORA\n\n"  # line 10
    "```python\n# pas un titre\nvaleur = 1\n```\n\n"  # lines 12-15: a `#` in code is no heading
    "Le registre [[Prestataires|des tiers]] est tenu à jour.\n"  # line 17
)


def test_each_hit_says_where_its_best_match_is(vault: Vault):
    vault.write("nested.md", NESTED)
    vault.write("crlf.md", "---\r\nid: crlf\r\n---\r\n# Titre\r\n\r\nLe registre CRLF.\r\n")
    vault.write("title.md", "---\nid: title\ntitle: Registre des tiers\n---\nAucun mot cherché ici.\n")
    service = vault.service()
    with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
        hits = {h["id"]: h for h in client.get("/spaces/notes/search", params={"q": "registre tenu"}).json()["results"]}
    service.stop()
    nested = hits["nested"]
    assert (nested["heading"], nested["anchor"], nested["line"]) == (["Projets", "DORA"], "DORA", 17)
    assert nested["column"] == 4  # "registre" after "Le ", in the file as saved
    (snippet,) = nested["snippets"]
    assert (snippet["heading"], snippet["line"]) == (["Projets", "DORA"], 17)
    assert (hits["crlf"]["heading"], hits["crlf"]["line"], hits["crlf"]["column"]) == (["Titre"], 6, 4)
    # A match in the title only: the note's opening, where the body starts.
    assert (hits["title"]["heading"], hits["title"]["anchor"], hits["title"]["line"]) == ([], None, 5)
