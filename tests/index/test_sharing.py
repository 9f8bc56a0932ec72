"""The files a space's writer shares with the other workers (index/sharing.py)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from notarium_search.index import sharing
from notarium_search.index.follower import not_yet_published


def test_a_status_file_gone_is_published_again_unchanged(tmp_path: Path):
    """Deleted by hand or lost in a crash (it is not synced): a follower
    started then waited for it as long as the writer had nothing new to say."""
    status = not_yet_published("notes", "/notes", "fr", 3)
    last = sharing.publish_status(tmp_path, status, None)
    (tmp_path / sharing.STATUS_FILE).unlink()
    assert sharing.publish_status(tmp_path, status, last) == last
    assert sharing.read_status(tmp_path) == status


def test_requests_that_cannot_be_taken_are_cleared_not_counted(tmp_path: Path):
    """Folders, undecodable files and a request a dead worker left half-written
    once filled the folder until every request was refused."""
    folder = tmp_path / sharing.REQUESTS_DIR
    folder.mkdir()
    for i in range(sharing.REQUESTS_MAX):
        (folder / f"junk{i}.json").mkdir()
    (folder / "bad.json").write_text("{not json")
    (folder / ".half.json").write_text("{")
    old = time.time() - sharing.STALE_REQUEST_SECONDS - 1
    os.utime(folder / ".half.json", (old, old))
    (folder / ".being-written.json").write_text("{")
    assert not sharing.ask(tmp_path, sharing.Request("reconcile"))  # the folders count until cleared
    assert sharing.take_requests(tmp_path) == []
    assert [p.name for p in folder.iterdir()] == [".being-written.json"]
    assert sharing.ask(tmp_path, sharing.Request("full"))
    assert sharing.take_requests(tmp_path) == [sharing.Request("full")]


def test_a_journal_tells_a_reader_what_it_missed(tmp_path: Path):
    journal = sharing.ChangeWriter(tmp_path)
    journal.record(["a"], [])
    journal.record([], ["b"])
    read = sharing.read_journal(tmp_path)
    assert read is not None
    assert [e.serial for e in read.since(read.epoch, 0) or []] == [1, 2]
    assert read.since(read.epoch, 2) == []
    assert read.since("another epoch", 1) is None
    for i in range(sharing.JOURNAL_ENTRIES + 5):
        journal.record([f"n{i}"], [])
    read = sharing.read_journal(tmp_path)
    assert read is not None
    assert read.since(read.epoch, 2) is None  # entries 3.. were dropped: read everything
    journal.record([f"x{i}" for i in range(sharing.JOURNAL_MAX_IDS + 1)], [])
    last = sharing.read_journal(tmp_path)
    assert last is not None
    assert last.entries[-1].everything
    assert last.entries[-1].changed == []
