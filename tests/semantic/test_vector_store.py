"""The vector store on real usearch indexes and real files."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from notarium_search.semantic import vector_file, vector_store
from notarium_search.semantic.vector_file import VectorStoreCorrupt
from notarium_search.semantic.vector_store import EXACT_SEARCH_MAX, VectorStore
from tests.conftest import WAIT_SECONDS
from tests.semantic.held_graph import held_graph_builds

DIM = 32
Vectors = npt.NDArray[np.float32]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


def normalised(vectors: npt.NDArray[np.float64]) -> Vectors:
    unit: Vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    return unit


def random_vectors(rng: np.random.Generator, count: int, dim: int = DIM) -> Vectors:
    return normalised(rng.standard_normal((count, dim)))


def clustered_vectors(rng: np.random.Generator, count: int, clusters: int, dim: int = DIM) -> Vectors:
    """Points around `clusters` random centres, like embeddings of notes on a few topics."""
    centres = rng.standard_normal((clusters, dim))
    labels = rng.integers(0, clusters, count)
    return normalised(centres[labels] + 0.5 * rng.standard_normal((count, dim)))


def filled(vectors: Vectors, first_key: int = 0) -> VectorStore:
    store = VectorStore(vectors.shape[1])
    store.add(np.arange(first_key, first_key + len(vectors), dtype=np.uint64), vectors)
    return store


def brute_force(keys: npt.NDArray[np.uint64], vectors: Vectors, query: Vectors, k: int) -> list[tuple[int, float]]:
    """The exact top k by cosine, over the vectors as the store keeps them (f16)."""
    stored = vectors.astype(np.float16).astype(np.float32)
    similarities = stored @ query / (np.linalg.norm(stored, axis=1) * np.linalg.norm(query))
    order = np.argsort(-similarities, kind="stable")[:k]
    return [(int(keys[i]), float(similarities[i])) for i in order]


def assert_same_results(got: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    assert [key for key, _ in got] == [key for key, _ in expected]
    np.testing.assert_allclose([s for _, s in got], [s for _, s in expected], atol=2e-3)


def assert_true_similarities(
    got: list[tuple[int, float]], keys: npt.NDArray[np.uint64], vectors: Vectors, query: Vectors
) -> None:
    truth = dict(brute_force(keys, vectors, query, len(keys)))
    np.testing.assert_allclose([s for _, s in got], [truth[key] for key, _ in got], atol=2e-3)


def assert_graph_recall(
    answers: list[tuple[list[tuple[int, float]], list[tuple[int, float]]]], min_recall: float = 0.97
) -> None:
    """HNSW answers against the exact ones: approximate by design, and multi-threaded
    construction makes the graph differ from run to run, so exact order is not a contract.
    Every returned similarity must be the true one, the list sorted, and recall high."""
    found = 0
    for got, expected in answers:
        similarities = [s for _, s in got]
        assert similarities == sorted(similarities, reverse=True)
        assert len(got) == len(expected)
        found += len({key for key, _ in got} & {key for key, _ in expected})
    assert found / sum(len(expected) for _, expected in answers) >= min_recall


def test_add_search_remove(rng: np.random.Generator):
    vectors = random_vectors(rng, 100)
    store = filled(vectors)
    assert len(store) == 100
    assert 7 in store
    assert -1 not in store
    assert "7" not in store

    results = store.search(vectors[7], 5)
    assert len(results) == 5
    assert results[0][0] == 7
    assert results[0][1] == pytest.approx(1.0, abs=1e-3)  # similarity, not distance
    assert [s for _, s in results] == sorted((s for _, s in results), reverse=True)

    store.remove([7, 8, 10_000])  # an unknown key is ignored
    assert len(store) == 98
    assert 7 not in store
    assert all(key not in (7, 8) for key, _ in store.search(vectors[7], 98))
    store.remove([])
    assert len(store) == 98


def test_similarity_is_one_minus_cosine_distance():
    store = VectorStore(3)
    store.add(np.array([1, 2, 3]), np.array([[1.0, 0, 0], [0, 1.0, 0], [-1.0, 0, 0]], dtype=np.float32))
    results = dict(store.search(np.array([2.0, 0, 0], dtype=np.float32), 3))
    assert results == pytest.approx({1: 1.0, 2: 0.0, 3: -1.0}, abs=1e-3)


def test_adding_an_existing_key_replaces_its_vector(rng: np.random.Generator):
    vectors = random_vectors(rng, 50)
    store = filled(vectors)
    replacement = random_vectors(rng, 1)
    store.add(np.array([5], dtype=np.uint64), replacement)
    assert len(store) == 50
    [(key, similarity)] = store.search(replacement[0], 1)
    assert key == 5
    assert similarity == pytest.approx(1.0, abs=1e-3)
    assert 5 not in [key for key, _ in store.search(vectors[5], 3)]
    np.testing.assert_allclose(store.vectors([5]), replacement, atol=1e-3)


def test_duplicate_keys_in_one_add_are_rejected_before_anything_is_added(rng: np.random.Generator):
    store = VectorStore(DIM)
    with pytest.raises(ValueError, match=r"duplicate keys in one add call: \[4\]"):
        store.add(np.array([3, 4, 4], dtype=np.uint64), random_vectors(rng, 3))
    assert len(store) == 0


def test_add_rejects_bad_input(rng: np.random.Generator):
    store = VectorStore(DIM)
    with pytest.raises(ValueError, match="shape"):
        store.add(np.array([1]), random_vectors(rng, 1, DIM + 1))
    with pytest.raises(ValueError, match="2 keys for 1 vectors"):
        store.add(np.array([1, 2]), random_vectors(rng, 1))
    with pytest.raises(ValueError, match="non-negative"):
        store.add(np.array([-1]), random_vectors(rng, 1))
    with pytest.raises(ValueError, match="finite"):
        store.add(np.array([1]), np.full((1, DIM), np.nan, dtype=np.float32))
    with pytest.raises(ValueError, match="query must have shape"):
        store.search(random_vectors(rng, 1), 3)
    assert len(store) == 0


def test_save_load_round_trip_gives_identical_results(rng: np.random.Generator, tmp_path: Path):
    vectors = random_vectors(rng, 500)
    store = filled(vectors)
    store.remove(range(0, 500, 10))
    path = tmp_path / "space.usearch"

    checksum = store.save(path)

    assert checksum == hashlib.blake2b(path.read_bytes()).hexdigest()
    assert not list(tmp_path.glob("*.tmp"))
    loaded = VectorStore.load(path, DIM, checksum)
    assert len(loaded) == len(store) == 450
    assert loaded.tombstones == store.tombstones == 50
    for query in random_vectors(rng, 20):
        assert loaded.search(query, 10) == store.search(query, 10)
    np.testing.assert_array_equal(loaded.vectors([1, 2, 499]), store.vectors([1, 2, 499]))


def test_a_store_viewed_from_its_file_answers_as_the_saved_one(rng: np.random.Generator, tmp_path: Path):
    """What a follower worker reads (semantic/follower.py): mapped, not copied,
    and still answering once the writer's next checkpoint deleted the file."""
    store = filled(random_vectors(rng, 500))
    store.remove(range(0, 500, 10))
    path = tmp_path / "space.usearch"
    viewed = VectorStore.load(path, DIM, store.save(path), view=True)
    path.unlink()
    assert len(viewed) == 450
    for query in random_vectors(rng, 20):
        assert viewed.search(query, 10) == store.search(query, 10)
        assert viewed.search(query, 5, {1, 2, 3, 499}) == store.search(query, 5, {1, 2, 3, 499})
    np.testing.assert_array_equal(viewed.vectors([1, 2, 499]), store.vectors([1, 2, 499]))


