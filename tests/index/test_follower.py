"""Several workers over one index folder (index/follower.py): the first to
open a space writes it, the others follow its commits, links, vectors and
status, and pass their reindex and repair requests to it. Two services in
one process stand for two workers: each opens its own file descriptions, so
the writer lock is taken once, as between processes."""

from __future__ import annotations

import os
import subprocess
import threading

import pytest
from msgspec.structs import replace

from notarium_search.errors import SpaceUnavailable
from notarium_search.index import sharing
from notarium_search.index.follower import Follower
from notarium_search.index.lock import LOCK_FILE
from notarium_search.semantic.embedding import load_embedder
from notarium_search.semantic.follower import FollowedSemanticChannel
from notarium_search.service import Service
from notarium_search.types import ChannelState, FeedFilter, IndexState, SpaceStatus
from tests.conftest import Vault, eventually, ids, models_dir


def note(note_id: str, body: str) -> str:
    return f"---\nid: {note_id}\n---\n{body}\n"


def workers(vault: Vault, **overrides: object) -> tuple[Service, Service]:
    """A writer and a follower, started, the writer's first pass done."""
    settings = replace(vault.settings(watch=False), **overrides)
    writer = Service(settings, shared=True)
    follower = Service(settings, shared=True)
    assert not isinstance(writer.spaces["notes"].role, Follower)
    assert isinstance(follower.spaces["notes"].role, Follower)
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
    assert not isinstance(replacement.spaces["notes"].role, Follower)
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
    this server's workers, so the space is not followed: it is reported with
    who holds it, and the worker serves the others."""
    vault.write("a.md", note("a", "premier"))
    vault.write("b.md", note("b", "second"), space="other")
    holder = Service(vault.settings(watch=False), shared=True)
    program = subprocess.Popen(["sleep", "600"])  # alive, and still the child of this process
    try:
        (vault.index_dir / "notes" / LOCK_FILE).write_text(f"{program.pid} {os.getpid()} index\n")
        worker = Service(vault.settings(watch=False), shared=True)
        try:
            assert "notes" not in worker.spaces
            assert isinstance(worker.spaces["other"].role, Follower)  # the other space is followed as usual
            reason = worker.registry.unopened["notes"].reason
            assert f"in use by another process (`notarium-search index`, pid {program.pid})" in reason
            with pytest.raises(SpaceUnavailable, match="could not open"):
                worker.space("notes")
        finally:
            worker.stop()
    finally:
        program.kill()
        program.wait()
        holder.stop()


def test_a_follower_asks_the_writer_to_repair(vault: Vault):
    vault.write("a.md", note("a", "premier"))
    writer, follower = workers(vault)
    try:
        space = follower.spaces["notes"]
        space.request_repair("a test's damage")
        space.request_repair("the same damage, seen again")  # asked once
        eventually(lambda: writer.spaces["notes"].writing.passes.repaired is not None)
        assert "seen by another worker: a test's damage" in (writer.spaces["notes"].writing.passes.repaired or "")
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
        # Complete on both sides: the scores are compared (a channel answers partial meanwhile).
        eventually(lambda: writer.spaces["notes"].semantic is not None and writer.spaces["notes"].semantic.complete)
        eventually(lambda: follower.spaces["notes"].semantic is not None and follower.spaces["notes"].semantic.complete)
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
        # Found by meaning from a checkpoint a moment before the writer publishes its build complete:
        # related notes wait for the whole build.
        eventually(lambda: follower.status()[0].semantic.state == ChannelState.READY)
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
        assert not semantic.follow(None)
        assert semantic.index is None
        assert not semantic.ready
        assert (vault.index_dir / "notes" / "vectors" / "vectors.json").exists()
    finally:
        follower.stop()
        writer.stop()


def unstarted(vault: Vault, **overrides: object) -> tuple[Service, Service]:
    """A writer and a follower whose steps the test makes itself (no threads)."""
    settings = replace(vault.settings(watch=False), **overrides)
    writer = Service(settings, shared=True)
    writer.spaces["notes"].writing.run_reconcile()
    return writer, Service(settings, shared=True)


def backlinks(service: Service, note_id: str) -> list[str]:
    return sorted(n.id for n in service.note("notes", note_id).backlinks)


def test_a_new_writer_makes_followers_read_every_link_again(vault: Vault):
    """A writer killed in a pass may have committed notes it never journaled
    (a pass commits along the way and journals at its end): the next writer's
    first word is "read everything". A plain writer stands in for the dead one."""
    vault.write("a.md", note("a", "alpha [[b]]"))
    vault.write("b.md", note("b", "beta"))
    writer, follower = unstarted(vault, graph_boost=True)  # the follower reads the links at open
    looks = follower.spaces["notes"].role
    assert isinstance(looks, Follower)
    assert looks is not None
    writer.stop()
    vault.write("c.md", note("c", "gamma [[b]]"))
    dead = Service(vault.settings(watch=False, graph_boost=True))  # commits, journals nothing
    dead.spaces["notes"].writing.run_reconcile()
    dead.stop()
    looks.refresh()
    assert found(follower, "gamma") == ["c"]
    assert backlinks(follower, "b") == ["a"]  # the commit came with no journal entry
    replacement = Service(vault.settings(watch=False, graph_boost=True), shared=True)
    try:
        looks.refresh()
        assert backlinks(follower, "b") == ["a", "c"]
    finally:
        replacement.stop()
        follower.stop()


def test_a_pass_journaled_during_a_followers_reload_is_applied_from_its_commit(vault: Vault):
    """The journal is read before the searcher reloads: an entry written just
    after the reload is left for the next look, never applied from the older
    searcher and counted as seen."""
    vault.write("a.md", note("a", "alpha [[b]]"))
    vault.write("b.md", note("b", "beta"))
    writer, follower = unstarted(vault, graph_boost=True)  # the follower reads the links at open
    space = follower.spaces["notes"]
    looks = space.role
    assert isinstance(looks, Follower)
    assert looks is not None
    reload = space.lexical.reload
    passes: list[int] = []

    def reload_then_the_writer_commits(keep_if_emptied: bool = False) -> bool:
        done = reload(keep_if_emptied)
        if not passes:
            passes.append(1)
            vault.write("c.md", note("c", "gamma [[b]]"))
            writer.spaces["notes"].writing.run_reconcile()  # commits and journals right after the reload
        return done

    space.lexical.reload = reload_then_the_writer_commits  # type: ignore[method-assign]
    try:
        vault.write("d.md", note("d", "delta"))
        writer.spaces["notes"].writing.run_reconcile()
        looks.refresh()
        looks.refresh()
        assert backlinks(follower, "b") == ["a", "c"]
    finally:
        follower.stop()
        writer.stop()


def test_a_followers_status_says_ready_only_with_the_notes_it_serves(vault: Vault):
    """The writer commits, then publishes its status; a follower reads the
    status before it reloads its searcher. Between the two, its /status said
    "ready" with the older searcher's count: 0 notes, at start (a CI failure
    of tests/test_vault_root.py). The reload is held here where the request
    came: the request waits for it, and says "ready" with the notes."""
    for i in range(4):
        vault.write(f"n{i}.md", note(f"n{i}", "commun"))
    settings = vault.settings(watch=False)
    writer = Service(settings, shared=True)
    follower = Service(settings, shared=True)  # opened before the writer's first commit
    space = follower.spaces["notes"]
    looks = space.role
    assert isinstance(looks, Follower)
    reload = space.lexical.reload
    reloading, release = threading.Event(), threading.Event()

    def held_reload(keep_if_emptied: bool = False) -> bool:
        reloading.set()
        assert release.wait(timeout=60)
        return reload(keep_if_emptied)

    space.lexical.reload = held_reload  # type: ignore[method-assign]
    look = threading.Thread(target=looks.refresh)
    asked: list[SpaceStatus] = []
    request = threading.Thread(target=lambda: asked.append(follower.status()[0]))
    turns = looks._catching_up = WatchedLock(looks._catching_up, request)  # type: ignore[assignment]
    try:
        writer.spaces["notes"].writing.run_reconcile()
        writer.spaces["notes"].writing.publish_status()
        look.start()
        assert reloading.wait(timeout=60)
        request.start()
        assert turns.asked.wait(timeout=60)  # the request came while the look reloads
        release.set()
        look.join(timeout=60)
        request.join(timeout=60)
        assert [(s.lexical.state, s.notes) for s in asked] == [(IndexState.READY, 4)]
    finally:
        release.set()
        for thread in (look, request):
            if thread.ident is not None:
                thread.join(timeout=60)
        follower.stop()
        writer.stop()


class WatchedLock:
    """A lock that says when one thread asked for it."""

    def __init__(self, lock: threading.Lock, watched: threading.Thread) -> None:
        self.lock, self.watched, self.asked = lock, watched, threading.Event()

    def __enter__(self) -> None:
        if threading.current_thread() is self.watched:
            self.asked.set()
        self.lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def test_a_follower_says_no_less_than_the_writer_said(vault: Vault):
    """A client told "ready" by the writer's worker was told "waiting for the
    writer" with 0 notes by the next, until that worker's next look (CI,
    tests/test_vault_root.py). The writer publishes what its /status says
    before saying it, and a follower's /status catches up with it. No peer
    loop runs here: the follower takes no look of its own."""
    for i in range(3):
        vault.write(f"n{i}.md", note(f"n{i}", "commun"))
    settings = vault.settings(watch=False)
    writer = Service(settings, shared=True)
    follower = Service(settings, shared=True)
    try:
        assert follower.status()[0].lexical.state == IndexState.BUILDING
        writer.spaces["notes"].writing.run_reconcile()
        said = writer.status()[0]
        assert (said.lexical.state, said.notes) == (IndexState.READY, 3)
        heard = follower.status()[0]
        assert (heard.lexical.state, heard.notes) == (IndexState.READY, 3)
        assert sorted(found(follower, "commun")) == ["n0", "n1", "n2"]
    finally:
        follower.stop()
        writer.stop()


def test_a_follower_holds_no_file_records(vault: Vault):
    """The file manifest's records are the writer's (what to read again, which
    id a path has): a follower, whose status is the writer's, loads only its
    head. Loaded whole, they were 31.5 MiB of every follower at 50,000 notes."""
    for n in range(5):
        vault.write(f"n{n}.md", note(f"n{n}", f"note {n}"))
    settings = vault.settings(watch=False)
    writer = Service(settings, shared=True)
    try:
        writer.spaces["notes"].writing.run_reconcile()
        written = writer.spaces["notes"].manifest
        assert len(written.entries) == 5
        assert written.opstamp is not None
        follower = Service(settings, shared=True)
        try:
            followed = follower.spaces["notes"].manifest
            assert isinstance(follower.spaces["notes"].role, Follower)
            assert followed.entries == {}
            assert (followed.opstamp, followed.unread) == (written.opstamp, written.unread)
            assert follower.spaces["notes"].mismatch is None
            assert sorted(found(follower, "note")) == [f"n{n}" for n in range(5)]
        finally:
            follower.stop()
    finally:
        writer.stop()


def test_a_follower_answers_from_the_writers_last_commit(vault: Vault):
    """A note the writer committed is in the next answer of every worker, not
    only after that worker's next look (no peer loop runs here)."""
    vault.write("a.md", note("a", "premier"))
    settings = vault.settings(watch=False)
    writer = Service(settings, shared=True)
    follower = Service(settings, shared=True)
    try:
        writer.spaces["notes"].writing.run_reconcile()
        assert found(follower, "premier") == ["a"]
        vault.write("b.md", note("b", "second"))
        writer.spaces["notes"].writing.run_reconcile()
        assert found(follower, "second") == ["b"]
        assert follower.status()[0].notes == 2
    finally:
        follower.stop()
        writer.stop()


