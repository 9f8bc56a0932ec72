"""The FTS5 baseline (bench/fts5_compare.py): safe queries, and both engines side by side.

Real sqlite3 and real Tantivy; no timing is checked.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.fts5_compare import MODES, Mode, build_fts5, connect, evaluate, match_expression, search_fts5
from tests.test_quality import collection

NOTES = [
    ("interop", "L'interopérabilité des systèmes", "Deux systèmes échangent des données sans API commune."),
    ("temp", "Dossiers Windows", r"Les fichiers temporaires vont dans C:\temp puis sont effacés."),
    ("near", "Recherche NEAR", 'Le mot "NEAR" et les opérateurs AND, OR, NOT dans une requête.'),
]
# Each breaks a raw FTS5 MATCH: an open quote, a column filter, an apostrophe,
# a leading minus, a bare operator, an unclosed NEAR group, a lone star...
HOSTILE = [
    '"x',
    "C:\\temp",
    "l'interopérabilité",
    "-x",
    "AND",
    "NEAR(",
    "*",
    "",
    "   ",
    "?!.,;:()",
    'a"b',
    '""',
    "title:interop",
    "x* OR",
    "NOT",
    "^début",
    "{title body}: x",
    "foo_bar",
    "AND OR NOT NEAR",
]


@pytest.fixture
def fts5(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    db = tmp_path / "notes.sqlite3"
    built = build_fts5(db, NOTES)
    assert built["notes"] == len(NOTES)
    assert built["size_bytes"] > 0
    conn = connect(db)
    yield conn
    conn.close()


@pytest.mark.parametrize("text", HOSTILE[:8])
def test_raw_match_rejects_them(fts5: sqlite3.Connection, text: str) -> None:
    """The premise: passed to MATCH as typed, each of these is an FTS5 error."""
    with pytest.raises(sqlite3.OperationalError):
        fts5.execute("SELECT id FROM notes_fts WHERE notes_fts MATCH ?", (text,)).fetchall()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_queries_never_raise(fts5: sqlite3.Connection, text: str, mode: Mode) -> None:
    hits = search_fts5(fts5, text, mode, limit=10)
    assert all(isinstance(note_id, str) for note_id, _ in hits)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("text", ["", "   ", "?!.,;:()", "*", "_"])
def test_queries_without_words_find_nothing(fts5: sqlite3.Connection, text: str, mode: Mode) -> None:
    assert match_expression(text, mode) is None
    assert search_fts5(fts5, text, mode) == []


def test_operators_are_plain_words(fts5: sqlite3.Connection) -> None:
    assert [note_id for note_id, _ in search_fts5(fts5, "NEAR AND", "all")] == ["near"]
    assert [note_id for note_id, _ in search_fts5(fts5, r"C:\temp", "all")] == ["temp"]
    assert [note_id for note_id, _ in search_fts5(fts5, "l'interopérabilité", "all")] == ["interop"]


def test_any_mode_needs_one_word_all_mode_every_word(fts5: sqlite3.Connection) -> None:
    assert search_fts5(fts5, "interoperabilite fichiers", "all") == []
    found = {note_id for note_id, _ in search_fts5(fts5, "interoperabilite fichiers", "any")}
    assert found == {"interop", "temp"}


def test_snippets_mark_the_match(fts5: sqlite3.Connection) -> None:
    [(note_id, snippet)] = search_fts5(fts5, "echangent", "all")
    assert note_id == "interop"
    assert "<mark>échangent</mark>" in snippet


def write_collection(folder: Path) -> Path:
    """A judged collection in the shared layout: corpus.jsonl, queries.jsonl, qrels.tsv."""
    folder.mkdir(parents=True)
    corpus = [{"id": note_id, "title": title, "text": text} for note_id, title, text in NOTES]
    corpus.append({"id": "cafe", "title": "", "text": "Le café se boit sans sucre."})
    queries = [
        {"id": "q1", "text": "interoperabilite des systemes sans API"},
        {"id": "q2", "text": "ou vont les fichiers temporaires"},
        {"id": "q3", "text": "cafe sucre"},
    ]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    judged = "query-id\tcorpus-id\tscore\nq1\tinterop\t1\nq2\ttemp\t2\nq3\tcafe\t1\n"
    (folder / "qrels.tsv").write_text(judged, encoding="utf-8")
    return folder


def test_evaluate_a_tiny_collection(tmp_path: Path) -> None:
    work = tmp_path / "work"
    result = evaluate(write_collection(tmp_path / "tiny-fr"), work)
    assert result["language"] == "fr"
    assert result["documents"] == 4
    assert result["queries"] == 3
    for engine in ("tantivy", "fts5"):
        assert 0.0 <= result[engine]["ndcg@10"] <= 1.0
        assert 0.0 <= result[engine]["recall@100"] <= 1.0
        assert result[engine]["latency"]["count"] == 3
    assert result["tantivy"]["notes"] == result["fts5"]["notes"] == 4
    # Unaccented queries find accented documents: the only judged one ranks first.
    assert result["fts5"]["ndcg@10"] == 1.0
    conn = connect(work / "fts5.sqlite3")
    try:
        assert [note_id for note_id, _ in search_fts5(conn, "interoperabilite", "all")] == ["interop"]
    finally:
        conn.close()


@pytest.mark.slow
def test_cranfield_both_engines_above_a_sanity_floor(tmp_path: Path) -> None:
    result = evaluate(collection("cranfield"), tmp_path)
    assert result["language"] == "en"
    assert result["documents"] == 1400
    assert result["tantivy"]["ndcg@10"] > 0.2, result
    assert result["fts5"]["ndcg@10"] > 0.2, result
