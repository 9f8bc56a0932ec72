"""Notes parsed ahead in other processes make the index the writer alone makes.

Real spawned processes, real Tantivy: a pass over a vault with what makes
reading a file go every way (two languages, a duplicate id, files that are
no notes, a cut note, a canvas, a collection) is built once by the writer
alone and once with two processes parsing ahead, and the two indexes are
compared document by document and query by query.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
import tantivy

from notarium_search.index import parse_ahead
from notarium_search.lexical.schema import decode_payload
from notarium_search.service import Service
from notarium_search.settings import CollectionConfig, SpaceConfig
from notarium_search.types import FeedFilter, SourceFile
from tests.conftest import Vault

FRENCH = [
    "Les pilotes contrôlent l'assiette de l'avion pendant la descente vers la piste.",
    "La recette demande du beurre, de la farine et des œufs battus en neige.",
    "Le conseil municipal a voté le budget des écoles et des bibliothèques.",
    "Les glaciers des Alpes reculent chaque été depuis le début du siècle.",
]
ENGLISH = [
    "The pilots keep controlling the pitch of the aircraft during the descent.",
    "The recipe needs butter, flour and eggs whipped into stiff peaks.",
    "The city council voted the budget of the schools and the libraries.",
    "The glaciers of the Alps have been shrinking every summer for a century.",
]
CANVAS = (
    '{"nodes": [{"id": "n1", "type": "text", "text": "Carte des glaciers", "x": 0, "y": 0, "width": 9, "height": 9}]}'
)
COLLECTIONS = (CollectionConfig("projets", folder="projets"),)


def write_vault(vault: Vault) -> int:
    """The vault; returns how many of its files a process may parse (Markdown and canvases)."""
    for i in range(90):
        french = i % 3 != 0
        lines = (FRENCH if french else ENGLISH)[i % 4 :] + (FRENCH if french else ENGLISH)[: i % 4]
        folder = ("projets", "journal", "lectures")[i % 3]
        tags = f"[sujet/{i % 5}, {'fr' if french else 'en'}]"
        vault.write(
            f"{folder}/note {i:03}.md",
            f"---\ntitle: {'Fiche' if french else 'Note'} numéro {i}\naliases: [n{i}]\ntags: {tags}\n---\n"
            f"# Partie {i}\n\n{' '.join(lines)}\n\n## Suite {i % 7}\n\n[[note {i + 1:03}]] {lines[0]}\n",
        )
    # Two files asking for one id: the first path takes it, the other is indexed under its path.
    vault.write("doublons/a.md", "---\nid: même\n---\nLe premier fichier garde l'identifiant.\n")
    vault.write("doublons/b.md", "---\nid: même\n---\nLe second fichier prend son chemin comme identifiant.\n")
    vault.write("cassés/latin1.md", "Données en latin-1 : été, café.\n".encode("latin-1"))
    vault.write("cassés/binaire.md", bytes(range(256)) * 8)
    vault.write("long.md", "# Long\n\n" + " ".join(FRENCH) * 200 + "\n")  # cut at max_file_bytes
    vault.write("cartes/glaciers.canvas", CANVAS)
    vault.write("cartes/vide.canvas", '{"nodes": 3}')  # not a canvas: skipped with its reason
    return 90 + 2 + 2 + 1 + 2


def build(vault: Vault, name: str, processes: int, **settings: Any) -> Service:
    config = SpaceConfig("notes", vault.root / "notes", "auto", languages=("fr", "en"), collections=COLLECTIONS)
    return vault.service(
        spaces=(config,), index_dir=vault.index_dir / name, parse_processes=processes, max_file_bytes=6000, **settings
    )


def documents(service: Service) -> dict[str, dict[str, Any]]:
    searcher = service.spaces["notes"].lexical.searcher()
    hits = searcher.search(tantivy.Query.all_query(), limit=1000).hits
    stored = [searcher.doc(address).to_dict() for _, address in hits]
    return {decode_payload(bytes(doc["payload"][0])).id: doc for doc in stored}


def answers(service: Service, queries: list[str]) -> list[list[tuple[str, float]]]:
    """Every note each query finds (the vault has fewer than the limit), best
    first, notes of one score by id: Tantivy's indexing threads place notes
    in segments in no set order, and notes of equal score come in the order
    of their place (a first page of 20 among 30 tied notes was not the same
    page twice, 2 runs of 17 beside CI)."""
    found = []
    for query in queries:
        response = service.search("notes", query, FeedFilter(), 100)
        assert len(response.results) < 100
        found.append(sorted(((hit.note.id, round(hit.score, 9)) for hit in response.results), key=_best_first))
    return found


def _best_first(hit: tuple[str, float]) -> tuple[float, str]:
    return -hit[1], hit[0]


QUERIES = [
    "pilotes assiette",
    "pilots controlling",
    "glaciers",
    "budget des écoles",
    "recipe butter",
    "Note numéro 12",
    "n45",
    "Partie 7",
    "identifiant",
    "tag:sujet/3 glaciers",
    "folder:projets council",
]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every pass parses ahead (not only those of PARSE_AHEAD_MIN_FILES files);
    counts the answers the writer took from the processes."""
    monkeypatch.setattr(parse_ahead, "PARSE_AHEAD_MIN_FILES", 1)
    # Small batches, few ahead: at most (2 processes x 4 + 1) x 4 = 36 files
    # asked for ahead of the writer's first, and 3 batches more reach a process
    # before the pool sees one died: the kill below always leaves files to the writer.
    monkeypatch.setattr(parse_ahead, "BATCH_FILES", 4)
    monkeypatch.setattr(parse_ahead, "BATCHES_AHEAD_PER_PROCESS", 4)
    taken = [0]
    parsed = parse_ahead.ParseAhead.parsed

    def counting(self: parse_ahead.ParseAhead, index: int, source: Any) -> parse_ahead.Parsed | None:
        answer = parsed(self, index, source)
        taken[0] += answer is not None
        return answer

    monkeypatch.setattr(parse_ahead.ParseAhead, "parsed", counting)
    return taken