def test_a_follower_keeps_answering_while_the_writer_rebuilds_an_emptied_index(vault: Vault):
    """A repair empties the index before reading the notes again; its writer
    keeps its older searcher until the rebuild commits, and so do followers.
    A space whose notes were all deleted, once the writer says so, is empty."""
    for i in range(5):
        vault.write(f"n{i}.md", note(f"n{i}", "commun"))
    writer, follower = unstarted(vault)
    looks = follower.spaces["notes"].role
    assert isinstance(looks, Follower)
    assert looks is not None
    try:
        writer.spaces["notes"].writing.publish_status()
        looks.refresh()
        writer.spaces["notes"].lexical.recreate()  # what a repair does first
        looks.refresh()
        assert len(found(follower, "commun")) == 5
        writer.spaces["notes"].writing.run_reconcile()  # the rebuild
        looks.refresh()
        assert len(found(follower, "commun")) == 5
        writer.spaces["notes"].lexical.delete_all()  # as a full reindex of a folder emptied for real
        writer.spaces["notes"].lexical.commit()
        looks.refresh()
        assert follower.status()[0].notes == 5  # not yet: the writer has not said so
        writer.spaces["notes"].writing.publish_status()
        looks.refresh()
        assert follower.status()[0].notes == 0
    finally:
        follower.stop()
        writer.stop()


