"""A space's index checked against its manifest, repaired while it serves,
and rebuilt when its folder is deleted under the running service."""

from __future__ import annotations

import fcntl
import shutil
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar.testing import TestClient

from notarium_search.api.app import create_app
from notarium_search.index.lock import LOCK_FILE
from notarium_search.index.opening import Role, open_space
from notarium_search.index.space import Space
from notarium_search.lexical import stored as stored_notes
from notarium_search.lexical.store import IndexLocked
from notarium_search.service import Service
from notarium_search.types import FeedFilter, IndexState
from tests.conftest import WAIT_SECONDS, Vault, eventually, ids


def note(note_id: str, body: str) -> str:
    return f"---\nid: {note_id}\n---\n{body}\n"


def stored_ids(service: Service) -> set[str]:
    return {p.id for p in stored_notes.all_payloads(service.spaces["notes"].lexical)}


def test_an_index_older_than_its_manifest_is_repaired(vault: Vault):
    """A valid but older meta.json (a restored backup, one segment fewer)
    silently lost every note of the later commit: status said complete and a
    plain reindex did not bring them back (the manifest said they were indexed)."""
    for i in range(20):
        vault.write(f"a{i:02}.md", note(f"a{i:02}", "premier lot"))
    service = vault.service()
    service.stop()
    meta = vault.index_dir / "notes" / "lexical" / "meta.json"
    older = meta.read_bytes()
    for i in range(15):
        vault.write(f"b{i:02}.md", note(f"b{i:02}", "second lot"))
    service = vault.service()
    assert len(stored_ids(service)) == 35
    service.stop()
    meta.write_bytes(older)  # valid, one segment fewer
    service = Service(vault.settings())
    space = service.spaces["notes"]
    assert space.mismatch is not None
    assert "older than its manifest" in space.mismatch
    service.start()
    try:
        eventually(lambda: len(stored_ids(service)) == 35 and space.ready)
        status = space.status()
        assert "older than its manifest" in (status.lexical.repaired or "")
        assert len(ids(service.search("notes", "second", FeedFilter(), 100))) == 15
    finally:
        service.stop()


def test_an_index_holding_other_notes_than_its_manifest_is_repaired(vault: Vault):
    for i in range(10):
        vault.write(f"n{i}.md", note(f"n{i}", "texte"))
    service = vault.service()
    space = service.spaces["notes"]
    space.lexical.delete("n3")  # behind the manifest's back
    space.lexical.commit()
    service.stop()
    service = Service(vault.settings())
    service.start()
    try:
        eventually(lambda: "n3" in stored_ids(service) and service.spaces["notes"].ready)
        assert "holds 9 notes, its manifest 10" in (service.spaces["notes"].status().lexical.repaired or "")
    finally:
        service.stop()


def test_a_repair_keeps_answering_from_the_last_good_commit(vault: Vault):
    """recreate() published an empty index before the state switched to
    building: one answer was 200, no results, `partial: false`."""
    for i in range(30):
        vault.write(f"n{i:02}.md", note(f"n{i:02}", f"texte commun {i}"))
    service = vault.service(watch=False, reconcile_interval=0)
    space = service.spaces["notes"]
    held, release = threading.Event(), threading.Event()
    real_reconcile = space.writing.indexer.reconcile

    def held_reconcile(*args: Any, **kwargs: Any) -> Any:
        held.set()
        assert release.wait(60)
        return real_reconcile(*args, **kwargs)

    space.writing.indexer.reconcile = held_reconcile  # type: ignore[method-assign]
    service.start()
    try:
        with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
            assert held.wait(30)  # the start-up pass
            release.set()
            eventually(lambda: space.ready)
            release.clear()
            held.clear()
            space.request_repair("a test asks for it")
            assert held.wait(30)  # the index is recreated: the rebuild's pass has not started
            answer = client.get("/spaces/notes/search", params={"q": "commun", "limit": 100}).json()
            assert answer["partial"] is True
            assert len(answer["results"]) == 30  # the last good commit, not an empty index
            assert client.get("/spaces/notes/status").json()["message"] == "Building search index…"
            release.set()
            eventually(lambda: space.ready and len(stored_ids(service)) == 30)
            answer = client.get("/spaces/notes/search", params={"q": "commun", "limit": 100}).json()
            assert (len(answer["results"]), answer["partial"]) == (30, False)
    finally:
        release.set()
        service.stop()


def started(vault: Vault) -> tuple[Service, Space]:
    """A running service (its writer thread) with the space indexed; no watcher, no polling."""
    service = Service(vault.settings(watch=False, reconcile_interval=0))
    service.start()
    space = service.spaces["notes"]
    assert space.writing.wait_ready(WAIT_SECONDS)
    return service, space