def test_every_vector_is_reached_by_its_own_query_after_a_build_and_a_compaction(rng: np.random.Generator):
    """usearch 2.26's multi-threaded `add` strands nodes that no search reaches
    (unum-cloud/USearch#735): with every core, 2,000 random vectors left at
    least one unreachable in 29 of 30 builds (vector_store.ADD_THREADS)."""
    vectors = random_vectors(rng, 2000)
    store = filled(vectors)
    assert [key for key in range(2000) if store.search(vectors[key], 1)[0][0] != key] == []
    store.remove(range(0, 2000, 3))
    store.compact()
    assert [key for key in range(2000) if key % 3 and store.search(vectors[key], 1)[0][0] != key] == []


def test_adds_and_removes_go_on_while_a_compaction_builds_and_reach_its_graph(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
):
    """The new graph's build is held: meanwhile an add and a remove return,
    searches see them in the old graph, and the new graph has them once it
    replaces the old one (VectorStore.compact's replay)."""
    vectors = random_vectors(rng, 303)
    store = filled(vectors[:300])
    store.remove(range(0, 100))
    store.graph = "older"  # as a store loaded from a manifest of before GRAPH_BUILD
    building, release = held_graph_builds(monkeypatch)
    compaction = threading.Thread(target=store.compact)
    compaction.start()
    assert building.wait(WAIT_SECONDS)
    store.add(np.array([300, 301, 150], dtype=np.uint64), np.vstack([vectors[300], vectors[301], vectors[302]]))
    store.remove([200, 301])
    assert store.search(vectors[300], 1)[0][0] == 300  # in the old graph
    assert store.tombstones > 0
    assert store.graph == "older"
    release.set()
    compaction.join(WAIT_SECONDS)
    assert not compaction.is_alive()
    assert store.graph == vector_store.GRAPH_BUILD
    assert store.tombstones <= 3  # the new graph: the 100 removed before are gone; only the replay's own are left
    assert len(store) == 200
    assert 200 not in store
    assert 301 not in store
    assert store.search(vectors[300], 1)[0][0] == 300
    assert store.search(vectors[302], 1)[0][0] == 150  # 150's new vector, replayed
    np.testing.assert_allclose(store.vectors([150])[0], vectors[302], atol=1e-3)
    assert [k for k in range(101, 300) if k not in (150, 200) and store.search(vectors[k], 1)[0][0] != k] == []


