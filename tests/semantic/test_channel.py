"""The semantic channel end to end: real Tantivy, real usearch, the real ONNX
packs (and a deterministic hash embedder where only the pipeline is tested)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from litestar.testing import TestClient

from notarium_search.api.app import create_app
from notarium_search.errors import ChannelUnavailable
from notarium_search.lexical import stored as stored_notes
from notarium_search.semantic import vector_store
from notarium_search.semantic.channel import PLANNING
from notarium_search.semantic.chunking import chunk_note
from notarium_search.semantic.embedding import load_embedder
from notarium_search.semantic.follower import FollowedSemanticChannel
from notarium_search.service import Service
from notarium_search.types import ChannelQuery, ChannelState, ChannelStatus, FeedFilter
from tests.conftest import WAIT_SECONDS, HashEmbedder, Vault, build_semantic, eventually, ids, models_dir
from tests.semantic.held_graph import held_graph_builds

NO_FILTER = FeedFilter()
# The query-embedding deadline of tests that are not about it (the default is 300 ms):
# on a loaded machine a real model, or a thread pool slow to start, can miss 300 ms,
# and the search would answer from the lexical channel alone.
PATIENT_MS = 60_000


def paragraph(topic: str, i: int) -> str:
    return f"Paragraphe {i} : {topic} " + " ".join(f"{topic}{j}" for j in range(60)) + "."


def long_note(note_id: str, topic: str, paragraphs: int = 8) -> str:
    body = "\n\n".join(paragraph(topic, i) for i in range(paragraphs))
    return f"---\nid: {note_id}\ntitle: Note {note_id}\n---\n{body}\n"


def expected_fragments(service: Service, space: str = "notes") -> set[str]:
    index = service.spaces[space].lexical
    return {f.id for payload in stored_notes.all_payloads(index) for f in chunk_note(payload.to_note())}


def stored_fragments(service: Service, space: str = "notes") -> set[str]:
    semantic = service.spaces[space].semantic
    assert semantic is not None
    assert semantic.index is not None
    return {r.id for records in semantic.index.notes.values() for r in records}


def test_only_changed_fragments_are_re_embedded(vault: Vault):
    vault.write("long.md", long_note("long", "résilience", paragraphs=10))
    vault.write("other.md", long_note("other", "jardin", paragraphs=3))
    service = vault.service(vector_search=True)
    embedder = HashEmbedder()
    build_semantic(service, embedder)
    total = embedder.passages_embedded
    assert total == len(expected_fragments(service)) >= 5
    assert stored_fragments(service) == expected_fragments(service)
    # Fix a typo in one paragraph near the end of the long note.
    text = long_note("long", "résilience", paragraphs=10).replace("Paragraphe 8 :", "Paragraphe huit :")
    vault.write("long.md", text)
    space = service.spaces["notes"]
    space.writing.run_queued_pass()
    while space.semantic is not None and space.semantic.has_work:
        space.semantic.work_slice()
    assert 1 <= embedder.passages_embedded - total <= 2
    assert stored_fragments(service) == expected_fragments(service)
    # Deleting a note removes its vectors; nothing is embedded for it.
    vault.remove("other.md")
    space.writing.run_queued_pass()
    assert stored_fragments(service) == expected_fragments(service)
    assert not any(n == "other" for n in space.semantic.index.notes)  # type: ignore[union-attr]
    service.stop()


def test_an_idle_writer_maps_its_vectors_and_an_edit_works_on_a_copy(vault: Vault):
    """Idle, the writer's vectors are pages of the file it saved (shared with
    the workers that follow it), not a copy; an edit is embedded into a copy,
    then the idle checkpoint maps the new file. A restart maps them at once."""
    vault.write("long.md", long_note("long", "résilience", paragraphs=6))
    service = vault.service(vector_search=True)
    embedder = HashEmbedder()
    build_semantic(service, embedder)
    space = service.spaces["notes"]
    assert space.semantic is not None
    index = space.semantic.index
    assert index is not None
    assert index.store.viewed
    first_generation = index.generation
    vault.write(
        "long.md", long_note("long", "résilience", paragraphs=6).replace("Paragraphe 4 :", "Paragraphe quatre :")
    )
    space.writing.run_queued_pass()
    while space.semantic.has_work:
        space.semantic.work_slice()
    assert index.generation > first_generation
    assert index.store.viewed
    assert stored_fragments(service) == expected_fragments(service)
    # Each stored vector is its fragment's as the note reads now (the copy took the edit).
    fragments = [f for p in stored_notes.all_payloads(space.lexical) for f in chunk_note(p.to_note())]
    by_id = {r.id: r for r in index.fragments_of("long")}
    stored = index.vectors([by_id[f.id] for f in fragments])
    fresh = HashEmbedder().embed_passages([f.embed_text for f in fragments])  # type: ignore[no-untyped-call]
    np.testing.assert_allclose(stored, fresh, atol=2e-3)
    service.stop()
    service = vault.service(vector_search=True)
    again = HashEmbedder()
    build_semantic(service, again)
    assert again.passages_embedded == 0
    semantic = service.spaces["notes"].semantic
    assert semantic is not None
    assert semantic.index is not None
    assert semantic.index.store.viewed
    assert stored_fragments(service) == expected_fragments(service)
    service.stop()


def test_fingerprint_change_rebuilds_every_vector(vault: Vault):
    vault.write("a.md", long_note("a", "résilience", paragraphs=4))
    service = vault.service(vector_search=True)
    first = HashEmbedder()
    build_semantic(service, first)
    service.stop()
    vectors_dir = vault.index_dir / "notes" / "vectors"
    saved = {path.name: path.stat().st_mtime_ns for path in vectors_dir.iterdir()}
    service = vault.service(vector_search=True)
    same = HashEmbedder()
    build_semantic(service, same)
    assert same.passages_embedded == 0  # same model: the saved vectors are reused
    # ... and, nothing having changed, not written again either.
    assert {path.name: path.stat().st_mtime_ns for path in vectors_dir.iterdir()} == saved
    service.stop()
    service = vault.service(vector_search=True)
    other_model = HashEmbedder(salt="v2")
    build_semantic(service, other_model)
    assert other_model.passages_embedded == first.passages_embedded  # never mix two models
    service.stop()


def test_a_graph_saved_by_a_build_that_strands_vectors_is_rebuilt_from_them(vault: Vault):
    """Vectors saved before inserts ran on one thread (vector_store.GRAPH_BUILD:
    their manifests name no graph) keep their vectors; the writer rebuilds the
    graph from them once, and says so in the manifest."""
    for i in range(3):
        vault.write(f"n{i}.md", long_note(f"n{i}", ["résilience", "jardin", "marée"][i], paragraphs=4))
    service = vault.service(vector_search=True)
    build_semantic(service, HashEmbedder())
    service.stop()
    vectors_dir = vault.index_dir / "notes" / "vectors"
    manifest_path = vectors_dir / "vectors.json"
    manifest = json.loads(manifest_path.read_bytes())
    assert manifest.pop("graph") == "serial"
    manifest_path.write_text(json.dumps(manifest))  # as the versions before it wrote it
    (old_file,) = vectors_dir.glob("vectors-*.usearch")

    service = vault.service(vector_search=True)
    embedder = HashEmbedder()
    build_semantic(service, embedder)
    assert embedder.passages_embedded == 0  # the vectors are kept: only the graph is built again
    rebuilt = json.loads(manifest_path.read_bytes())
    assert rebuilt["graph"] == "serial"
    assert rebuilt["notes"] == manifest["notes"]
    assert rebuilt["generation"] == manifest["generation"] + 1
    assert not old_file.exists()
    assert stored_fragments(service) == expected_fragments(service)
    semantic = service.spaces["notes"].semantic
    assert semantic is not None
    assert semantic.index is not None
    for note_id, records in semantic.index.notes.items():
        for record, vector in zip(records, semantic.index.vectors(records), strict=True):
            assert semantic.index.nearest(vector, 1)[0][:2] == (note_id, record.key)
    service.stop()
    saved = {path.name: path.stat().st_mtime_ns for path in vectors_dir.iterdir()}
    service = vault.service(vector_search=True)
    build_semantic(service, HashEmbedder())  # rebuilt once: nothing written again
    assert {path.name: path.stat().st_mtime_ns for path in vectors_dir.iterdir()} == saved
    service.stop()


def vectors_of_before_graph_build(vault: Vault) -> tuple[Path, dict[str, Any]]:
    """Three notes embedded by the minilm pack, their manifest as a version
    before vector_store.GRAPH_BUILD wrote it (no graph named): its path and JSON."""
    pack = models_dir() / "all-minilm-l6-v2-int8"
    for i, topic in enumerate(["résilience", "jardin", "marée"]):
        vault.write(f"n{i}.md", long_note(f"n{i}", topic, paragraphs=4))
    service = vault.service(vector_search=True, model_dir=pack)
    build_semantic(service, load_embedder(pack))
    service.stop()
    manifest_path = vault.index_dir / "notes" / "vectors" / "vectors.json"
    manifest = json.loads(manifest_path.read_bytes())
    del manifest["graph"]
    manifest_path.write_text(json.dumps(manifest))
    return manifest_path, manifest


def test_a_served_writer_rebuilds_an_outdated_graph_at_start(vault: Vault):
    """The same, as a service starts: the writer's start (nothing to embed)
    rebuilds the graph in a thread of its own, then saves it, with the
    vectors the pack made before."""
    manifest_path, manifest = vectors_of_before_graph_build(vault)
    pack = models_dir() / "all-minilm-l6-v2-int8"
    service = Service(vault.settings(watch=False, vector_search=True, model_dir=pack))
    service.start()
    try:
        eventually(lambda: json.loads(manifest_path.read_bytes()).get("graph") == "serial")
        rebuilt = json.loads(manifest_path.read_bytes())
        assert rebuilt["notes"] == manifest["notes"]
        assert rebuilt["generation"] == manifest["generation"] + 1
    finally:
        service.stop()


def test_a_service_stopped_during_a_graph_rebuild_stops_it(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    """A process exiting while usearch inserts is aborted (SIGABRT): the
    service's stop ends the rebuild's thread (SpaceWriter.stop →
    `writer_stopped`), which leaves the manifest as it was."""
    manifest_path, manifest = vectors_of_before_graph_build(vault)
    building, release = held_graph_builds(monkeypatch)
    monkeypatch.setattr(vector_store, "COMPACTION_BATCH", 2)
    pack = models_dir() / "all-minilm-l6-v2-int8"
    service = Service(vault.settings(watch=False, vector_search=True, model_dir=pack))
    service.start()
    stopping = threading.Thread(target=service.stop)
    try:
        assert building.wait(WAIT_SECONDS)
        (rebuild,) = [t for t in threading.enumerate() if t.name == "vector-compaction"]
        semantic = service.spaces["notes"].semantic
        assert semantic is not None
        assert semantic.index is not None
        stopping.start()
        rebuild_state = semantic.index._rebuild
        eventually(lambda: rebuild_state.stopping)  # the stop asks the rebuild to end...
    finally:
        release.set()  # ...which it does at its next batch
        stopping.join(WAIT_SECONDS)
    assert not stopping.is_alive()
    assert not rebuild.is_alive()
    assert json.loads(manifest_path.read_bytes()) == manifest


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete", "manifest", "record"])
def test_corrupt_vector_file_is_rebuilt_while_lexical_serves(vault: Vault, damage: str):
    vault.write("a.md", long_note("a", "résilience", paragraphs=4))
    service = vault.service(vector_search=True)
    build_semantic(service, HashEmbedder())
    service.stop()
    (vector_file,) = (vault.index_dir / "notes" / "vectors").glob("vectors-*.usearch")
    data = vector_file.read_bytes()
    if damage == "manifest":
        (vector_file.parent / "vectors.json").write_bytes(b'{"fingerprint": 3')
    elif damage == "record":  # well-formed JSON, but a key that is not its id's
        manifest = json.loads((vector_file.parent / "vectors.json").read_bytes())
        manifest["notes"]["a"][0][1] += 1
        (vector_file.parent / "vectors.json").write_text(json.dumps(manifest))
    elif damage == "truncate":
        vector_file.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        vector_file.write_bytes(data[:100] + bytes([data[100] ^ 0xFF]) + data[101:])
    else:
        vector_file.unlink()
    service = vault.service(vector_search=True)
    # Lexical answers before the vectors are rebuilt.
    assert ids(service.search("notes", "résilience", NO_FILTER, 10)) == ["a"]
    embedder = HashEmbedder()
    build_semantic(service, embedder)
    status = service.spaces["notes"].status().semantic
    assert status.state == ChannelState.READY
    assert status.reason is not None
    assert "rebuilding" in status.reason
    assert embedder.passages_embedded == len(expected_fragments(service))
    assert stored_fragments(service) == expected_fragments(service)
    service.stop()


def test_the_service_trims_its_heap_once_the_model_is_loaded(vault: Vault):
    """Loading a pack frees what building its session used (~36 MiB with
    e5-small): a trim is due then, not at the first search (the trimmer's
    thread is not started here: nothing else makes one due)."""
    vault.write("a.md", "---\nid: a\n---\nrésilience opérationnelle\n")
    service = vault.service(vector_search=True, model_dir=models_dir() / "all-minilm-l6-v2-int8")
    try:
        assert not service.memory.due
        service.load_model()
        assert service.embedder is not None
        assert service.memory.due
    finally:
        service.stop()


def test_unavailable_model_degrades_to_lexical(vault: Vault, tmp_path: Path):
    vault.write("a.md", "---\nid: a\n---\nrésilience opérationnelle\n")
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"not an onnx graph")
    (broken / "tokenizer.json").write_text("{}")
    for model_dir, words in ((tmp_path / "missing", "missing"), (broken, "")):
        service = vault.service(vector_search=True, model_dir=model_dir, model={"dim": 384, "pooling": "mean"})
        service.load_model()
        response = service.search("notes", "résilience", NO_FILTER, 10)
        assert ids(response) == ["a"]
        assert "semantic" in response.degraded
        status = service.spaces["notes"].status().semantic
        assert status.state == ChannelState.UNAVAILABLE
        assert status.reason
        assert words in status.reason.lower()
        service.stop()


class HeldQueryEmbedder(HashEmbedder):
    """Its query embedding waits until the test releases it: a deadline must
    fire, however fast or slow the machine (a 0.5 s sleep raced a stalled caller)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def embed_query(self, text: str):
        self.release.wait(WAIT_SECONDS)
        return super().embed_query(text)