def test_deleting_the_index_folder_under_the_service_heals(vault: Vault):
    """The folder deleted while running: searches still came from the open
    files, but nothing could be committed any more, and status blamed
    "in use by another process" (the real error was ENOENT)."""
    for i in range(10):
        vault.write(f"n{i}.md", note(f"n{i}", "texte commun"))
    service, space = started(vault)
    try:
        shutil.rmtree(vault.index_dir / "notes")
        vault.write("late.md", note("late", "texte commun tardif"))
        space.request_reindex()
        eventually(lambda: space.ready and "late" in stored_ids(service) and len(stored_ids(service)) == 11)
        status = space.status()
        assert status.lexical.error is None
        assert "was deleted" in (status.lexical.repaired or "")
        assert (vault.index_dir / "notes" / "manifest.json").exists()
        with pytest.raises(IndexLocked):  # the new folder is locked again by this service
            open_space(space.config, service.settings, Role.WRITER)
    finally:
        service.stop()
    restarted = vault.service()
    assert restarted.spaces["notes"].writing.indexer.progress.indexed == 0  # the manifest matched the files
    assert len(stored_ids(restarted)) == 11
    restarted.stop()


def test_a_status_poll_notices_a_deleted_index_folder(vault: Vault):
    vault.write("a.md", note("a", "texte"))
    service, space = started(vault)
    try:
        shutil.rmtree(vault.index_dir / "notes")
        space.status()  # what /status polling does: no edit, no pass needed
        eventually(lambda: (vault.index_dir / "notes" / "lexical" / "meta.json").exists() and space.ready)
        eventually(lambda: stored_ids(service) == {"a"})
        assert space.writing.indexer.progress.state == IndexState.READY
    finally:
        service.stop()


def test_a_read_only_space_never_touches_a_damaged_index(vault: Vault, tmp_path: Path):
    from notarium_search.lexical.store import IndexUnreadable

    vault.write("a.md", note("a", "texte"))
    service = vault.service()
    service.stop()
    meta = vault.index_dir / "notes" / "lexical" / "meta.json"
    meta.write_text("{")
    before = sorted(p.name for p in meta.parent.iterdir())
    with pytest.raises(IndexUnreadable):
        open_space(service.settings.spaces[0], service.settings, Role.READER)
    assert sorted(p.name for p in meta.parent.iterdir()) == before
    assert meta.read_text() == "{"


def test_a_service_asks_every_space_to_stop_before_waiting_for_one(vault: Vault):
    """Spaces were stopped one after the other, each waiting for its watcher
    (up to 0.5 s) and its writer: the stop took the sum, past `docker stop`'s
    10 s with enough spaces. Here the first space's writer is held busy: the
    others must be asked to stop while the service still waits for it."""
    for name in ("a", "b", "c"):
        vault.write("n.md", note(f"{name}1", "texte"), space=name)
    service = Service(vault.settings(reconcile_interval=0))
    service.start()
    first, *others = service.spaces.values()
    assert all(space.writing.wait_ready(WAIT_SECONDS) for space in service.spaces.values())
    busy, release, first_stopped = threading.Event(), threading.Event(), threading.Event()

    def hold() -> None:
        busy.set()
        release.wait(WAIT_SECONDS)

    first.writing.writer.put(hold)
    assert busy.wait(WAIT_SECONDS)
    real_stop = first.stop

    def recorded_stop(timeout: float = 30.0) -> None:
        real_stop(timeout)
        first_stopped.set()

    first.stop = recorded_stop  # type: ignore[method-assign]
    stopping = threading.Thread(target=service.stop)
    stopping.start()
    try:
        eventually(lambda: all(space.writing.stop_event.is_set() for space in others))
        assert not first_stopped.is_set()  # asked while the service still waits for the held writer
    finally:
        release.set()
        stopping.join(WAIT_SECONDS)
    assert not stopping.is_alive()


def test_a_worker_that_finds_the_space_locked_decodes_none_of_its_file_records(vault: Vault):
    """Each worker but a space's writer tries its lock, finds it taken and
    follows: the whole file manifest decoded before that attempt, then
    dropped, left ~24 MB of half-empty pymalloc arenas in every follower at
    50,000 notes (writer_lock.WriterLock.take reads it once the lock is held)."""
    vault.write("a.md", note("a", "texte"))
    vault.service().stop()
    manifest_path = vault.index_dir / "notes" / "manifest.json"
    saved = msgspec.json.decode(manifest_path.read_bytes())
    entry = next(iter(saved["entries"].values()))
    saved["entries"] |= {f"folder/note-{i:05d}.md": entry for i in range(20_000)}  # ~4 MB held decoded
    manifest_path.write_bytes(msgspec.json.encode(saved))
    settings = vault.settings()
    with open(vault.index_dir / "notes" / LOCK_FILE, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another open file: another holder, even in this process
        tracemalloc.start()
        try:
            with pytest.raises(IndexLocked):
                open_space(settings.spaces[0], settings, Role.SHARED_WRITER)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 1_000_000
