"""Several workers over one index folder (index/follower.py): the first to
open a space writes it, the others follow its commits, links, vectors and
status, and pass their reindex and repair requests to it. Two services in
one process stand for two workers: each opens its own file descriptions, so
the writer lock is taken once, as between processes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from notarium_search.index import sharing
from notarium_search.index.folder import LOCK_FILE
from notarium_search.lexical.store import IndexLocked
from notarium_search.semantic.embedding import load_embedder
from notarium_search.semantic.follower import FollowedSemanticChannel
from notarium_search.service import Service
from notarium_search.types import ChannelState, FeedFilter, IndexState
from tests.conftest import Vault, eventually, ids, models_dir


def note(note_id: str, body: str) -> str:
    return f"---\nid: {note_id}\n---\n{body}\n"


def workers(vault: Vault, **overrides: object) -> tuple[Service, Service]:
    """A writer and a follower, started, the writer's first pass done."""
    settings = replace(vault.settings(watch=False), **overrides)  # type: ignore[arg-type]
    writer = Service(settings, shared=True)
    follower = Service(settings, shared=True)
    assert writer.spaces["notes"].follower is None
    assert follower.spaces["notes"].follower is not None
    writer.start()
    follower.start()
    eventually(lambda: follower.spaces["notes"].ready)
    return writer, follower


def found(service: Service, text: str) -> list[str]:
    return ids(service.search("notes", text, FeedFilter(), 20))


def test_a_follower_serves_what_the_writer_commits(vault: Vault):
    vault.write("cafe.md", note("cafe", "Le café du matin. Voir [[the]]."))
    vault.write("the.md", note("the", "Le thé vert."))
    writer, follower = workers(vault, graph_boost=True)
    try:
        assert found(follower, "café") == ["cafe", "the"]  # the second by its link
        status = follower.status()[0]
        assert status.lexical.state == IndexState.READY
        assert status.notes == 2
        assert status.graph.state == ChannelState.READY
        # A new note, found by the writer's pass (watching is off: asked by the follower).
        vault.write("tisane.md", note("tisane", "Une tisane, comme [[cafe]]."))
        follower.reindex("notes", full=False)
        eventually(lambda: found(follower, "tisane")[:1] == ["tisane"])
        # Its links reached the follower's graph through the change journal.
        eventually(lambda: "tisane" in {n.id for n in follower.note("notes", "cafe").backlinks})
        vault.remove("cafe.md")
        follower.reindex("notes", full=False)
        eventually(lambda: "cafe" not in found(follower, "café matin"))
        eventually(lambda: follower.status()[0].notes == 2)
    finally:
        follower.stop()
        writer.stop()


def test_a_full_reindex_asked_by_a_follower_rebuilds_its_graph(vault: Vault):
    vault.write("a.md", note("a", "alpha [[b]]"))
    vault.write("b.md", note("b", "beta"))
    writer, follower = workers(vault, graph_boost=True)
    try:
        directory = vault.index_dir / "notes"
        before = sharing.read_journal(directory)
        follower.reindex("notes", full=True)
        eventually(lambda: (j := sharing.read_journal(directory)) is not None and j.entries[-1].everything)
        assert before is None or sharing.read_journal(directory).last_serial > before.last_serial  # type: ignore[union-attr]
        eventually(lambda: [n.id for n in follower.note("notes", "b").backlinks] == ["a"])
    finally:
        follower.stop()
        writer.stop()


def test_a_new_writer_takes_over_and_followers_keep_following(vault: Vault):
    """The writer's worker died (its lock released): the next worker to open
    the space writes it, and the journal goes on where it was."""
    vault.write("a.md", note("a", "premier"))
    writer, follower = workers(vault)
    writer.stop()
    replacement = Service(vault.settings(watch=False), shared=True)
    assert replacement.spaces["notes"].follower is None
    replacement.start()
    try:
        vault.write("b.md", note("b", "second"))
        follower.reindex("notes", full=False)
        eventually(lambda: found(follower, "second") == ["b"])
    finally:
        follower.stop()
        replacement.stop()


def test_a_space_locked_by_another_program_is_not_followed(vault: Vault):
    """`notarium-search index` (or another service) holds the lock: not one of
    this server's workers, so the worker stops as a lone one does."""
    vault.write("a.md", note("a", "premier"))
    holder = Service(vault.settings(watch=False), shared=True)
    try:
        (vault.index_dir / "notes" / LOCK_FILE).write_text("1 1\n")  # a holder whose parent is not ours
        with pytest.raises(IndexLocked):
            Service(vault.settings(watch=False), shared=True)
    finally:
        holder.stop()


def test_a_follower_asks_the_writer_to_repair(vault: Vault):
    vault.write("a.md", note("a", "premier"))
    writer, follower = workers(vault)
    try:
        space = follower.spaces["notes"]
        space.request_repair("a test's damage")
        space.request_repair("the same damage, seen again")  # asked once
        eventually(lambda: writer.spaces["notes"].repaired is not None)
        assert "seen by another worker: a test's damage" in (writer.spaces["notes"].repaired or "")
        eventually(lambda: "a test's damage" in (follower.status()[0].lexical.repaired or ""))
    finally:
        follower.stop()
        writer.stop()


def test_a_follower_answers_from_the_writers_vectors(vault: Vault):
    model = models_dir() / "all-minilm-l6-v2-int8"
    vault.write("cats.md", note("cats", "Cats purr and sleep in the sun all afternoon."))
    vault.write("ships.md", note("ships", "Container ships cross the ocean with cargo."))
    writer, follower = workers(vault, vector_search=True, model_dir=model)
    try:
        eventually(lambda: follower.spaces["notes"].semantic is not None and follower.spaces["notes"].semantic.ready)
        answer = follower.search("notes", "a kitten dozing", FeedFilter(), 5)
        assert "semantic" in answer.channels_used
        assert not answer.degraded
        assert ids(answer)[0] == "cats"
        mine = writer.search("notes", "a kitten dozing", FeedFilter(), 5)
        assert [(h.note.id, h.score) for h in answer.results] == [(h.note.id, h.score) for h in mine.results]
        # An edit's vectors reach the follower with the writer's next checkpoint.
        vault.write("dogs.md", note("dogs", "A puppy chews a bone in the garden."))
        follower.reindex("notes", full=False)
        eventually(lambda: "dogs" in ids(follower.search("notes", "young dog with a bone", FeedFilter(), 5)))
        related = follower.related("notes", "cats", 5)
        assert related
        assert related[0].note.id in {"dogs", "ships"}
    finally:
        follower.stop()
        writer.stop()


def test_the_follower_reads_vectors_of_its_own_model_only(vault: Vault, tmp_path):
    """Vectors another model made (the writer has not rebuilt them yet) are not read."""
    vault.write("cats.md", note("cats", "Cats purr."))
    writer, follower = workers(vault, vector_search=True, model_dir=models_dir() / "all-minilm-l6-v2-int8")
    try:
        semantic = follower.spaces["notes"].semantic
        assert isinstance(semantic, FollowedSemanticChannel)
        eventually(lambda: semantic.ready)
        other = load_embedder(models_dir() / "multilingual-e5-small-int8")
        semantic.index = None
        semantic._read = None
        follower.peers.stop()  # the test looks itself
        semantic.attach(other)
        assert not semantic.refresh(None)
        assert semantic.index is None
        assert not semantic.ready
        assert (vault.index_dir / "notes" / "vectors" / "vectors.json").exists()
    finally:
        follower.stop()
        writer.stop()