def test_a_searchs_vanished_hits_make_one_request(vault: Vault):
    for i in range(15):
        vault.write(f"n{i}.md", note(f"n{i}", "commun"))
    writer, follower = unstarted(vault)
    looks = follower.spaces["notes"].role
    assert isinstance(looks, Follower)
    assert looks is not None
    try:
        for i in range(15):
            vault.remove(f"n{i}.md")
        assert found(follower, "commun") == []  # every hit's file is gone
        looks.refresh()
        requests = list((vault.index_dir / "notes" / sharing.REQUESTS_DIR).iterdir())
        assert len(requests) == 1
        (request,) = sharing.take_requests(vault.index_dir / "notes")
        assert request.kind == "reconcile"
        assert sorted(request.paths or []) == sorted(f"n{i}.md" for i in range(15))
    finally:
        follower.stop()
        writer.stop()


def test_the_peer_steps_say_when_they_see_something_new(vault: Vault):
    """A quiet peer loop slows down (index/peers.py): its steps say whether
    they saw something new: a follower's look a commit, a writer's round a
    request, its publication a status that changed."""
    vault.write("a.md", note("a", "alpha"))
    writer, follower = workers(vault)
    try:
        for service in (writer, follower):
            service.peers.stop()
            service.peers._thread.join()
        (look,), _ = follower.spaces["notes"].role.peer_steps()
        (take,), (publish, *_) = writer.spaces["notes"].role.peer_steps()
        # Once what the loops had not seen yet is seen, nothing is new.
        eventually(lambda: (look(), take(), publish()) == (False, False, False))
        follower.reindex("notes", full=False)  # a request file, sent at the follower's next look
        assert look() is True
        assert take() is True  # the writer's pass is queued
        eventually(lambda: bool(publish()))  # its status changes while it runs, and once it is done
        vault.write("b.md", note("b", "beta"))
        writer.reindex("notes", full=False)
        eventually(lambda: writer.status()[0].notes == 2)
        assert look() is True  # the commit
        eventually(lambda: look() is False)
    finally:
        follower.stop()
        writer.stop()