def test_notes_parsed_ahead_make_the_index_the_writer_alone_makes(vault: Vault, counted: list[int]):
    pooled = write_vault(vault)
    alone = build(vault, "alone", 1)
    assert counted == [0]
    ahead = build(vault, "ahead", 2)
    assert counted == [pooled]  # every Markdown note and canvas came from a process
    try:
        made, expected = documents(ahead), documents(alone)
        assert len(expected) == 90 + 2 + 1 + 1
        assert made == expected
        assert expected["doublons/b.md"]  # indexed under its path: the whole note parsed again by the writer
        assert answers(ahead, QUERIES) == answers(alone, QUERIES)
        assert [q for q, found in zip(QUERIES, answers(alone, QUERIES), strict=True) if not found] == []
        (status,) = ahead.status()
        assert (status.notes, status.skipped, status.languages) == (94, 3, alone.status()[0].languages)
        assert ahead.status()[0].skipped_notes == alone.status()[0].skipped_notes
    finally:
        alone.stop()
        ahead.stop()


def test_notes_written_again_to_merge_segments_are_the_documents_parsed_ahead(vault: Vault, counted: list[int]):
    """A pass of several commits writes its last notes again, from the
    documents the processes made (index/indexer.py, `_merge_segments`): the
    same index as the writer alone in one commit, in one segment."""
    from notarium_search.lexical.segments import committed

    write_vault(vault)
    alone = build(vault, "alone", 1)
    ahead = build(vault, "ahead", 2, commit_every=20)
    try:
        assert counted[0] > 0
        assert len(committed(vault.index_dir / "ahead" / "notes" / "lexical")) == 1
        searcher = ahead.spaces["notes"].lexical.searcher()
        assert searcher.num_docs == alone.spaces["notes"].lexical.searcher().num_docs  # none twice
        assert documents(ahead) == documents(alone)
        # The same notes in the same order; the scores within 0.1 %: a merged
        # segment that had deletes (the notes written again) counts its
        # words' lengths from Tantivy's quantised field norms, as after edits.
        made, expected = answers(ahead, QUERIES), answers(alone, QUERIES)
        assert [[note for note, _ in found] for found in made] == [[note for note, _ in found] for found in expected]
        assert [[score for _, score in found] for found in made] == [
            pytest.approx([score for _, score in found], rel=1e-3) for found in expected
        ]
    finally:
        alone.stop()
        ahead.stop()