def test_query_past_its_deadline_degrades(vault: Vault):
    vault.write("a.md", long_note("a", "résilience", paragraphs=2))
    service = vault.service(vector_search=True, query_embed_timeout_ms=20)
    embedder = HeldQueryEmbedder()
    build_semantic(service, embedder)
    try:
        response = service.search("notes", "résilience", NO_FILTER, 10)
    finally:
        embedder.release.set()
        service.stop()
    assert ids(response) == ["a"]
    assert response.channels_used == ("lexical",)
    assert "longer than 20 ms" in response.degraded["semantic"]


class CountingQueryEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def embed_query(self, text: str):
        self.queries.append(text)
        return super().embed_query(text)


def test_a_query_asked_again_is_not_embedded_again(vault: Vault):
    """Search as you type and an assistant's retries ask the same query
    again: its embedding is kept (query_embedding.py), by the text as the
    tokenizers see it (spaces collapsed), not by its case."""
    vault.write("a.md", long_note("a", "résilience", paragraphs=2))
    service = vault.service(vector_search=True)
    embedder = CountingQueryEmbedder()
    build_semantic(service, embedder)
    try:
        for text in ("résilience réseau", "  résilience   réseau ", "résilience\tréseau", "Résilience réseau"):
            response = service.search("notes", text, NO_FILTER, 10)
            assert "semantic" in response.channels_used
            assert ids(response) == ["a"]
    finally:
        service.stop()
    assert embedder.queries == ["résilience réseau", "Résilience réseau"]


