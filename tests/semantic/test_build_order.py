"""What a semantic build hands the embedder, and when it checkpoints: a real
SemanticIndex (real usearch, real files), a deterministic hash embedder that
records each call."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from notarium_search.notes.parse import parse_note
from notarium_search.semantic import index as vector_index
from notarium_search.semantic import pending, vector_store
from notarium_search.semantic.chunking import chunk_note
from notarium_search.semantic.index import SemanticIndex
from notarium_search.types import ParsedNote
from tests.conftest import WAIT_SECONDS, HashEmbedder, eventually
from tests.semantic.held_graph import held_graph_builds

MTIME = datetime(2024, 1, 1, tzinfo=UTC)


class RecordingEmbedder(HashEmbedder):
    """Keeps the texts of every embed_passages call."""

    def __init__(self) -> None:
        super().__init__(dim=32)
        self.calls: list[list[str]] = []

    def embed_passages(self, texts: Sequence[str]):
        self.calls.append(list(texts))
        self.passages_embedded += len(texts)
        return np.stack([self._vector(t) for t in texts])


def note(i: int, words: int) -> ParsedNote:
    return parse_note(" ".join(f"mot{i}x{j}" for j in range(words)) + ".\n", f"n{i:02}.md", MTIME)


def short_and_long(count: int) -> list[ParsedNote]:
    """One fragment each, short and long notes alternating in plan order."""
    notes = [note(i, 8 if i % 2 else 120) for i in range(count)]
    assert all(len(chunk_note(n)) == 1 for n in notes)
    return notes


def stored_ids(index: SemanticIndex) -> set[str]:
    return {r.id for records in index.notes.values() for r in records}


def test_backlog_slices_group_fragments_of_similar_length(tmp_path: Path) -> None:
    embedder = RecordingEmbedder()
    index = SemanticIndex(tmp_path / "vectors", embedder)
    index.plan(short_and_long(20))
    index.embed_pending(10)
    index.embed_pending(10)
    first, second = ([len(t) for t in call] for call in embedder.calls)
    # In plan order each call would hold 5 long and 5 short fragments, padded
    # to the longest by the embedder's batches.
    assert min(first) > max(second)
    assert not index.has_pending


def test_edits_go_before_the_length_window(tmp_path: Path) -> None:
    embedder = RecordingEmbedder()
    index = SemanticIndex(tmp_path / "vectors", embedder)
    index.plan(short_and_long(20))
    index.embed_pending(4)  # the window is now filled with the backlog
    edited = note(99, 5)
    index.plan([edited], first=True)
    index.embed_pending(4)
    assert chunk_note(edited)[0].embed_text in embedder.calls[-1]


def test_a_fragment_replanned_while_in_the_window_is_embedded_as_it_is_now(tmp_path: Path) -> None:
    embedder = RecordingEmbedder()
    index = SemanticIndex(tmp_path / "vectors", embedder)
    notes = short_and_long(20)
    index.plan(notes)
    index.embed_pending(2)  # the window holds every other fragment
    index.plan([], deleted=[notes[3].id])  # dropped
    changed = parse_note("Un tout autre texte.\n", notes[5].path, MTIME)
    index.plan([changed])  # replaced by another fragment
    while index.has_pending:
        index.embed_pending(3)
    wanted = {f.id for n in notes if n.id != notes[3].id for f in chunk_note(n if n.id != changed.id else changed)}
    assert stored_ids(index) == wanted
    texts = [t for call in embedder.calls for t in call]
    assert len(texts) == len(set(texts)) == len(wanted)  # nothing embedded twice, nothing stale
    assert chunk_note(notes[3])[0].embed_text not in texts


@pytest.mark.parametrize("budget", [1, 7, 64])
def test_a_backlog_smaller_than_the_budget_ends(tmp_path: Path, budget: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pending, "LENGTH_WINDOW_FRAGMENTS", 4)
    index = SemanticIndex(tmp_path / "vectors", RecordingEmbedder())
    notes = short_and_long(10)
    index.plan(notes)
    while index.has_pending:
        assert index.embed_pending(budget) > 0
    assert stored_ids(index) == {f.id for n in notes for f in chunk_note(n)}


def test_checkpoints_wait_while_the_last_one_cost_more_than_its_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "CHECKPOINT_FRAGMENTS", 4)
    monkeypatch.setattr(vector_index, "CHECKPOINT_COST_FACTOR", 10**9)  # any checkpoint costs too much
    index = SemanticIndex(tmp_path / "vectors", RecordingEmbedder())
    notes = short_and_long(20)
    index.plan(notes)
    index.embed_pending(4)
    assert index.generation == 1  # the first one is free: no checkpoint has cost anything yet
    while index.has_pending:
        index.embed_pending(4)
        assert index.generation == 1 or not index.has_pending
    assert index.generation == 2  # the build's end always saves
    reopened = SemanticIndex(tmp_path / "vectors", RecordingEmbedder())
    assert stored_ids(reopened) == {f.id for n in notes for f in chunk_note(n)}


def test_checkpoints_come_every_checkpoint_fragments_when_they_are_cheap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "CHECKPOINT_FRAGMENTS", 4)
    monkeypatch.setattr(vector_index, "CHECKPOINT_COST_FACTOR", 0)
    index = SemanticIndex(tmp_path / "vectors", RecordingEmbedder())
    index.plan(short_and_long(20))
    index.embed_pending(4)
    index.embed_pending(4)
    assert index.generation == 2


def embedded_index(tmp_path: Path, embedder: RecordingEmbedder, notes: list[ParsedNote]) -> SemanticIndex:
    """Their vectors saved, as a version before GRAPH_BUILD saved them (its
    manifest names no graph), and opened again: due for a rebuild."""
    index = SemanticIndex(tmp_path / "vectors", embedder)
    index.plan(notes)
    index.embed_pending(100)
    index.checkpoint()
    manifest = json.loads((tmp_path / "vectors" / "vectors.json").read_bytes())
    assert manifest.pop("graph") == vector_store.GRAPH_BUILD
    (tmp_path / "vectors" / "vectors.json").write_text(json.dumps(manifest))
    index = SemanticIndex(tmp_path / "vectors", embedder)
    assert index.store.graph == ""
    return index


def test_a_compaction_runs_in_its_thread_while_the_writer_goes_on_and_is_saved_on_the_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a writer thread to tell (`writer_jobs`), the graph is rebuilt in
    a thread of its own: the checkpoint that starts it returns; while its new
    graph is held, searches, a note's removal and a new note's embedding go
    on; the rebuilt graph holds them, and is saved by the job it hands the
    writer, the manifest naming it only then."""
    embedder = RecordingEmbedder()
    notes = short_and_long(13)
    index = embedded_index(tmp_path, embedder, notes[:12])
    jobs: list[Callable[[], None]] = []
    index.writer_jobs = jobs.append
    building, release = held_graph_builds(monkeypatch)
    index.checkpoint()  # starts the compaction, and returns
    assert building.wait(WAIT_SECONDS)
    assert index.compacting
    assert index.nearest(embedder.embed_query(notes[3].text), 1)[0][0] == notes[3].id
    index.plan([notes[12]], deleted=[notes[3].id])
    index.embed_pending(100)
    index.checkpoint()  # a save of the old graph, named as such (no name)
    assert "graph" not in json.loads((tmp_path / "vectors" / "vectors.json").read_bytes())
    release.set()
    eventually(lambda: len(jobs) == 1)
    assert index.compacting  # until the writer runs the job
    jobs[0]()
    assert not index.compacting
    saved = json.loads((tmp_path / "vectors" / "vectors.json").read_bytes())
    assert saved["graph"] == vector_store.GRAPH_BUILD
    assert notes[3].id not in saved["notes"]
    assert notes[12].id in saved["notes"]
    assert index.store.tombstones <= 1  # the 12 notes' graph rebuilt; the replayed removal's own
    kept = [n for n in notes if n.id != notes[3].id]
    assert [n.id for n in kept if index.nearest(embedder.embed_query(n.text), 1)[0][0] != n.id] == []


def test_a_stopping_writer_stops_its_compaction_and_keeps_the_old_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that exits while usearch inserts is aborted by its C++
    runtime (SIGABRT): the writer's stop ends the compaction's thread at its
    next batch, nothing is handed to the writer, the manifest still names the
    old graph (rebuilt at the next start)."""
    embedder = RecordingEmbedder()
    notes = short_and_long(12)
    index = embedded_index(tmp_path, embedder, notes)
    jobs: list[Callable[[], None]] = []
    index.writer_jobs = jobs.append
    building, release = held_graph_builds(monkeypatch)
    monkeypatch.setattr(vector_store, "COMPACTION_BATCH", 4)
    index.checkpoint()
    assert building.wait(WAIT_SECONDS)
    (thread,) = [t for t in threading.enumerate() if t.name == "vector-compaction"]
    release.set()  # the first batch goes in; the stop is seen before the second
    index.stop_compaction(WAIT_SECONDS)
    assert not thread.is_alive()
    assert jobs == []
    assert index.store.graph == ""
    assert "graph" not in json.loads((tmp_path / "vectors" / "vectors.json").read_bytes())
    assert [n.id for n in notes if index.nearest(embedder.embed_query(n.text), 1)[0][0] != n.id] == []