def test_a_file_skipped_for_its_size_is_left_to_the_writer(vault: Vault, counted: list[int]):
    """With `oversize = "skip"`, the note larger than max_file_bytes is not
    given to a process (one rule decides, for the writer and for what is
    parsed ahead): the writer reads it to skip it, with its reason, as alone."""
    pooled = write_vault(vault)
    alone = build(vault, "alone", 1, oversize="skip")
    ahead = build(vault, "ahead", 2, oversize="skip")
    try:
        assert counted == [pooled - 1]  # long.md
        assert documents(ahead) == documents(alone)
        skipped = {note.path: note.reason for note in ahead.status()[0].skipped_notes}
        assert skipped["long.md"].startswith("larger than max_file_bytes")
        assert ahead.status()[0].skipped_notes == alone.status()[0].skipped_notes
    finally:
        alone.stop()
        ahead.stop()


def test_a_process_that_dies_leaves_its_notes_to_the_writer(
    vault: Vault, counted: list[int], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    """Killed after the first answer: the pass goes on, the writer parsing
    what is left, and no process outlives it."""
    write_vault(vault)
    alone = build(vault, "alone", 1)
    parsed = parse_ahead.ParseAhead.parsed  # the counting one
    seen: list[int] = []

    def killing(self: parse_ahead.ParseAhead, index: int, source: Any) -> parse_ahead.Parsed | None:
        answer = parsed(self, index, source)
        executor = self._executor
        if index == 0 and executor is not None and executor._processes:
            seen.extend(executor._processes)
            os.kill(next(iter(executor._processes)), signal.SIGKILL)
        return answer

    monkeypatch.setattr(parse_ahead.ParseAhead, "parsed", killing)
    ahead = build(vault, "ahead", 2)
    try:
        assert 1 <= counted[0] < 90
        assert documents(ahead) == documents(alone)
        assert answers(ahead, QUERIES) == answers(alone, QUERIES)
        stopped = [r.msg for r in caplog.records if isinstance(r.msg, dict) and r.msg["event"] == "parse_ahead_stopped"]
        assert "BrokenProcessPool" in stopped[0]["reason"]
        assert seen
        assert not any(_alive(pid) for pid in seen)
    finally:
        alone.stop()
        ahead.stop()


def _alive(pid: int) -> bool:
    """Whether `pid` is a process that has not ended (a zombie has: its parent reaps it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def _sources(count: int, size: int) -> list[SourceFile]:
    return [SourceFile(f"n{i}.md", f"/nowhere/n{i}.md", size, 0) for i in range(count)]


@pytest.mark.parametrize(
    ("size", "asked_first", "asked_at_batch_5"),
    [
        # Small notes: the writer's batch and 16 a process after it.
        (1_000, 1 + 2 * 16, 6 + 2 * 16),
        # 1 MiB notes, 32 MiB a batch: past AHEAD_BYTES at once, so one a process.
        (2**20, 1 + 2, 6 + 2),
    ],
)
def test_the_batches_asked_ahead_are_bounded_by_count_and_by_bytes(size: int, asked_first: int, asked_at_batch_5: int):
    """What is asked for depends on the batch the writer takes, never on
    timing: the processes parse nothing here (no job: the writer's own)."""
    sources = _sources(60 * parse_ahead.BATCH_FILES, size)
    ahead = parse_ahead.start(sources, 2, "/nowhere", ("fr",), (), lambda source: None)
    assert ahead is not None
    try:
        assert ahead.parsed(0, sources[0]) is None  # the writer parses it: no job was sent
        assert ahead._asked == asked_first
        ahead.parsed(5 * parse_ahead.BATCH_FILES, sources[5 * parse_ahead.BATCH_FILES])
        assert ahead._asked == asked_at_batch_5
        assert sorted(ahead._batches) == list(range(6, asked_at_batch_5))  # the taken ones let go
    finally:
        ahead.close()
