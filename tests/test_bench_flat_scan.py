"""bench/flat_scan.py on a real SemanticIndex (real usearch, deterministic hash embedder)."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from bench.flat_scan import FlatScanError, compare, exact_matrix, exact_top_k, main
from notarium_search.notes.parse import parse_note
from notarium_search.semantic.index import SemanticIndex
from tests.conftest import HashEmbedder

NOTES = 300  # one short fragment each
QUERIES = 30
K = 10
WORDS_PER_NOTE = 12
VOCABULARY = [f"mot{i}" for i in range(400)]
SEED = 5
MTIME = datetime(2024, 1, 1, tzinfo=UTC)


def words(rng: random.Random, count: int) -> str:
    return " ".join(rng.sample(VOCABULARY, count))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[SemanticIndex, HashEmbedder]:
    rng = random.Random(SEED)
    embedder = HashEmbedder(dim=64)
    index = SemanticIndex(tmp_path_factory.mktemp("flat") / "vectors", embedder)
    notes = [parse_note(f"# Note {i}\n\n{words(rng, WORDS_PER_NOTE)}.\n", f"n{i}.md", MTIME) for i in range(NOTES)]
    index.plan(notes)
    while index.has_pending:
        index.embed_pending(NOTES)
    assert index.size() >= NOTES
    return index, embedder


def query_vectors(embedder: HashEmbedder) -> np.ndarray:
    rng = random.Random(SEED + 1)
    return np.stack([embedder.embed_query(words(rng, 4)) for _ in range(QUERIES)])


def test_exact_matrix_holds_every_stored_vector(built: tuple[SemanticIndex, HashEmbedder]) -> None:
    index, _ = built
    matrix, keys = exact_matrix(index)
    stored = {r.key for note_id in index.notes for r in index.fragments_of(note_id)}
    assert matrix.dtype == np.float32
    assert matrix.flags.c_contiguous
    assert matrix.shape == (index.size(), index.store.dim)
    assert sorted(keys.tolist()) == sorted(stored)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


def test_exact_top_k_agrees_with_brute_force(built: tuple[SemanticIndex, HashEmbedder]) -> None:
    index, embedder = built
    matrix, keys = exact_matrix(index)
    rows = index.store.vectors(keys.tolist()).tolist()  # as stored, not re-normalised
    for query in query_vectors(embedder):
        q = query.tolist()

        def cosine(row: list[float], q: list[float] = q) -> float:
            return sum(a * b for a, b in zip(row, q, strict=True)) / math.sqrt(sum(a * a for a in row))

        brute = sorted(((cosine(row), key) for row, key in zip(rows, keys.tolist(), strict=True)), reverse=True)
        found = exact_top_k(matrix, keys, query, K).tolist()
        score_of = {key: score for score, key in brute}
        assert len(found) == K
        assert all(key in index.store for key in found)
        # Scores, not keys: two fragments may tie at the k-th place.
        assert [score_of[key] for key in found] == pytest.approx([score for score, _ in brute[:K]], abs=1e-5)


def test_exact_top_k_returns_everything_when_k_exceeds_the_rows(built: tuple[SemanticIndex, HashEmbedder]) -> None:
    index, embedder = built
    matrix, keys = exact_matrix(index)
    found = exact_top_k(matrix[:5], keys[:5], query_vectors(embedder)[0], K)
    assert sorted(found.tolist()) == sorted(keys[:5].tolist())


def test_compare_reports_recall_latency_and_memory(built: tuple[SemanticIndex, HashEmbedder]) -> None:
    index, embedder = built
    results = compare(index, query_vectors(embedder), k=K, repeats=1)
    recall = results["recall_at_k"]
    assert 0.0 <= recall["min"] <= recall["mean"] <= 1.0
    assert recall["mean"] >= 0.95
    assert results["fragments"] == index.size()
    assert results["queries"] == QUERIES
    for side in ("usearch", "exact"):
        assert results["latency"][side]["count"] == QUERIES
    memory = results["memory"]
    assert memory["exact_matrix_bytes"] >= index.size() * index.store.dim * 4
    assert memory["usearch_file_bytes"] > 0
    assert memory["usearch_memory_bytes"] > 0
    assert memory["json_bytes"] > memory["exact_matrix_bytes"]  # ~17 digits per float against 4 bytes
    assert set(results["ratios"]) >= {"p50_ms_ratio", "memory_ratio", "disk_ratio"}


def test_compare_rejects_queries_of_another_dimension(built: tuple[SemanticIndex, HashEmbedder]) -> None:
    index, _ = built
    with pytest.raises(ValueError, match="shape"):
        compare(index, np.zeros((3, index.store.dim + 1), dtype=np.float32))


def test_cli_reports_a_missing_vector_folder(tmp_path: Path) -> None:
    with pytest.raises(FlatScanError, match="no vector folder"):
        main(["--index-dir", str(tmp_path), "--space", "absent", "--model-dir", str(tmp_path)])
