"""A real watcher on a temporary space: every kind of change reaches search,
and nothing stale or half-written stays behind."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator

import pytest

from notarium_search.lexical import stored as stored_notes
from notarium_search.service import Service
from notarium_search.types import FeedFilter
from tests.conftest import WAIT_SECONDS, Vault, eventually, ids

NO_FILTER = FeedFilter()


def note(note_id: str, words: str) -> str:
    return f"---\nid: {note_id}\ntitle: Note {note_id}\n---\n{words}\n"


def found(service: Service, query: str, filters: FeedFilter = NO_FILTER) -> list[str]:
    return ids(service.search("notes", query, filters, 100))


@pytest.fixture
def live(vault: Vault) -> Iterator[Service]:
    vault.write("start.md", note("start", "premier"))
    service = Service(vault.settings(watch_debounce_ms=100))
    service.start()
    space = service.spaces["notes"]
    assert space.writing.wait_ready(30)
    eventually(lambda: space.status().watch == "watching")
    yield service
    service.stop()


def test_create_edit_delete(vault: Vault, live: Service):
    vault.write("a.md", note("a", "mandarine"))
    eventually(lambda: found(live, "mandarine") == ["a"])
    vault.write("a.md", note("a", "clementine"))
    eventually(lambda: found(live, "clementine") == ["a"])
    assert found(live, "mandarine") == []  # no stale text
    vault.remove("a.md")
    eventually(lambda: found(live, "clementine") == [])
    assert "a" not in [n.id for n in live.feed("notes", "", NO_FILTER, 100, None).items]


def test_rename_and_move_keep_the_identity(vault: Vault, live: Service):
    vault.write("projets/a.md", note("a", "pamplemousse"))
    eventually(lambda: found(live, "pamplemousse") == ["a"])
    root = vault.root / "notes"
    os.makedirs(root / "archives", exist_ok=True)
    os.replace(root / "projets" / "a.md", root / "archives" / "renamed.md")
    eventually(lambda: found(live, "pamplemousse", FeedFilter(folder="archives")) == ["a"])
    assert found(live, "pamplemousse", FeedFilter(folder="projets")) == []
    assert found(live, "pamplemousse") == ["a"]  # one note, not a ghost at the old path
    # A note without frontmatter id is known by its path: the move is a new note.
    vault.write("sans-id.md", "Kumquat sans identifiant.\n")
    eventually(lambda: found(live, "kumquat") == ["sans-id.md"])
    os.replace(root / "sans-id.md", root / "archives" / "sans-id.md")
    eventually(lambda: found(live, "kumquat") == ["archives/sans-id.md"])


def test_a_burst_of_500_files_then_no_ghosts(vault: Vault, live: Service):
    for i in range(500):
        vault.write(f"lot/n{i:03}.md", note(f"n{i:03}", f"rafale numero{i}"))
    eventually(lambda: len(found(live, "rafale")) == 100 and live.spaces["notes"].status().notes == 501)
    for i in range(0, 500, 2):
        vault.remove(f"lot/n{i:03}.md")
    eventually(lambda: live.spaces["notes"].status().notes == 251)
    every = [f"n{i:03}" for i in range(500)]
    left = stored_notes.payloads_by_id(live.spaces["notes"].lexical, every)
    assert sorted(left) == every[1::2]  # exactly the files still there
    assert found(live, "numero2 ") == []  # deleted (the trailing space: a whole word, not a prefix)
    assert found(live, "numero3 ") == ["n003"]


def test_editor_atomic_saves_leave_no_temporary_notes(vault: Vault, live: Service):
    root = vault.root / "notes"
    vault.write("draft.md", note("draft", "version un"))
    eventually(lambda: found(live, "version") == ["draft"])
    for temporary in (".draft.md.swp", "draft.md~", ".#draft.md", "draft.md.tmp", ".draft.md.tmp"):
        (root / temporary).write_text(note("draft", "brouillon temporaire"), encoding="utf-8")
        if temporary.endswith("tmp"):
            os.replace(root / temporary, root / "draft.md")  # write-then-rename
    (root / ".draft.md.swp").unlink()
    (root / "draft.md~").unlink()
    (root / ".#draft.md").unlink()
    eventually(lambda: found(live, "temporaire") == ["draft"])
    assert found(live, "version") == []
    assert live.spaces["notes"].status().notes == 2  # start.md and draft.md only


def test_polling_when_watching_is_off(vault: Vault):
    vault.write("start.md", note("start", "premier"))
    service = Service(vault.settings(watch=False, reconcile_interval=1))
    service.start()
    try:
        space = service.spaces["notes"]
        assert space.writing.wait_ready(30)
        eventually(lambda: (space.status().watch or "").startswith("polling every 1 s"))
        vault.write("b.md", note("b", "sondage"))
        eventually(lambda: found(service, "sondage") == ["b"])
    finally:
        service.stop()


def test_reindex_full_rebuilds_from_the_files(vault: Vault, live: Service):
    stamp = time.time() - 3600
    vault.write("c.md", note("c", "cerise"), mtime=stamp)
    eventually(lambda: found(live, "cerise") == ["c"])
    # Same size, same time: only a pass that reads every file again can see this edit.
    vault.write("c.md", note("c", "prunes"), mtime=stamp)
    space = live.spaces["notes"]
    live.reindex("notes", full=True)
    done = threading.Event()
    space.writing.writer.put(done.set)  # the writer runs its jobs in order: this one runs after the rebuild
    assert done.wait(WAIT_SECONDS)
    assert found(live, "prunes") == ["c"]
    assert found(live, "cerise") == []
    assert space.status().notes == 2
    eventually(lambda: space.status().message is None)  # after the watcher's own pass over the edit


def test_watching_resumes_after_the_folder_goes_and_comes_back(vault: Vault, live: Service):
    """A deleted or unmounted space folder ends the watch loop by itself: the
    watcher must wait for the folder and watch it again, not fall silent."""
    root = vault.root / "notes"
    space = live.spaces["notes"]
    shutil.rmtree(root)
    eventually(lambda: space.status().lexical.error is not None)  # said, and the index kept
    assert found(live, "premier") == ["start"]
    root.mkdir()
    vault.write("start.md", note("start", "premier"))
    vault.write("back.md", note("back", "retour"))
    eventually(lambda: found(live, "retour") == ["back"] and space.status().watch == "watching")
    vault.write("later.md", note("later", "ensuite"))  # seen by the new watch, not by a poll
    eventually(lambda: found(live, "ensuite") == ["later"])


def test_a_folder_replaced_in_one_move_is_watched_again(vault: Vault, live: Service):
    """A sync tool may swap the whole folder (rename a fresh copy over it):
    the old watch would see nothing more."""
    root = vault.root / "notes"
    fresh = vault.root / "fresh"
    fresh.mkdir()
    (fresh / "start.md").write_text(note("start", "premier"))
    (fresh / "swap.md").write_text(note("swap", "echange"))
    shutil.rmtree(root)
    os.replace(fresh, root)
    eventually(lambda: found(live, "echange") == ["swap"])
    vault.write("after.md", note("after", "apres"))
    eventually(lambda: found(live, "apres") == ["after"])