def test_a_viewed_store_is_copied_into_memory_before_it_changes_and_never_writes_its_file(
    rng: np.random.Generator, tmp_path: Path
):
    """An idle writer maps its vectors (semantic/index.py); an edit's add or
    remove then works on a copy, and the mapped file stays as saved (another
    worker may map it); `save(..., view=True)` maps the new file in turn."""
    vectors = random_vectors(rng, 501)
    store = filled(vectors[:500])
    path, later = tmp_path / "vectors-1.usearch", tmp_path / "vectors-2.usearch"
    checksum = store.save(path)
    viewed = VectorStore.load(path, DIM, checksum, view=True)
    assert viewed.viewed
    viewed.add(np.array([500], dtype=np.uint64), vectors[500:])
    viewed.remove([0, 1])
    assert not viewed.viewed
    assert len(viewed) == 499
    assert viewed.search(vectors[500], 1)[0][0] == 500
    assert vector_file.checksum_of(path.read_bytes()) == checksum  # the mapped file is untouched
    assert VectorStore.load(path, DIM, checksum).search(vectors[500], 1)[0][0] != 500
    newer = viewed.save(later, view=True)
    assert viewed.viewed
    path.unlink()
    assert vector_file.checksum_of(later.read_bytes()) == newer
    assert len(viewed) == 499
    assert viewed.search(vectors[500], 1)[0][0] == 500
    viewed.compact()
    assert not viewed.viewed
    assert viewed.search(vectors[500], 1)[0][0] == 500


