"""The lexical index's writer (lexical/store.py) over real Tantivy files."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

from notarium_search.lexical import stored as stored_notes
from notarium_search.lexical.store import LexicalIndex
from notarium_search.notes.parse import parse_note

WHEN = datetime(2026, 12, 1, tzinfo=UTC)


def build(directory: Path) -> None:
    index = LexicalIndex(directory, "fr")
    for i in range(5):
        index.upsert(parse_note(f"---\nid: n{i}\n---\nNote numéro {i}.\n", f"n{i}.md", WHEN))
    index.commit()
    index.close()


def delete_and_commit(directory: Path) -> None:
    index = LexicalIndex(directory, "fr")
    index.delete("n1")
    index.commit()
    assert "n1" not in {payload.id for payload in stored_notes.all_payloads(index)}
    index.close()


def test_a_killed_writer_s_uncommitted_files_do_not_block_the_next_commit(tmp_path: Path):
    """A process killed between writing a commit's files and its meta.json
    leaves them behind, registered with Tantivy (`.managed.json`) but named
    by no commit. The restarted writer redoes the same work, reaches the same
    opstamp and names the same `<segment>.<opstamp>.del`: every commit then
    failed with FileAlreadyExists, and a retry redid the same (the kill -9
    test caught it, once). Files no commit names are now collected when a
    writer opens, as Tantivy does after each commit."""
    crashed, rehearsal = tmp_path / "crashed", tmp_path / "rehearsal"
    build(crashed)
    shutil.copytree(crashed, rehearsal)
    delete_and_commit(rehearsal)  # what the restart will write, learnt on a copy
    (written,) = {p.name for p in rehearsal.glob("*.del")}
    # The killed process had written that file, and registered it, before dying.
    shutil.copy(rehearsal / written, crashed / written)
    managed_path = crashed / ".managed.json"
    managed = json.loads(managed_path.read_text())
    managed_path.write_text(json.dumps(sorted({*managed, written})))
    delete_and_commit(crashed)


def test_counts_are_made_once_per_searcher(tmp_path: Path):
    """`counted` remembers a count until a commit's reload replaces the
    searcher (the status is published 4 times a second: counting the notes of
    each language by a search was most of an idle service's CPU)."""
    index = LexicalIndex(tmp_path / "index", ("fr", "en"))
    for i in range(5):
        index.upsert(parse_note(f"---\nid: n{i}\nlang: fr\n---\nNote numéro {i}.\n", f"n{i}.md", WHEN))
    index.commit()
    asked: list[int] = []

    def notes() -> int:
        asked.append(1)
        return int(index.searcher().num_docs)

    assert [index.counted("notes", notes) for _ in range(3)] == [5, 5, 5]
    assert len(asked) == 1
    assert index.notes_per_language() == index.notes_per_language() == {"fr": 5, "en": 0}
    index.delete("n1")
    index.upsert(parse_note("---\nid: e1\nlang: en\n---\nAn English note.\n", "e1.md", WHEN))
    index.commit()  # reloads: every count is made again
    assert index.counted("notes", notes) == 5
    assert len(asked) == 2
    assert index.notes_per_language() == {"fr": 4, "en": 1}
    index.close()
