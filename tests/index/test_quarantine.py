"""Notes that took the indexer down are set aside until they change
(index/quarantine.py): a note of 100,000 `[` held the writer past the
watchdog, the new worker read it again, and nothing else was ever indexed."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from notarium_search.index.quarantine import MARK_FILE, QUARANTINE_STRIKES, READ_BUDGET_SECONDS
from notarium_search.service import Service
from notarium_search.types import FeedFilter, ParsedNote
from tests.conftest import PROJECT_ROOT, Vault, eventually

# Indexes the space in a process that dies (SIGKILL: no cleanup runs) as it
# reads poison.md: what a crash in a parser, or the watchdog's kill, does.
DIES_ON_POISON = """
import os, signal, sys
from notarium_search.notes import parse
from notarium_search.settings import load_settings
from notarium_search.service import Service

real = parse.parse_note
def parse_note(text, path, mtime):
    if path == "poison.md":
        os.kill(os.getpid(), signal.SIGKILL)
    return real(text, path, mtime)
parse.parse_note = parse_note
service = Service(load_settings(None, env=dict(os.environ)))
service.spaces["notes"].writing.run_reconcile()
"""


def ids(service: Service, query: str) -> list[str]:
    return sorted(hit.note.id for hit in service.search("notes", query, FeedFilter(), 20).results)


def mark(folder: Path) -> str:
    """The mark in an index folder: up to its NUL, "" when cleared."""
    return (folder / MARK_FILE).read_text().split("\0", 1)[0]


def die_reading_poison(vault: Vault) -> None:
    env = {"NOTARIUM_SPACES_ROOT": str(vault.root), "NOTARIUM_INDEX_DIR": str(vault.index_dir), "PATH": "/usr/bin"}
    done = subprocess.run(
        [sys.executable, "-c", DIES_ON_POISON], cwd=PROJECT_ROOT, env=env, capture_output=True, timeout=120, check=False
    )
    assert done.returncode == -signal.SIGKILL, done.stderr


@pytest.fixture
def poisoned(vault: Vault) -> Vault:
    for i in range(5):
        vault.write(f"n{i}.md", f"---\nid: n{i}\n---\nune note ordinaire {i}\n")
    vault.write("poison.md", "---\nid: poison\n---\nune note ordinaire qui tue\n")
    vault.write("z-after.md", "---\nid: z-after\n---\nune note ordinaire lue après\n")
    return vault


def test_one_death_is_not_enough_an_innocent_note_is_read_again(poisoned: Vault):
    """A kill -9 or a power cut lands on whatever note was being read."""
    die_reading_poison(poisoned)
    assert mark(poisoned.index_dir / "notes").startswith("poison.md\t")
    service = poisoned.service()
    try:
        assert "poison" in ids(service, "ordinaire")
        assert service.status()[0].skipped_notes == ()
        assert mark(poisoned.index_dir / "notes") == ""  # read: no mark left
    finally:
        service.stop()


def test_a_note_that_took_the_indexer_down_twice_is_set_aside_until_it_changes(poisoned: Vault):
    for _ in range(QUARANTINE_STRIKES):
        die_reading_poison(poisoned)
    service = poisoned.service()
    try:
        found = ids(service, "ordinaire")
        assert "poison" not in found
        assert {"n0", "n4", "z-after"} <= set(found)  # the notes after it are indexed: the writer went on
        (skipped,) = service.status()[0].skipped_notes
        assert skipped.path == "poison.md"
        assert "stopped the indexer 2 times" in skipped.reason
        service.spaces["notes"].writing.run_reconcile()  # not read again while it is the same file
        assert "poison" not in ids(service, "ordinaire")
        poisoned.write("poison.md", "---\nid: poison\n---\nune note ordinaire réparée\n")
        service.spaces["notes"].writing.run_reconcile()
        assert "poison" in ids(service, "ordinaire")
        assert service.status()[0].skipped_notes == ()
    finally:
        service.stop()


def test_a_stop_while_reading_leaves_no_mark(poisoned: Vault, monkeypatch: pytest.MonkeyPatch):
    """Ctrl+C (or SIGTERM) during a read is a stop, not a death: the note is innocent."""
    from notarium_search.notes.parse import parse_note

    def interrupted(text: str, path: str, mtime: datetime) -> ParsedNote:
        if path == "poison.md":
            raise KeyboardInterrupt
        return parse_note(text, path, mtime)

    monkeypatch.setattr("notarium_search.notes.parse.parse_note", interrupted)
    service = Service(poisoned.settings())
    try:
        with pytest.raises(KeyboardInterrupt):
            service.spaces["notes"].writing.run_reconcile()
        assert mark(poisoned.index_dir / "notes") == ""
    finally:
        service.stop()


def test_a_note_over_the_read_budget_is_set_aside_not_read_at_every_pass(vault: Vault):
    vault.write("slow.md", "---\nid: slow\n---\nune note lente\n")
    service = Service(vault.settings())
    indexer = service.spaces["notes"].writing.indexer
    now = [0.0]

    step = READ_BUDGET_SECONDS * 1.5

    def clock() -> float:  # each reading of the clock: the time of a note far over the budget
        now[0] += step
        return now[0]

    indexer.clock = clock
    try:
        service.spaces["notes"].writing.run_reconcile()
        assert ids(service, "lente") == []
        (skipped,) = service.status()[0].skipped_notes
        assert skipped.path == "slow.md"
        assert f"took {step:.1f} s to read" in skipped.reason
        reads = now[0]
        service.spaces["notes"].writing.run_reconcile()
        assert now[0] == reads  # not read again: it would cost as much every time
        indexer.clock = lambda: 0.0
        vault.write("slow.md", "---\nid: slow\n---\nune note lente, plus courte\n")
        service.spaces["notes"].writing.run_reconcile()
        assert ids(service, "lente") == ["slow"]
    finally:
        service.stop()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_note_of_100000_brackets_beside_3000_notes_never_holds_the_writer(vault: Vault):
    """The issue's case, through the running service with its watcher: the
    note is read (in linear time, notes/markdown.py), and a note added after
    it is found."""
    for i in range(3000):
        vault.write(f"d{i % 30}/n{i}.md", f"---\nid: n{i}\n---\nnote {i} du carnet\n")
    vault.write("clipped.md", "page coupée " + "[" * 100_000 + "\n")
    service = Service(vault.settings(watch=True))
    service.start()
    try:
        space = service.spaces["notes"]
        assert space.writing.wait_ready(300)
        assert [hit.note.id for hit in service.search("notes", "coupée", FeedFilter(), 5).results] == ["clipped.md"]
        vault.write("later.md", "---\nid: later\n---\nune pensée ajoutée ensuite\n")
        eventually(lambda: ids(service, "pensée") == ["later"], timeout=300)
        assert service.status()[0].skipped_notes == ()
    finally:
        service.stop()


def test_the_mark_lives_in_the_index_folder_never_among_the_notes(poisoned: Vault):
    service = poisoned.service()
    service.stop()
    assert (poisoned.index_dir / "notes" / MARK_FILE).exists()
    assert not list(Path(poisoned.root / "notes").rglob(MARK_FILE))


def test_a_suspect_read_through_is_forgiven(tmp_path: Path):
    """One strike, then the note read fine: a death while reading it days
    later (a full reindex) is its first strike again, not its second."""
    from notarium_search.index.quarantine import Marks
    from notarium_search.types import SourceFile

    source = SourceFile(path="a.md", abs_path=str(tmp_path / "a.md"), size=10, mtime_ns=5)
    (tmp_path / MARK_FILE).write_text("a.md\t10\t5\t0")  # the last process died reading it
    marks = Marks(tmp_path, "notes")
    assert marks.suspect is not None
    assert marks.suspect.strikes == 1
    marks.reading(source)
    marks.done()
    assert marks.suspect is None
    marks.reading(source)  # read again later in the same process, which then dies
    assert mark(tmp_path) == "a.md\t10\t5\t0"
    marks.close()


def test_a_mark_written_over_a_longer_one_is_read_as_written(tmp_path: Path):
    """Marks are written over each other, never truncated: what a longer
    mark left after the NUL is not part of the next."""
    from notarium_search.index.quarantine import Marks
    from notarium_search.types import SourceFile

    marks = Marks(tmp_path, "notes")
    marks.reading(SourceFile("un/dossier/au/nom/long/note.md", "/x", 123456, 987654321))
    marks.done()
    assert Marks(tmp_path, "notes").suspect is None  # cleared: a death now blames nothing
    marks.reading(SourceFile("b.md", "/x", 7, 3))
    marks.close()  # the process dies while reading b.md
    suspect = Marks(tmp_path, "notes").suspect
    assert suspect is not None
    assert (suspect.version, suspect.strikes) == (("b.md", 7, 3), 1)


def test_the_read_budget_counts_the_writer_s_cpu_not_the_wait(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    """A read that waits (for the GIL, under a load of requests) is not a read
    that computes: 8 busy threads made a 2 s read take 12 s of wall time."""
    from notarium_search.index import quarantine
    from notarium_search.notes.parse import parse_note

    monkeypatch.setattr(quarantine, "READ_BUDGET_SECONDS", 0.05)
    monkeypatch.setattr(quarantine, "READ_BUDGET_SECONDS_PER_MIB", 0.0)

    def waiting(text: str, path: str, mtime: datetime) -> ParsedNote:
        time.sleep(0.5)  # ten times the budget, on the wall; no CPU
        return parse_note(text, path, mtime)

    monkeypatch.setattr("notarium_search.notes.parse.parse_note", waiting)
    vault.write("a.md", "---\nid: a\n---\nune note qui attend\n")
    service = vault.service()
    try:
        assert ids(service, "attend") == ["a"]
        assert service.status()[0].skipped_notes == ()
    finally:
        service.stop()
