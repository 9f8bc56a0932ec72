"""A flat cosine scan (the "JSON file + linear scan" design) against our usearch HNSW index.

Many personal note tools keep their embeddings as a JSON list of floats and
answer a query with one matrix-vector product over all of them. This measures
that design against the service's own search path on the same fragment
vectors and the same query vectors: usearch recall@k against the exact scan,
single-query latency of both, and what each costs in memory and on disk.

    .venv/bin/python -m bench.flat_scan --index-dir /tmp/pw10k/index --space perf \\
        --model-dir ../shared/models/multilingual-e5-small-int8 --queries 200

The exact scan reads the vectors as usearch stores them (f16, widened to f32
and re-normalised), so recall measures the graph's approximation only, not
f16 rounding (about 0.998 recall@10 on its own, notarium_search/semantic/vector_store.py).
The CLI opens a copy of the space's vector folder: opening a mismatched or
damaged index would otherwise delete it (SemanticIndex rebuilds from notes).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, TypeAlias

if __name__ == "__main__":
    # One BLAS thread, as usearch searches on one (SEARCH_THREADS): on 2 busy
    # cores OpenBLAS's default 2 threads made every product take ~12 ms,
    # whatever its size (0.07 ms for 2,000 rows on one thread). Read at load.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from bench.eval_collection import load_embedder_from
from bench.perf_lexical import default_eval_dir, elapsed_ms, proc_status_mb, summarize
from notarium_search.malloc_trim import MemoryTrimmer
from notarium_search.semantic.embedder_errors import EmbedderUnavailable
from notarium_search.semantic.index import SemanticIndex
from notarium_search.semantic.vector_store import EXPANSION_SEARCH
from notarium_search.settings import Settings

FloatMatrix: TypeAlias = npt.NDArray[np.float32]
KeyVector: TypeAlias = npt.NDArray[np.uint64]

DEFAULT_K: Final = 10  # what the Spotlight UI asks for, and the recall@10
DEFAULT_REPEATS: Final = 3  # each query timed this often: a p99 over 200 queries needs more samples
DEFAULT_QUERIES: Final = 200
WARMUP_QUERIES: Final = 20  # the first searches fault in pages and warm caches: not timed
MATRIX_CHUNK: Final = 8_192  # rows read from usearch per call: bounds the temporary f16 copies
RECALL_BATCH: Final = 64  # queries scored in one product for recall: 64 × 110k × 4 B = 28 MB of scores
JSON_SAMPLE_ROWS: Final = 1_000  # 0.3 s to serialise on 2 busy cores; all 110k vectors would take 35 s
# Two keys whose exact similarities are equal are both a correct k-th answer;
# float32 products of one vector pair differ by less than this.
TIE_TOLERANCE: Final = 1e-6
QUERY_FILE: Final = Path("piaf-fr") / "queries.jsonl"  # under the eval folder
QUERY_SEED: Final = 11  # a fixed sample of the 3,835 questions, not their file order (short ones first)
MANIFEST_FILE: Final = "vectors.json"  # SemanticIndex's manifest, named in its `_manifest_path`
MIB: Final = 1024 * 1024
LATENCY_PERCENTILES: Final = ("p50_ms", "p95_ms", "p99_ms")


class FlatScanError(RuntimeError):
    """A user-facing reason the benchmark cannot run (printed without a traceback)."""


def exact_matrix(index: SemanticIndex) -> tuple[FloatMatrix, KeyVector]:
    """Every stored fragment vector (n × dim, float32, rows L2-normalised) and its usearch key."""
    records = [record for note_id in list(index.notes) for record in index.fragments_of(note_id)]
    matrix = np.empty((len(records), index.store.dim), dtype=np.float32)
    for start in range(0, len(records), MATRIX_CHUNK):
        chunk = records[start : start + MATRIX_CHUNK]
        matrix[start : start + len(chunk)] = index.vectors(chunk)
    # f16 storage leaves norms off 1 by ~1e-4: enough to swap near ties, and
    # usearch's "cos" divides by the norms, so the scan must too.
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))[:, None]  # no n × dim temporary
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    keys = np.fromiter((record.key for record in records), dtype=np.uint64, count=len(records))
    return matrix, keys


def exact_top_k(matrix: FloatMatrix, keys: KeyVector, query: npt.NDArray[np.floating[Any]], k: int) -> KeyVector:
    """The keys of the k rows most similar to `query` (normalised: dot = cosine), best first."""
    scores = matrix @ np.asarray(query, dtype=np.float32)  # a float64 query would widen the whole product
    count = min(k, len(scores))
    if count <= 0:
        return keys[:0]
    top = np.argpartition(-scores, count - 1)[:count]
    return keys[top[np.argsort(-scores[top], kind="stable")]]


def compare(
    index: SemanticIndex, queries: npt.NDArray[np.floating[Any]], k: int = DEFAULT_K, repeats: int = DEFAULT_REPEATS
) -> dict[str, Any]:
    """usearch (the service's path: VectorStore.search, configured ef, no filter) against the flat scan."""
    if queries.ndim != 2 or queries.shape[1] != index.store.dim or not len(queries):
        raise ValueError(f"queries must have shape (m ≥ 1, {index.store.dim}), got {queries.shape}")
    if k < 1 or repeats < 1:
        raise ValueError("k and repeats must be at least 1")
    vectors = np.ascontiguousarray(queries, dtype=np.float32)
    matrix, keys, materialised = _materialise(index)
    if not len(keys):
        raise ValueError("the index holds no vectors")
    recalls = _recalls(matrix, keys, vectors, [[key for key, _ in index.store.search(q, k)] for q in vectors], k)
    latency = {
        "usearch": _timed(lambda query: index.store.search(query, k), vectors, repeats),
        "exact": _timed(lambda query: exact_top_k(matrix, keys, query, k), vectors, repeats),
    }
    memory = {**_memory(index, matrix, keys), **materialised}
    recall = {"mean": round(float(np.mean(recalls)), 4), "min": round(min(recalls), 4)}
    recall["queries_below_1"] = sum(r < 1 for r in recalls)
    shape = {"fragments": len(keys), "dim": int(matrix.shape[1]), "queries": len(vectors), "k": k, "repeats": repeats}
    ratios = _ratios(latency, memory)
    return {
        **shape,
        "ef": EXPANSION_SEARCH,
        "recall_at_k": recall,
        "latency": latency,
        "memory": memory,
        "ratios": ratios,
    }


def _materialise(index: SemanticIndex) -> tuple[FloatMatrix, KeyVector, dict[str, Any]]:
    """exact_matrix, with the time it took and the RSS it added."""
    trimmer = MemoryTrimmer()
    trimmer.trim()  # start from a trimmed heap, as the service keeps it
    rss_before, started = _rss_mib(), time.perf_counter()
    matrix, keys = exact_matrix(index)
    seconds, rss_built = time.perf_counter() - started, _rss_mib()
    # The f16 rows read on the way are freed but stay in glibc's arenas (25 MiB
    # at 22k vectors) until trimmed: both figures, the second is what stays.
    trimmer.trim()
    figures = {
        "exact_matrix_build_seconds": round(seconds, 3),
        "exact_matrix_rss_delta_mib": _difference(rss_built, rss_before),
        "exact_matrix_rss_delta_trimmed_mib": _difference(_rss_mib(), rss_before),
    }
    return matrix, keys, figures


def _recalls(
    matrix: FloatMatrix, keys: KeyVector, queries: FloatMatrix, found: Sequence[Sequence[int]], k: int
) -> list[float]:
    """Per query: the share of the exact top k that usearch returned, a tie at the k-th place counting as found."""
    row_of = {key: row for row, key in enumerate(keys.tolist())}
    wanted = min(k, len(keys))
    recalls = []
    for start in range(0, len(queries), RECALL_BATCH):
        scores = queries[start : start + RECALL_BATCH] @ matrix.T
        kth = np.partition(scores, len(keys) - wanted, axis=1)[:, len(keys) - wanted]
        for row_scores, threshold, hits in zip(scores, kth, found[start : start + RECALL_BATCH], strict=True):
            rows = np.array([row_of[key] for key in hits], dtype=np.intp)
            good = int(np.count_nonzero(row_scores[rows] >= threshold - TIE_TOLERANCE))
            recalls.append(min(good, wanted) / wanted)
    return recalls


def _timed(search: Callable[[FloatMatrix], object], queries: FloatMatrix, repeats: int) -> dict[str, Any]:
    """One query at a time, as a search box sends them."""
    for query in queries[:WARMUP_QUERIES]:
        search(query)
    samples = []
    for _ in range(repeats):
        for query in queries:
            started = time.perf_counter()
            search(query)
            samples.append(elapsed_ms(started))
    return summarize(samples)


def _memory(index: SemanticIndex, matrix: FloatMatrix, keys: KeyVector) -> dict[str, Any]:
    sample = matrix[:JSON_SAMPLE_ROWS]
    text = json.dumps(sample.tolist(), separators=(",", ":"))  # compact, as JSON.stringify writes it
    started = time.perf_counter()
    json.loads(text)
    per_vector_s = (time.perf_counter() - started) / len(sample)
    usearch_file = index.directory / f"vectors-{index.generation}.usearch"  # named as SemanticIndex names it
    return {
        "exact_matrix_bytes": matrix.nbytes + keys.nbytes,
        "json_bytes": round(len(text.encode()) / len(sample) * len(matrix)),
        "json_extrapolated_from": len(sample) if len(sample) < len(matrix) else None,
        "json_parse_seconds": round(per_vector_s * len(matrix), 3),
        "usearch_file_bytes": usearch_file.stat().st_size if usearch_file.is_file() else None,
        "usearch_memory_bytes": _usearch_memory(usearch_file),
    }


def _usearch_memory(path: Path) -> int | None:
    """usearch's own figure (`Index.memory_usage`) for a copy of the file: VectorStore does not expose its index."""
    from usearch.index import Index

    restored = Index.restore(path) if path.is_file() else None  # loaded like VectorStore.load, not viewed
    return int(restored.memory_usage) if restored is not None else None


def _ratios(latency: dict[str, dict[str, Any]], memory: dict[str, Any]) -> dict[str, float | None]:
    """usearch ÷ exact: below 1 means usearch is faster or smaller."""
    ratios = {f"{p}_ratio": _ratio(latency["usearch"][p], latency["exact"][p]) for p in LATENCY_PERCENTILES}
    ratios["memory_ratio"] = _ratio(memory["usearch_memory_bytes"], memory["exact_matrix_bytes"])
    ratios["disk_ratio"] = _ratio(memory["usearch_file_bytes"], memory["json_bytes"])
    return ratios


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    return round(numerator / denominator, 3) if numerator is not None and denominator else None


def _difference(after: float | None, before: float | None) -> float | None:
    return round(after - before, 1) if after is not None and before is not None else None


def _rss_mib() -> float | None:
    return proc_status_mb(os.getpid(), "VmRSS")


# -- command line ----------------------------------------------------------------


def load_query_texts(eval_dir: Path, count: int) -> list[str]:
    path = eval_dir / QUERY_FILE
    if not path.is_file():
        raise FlatScanError(f"no query file {path} (pass --eval-dir or set NOTARIUM_EVAL_DIR)")
    texts = [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return random.Random(QUERY_SEED).sample(texts, min(count, len(texts)))


def open_copy(vectors_dir: Path, model_dir: Path, work: Path) -> SemanticIndex:
    """A SemanticIndex over a copy of `vectors_dir`, checked to hold the vectors this model made."""
    manifest = vectors_dir / MANIFEST_FILE
    if not manifest.is_file():
        raise FlatScanError(f"no vector index at {vectors_dir} (expected {MANIFEST_FILE} there)")
    try:
        stored = json.loads(manifest.read_bytes())["fingerprint"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FlatScanError(f"unreadable vector manifest {manifest}: {exc!r}") from exc
    try:
        embedder = load_embedder_from(model_dir, Settings())
    except EmbedderUnavailable as exc:
        raise FlatScanError(f"cannot load the model: {exc}") from exc
    shutil.copytree(vectors_dir, work / "vectors")
    index = SemanticIndex(work / "vectors", embedder)
    if index.fingerprint != stored:
        raise FlatScanError(f"{vectors_dir} was built with {stored}, not with this model ({index.fingerprint})")
    if index.repaired or not index.size():
        raise FlatScanError(f"{vectors_dir} holds no usable vectors: {index.repaired or 'empty'}")
    return index


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index-dir", type=Path, required=True, help="the service's index folder (NOTARIUM_INDEX_DIR)")
    parser.add_argument("--space", required=True, help="the space whose vectors to read")
    parser.add_argument("--model-dir", type=Path, required=True, help="the pack the vectors were embedded with")
    parser.add_argument("--queries", type=int, default=DEFAULT_QUERIES, help=f"query texts (default {DEFAULT_QUERIES})")
    parser.add_argument("--k", type=int, default=DEFAULT_K, help=f"results per query (default {DEFAULT_K})")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="timing passes over the queries")
    parser.add_argument("--eval-dir", type=Path, default=default_eval_dir(), help="folder holding piaf-fr/")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    if args.queries < 1 or args.k < 1 or args.repeats < 1:
        parser.error("--queries, --k and --repeats must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    vectors_dir = args.index_dir / args.space / "vectors"
    if not vectors_dir.is_dir():
        raise FlatScanError(f"no vector folder {vectors_dir}: is {args.space!r} a space indexed with VECTOR_SEARCH=1?")
    texts = load_query_texts(args.eval_dir, args.queries)
    with tempfile.TemporaryDirectory(prefix="notarium-flat-scan-") as tmp:
        index = open_copy(vectors_dir, args.model_dir, Path(tmp))
        queries = np.stack([index.embedder.embed_query(text) for text in texts])
        results = compare(index, queries, args.k, args.repeats)
    blas_threads = os.environ.get("OPENBLAS_NUM_THREADS")
    results["source"] = {"vectors": str(vectors_dir), "query_texts": len(texts), "openblas_threads": blas_threads}
    print_table(results)
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return results


def print_table(results: dict[str, Any]) -> None:
    memory, ratios, recall = results["memory"], results["ratios"], results["recall_at_k"]
    rss = f"+{memory['exact_matrix_rss_delta_mib']} (+{memory['exact_matrix_rss_delta_trimmed_mib']}) MiB"
    rows = [
        (f"recall@{results['k']} mean / min", f"{recall['mean']:.4f} / {recall['min']:.2f}", "reference", None),
        *(_latency_row(results, p) for p in LATENCY_PERCENTILES),
        ("in memory", _mib(memory["usearch_memory_bytes"]), _mib(memory["exact_matrix_bytes"]), ratios["memory_ratio"]),
        ("RSS added (after trim)", "", rss, None),
        ("on disk (JSON)", _mib(memory["usearch_file_bytes"]), _mib(memory["json_bytes"]), ratios["disk_ratio"]),
        ("JSON parse at start", "", f"{memory['json_parse_seconds']:.2f} s", None),
    ]
    print(
        f"\nflat scan vs usearch HNSW — {results['fragments']:,} fragments × {results['dim']},"
        f" {results['queries']} queries × {results['repeats']}, k={results['k']}, ef={results['ef']}"
    )
    print(f"  {'':<26}{'usearch':>14}{'exact scan':>20}{'usearch/exact':>15}")
    for label, ours, theirs, ratio in rows:
        print(f"  {label:<26}{ours:>14}{theirs:>20}{'' if ratio is None else f'{ratio:.2f}':>15}")
    if memory["json_extrapolated_from"]:
        print(f"  JSON figures extrapolated from the first {memory['json_extrapolated_from']:,} vectors")


def _latency_row(results: dict[str, Any], p: str) -> tuple[str, str, str, float | None]:
    usearch, exact = results["latency"]["usearch"][p], results["latency"]["exact"][p]
    return f"latency {p[:3]} ms", f"{usearch:.3f}", f"{exact:.3f}", results["ratios"][f"{p}_ratio"]


def _mib(size: float | None) -> str:
    return f"{size / MIB:.1f} MiB" if size is not None else "n/a"


if __name__ == "__main__":
    try:
        main()
    except FlatScanError as exc:
        print(f"flat_scan: error: {exc}", file=sys.stderr)
        sys.exit(2)