def test_building_status_and_partial_answers(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    from notarium_search.semantic import channel as space_channel

    monkeypatch.setattr(space_channel, "SLICE_FRAGMENTS", 8)
    for i in range(6):
        vault.write(f"n{i}.md", long_note(f"n{i}", "résilience", paragraphs=6))
    service = vault.service(vector_search=True)
    space = service.spaces["notes"]
    assert space.status().semantic.state == ChannelState.BUILDING  # model loading
    assert space.status().message == "Building search index…"
    semantic = space.semantic
    assert semantic is not None
    service.embedder = embedder = HashEmbedder()
    semantic.attach(embedder)
    semantic.work_slice()
    assert semantic.index is not None
    assert semantic.has_work
    status = space.status().semantic
    assert status.state == ChannelState.BUILDING
    assert space.status().message == "Building search index…"
    assert status.embedded is not None
    assert status.total is not None
    assert 0 < status.embedded < status.total
    # It answers from the fragments it has, partial, weighed by the share embedded, squared.
    response = service.search("notes", "résilience", NO_FILTER, 10)
    assert response.channels_used == ("lexical", "semantic")
    assert "semantic" not in response.degraded
    assert "partial: answered from the 8 fragments embedded so far" in response.caveats["semantic"]
    share = 8 / status.total
    query = ChannelQuery("résilience", NO_FILTER, 10, 10, vector=embedder.embed_query("résilience"))
    assert semantic.search(query).weight == pytest.approx(share**2)
    assert f"weighed {share**2:.2f} in fusion" in response.caveats["semantic"]
    while semantic.has_work:
        semantic.work_slice()
    assert space.status().semantic.state == ChannelState.READY
    assert space.status().message is None
    assert semantic.search(query).weight == 1.0
    assert "semantic" not in service.search("notes", "résilience", NO_FILTER, 10).caveats
    service.stop()


ENGLISH_NOTES = {
    "cats": "Cats purr and sleep in the sun all afternoon.",
    "ships": "Container ships cross the ocean with cargo.",
    "bread": "Bake the sourdough loaf in a hot oven after a long cold fermentation.",
}


def english_note(note_id: str, body: str) -> str:
    return f"---\nid: {note_id}\ntitle: {note_id}\n---\n{body}\n"


def test_fragments_waiting_for_their_embedding_leave_the_channel_answering(vault: Vault):
    """One fragment not yet embedded (an edit, in a space whose vectors were
    all there) turned the semantic channel off for every query: answers were
    lexical until it was embedded, or for as long as an embedding server was
    down. Now the channel answers from the vectors it has, partial, and status
    says it is building (the real MiniLM)."""
    for note_id, body in ENGLISH_NOTES.items():
        vault.write(f"{note_id}.md", english_note(note_id, body), space="en-notes")
    service = vault.service(vector_search=True)
    build_semantic(service, load_embedder(models_dir() / "all-minilm-l6-v2-int8"))
    space = service.spaces["en-notes"]
    semantic = space.semantic
    assert semantic is not None
    assert semantic.index is not None
    vault.write("dogs.md", english_note("dogs", "A puppy chews a bone in the garden."), space="en-notes")
    space.writing.run_queued_pass()  # the edit's fragment waits: the writer has not had an idle moment
    assert semantic.index.progress.pending == 1
    status = space.status().semantic
    assert status.state == ChannelState.BUILDING
    assert (status.total or 0) - (status.embedded or 0) == 1
    assert space.status().message == "Building search index…"
    response = service.search("en-notes", "a kitten dozing", NO_FILTER, 4)
    assert response.channels_used == ("lexical", "semantic")
    assert response.degraded == {}
    assert ids(response)[0] == "cats"  # no word in common: found by meaning
    caveat = response.caveats["semantic"]
    assert "partial: answered from the 3 fragments embedded so far, 1 more waiting" in caveat
    assert "weighed 0.56 in fusion" in caveat  # (3 / 4)²
    dogs = service.search("en-notes", "a young dog with a bone", NO_FILTER, 4)
    assert "semantic" in dogs.channels_used
    assert all("semantic" not in hit.channels for hit in dogs.results if hit.note.id == "dogs")  # not embedded yet
    with pytest.raises(ChannelUnavailable, match="index building: 3/4 fragments embedded"):
        service.related("en-notes", "cats", 2)  # related notes wait for the whole build
    while semantic.has_work:
        semantic.work_slice()
    assert space.status().semantic.state == ChannelState.READY
    dogs = service.search("en-notes", "a young dog with a bone", NO_FILTER, 4)
    assert ids(dogs)[0] == "dogs"
    assert "semantic" in dogs.results[0].channels
    assert "partial" not in dogs.caveats.get("semantic", "")
    assert service.related("en-notes", "cats", 2)
    service.stop()


def test_a_follower_answers_from_the_writers_last_checkpoint_while_it_builds(vault: Vault):
    """A worker following another's writer answered lexically until the writer's
    whole build was done; it now answers from the vectors of its last checkpoint."""
    for note_id, body in ENGLISH_NOTES.items():
        vault.write(f"{note_id}.md", english_note(note_id, body), space="en-notes")
    service = vault.service(vector_search=True)
    embedder = load_embedder(models_dir() / "all-minilm-l6-v2-int8")
    build_semantic(service, embedder)
    space = service.spaces["en-notes"]
    follower = FollowedSemanticChannel(space.name, space.directory / "vectors", space.lexical)
    follower.attach(embedder)
    assert follower.follow(ChannelStatus(ChannelState.BUILDING, None, embedded=3, total=5))
    assert follower.ready  # it answered lexically until the writer's build was done
    assert follower.building
    assert not follower.complete
    assert follower.status().state == ChannelState.BUILDING
    query = ChannelQuery("a kitten dozing", NO_FILTER, 3, 3, vector=embedder.embed_query("a kitten dozing"))
    result = follower.search(query)
    assert result.hits[0].note_id == "cats"
    caveat = follower.caveat(result)
    assert caveat is not None
    assert "partial: answered from the 3 fragments the writer has saved so far" in caveat
    assert "(3/5 fragments embedded)" in caveat
    assert "weighed 0.36 in fusion" in caveat  # 3 read, 2 pending: (3 / 5)²
    with pytest.raises(ChannelUnavailable):
        follower.related("cats", 2, 0.0)
    follower.follow(ChannelStatus(ChannelState.READY, None, embedded=3, total=3))
    assert (follower.ready, follower.building, follower.complete) == (True, False, True)
    assert "partial" not in (follower.caveat(follower.search(query)) or "")
    follower.follow(ChannelStatus(ChannelState.UNAVAILABLE, "embedding stopped: HTTP 401"))
    assert not follower.ready
    service.stop()


def test_an_empty_index_is_not_ready_before_its_plan_finds_the_fragments(vault: Vault):
    """Between the model's arrival and the plan's first slice nothing was
    pending, and status said READY with 0 of 0 fragments (the remote test
    caught it under load): answers came "semantically" from an empty index."""
    for i in range(6):
        vault.write(f"n{i}.md", long_note(f"n{i}", "résilience", paragraphs=6))
    service = vault.service(vector_search=True)
    space = service.spaces["notes"]
    semantic = space.semantic
    assert semantic is not None
    service.embedder = embedder = HashEmbedder()
    semantic.attach(embedder, in_slices=True)  # as the service does: the plan waits for the writer
    status = space.status().semantic
    assert (status.state, status.reason, status.total) == (ChannelState.BUILDING, PLANNING, None)
    assert not semantic.ready
    response = service.search("notes", "résilience", NO_FILTER, 10)
    assert PLANNING in response.degraded["semantic"]
    while semantic.has_work:
        semantic.work_slice()
    assert space.status().semantic.state == ChannelState.READY
    assert stored_fragments(service) == expected_fragments(service)
    service.stop()
    # A restart: the earlier run's vectors answer while the plan reads the notes again.
    service = vault.service(vector_search=True)
    semantic = service.spaces["notes"].semantic
    assert semantic is not None
    service.embedder = embedder = HashEmbedder()
    semantic.attach(embedder, in_slices=True)
    assert semantic.has_work
    assert semantic.ready
    assert "semantic" in service.search("notes", "résilience", NO_FILTER, 10).channels_used
    service.stop()


@pytest.mark.slow
def test_real_minilm_hybrid_search_and_related(vault: Vault):
    notes = {
        "agent.md": (
            "agent",
            "L'agent sans API est aveugle",
            "A software agent that cannot call other systems "
            "through programming interfaces only sees what is pasted into its prompt.",
        ),
        "apis.md": ("apis", "Open protocols", "Systems exchange data through open standard interfaces and web APIs."),
        "garden.md": ("garden", "Tomatoes", "Tomatoes grow best in full sun with regular watering in the garden."),
        "bread.md": ("bread", "Sourdough", "Bake the sourdough loaf in a hot oven after a long cold fermentation."),
    }
    for name, (note_id, title, body) in notes.items():
        vault.write(name, f"---\nid: {note_id}\ntitle: {title}\n---\n{body}\n", space="en-notes")
    service = vault.service(vector_search=True, query_embed_timeout_ms=PATIENT_MS)
    embedder = load_embedder(models_dir() / "all-minilm-l6-v2-int8")
    build_semantic(service, embedder)
    response = service.search("en-notes", "machine interoperability", NO_FILTER, 4)
    assert response.channels_used == ("lexical", "semantic")
    assert response.degraded == {}
    top = response.results[0]
    assert top.note.id in {"agent", "apis"}  # no note contains either word: meaning, not keywords
    assert "semantic" in top.channels
    assert top.snippets
    with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
        body = client.get("/spaces/en-notes/notes/agent/related", params={"limit": 2}).json()
        assert body["related"][0]["id"] == "apis"
        assert body["related"][0]["fragment"]["text"]
        assert body["related"][0]["source"]["text"]
        missing = client.get("/spaces/en-notes/notes/nope/related")
        assert (missing.status_code, missing.json()["error"]) == (404, "note_not_found")


@pytest.mark.slow
def test_real_e5_french_end_to_end(vault: Vault):
    notes = {
        "agent.md": (
            "agent",
            "L'agent sans API est aveugle",
            "Un agent logiciel qui ne peut appeler aucun autre système ne voit du monde que ce qu'on "
            "colle dans son contexte : il lui faut des échanges de données normalisés.",
        ),
        "jardin.md": ("jardin", "Les tomates", "Les tomates poussent mieux au soleil avec un arrosage régulier."),
        "pain.md": ("pain", "Le levain", "Le pain au levain cuit dans un four très chaud après une longue pousse."),
        "velo.md": ("velo", "Le vélo en ville", "Rouler à vélo en ville demande un bon éclairage et de la prudence."),
    }
    for name, (note_id, title, body) in notes.items():
        vault.write(name, f"---\nid: {note_id}\ntitle: {title}\n---\n{body}\n")
    service = vault.service(vector_search=True, query_embed_timeout_ms=PATIENT_MS)
    build_semantic(service, load_embedder(models_dir() / "multilingual-e5-small-int8"))
    # No word of the query occurs in the note: only the meaning matches, clearly
    # above what unrelated text scores (a single word is a weaker signal for
    # this small model: "interopérabilité" alone scores the agent note 0.054
    # above unrelated text, the bicycle note 0.047; docs/relevance.md).
    response = service.search("notes", "interopérabilité des applications", NO_FILTER, 4)
    assert ids(response) == ["agent"]  # the other notes are no closer than unrelated text
    assert response.results[0].channels == {"semantic": 1}
    service.stop()


@pytest.mark.slow
def test_sigkill_during_build_resumes_to_the_exact_fragment_set(vault: Vault, tmp_path: Path):
    for i in range(40):
        vault.write(f"n{i:02}.md", long_note(f"n{i}", f"sujet{i}", paragraphs=4))
    model = models_dir() / "all-minilm-l6-v2-int8"
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        import notarium_search.semantic.index as vector_index
        vector_index.CHECKPOINT_FRAGMENTS = 16  # checkpoint often, to be killed between two
        from notarium_search.semantic.embedding import load_embedder
        from notarium_search.service import Service
        from notarium_search.settings import Settings, SpaceConfig
        settings = Settings(spaces=(SpaceConfig("notes", Path({str(vault.root / "notes")!r})),),
                            index_dir=Path({str(vault.index_dir)!r}), vector_search=True)
        service = Service(settings)
        space = service.spaces["notes"]
        space.writing.run_reconcile()
        space.semantic.attach(load_embedder(Path({str(model)!r})))
        while space.semantic.has_work:
            space.semantic.work_slice()
            print("embedded", space.semantic.index.progress.embedded, flush=True)
        print("done", flush=True)
        """
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    embedded = 0
    # No deadline of our own: the child prints after every slice and ends by
    # itself (end of file), however slowly a loaded machine embeds.
    for line in process.stdout:
        if line.startswith("embedded"):
            embedded = int(line.split()[1])
            if embedded >= 64:
                break
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert embedded >= 64, "the build never got going"
    service = vault.service(vector_search=True)
    embedder = load_embedder(model)
    build_semantic(service, embedder)
    expected = expected_fragments(service)
    assert stored_fragments(service) == expected
    assert embedder.passages_embedded < len(expected)  # resumed, not restarted
    semantic = service.spaces["notes"].semantic
    assert semantic is not None
    assert semantic.index is not None
    assert semantic.index.size() == len(expected)
    service.stop()


class ThemeEmbedder(HashEmbedder):
    """Embeds every text mentioning "sécurité" (and every query) on one axis:
    a semantic channel that disagrees with the exact wording by construction."""

    def _vector(self, text: str):
        import numpy as np

        vector = np.zeros(self.config.dim, dtype=np.float32)
        vector[0 if "sécurité" in text.lower() else 1] = 1.0
        return vector

    def embed_query(self, text: str):
        return self._vector("sécurité")


def test_an_exact_phrase_match_survives_a_disagreeing_semantic_channel(vault: Vault):
    # Ten notes the semantic channel loves (and that share the query's words,
    # so the lexical channel ranks them too), one note holding the exact phrase.
    for i in range(10):
        body = f"Sécurité {i} : plan, continuité, activité ; le plan, la continuité, l'activité."
        vault.write(f"theme-{i}.md", f"---\ntitle: Sécurité {i}\n---\n{body}\n")
    vault.write("exact.md", "---\ntitle: Notes de mars\n---\nRédiger le plan de continuité d'activité avant juin.\n")
    service = vault.service(vector_search=True, query_embed_timeout_ms=PATIENT_MS)
    build_semantic(service, ThemeEmbedder())
    response = service.search("notes", "plan de continuité d'activité", NO_FILTER, 10)
    ranked = ids(response)
    assert response.channels_used == ("lexical", "semantic")
    exact = next(h for h in response.results if h.note.id == "exact.md")
    assert exact.channels.get("semantic", 99) > 10  # the semantic channel ranks it last, or not at all
    assert ranked[0] == "exact.md", ranked
    assert "phrase" in exact.trace
    service.stop()


def test_the_plan_at_start_runs_in_slices_and_yields_to_edits(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    """When the model arrives, every note is planned a slice at a time, so an
    edit waits for one slice, not for the whole plan (2.8-3.4 s at 50,000
    notes); what the edits did meanwhile is never undone by the older snapshot."""
    from notarium_search.semantic import channel as space_channel

    monkeypatch.setattr(space_channel, "PLAN_SLICE_NOTES", 4)
    for i in range(12):
        vault.write(f"n{i:02}.md", long_note(f"n{i:02}", f"sujet{i}", paragraphs=2))
    service = vault.service(vector_search=True)
    build_semantic(service, HashEmbedder())
    service.stop()
    vault.remove("n00.md")  # deleted while the service was down: its vectors must go
    service = vault.service(vector_search=True)
    space = service.spaces["notes"]
    semantic = space.semantic
    assert semantic is not None
    semantic.attach(HashEmbedder(), in_slices=True)
    assert semantic.has_work  # nothing planned yet: the writer is free for other jobs
    semantic.work_slice()  # the first 4 notes of the snapshot
    assert semantic.has_work
    # Meanwhile a pass edits and deletes notes the plan has not reached.
    vault.write("n10.md", long_note("n10", "nouveau", paragraphs=3))
    vault.remove("n11.md")
    space.writing.run_queued_pass()
    # A second pass while the first edit's fragments still wait for their embedding.
    vault.write("n09.md", long_note("n09", "remanie", paragraphs=3))
    space.writing.run_queued_pass()
    semantic.work_slice()  # the edits' fragments are embedded first, before the plan goes on
    assert semantic.index is not None
    wanted = {f.id for f in chunk_note(stored_notes.payloads_by_id(space.lexical, ["n10"])["n10"].to_note())}
    assert {r.id for r in semantic.index.notes["n10"]} == wanted
    assert semantic.has_work
    while semantic.has_work:
        semantic.work_slice()
    assert stored_fragments(service) == expected_fragments(service)
    assert semantic.index is not None
    assert {"n00", "n11"}.isdisjoint(semantic.index.notes)
    assert ids(service.search("notes", "nouveau", NO_FILTER, 10))[0] == "n10"
    service.stop()


def test_an_edit_is_embedded_before_a_builds_backlog(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    from notarium_search.semantic import channel as space_channel

    monkeypatch.setattr(space_channel, "SLICE_FRAGMENTS", 2)
    for i in range(10):
        vault.write(f"n{i}.md", long_note(f"n{i}", f"sujet{i}", paragraphs=3))
    service = vault.service(vector_search=True)
    space = service.spaces["notes"]
    semantic = space.semantic
    assert semantic is not None
    semantic.attach(HashEmbedder())  # every note planned: a backlog of ~30 fragments
    vault.write("n9.md", "---\nid: n9\n---\nUne note toute neuve et courte.\n")
    space.writing.run_queued_pass()
    semantic.work_slice()
    assert semantic.index is not None
    assert "n9" in semantic.index.notes  # embedded before the notes planned earlier
    assert semantic.has_work
    service.stop()
