"""Damage to each on-disk artefact of the lexical index: the service stays up,
answers (or says 503 while it repairs, never a 500), reports the repair in
status, and ends identical to a clean build. (Vector files: test_semantic.py.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from litestar.testing import TestClient

from notarium_search.api.app import create_app
from notarium_search.lexical import search as lexical
from notarium_search.lexical import stored as stored_notes
from notarium_search.service import Service
from notarium_search.types import FeedFilter
from tests.conftest import Vault, eventually

NOTES = 60


def fill(vault: Vault) -> None:
    for i in range(NOTES):
        vault.write(f"d{i % 3}/n{i:02}.md", f"---\nid: n{i:02}\ntags: [t{i % 4}]\n---\nmot{i} commun texte {i}\n")


def state(service: Service) -> tuple[dict[str, str], list[str]]:
    space = service.spaces["notes"]
    notes = {p.id: p.text for p in stored_notes.all_payloads(space.lexical)}
    hits = sorted(h.note.id for h in service.search("notes", "commun", FeedFilter(), 100).results)
    return notes, hits


def segment_file(lexical_dir: Path, suffix: str) -> Path:
    return next(p for p in lexical_dir.iterdir() if p.suffix == suffix)


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def flip(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:20] + bytes(b ^ 0xFF for b in data[20:60]) + data[60:])


DAMAGE: dict[str, Callable[[Path], object]] = {
    "manifest garbage": lambda d: (d / "manifest.json").write_bytes(b"\x00{not json"),
    "manifest of another schema": lambda d: (d / "manifest.json").write_text(
        (d / "manifest.json").read_text().replace("lexical-v", "lexical-v0")
    ),
    "meta.json missing": lambda d: (d / "lexical" / "meta.json").unlink(),
    "meta.json garbage": lambda d: (d / "lexical" / "meta.json").write_text("{"),
    "meta.json truncated": lambda d: truncate(d / "lexical" / "meta.json"),
    "postings truncated": lambda d: truncate(segment_file(d / "lexical", ".idx")),
    "terms flipped": lambda d: flip(segment_file(d / "lexical", ".term")),
    "store flipped (found on read)": lambda d: flip(segment_file(d / "lexical", ".store")),
    "fast fields flipped (a Rust panic on read)": lambda d: flip(segment_file(d / "lexical", ".fast")),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_lexical_artefact_is_detected_and_rebuilt(vault: Vault, damage: str):
    fill(vault)
    clean = vault.service()
    expected = state(clean)
    clean.stop()
    DAMAGE[damage](vault.index_dir / "notes")
    service = vault.service()
    try:
        with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
            space = service.spaces["notes"]
            reads = [
                client.get("/spaces/notes/search", params={"q": "commun", "limit": 100}),
                client.get("/spaces/notes/feed", params={"limit": 100}),
                client.get("/spaces/notes/notes", params={"tags": "t1"}),
            ]
            assert all(r.status_code in (200, 503) for r in reads), [r.text for r in reads]  # never a 500
            failed = [r for r in reads if r.status_code == 503]
            if failed:  # found on read: rebuilt on the writer, status says so
                assert failed[0].json()["error"] == "index_repairing"
                assert "rebuilt from the notes" in failed[0].json()["detail"]
                assert "damaged" in (client.get("/spaces/notes/status").json()["lexical"]["repaired"] or "")
                space.writing.repair_now()  # what the writer thread runs (no thread in this test)
            feed = client.get("/spaces/notes/feed", params={"limit": 100})
            assert feed.status_code == 200, feed.text
            assert len(feed.json()["items"]) == NOTES
        assert state(service) == expected
    finally:
        service.stop()


def test_the_writer_repairs_a_running_service(vault: Vault):
    fill(vault)
    clean = vault.service()
    expected = state(clean)
    clean.stop()
    flip(segment_file(vault.index_dir / "notes" / "lexical", ".fast"))
    service = Service(vault.settings())
    service.start()
    try:
        space = service.spaces["notes"]
        assert space.writing.wait_ready(30)
        with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
            assert client.get("/spaces/notes/feed").status_code == 503  # found on read
            eventually(lambda: client.get("/spaces/notes/feed", params={"limit": 100}).status_code == 200)
            assert "damaged" in (client.get("/spaces/notes/status").json()["lexical"]["repaired"] or "")
            # Inside the client's block: leaving it shuts the app down, which stops
            # the service and its writer, mid-rebuild on a busy machine.
            eventually(lambda: state(service) == expected)  # the rebuild commits as it goes
    finally:
        service.stop()


@pytest.mark.parametrize(
    ("query", "status"),
    [("after:9999-12", 200), ("after:9999-12-31", 200), ("before:0001", 400), ("before:0001-01-01", 400)],
)
def test_a_date_at_the_edge_of_time_is_answered_not_taken_for_damage(vault: Vault, query: str, status: int):
    """`after:9999-12` raised "year 10000 is out of range", which the read path
    took for damage: any web page could make the service rebuild its index
    with an <img> pointing at 127.0.0.1."""
    fill(vault)
    service = vault.service()
    try:
        with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
            response = client.get("/spaces/notes/search", params={"q": f"commun {query}"})
            assert response.status_code == status, response.text
            assert service.spaces["notes"].writing.passes.repaired is None
            assert client.get("/spaces/notes/status").json()["lexical"]["repaired"] is None
    finally:
        service.stop()


@pytest.mark.parametrize(
    ("error", "status"),
    [
        ("year 10000 is out of range", 500),  # Python's, from our own code: never the index's files
        ("An invalid argument was passed: 'x'", 500),  # Tantivy's, about the query
        ("An IO error occurred: 'Input/output error'", 503),  # the files are whole: a passing fault
        ("Data corrupted: 'in file x'", 500),  # said by Tantivy, refuted by the check
    ],
)
def test_a_failed_read_of_a_whole_index_never_rebuilds_it(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, error: str, status: int
):
    """Only a failed integrity check repairs: a read error on an index whose
    files are whole is a 500 (logged) or a 503 to retry, and the index stays."""
    fill(vault)
    service = vault.service()
    space = service.spaces["notes"]
    before = sorted(p.name for p in (vault.index_dir / "notes" / "lexical").iterdir())

    def failing(*args: object, **kwargs: object) -> None:
        raise ValueError(error)

    try:
        with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
            monkeypatch.setattr(lexical, "search", failing)
            response = client.get("/spaces/notes/search", params={"q": "commun"})
            assert response.status_code == status, response.text
            assert response.json()["error"] != "index_repairing"
            monkeypatch.undo()
            assert space.writing.passes.repaired is None
            assert space.writing.writer.idle  # nothing queued: no rebuild on the writer
            assert client.get("/spaces/notes/search", params={"q": "commun"}).status_code == 200
        assert sorted(p.name for p in (vault.index_dir / "notes" / "lexical").iterdir()) == before
    finally:
        service.stop()