def test_a_vector_file_gone_before_it_is_mapped_leaves_the_store_owned_and_fd_0_open(
    rng: np.random.Generator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The folder deleted between the save and the mapping (a supported case):
    the store keeps its graph in memory. usearch 2.26.6's own `view(path)` of
    a missing file closes file descriptor 0, so the store maps files itself."""
    import os

    from notarium_search.storage.atomic import write_atomic as written

    def write_then_vanish(path: Path, data: bytes) -> None:
        written(path, data)
        path.unlink()

    monkeypatch.setattr(vector_store, "write_atomic", write_then_vanish)
    vectors = random_vectors(rng, 50)
    store = filled(vectors)
    before = os.fstat(0)
    store.save(tmp_path / "vectors-2.usearch", view=True)
    assert os.fstat(0).st_ino == before.st_ino  # still open, still the same file
    assert not store.viewed
    assert store.search(vectors[7], 1)[0][0] == 7


def test_a_mapped_store_reads_the_file_it_verified(rng: np.random.Generator, tmp_path: Path):
    """A viewed load checks the checksum over the very pages it maps: the file
    unlinked or replaced after that changes nothing it answers."""
    vectors = random_vectors(rng, 50)
    path = tmp_path / "vectors-1.usearch"
    checksum = filled(vectors).save(path)
    viewed = VectorStore.load(path, DIM, checksum, view=True)
    path.unlink()
    filled(random_vectors(rng, 50)).save(path)  # another file under the same name
    assert viewed.search(vectors[7], 1)[0][0] == 7
    np.testing.assert_allclose(viewed.vectors([7]), vectors[7:8], atol=2e-3)


@pytest.fixture
def saved(rng: np.random.Generator, tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "space.usearch"
    return path, filled(random_vectors(rng, 200)).save(path)


def test_a_flipped_byte_is_a_checksum_mismatch(saved: tuple[Path, str]):
    path, checksum = saved
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(VectorStoreCorrupt, match="checksum mismatch"):
        VectorStore.load(path, DIM, checksum)


def test_a_truncated_file_is_corrupt(saved: tuple[Path, str]):
    path, checksum = saved
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(VectorStoreCorrupt, match="truncated"):
        VectorStore.load(path, DIM, checksum)


def test_a_missing_file_is_corrupt(tmp_path: Path):
    with pytest.raises(VectorStoreCorrupt, match="missing"):
        VectorStore.load(tmp_path / "absent.usearch", DIM, "0" * 128)


def test_an_unreadable_file_is_corrupt(tmp_path: Path):
    with pytest.raises(VectorStoreCorrupt, match="unreadable"):
        VectorStore.load(tmp_path, DIM, "0" * 128)  # a directory


def test_bytes_usearch_cannot_parse_are_corrupt_even_with_their_checksum(tmp_path: Path):
    path = tmp_path / "garbage.usearch"
    path.write_bytes(b"not an index at all" * 10)
    with pytest.raises(VectorStoreCorrupt, match="unreadable"):
        VectorStore.load(path, DIM, hashlib.blake2b(path.read_bytes()).hexdigest())


def test_a_file_of_another_dimension_is_corrupt(saved: tuple[Path, str]):
    path, checksum = saved
    with pytest.raises(VectorStoreCorrupt, match=rf"wrong dim: .* holds {DIM}-d vectors, not {2 * DIM}-d"):
        VectorStore.load(path, 2 * DIM, checksum)


def test_a_file_of_another_format_is_corrupt(rng: np.random.Generator, tmp_path: Path):
    from usearch.index import Index

    index = Index(ndim=DIM, metric="cos", dtype="f32")
    index.add(np.arange(10, dtype=np.uint64), random_vectors(rng, 10))
    path = tmp_path / "f32.usearch"
    index.save(path)
    with pytest.raises(VectorStoreCorrupt, match="another format"):
        VectorStore.load(path, DIM, hashlib.blake2b(path.read_bytes()).hexdigest())


# Run in a child process: if the store ever memory-mapped its file, rewriting
# the file under it would kill the process with SIGBUS, and only the child dies.
_SAVE_OVER_LOADED = """
import sys
from pathlib import Path
import numpy as np
from notarium_search.semantic.vector_store import VectorStore

path = Path(sys.argv[1])
rng = np.random.default_rng(7)
vectors = rng.standard_normal((300, 32)).astype(np.float32)
store = VectorStore(32)
store.add(np.arange(300, dtype=np.uint64), vectors)
checksum = store.save(path)
loaded = VectorStore.load(path, 32, checksum)
expected = loaded.search(vectors[3], 10)

store.add(np.arange(300, 600, dtype=np.uint64), vectors)
store.save(path)                                  # replaces the file the loaded store came from
loaded.save(path)                                 # and the loaded store saves over its own file
with open(path, "r+b") as handle:                 # then the file is cut short in place
    handle.truncate(100)
assert loaded.search(vectors[3], 10) == expected
assert len(loaded.vectors(list(range(300)))) == 300
print("survived")
"""


def test_saving_over_the_file_of_a_loaded_store_does_not_crash(tmp_path: Path):
    result = subprocess.run(
        [sys.executable, "-c", _SAVE_OVER_LOADED, str(tmp_path / "space.usearch")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[2],
    )
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr}"
    assert result.stdout.strip() == "survived"


def test_tombstones_are_counted_and_compaction_drops_them(rng: np.random.Generator):
    vectors = random_vectors(rng, 400)
    store = filled(vectors)
    queries = random_vectors(rng, 10)
    assert store.tombstones == 0
    assert not store.needs_compaction()

    store.remove(range(0, 400, 2))
    before = [store.search(query, 10) for query in queries]
    assert store.tombstones == 200
    assert len(store) == 200
    assert store.needs_compaction()

    store.compact()

    assert store.tombstones == 0
    assert len(store) == 200
    assert not store.needs_compaction()
    # The rebuilt graph is another approximate graph: judge both against the exact answer
    # over the live vectors rather than against each other (near-ties may swap).
    live = np.arange(1, 400, 2, dtype=np.uint64)
    exact = [brute_force(live, vectors[live.astype(np.intp)], query, 10) for query in queries]
    after = [store.search(query, 10) for query in queries]
    for got, query in zip(before + after, [*queries, *queries], strict=True):
        assert {key for key, _ in got} <= set(live.tolist())
        assert_true_similarities(got, live, vectors[live.astype(np.intp)], query)
    assert_graph_recall(list(zip(before, exact, strict=True)), min_recall=0.95)
    assert_graph_recall(list(zip(after, exact, strict=True)), min_recall=0.95)
    np.testing.assert_array_equal(store.vectors([1, 3, 399]), vectors[[1, 3, 399]].astype(np.float16))


def test_a_new_vector_reuses_the_slot_of_a_removed_one(rng: np.random.Generator):
    store = filled(random_vectors(rng, 100))
    store.remove(range(10))
    assert store.tombstones == 10
    store.add(np.arange(1000, 1004), random_vectors(rng, 4))
    assert store.tombstones == 6
    assert len(store) == 94


def test_small_allowed_subset_is_scored_exactly(rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch):
    vectors = clustered_vectors(rng, 3000, clusters=30)
    keys = np.arange(3000, dtype=np.uint64)
    store = filled(vectors)
    allowed = rng.choice(3000, size=200, replace=False)

    def no_graph(*_: object) -> None:
        raise AssertionError("a small subset must not go through the graph")

    monkeypatch.setattr(vector_store, "_graph_search", no_graph)
    for query in vectors[:20]:
        got = store.search(query, 10, allowed={int(key) for key in allowed} | {10**9})  # 10**9: not stored
        assert {key for key, _ in got} <= set(allowed.tolist())
        assert_same_results(got, brute_force(keys[allowed], vectors[allowed], query, 10))


def test_large_allowed_subset_over_fetches_from_the_graph(rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch):
    vectors = clustered_vectors(rng, 6000, clusters=30)
    keys = np.arange(6000, dtype=np.uint64)
    store = filled(vectors)
    allowed = rng.choice(6000, size=EXACT_SEARCH_MAX + 1000, replace=False)
    allowed_set = frozenset(allowed.tolist())

    def no_exact(*_: object) -> None:
        raise AssertionError("a large subset spread over the index must be served by over-fetching")

    monkeypatch.setattr(VectorStore, "_exact_search", no_exact)
    answers = []
    for query in vectors[:20]:
        got = store.search(query, 10, allowed=allowed_set)
        assert {key for key, _ in got} <= allowed_set
        exact = brute_force(keys[allowed], vectors[allowed], query, 10)
        assert_true_similarities(got, keys, vectors, query)
        answers.append((got, exact))
    assert_graph_recall(answers)


def test_large_allowed_subset_far_from_the_query_still_finds_its_best(rng: np.random.Generator):
    # Two well separated halves: the query sits in the first, only the second is allowed,
    # so the graph's nearest neighbours are never allowed and the search must keep going.
    first = normalised(np.hstack([np.ones((3000, 1)) * 5, rng.standard_normal((3000, DIM - 1))]))
    second = normalised(np.hstack([np.ones((3000, 1)) * -5, rng.standard_normal((3000, DIM - 1))]))
    vectors = np.vstack([first, second])
    keys = np.arange(6000, dtype=np.uint64)
    store = filled(vectors)
    allowed = keys[3000:]
    answers = []
    for query in first[:5]:
        got = store.search(query, 10, allowed=set(allowed.tolist()))
        assert {key for key, _ in got} <= set(allowed.tolist())
        assert_true_similarities(got, keys, vectors, query)
        answers.append((got, brute_force(allowed, second, query, 10)))
    assert_graph_recall(answers)


def test_recall_at_10_on_clustered_vectors(rng: np.random.Generator):
    dim = 384
    data = clustered_vectors(rng, 5000 + 200, clusters=100, dim=dim)
    vectors, queries = data[:5000], data[5000:]
    store = filled(vectors)
    exact = np.argsort(-(queries @ vectors.T), axis=1)[:, :10]  # true neighbours, f32
    found = 0
    for query, truth in zip(queries, exact, strict=True):
        found += len({key for key, _ in store.search(query, 10)} & set(truth.tolist()))
    assert found / exact.size >= 0.99


def test_empty_store_search_returns_nothing(rng: np.random.Generator):
    store = VectorStore(DIM)
    query = random_vectors(rng, 1)[0]
    assert store.search(query, 10) == []
    assert store.search(query, 10, allowed={1, 2}) == []
    assert store.search(query, 10, allowed=set(range(EXACT_SEARCH_MAX + 1))) == []
    assert store.search(query, 0) == []
    assert len(store) == 0
    assert store.tombstones == 0
    store.compact()
    assert store.vectors([]).shape == (0, DIM)


def test_k_larger_than_the_store_returns_every_vector(rng: np.random.Generator):
    vectors = random_vectors(rng, 5)
    store = filled(vectors)
    results = store.search(vectors[0], 50)
    assert sorted(key for key, _ in results) == [0, 1, 2, 3, 4]
    assert [s for _, s in results] == sorted((s for _, s in results), reverse=True)
    assert len(store.search(vectors[0], 50, allowed={0, 3, 99})) == 2


def test_vectors_returns_what_was_added_within_f16_precision(rng: np.random.Generator):
    vectors = rng.standard_normal((20, DIM)).astype(np.float32)  # not normalised: kept as given
    store = filled(vectors, first_key=100)
    got = store.vectors([119, 100, 105])
    assert got.dtype == np.float32
    assert got.shape == (3, DIM)
    np.testing.assert_allclose(got, vectors[[19, 0, 5]], rtol=1e-3, atol=1e-3)
    with pytest.raises(KeyError, match=r"\[7\]"):
        store.vectors([100, 7])


def test_searches_run_safely_while_another_thread_writes(rng: np.random.Generator):
    vectors = random_vectors(rng, 2000)
    store = filled(vectors[:1000])
    queries = random_vectors(rng, 50)
    done = threading.Event()
    searching = [threading.Event() for _ in range(3)]  # the writes start once every reader searches

    def read(k: int) -> int:
        searches = 0
        while not done.is_set():
            for query in queries:
                results = store.search(query, 5)
                assert 0 < len(results) <= 5
                assert all(0 <= key < 2000 for key, _ in results)
                searches += 1
                searching[k].set()
        return searches

    with ThreadPoolExecutor(max_workers=3) as pool:
        readers = [pool.submit(read, k) for k in range(3)]
        try:
            # A reader the scheduler starts late must not find the writes over
            # (and `done` set) before its first search.
            assert all(started.wait(WAIT_SECONDS) for started in searching)
            for start in range(1000, 2000, 100):
                store.add(np.arange(start, start + 100), vectors[start : start + 100])
                store.remove(range(start - 1000, start - 950))
            store.compact()
        finally:
            done.set()
        assert all(reader.result() > 0 for reader in readers)  # re-raises a reader's failure
    assert len(store) == 1500
