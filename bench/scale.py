"""Performance at vault scale, side by side with what users would pick instead.

One command measures, on this machine and in one run, synthetic spaces of
1,000, 10,000 and 50,000 notes built from the evaluation corpora
(`bench/perf_lexical.py` writes them: 300–3,000-character notes, 1 in 100 a
20,000-character document with `##` sections, tags, dates, wiki-links):

    python -m bench.scale                       # all sizes, writes docs/benchmarks/
    python -m bench.scale --sizes 100 --quick   # the CI smoke run (with --query-embed-timeout-ms)

Per size: full lexical index (notes/s) and semantic index (fragments/s with
the multilingual e5 pack); in-process query latency for Spotlight lexical,
hybrid, hybrid + graph and the feed; SQLite FTS5 on the same notes and
queries; a numpy flat scan against usearch (latency, memory, recall@10);
then over HTTP (`bench/scale_http.py`) cold start, latency and throughput at
1/4/16 clients per channel set, RSS, and edit → visible latency. Once per run:
nDCG@10 of Tantivy and FTS5 on piaf-fr and cranfield. `bench/scale_report.py`
prints the comparison table and draws the plots.

The notes and the lexical index are rebuilt every run. Vectors are kept in
the work folder between runs (`--work`, default `bench/.work/`): embedding
50,000 notes takes over an hour on 2 cores, so only the first run pays it,
and the 1,000-note space is always embedded from scratch so that every run
measures fragments/s (`--fresh-vectors` re-embeds every size).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec.structs
import numpy as np

from bench import fts5_compare, scale_http, scale_report
from bench.eval_collection import load_embedder_from
from bench.flat_scan import compare as compare_flat_scan
from bench.perf_lexical import (
    FULL,
    PROJECT_ROOT,
    QUICK,
    SEARCH_LIMIT,
    SPACE,
    BenchError,
    BenchQuery,
    Corpora,
    Plan,
    Profiler,
    build_queries,
    build_space,
    default_eval_dir,
    dir_size,
    elapsed_ms,
    load_corpora,
    machine_info,
    measure_feed,
    measure_indexing,
    measure_search,
    settle,
    summarize,
)
from bench.perf_semantic import DEFAULT_MODEL_DIR, embed_all, load_average
from notarium_search.lexical import stored as stored_notes
from notarium_search.logsetup import configure_logging
from notarium_search.notes.parse import decode_note, parse_note
from notarium_search.semantic.chunking import chunk_note
from notarium_search.semantic.embedding import Embedder
from notarium_search.service import Service
from notarium_search.settings import Settings, SpaceConfig
from notarium_search.types import FeedFilter

DEFAULT_SIZES = (1_000, 10_000, 50_000)
DEFAULT_WORK = PROJECT_ROOT / "bench" / ".work"  # ignored by git; keeps vectors between runs
DEFAULT_OUT = PROJECT_ROOT / "docs" / "benchmarks"  # results JSON and PNG plots
FRESH_VECTORS_UP_TO = 1_000  # sizes up to this are always embedded from scratch
FLAT_SCAN_QUERIES = 200  # query vectors for the usearch / exact-scan comparison
EVAL_COLLECTIONS = ("piaf-fr", "cranfield")
QUALITY_QUERIES = {False: None, True: 200}  # per collection: all of them / the first by id with --quick
SECONDS_PER_CLIENT_RUN = {False: 10.0, True: 2.0}  # full run / --quick
CEILING_FRAGMENTS = {False: 300, True: 8}  # fragments timed through the raw model and our embedder
DEFAULT_QUERY_EMBED_TIMEOUT_MS = Settings().query_embed_timeout_ms


def run_size(notes: int, args: argparse.Namespace, corpora: Corpora, plan: Plan, embedder: Embedder) -> dict[str, Any]:
    work = args.work / f"n{notes}"
    notes_dir, index_dir = work / "spaces" / SPACE, work / "index"
    fresh = args.fresh_vectors or notes <= FRESH_VECTORS_UP_TO
    _reset(work, fresh)
    print(f"[{notes:,} notes] writing the vault", file=sys.stderr, flush=True)
    results: dict[str, Any] = {"notes": notes, "corpus": build_space(notes_dir, notes, corpora)}
    queries = build_queries(plan, corpora)
    settings = Settings(
        spaces=(SpaceConfig(SPACE, notes_dir, "fr"),),
        index_dir=index_dir,
        log_level="warning",
        query_embed_timeout_ms=args.query_embed_timeout_ms,
    )
    print(f"[{notes:,} notes] lexical index and in-process queries", file=sys.stderr, flush=True)
    results["lexical"] = _lexical_phase(settings, notes, queries, plan)
    results["disk"] = {"lexical_bytes": dir_size(index_dir / SPACE / "lexical")}
    print(f"[{notes:,} notes] SQLite FTS5 on the same notes", file=sys.stderr, flush=True)
    results["fts5"] = _fts5_phase(settings, work, queries, plan)
    print(f"[{notes:,} notes] semantic index ({'from scratch' if fresh else 'kept vectors'})", file=sys.stderr)
    results.update(_semantic_phase(settings, embedder, args.model, queries, plan))
    results["disk"]["vector_bytes"] = dir_size(index_dir / SPACE / "vectors")
    results["disk"]["total_bytes"] = dir_size(index_dir / SPACE)
    print(f"[{notes:,} notes] HTTP: cold start, clients, edits", file=sys.stderr, flush=True)
    edits = 2 if args.quick else scale_http.EDITS
    server_env = {"NOTARIUM_QUERY_EMBED_TIMEOUT_MS": str(args.query_embed_timeout_ms)}
    results["http"] = scale_http.measure_modes(
        work, args.model, queries, corpora, SECONDS_PER_CLIENT_RUN[args.quick], edits, server_env
    )
    return results


def _reset(work: Path, fresh_vectors: bool) -> None:
    """Notes and lexical index always from scratch; vectors kept unless `fresh_vectors`."""
    shutil.rmtree(work / "spaces", ignore_errors=True)
    space_index = work / "index" / SPACE
    shutil.rmtree(space_index / "lexical", ignore_errors=True)
    for name in ("manifest.json", "unsettled.json"):
        (space_index / name).unlink(missing_ok=True)
    if fresh_vectors:
        shutil.rmtree(space_index / "vectors", ignore_errors=True)


def _lexical_phase(settings: Settings, notes: int, queries: list[BenchQuery], plan: Plan) -> dict[str, Any]:
    service = Service(settings)
    profiler = Profiler(False)
    try:
        index = measure_indexing(service, notes, profiler)
        index.update(settle(service))
        return {
            "index": index,
            "search": measure_search(service, queries, plan, profiler),
            "feed": measure_feed(service, queries, plan),
        }
    finally:
        service.stop()


def _fts5_phase(settings: Settings, work: Path, queries: list[BenchQuery], plan: Plan) -> dict[str, Any]:
    """FTS5 indexes the very text Tantivy indexed (title and Markdown reduced to
    plain text), so the two engines differ only in how they index and search."""
    service = Service(settings, read_only=True)
    try:
        rows = [(p.id, p.title, p.text) for p in stored_notes.all_payloads(service.spaces[SPACE].lexical)]
    finally:
        service.stop()
    database = work / "fts5.sqlite"
    database.unlink(missing_ok=True)
    built = fts5_compare.build_fts5(database, rows)
    connection = fts5_compare.connect(database)
    try:
        # "any": the words OR-ed, ranked by BM25, as ours ranks a question; with
        # "all" FTS5 answers nothing to most questions (and answers it fast).
        latency = fts5_compare.measure_latency(connection, [q.text for q in queries], "any", warmup=plan.warmup)
    finally:
        connection.close()
    return {"index": built, "search": latency}


def _semantic_phase(
    settings: Settings, embedder: Embedder, model_dir: Path, queries: list[BenchQuery], plan: Plan
) -> dict[str, Any]:
    vector_settings = msgspec.structs.replace(settings, vector_search=True, model_dir=model_dir)
    service = Service(vector_settings)
    space = service.spaces[SPACE]
    try:
        space.writing.run_reconcile()
        embedding = embed_all(space, embedder, reuse=False)
        service.embedder = embedder
        space.lexical.reload()
        hybrid = _measure_queries(service, queries, plan)
        if space.semantic is None or space.semantic.index is None:
            raise BenchError("the semantic channel has no index after the build")
        french = [q.text for q in queries if q.kind == "fr"][:FLAT_SCAN_QUERIES]
        vectors = np.vstack([embedder.embed_query(text) for text in french])
        flat = compare_flat_scan(space.semantic.index, vectors)
    finally:
        service.stop()
    graph_service = Service(msgspec.structs.replace(vector_settings, graph_boost=True))
    try:
        graph_space = graph_service.spaces[SPACE]
        graph_space.writing.build(embedder=embedder)  # the vectors are stored: opened, nothing to embed
        graph_service.embedder = embedder
        graph_space.graph.ensure_built()
        hybrid_graph = _measure_queries(graph_service, queries, plan)
    finally:
        graph_service.stop()
    return {"embedding": embedding, "hybrid": hybrid, "hybrid_graph": hybrid_graph, "flat_scan": flat}


def _measure_queries(service: Service, queries: list[BenchQuery], plan: Plan) -> dict[str, Any]:
    """Service.search as the API calls it (query embedding included)."""
    for query in queries[: plan.warmup]:
        service.search(SPACE, query.text, FeedFilter(), SEARCH_LIMIT)
    by_kind: dict[str, list[float]] = defaultdict(list)
    degraded = 0
    load = load_average()
    for query in queries:
        started = time.perf_counter()
        response = service.search(SPACE, query.text, FeedFilter(), SEARCH_LIMIT)
        by_kind[query.kind].append(elapsed_ms(started))
        degraded += bool(response.degraded)
    every = [ms for samples in by_kind.values() for ms in samples]
    return {
        **summarize(every),
        "degraded_answers": degraded,
        "load_average_at_start": load,
        "by_kind": {kind: summarize(samples) for kind, samples in sorted(by_kind.items())},
    }


def _fragment_sample(notes_dir: Path, count: int) -> list[str]:
    """The texts the model sees for the first `count` fragments of the vault (in path order)."""
    texts: list[str] = []
    mtime = datetime.now(tz=UTC)
    for path in sorted(notes_dir.rglob("*.md")):
        note = parse_note(decode_note(path.read_bytes()), path.relative_to(notes_dir).as_posix(), mtime)
        texts += [fragment.embed_text for fragment in chunk_note(note)]
        if len(texts) >= count:
            break
    return texts[:count]


def run_quality(args: argparse.Namespace) -> dict[str, Any]:
    """nDCG@10 of Tantivy and FTS5 on the judged collections, same documents and queries."""
    quality = {}
    for name in EVAL_COLLECTIONS:
        print(f"[quality] {name}: Tantivy and FTS5", file=sys.stderr, flush=True)
        sample = QUALITY_QUERIES[args.quick]
        quality[name] = fts5_compare.evaluate(args.eval_dir / name, args.work / f"eval-{name}", max_queries=sample)
    return quality


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="vault sizes, comma-separated")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help=f"work folder (default {DEFAULT_WORK})")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results and plots (default {DEFAULT_OUT})")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR, help="embedding pack (default: the e5 pack)")
    parser.add_argument("--eval-dir", type=Path, default=default_eval_dir(), help="holds piaf-fr/ and cranfield/")
    quick = "fewer queries (200 per judged collection), 2 s client runs, 2 edits (the CI smoke run)"
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--fresh-vectors", action="store_true", help="embed every size from scratch")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument(
        "--query-embed-timeout-ms",
        type=int,
        default=DEFAULT_QUERY_EMBED_TIMEOUT_MS,
        help="deadline of a query's embedding, in-process and in the servers (default: the service's,"
        f" {DEFAULT_QUERY_EMBED_TIMEOUT_MS} ms; past it a hybrid answer is lexical-only and counted as degraded)",
    )
    args = parser.parse_args(argv)
    try:
        args.sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    except ValueError:
        parser.error(f"--sizes {args.sizes!r}: expected numbers separated by commas")
    if not args.sizes or min(args.sizes) < 100:
        parser.error("--sizes: at least one size, each of 100 notes or more")
    if args.query_embed_timeout_ms < 1:
        parser.error("--query-embed-timeout-ms: at least 1")
    if not (args.model / "model.onnx").is_file():
        parser.error(f"--model {args.model}: no model.onnx there")
    for name in EVAL_COLLECTIONS:
        if not (args.eval_dir / name / "corpus.jsonl").is_file():
            parser.error(f"--eval-dir {args.eval_dir}: no {name}/corpus.jsonl (set NOTARIUM_EVAL_DIR)")
    args.model, args.work, args.out = args.model.resolve(), args.work.resolve(), args.out.resolve()
    return args


def run(args: argparse.Namespace, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    started = time.perf_counter()
    plan = QUICK if args.quick else FULL
    corpora = load_corpora(args.eval_dir)
    args.work.mkdir(parents=True, exist_ok=True)
    settings = Settings(spaces=(), index_dir=args.work, log_level="warning", vector_search=True, model_dir=args.model)
    embedder = load_embedder_from(args.model, settings)
    results: dict[str, Any] = {
        "benchmark": "scale",
        "command": "python -m bench.scale " + " ".join(sys.argv[1:]),
        "params": {
            "sizes": args.sizes,
            "quick": args.quick,
            "model": embedder.config.name,
            "query_embed_timeout_ms": args.query_embed_timeout_ms,
        },
        "machine": machine_info(),
        "sizes": {},
    }
    for notes in args.sizes:
        results["sizes"][str(notes)] = size = run_size(notes, args, corpora, plan, embedder)
        scale_report.add_ratios(size)
        if "model_ceiling" not in results:  # on the smallest vault's fragments
            sample = _fragment_sample(args.work / f"n{notes}" / "spaces" / SPACE, CEILING_FRAGMENTS[args.quick])
            print(f"[model] raw ceiling on {len(sample)} fragments", file=sys.stderr, flush=True)
            results["model_ceiling"] = scale_report.model_ceiling(args.model, embedder, sample)
    results["quality"] = run_quality(args)
    results["targets"] = scale_report.check_targets(results)
    results["wall_seconds"] = round(time.perf_counter() - started, 1)
    return results


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    configure_logging("warning", sys.stderr)
    results = run(args)
    args.out.mkdir(parents=True, exist_ok=True)
    name = "scale-quick.json" if args.quick else "scale.json"
    (args.out / name).write_text(json.dumps(results, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(scale_report.table(results))
    if not args.no_plots:
        for path in scale_report.plots(results, args.out):
            print(f"plot written to {path}")
    return results


if __name__ == "__main__":
    try:
        main()
    except BenchError as exc:
        print(f"scale: error: {exc}", file=sys.stderr)
        sys.exit(2)
