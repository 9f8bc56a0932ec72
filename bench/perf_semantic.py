"""Performance of the semantic channel and of hybrid search: embedding, latency, HTTP, memory.

Builds the same seeded synthetic vault as perf_lexical.py (its generator,
imported), indexes it lexically, then embeds every fragment synchronously with
a real ONNX model pack (the space's semantic channel, as the writer thread
would, without the interleaving), and measures:

* full embedding: fragments, seconds, fragments/s, vector checkpoints;
* in-process hybrid `Service.search` latency (vector search on, index ready,
  the default query-embedding deadline), with its parts measured alone: the
  query embedding, the semantic channel given a vector, the lexical channel;
* HTTP latency through a real `python -m notarium_search serve` with
  VECTOR_SEARCH=1 and NOTARIUM_MODEL_DIR on the same index folder (the server
  must reuse the vectors: it fails the run if it starts embedding), one
  keep-alive client, then 4 concurrent clients;
* peak RSS of the server with the model loaded, of this process (which also
  ran the bulk embedding), and the vector index size on disk.

    .venv/bin/python bench/perf_semantic.py --notes 10000 --out /tmp/perf-semantic.json
    .venv/bin/python bench/perf_semantic.py --notes 300 --quick     # smoke run, ~1-2 min

`--work DIR --reuse` measures again on the notes and vectors a previous run
kept in DIR (no generation, no embedding: the embedding figures are then null).
`load_average_at_start` of each phase tells whether other work shared the
CPUs. `main(argv)` returns the results dict.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec.structs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

import notarium_search.semantic  # noqa: F401 - onnxruntime must be imported before usearch
from bench.embedding_build import embed_space
from bench.perf_lexical import (
    DEFAULT_NOTES,
    FULL,
    HTTP_WARMUP,
    MIB,
    PROJECT_ROOT,
    QUICK,
    SEARCH_LIMIT,
    SPACE,
    BenchError,
    BenchQuery,
    Client,
    Plan,
    bench_space,
    build_queries,
    build_space,
    default_eval_dir,
    dir_size,
    elapsed_ms,
    load_corpora,
    machine_info,
    measure_http_concurrent,
    peak_rss_mb,
    proc_status_mb,
    running_server,
    search_path,
    server_status,
    summarize,
)
from notarium_search.answer import answer_snippets, fused_notes
from notarium_search.channel import Channel
from notarium_search.fusion import CANDIDATES_PER_CHANNEL, GRAPH_SEEDS, PHRASE_DEPTH, hits, kept, rrf
from notarium_search.lexical import search as lexical
from notarium_search.logsetup import configure_logging
from notarium_search.semantic.embedding import load_embedder
from notarium_search.service import Service
from notarium_search.settings import Settings, SpaceConfig
from notarium_search.types import ChannelQuery, FeedFilter

if TYPE_CHECKING:
    from notarium_search.index.space import Space
    from notarium_search.semantic.embedding import Embedder

DEFAULT_MODEL_DIR = PROJECT_ROOT.parent / "shared" / "models" / "multilingual-e5-small-int8"
PROGRESS_SECONDS = 30.0  # a progress line on stderr this often: a 10,000-note build embeds for many minutes
# A restarted server loads the model (~2 s), opens the vectors, then re-plans
# every note (chunking) before it calls the channel ready; on a shared 2-core
# machine that can take minutes. A server that starts re-embedding fails the
# run at once instead (see semantic_ready).
SEMANTIC_READY_TIMEOUT = 900.0

# Issue targets for the semantic tier (multilingual model, 10,000 notes).
TARGET_HYBRID_HTTP_P50_MS = 40.0
TARGET_SERVER_RSS_MB = 700.0


@dataclass(frozen=True, slots=True)
class Built:
    service: Service
    embedder: Embedder
    results: dict[str, Any]


def load_average() -> list[float]:
    """1, 5 and 15-minute load averages: other work on the CPUs skews every timing."""
    return [round(x, 2) for x in os.getloadavg()]


def rss_mb() -> float | None:
    """Current RSS of this process."""
    return proc_status_mb(os.getpid(), "VmRSS")


# -- build ------------------------------------------------------------------


def build(settings: Settings, notes: int, reuse: bool) -> Built:
    """Lexical index, model, then every fragment embedded on this thread."""
    service = Service(settings)
    space = service.spaces[SPACE]
    results: dict[str, Any] = {}
    try:
        load = load_average()
        started = time.perf_counter()
        progress = space.writing.run_reconcile()
        results["lexical_index"] = {
            "seconds": round(time.perf_counter() - started, 3),
            "indexed": progress.indexed,
            "notes": space.status().notes,
            "load_average_at_start": load,
        }
        if space.status().notes != notes:
            raise BenchError(f"the index holds {space.status().notes} notes, expected {notes}")
        if not reuse and progress.indexed != notes:
            raise BenchError(f"indexed {progress.indexed} notes, expected {notes}")
        before = rss_mb()
        started = time.perf_counter()
        assert settings.model_dir is not None
        embedder = load_embedder(
            settings.model_dir,
            settings.model,
            bulk_threads=settings.embed_threads,
            batch_size=settings.embed_batch_size,
        )
        results["model"] = {
            "name": embedder.config.name,
            "dim": embedder.config.dim,
            "load_seconds": round(time.perf_counter() - started, 3),
            "bench_rss_before_mb": before,
            "bench_rss_after_load_mb": rss_mb(),
            "batch_size": settings.embed_batch_size,
            "threads": settings.embed_threads or os.cpu_count(),
        }
        results["embedding"] = embed_all(space, embedder, reuse)
        service.embedder = embedder
        # Queries should run on the segments a long-running service has: Tantivy's
        # background merges ended during the (minutes-long) embedding.
        space.lexical.reload()
        results["lexical_index"]["segments"] = int(space.lexical.searcher().num_segments)
    except BaseException:
        service.stop()
        raise
    return Built(service, embedder, results)


def embed_all(space: Space, embedder: Embedder, reuse: bool) -> dict[str, Any]:
    """Every fragment embedded on this thread (`SpaceWriter.build`), with the build's figures."""
    if space.semantic is None:
        raise BenchError("the space has no semantic channel: vector_search is off")
    load = load_average()
    figures = embed_space(space, embedder)
    if reuse and not figures["reused"]:
        raise BenchError(
            f"--reuse: {figures['fragments']} fragments were still to embed; the kept vectors do not match"
        )
    return {**figures, "load_average_at_start": load, "bench_peak_rss_mb": peak_rss_mb()}


# -- in-process queries -------------------------------------------------------


def measure_in_process(built: Built, queries: list[BenchQuery], plan: Plan) -> dict[str, Any]:
    service, embedder = built.service, built.embedder
    space = service.spaces[SPACE]
    channel = space.semantic
    if channel is None or not channel.ready:
        raise BenchError("the semantic channel is not ready after the build")
    load = load_average()
    for query in queries[: plan.warmup]:
        service.search(SPACE, query.text, FeedFilter(), SEARCH_LIMIT)
    by_kind: dict[str, list[float]] = defaultdict(list)
    degraded: Counter[str] = Counter()
    empty = 0
    for query in queries:
        started = time.perf_counter()
        response = service.search(SPACE, query.text, FeedFilter(), SEARCH_LIMIT)
        by_kind[query.kind].append(elapsed_ms(started))
        degraded.update(response.degraded.values())
        empty += not response.results
    hybrid = [ms for samples in by_kind.values() for ms in samples]
    # The parts, each alone over the same queries, one after the other.
    embed_ms, vectors = [], []
    for query in queries:
        started = time.perf_counter()
        vectors.append(embedder.embed_query(query.text))
        embed_ms.append(elapsed_ms(started))
    semantic_ms = []
    for query, vector in zip(queries, vectors, strict=True):
        started = time.perf_counter()
        channel.search(ChannelQuery(query.text, FeedFilter(), SEARCH_LIMIT, SEARCH_LIMIT, vector=vector))
        semantic_ms.append(elapsed_ms(started))
    lexical_ms = []
    for query in queries:
        started = time.perf_counter()
        lexical.search(space.lexical, query.text, FeedFilter(), SEARCH_LIMIT, service.settings.ranking)
        lexical_ms.append(elapsed_ms(started))
    return {
        **_measure_fusion_and_graph(built, queries, vectors),
        "load_average_at_start": load,
        "warmup": plan.warmup,
        "query_embed_timeout_ms": service.settings.query_embed_timeout_ms,
        "hybrid": {
            **summarize(hybrid),
            "empty_results": empty,
            "degraded": dict(degraded),
            "by_kind": {kind: summarize(samples) for kind, samples in sorted(by_kind.items())},
        },
        "query_embedding": summarize(embed_ms),
        "semantic_channel_given_vector": summarize(semantic_ms),
        "lexical_channel": summarize(lexical_ms),
    }


def _measure_fusion_and_graph(built: Built, queries: list[BenchQuery], vectors: list[Any]) -> dict[str, Any]:
    """The fusion step alone, on the channel lists Service.search fuses (the best
    CANDIDATES_PER_CHANNEL of each, lexical phrase flags, the graph list): the
    RRF with its traces (`fusion.rrf`), and the whole merge as the service runs
    it (RRF, fetching the summaries of kept notes known by id only, snippets of
    the kept notes). Then whole searches with the graph channel on."""
    service = built.service
    space = service.spaces[SPACE]
    channel = space.semantic
    assert channel is not None
    depth, fusion = CANDIDATES_PER_CHANNEL, service.settings.fusion
    space.graph.ensure_built()  # GRAPH_BOOST is off in this service: read the links now

    def merge(results: list[Any], count: int) -> tuple[Any, ...]:
        """As Service.search does: rank, fetch the kept notes known by id only,
        cut the kept hits' snippets, build the hits."""
        ranked, notes = fused_notes(space, results, count)
        snippets = answer_snippets(channels, results, kept(ranked, notes, count))
        return hits(results, ranked, notes, snippets, count)

    rrf_ms, merge_ms, graph_ms = [], [], []
    for query, vector in zip(queries, vectors, strict=True):
        asked = ChannelQuery(query.text, FeedFilter(), depth, 0, PHRASE_DEPTH, vector)
        channels: list[Channel] = [space.lexical_channel, channel]
        results = [space.lexical_channel.search(asked), channel.search(asked)]
        seeds = merge(results, GRAPH_SEEDS)
        started = time.perf_counter()
        channels.append(space.graph)
        results.append(space.graph.search(msgspec.structs.replace(asked, seeds=tuple(hit.note for hit in seeds))))
        graph_ms.append(elapsed_ms(started))
        rankings = {r.channel: [h.note_id for h in r.hits] for r in results if r.hits}
        scores = {r.channel: [h.score for h in r.hits] for r in results if r.hits}
        started = time.perf_counter()
        rrf(rankings, fusion.k, fusion.weights(), scores, fusion.score_floor)
        rrf_ms.append(elapsed_ms(started))
        started = time.perf_counter()
        merge(results, SEARCH_LIMIT)
        merge_ms.append(elapsed_ms(started))
    # The same service, spaces and model with GRAPH_BOOST on, then back off.
    settings = service.settings
    service.settings, space.graph.enabled = msgspec.structs.replace(settings, graph_boost=True), True
    hybrid_graph_ms = []
    try:
        for query in queries:
            started = time.perf_counter()
            service.search(SPACE, query.text, FeedFilter(), SEARCH_LIMIT)
            hybrid_graph_ms.append(elapsed_ms(started))
    finally:
        service.settings, space.graph.enabled = settings, False
    stats = space.graph.graph.stats()
    return {
        "fusion_rrf_and_traces": summarize(rrf_ms),
        "fusion_merge_with_snippets": summarize(merge_ms),
        "graph_channel_given_seeds": summarize(graph_ms),
        "hybrid_with_graph": summarize(hybrid_graph_ms),
        "graph": {"links": stats.links, "resolved": stats.resolved, "dangling": stats.dangling},
    }


# -- HTTP ----------------------------------------------------------------------


def semantic_ready(port: int) -> bool:
    """The server answers and the space's semantic channel is `ready`. Raises
    BenchError when it is unavailable or re-embedding (the vectors this run
    built were not reused: a fingerprint or manifest mismatch)."""
    state = server_status(port)
    if state is None:
        return False
    space = bench_space(state)
    semantic = space["semantic"]
    if semantic["state"] == "unavailable":
        raise BenchError(f"the server's semantic channel is unavailable: {semantic['reason']}")
    if semantic["state"] == "building" and semantic.get("total"):
        raise BenchError(
            f"the server is re-embedding ({semantic['embedded']}/{semantic['total']} fragments,"
            f" reason: {semantic['reason']}): it did not reuse the vectors in NOTARIUM_INDEX_DIR"
        )
    return bool(space["lexical"]["state"] == "ready" and semantic["state"] == "ready")


def measure_http_single(port: int, paths: list[str]) -> dict[str, Any]:
    """One keep-alive client; every body is read for its `degraded` channels."""
    client = Client(port)
    statuses: Counter[int] = Counter()
    degraded: Counter[str] = Counter()
    channels: Counter[str] = Counter()
    samples = []
    empty = 0
    try:
        for path in paths[:HTTP_WARMUP]:
            client.get(path)
        for path in paths:
            started = time.perf_counter()
            status, body = client.get(path)
            samples.append(elapsed_ms(started))
            statuses[status] += 1
            if status == http.client.OK:
                answer = json.loads(body)
                empty += not answer["results"]
                degraded.update(answer["degraded"].values())
                channels.update(answer["channels_used"])
    finally:
        client.close()
    failures = {str(code): n for code, n in sorted(statuses.items()) if code != http.client.OK}
    return {
        **summarize(samples),
        "empty_results": empty,
        "degraded": dict(degraded),
        "channels_used": dict(channels),
        "non_200": sum(failures.values()),
        "non_200_by_status": failures,
    }


def measure_http(work: Path, model_dir: Path, queries: list[BenchQuery], plan: Plan) -> dict[str, Any]:
    paths = [search_path(q.text) for q in queries]
    env = {"VECTOR_SEARCH": "1", "NOTARIUM_MODEL_DIR": str(model_dir)}
    load = load_average()
    with running_server(
        work / "spaces", work / "index", work / "server.log", env, semantic_ready, SEMANTIC_READY_TIMEOUT
    ) as server:
        after_ready = server.memory()  # the process that owns the indexes (serve's worker)
        load_queries = load_average()
        single = measure_http_single(server.port, paths)
        after_single = server.memory()
        concurrent = measure_http_concurrent(server.port, paths, plan.concurrent_seconds)
        memory = server.memory()
        final = server_status(server.port)
        ready = server.ready_seconds
    semantic = bench_space(final)["semantic"] if final is not None else None
    return {
        "load_average_at_start": load,
        "load_average_at_queries": load_queries,
        "semantic_ready_seconds": ready,
        "semantic_status_after": semantic,
        "single": single,
        "concurrent": concurrent,
        "server_memory_after_ready": after_ready,
        "server_memory_after_single_client": after_single,
        "server_memory": memory,
    }


# -- report ----------------------------------------------------------------------


def check_targets(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    rows = {
        "hybrid_http_p50_ms": (results["http"]["single"].get("p50_ms"), TARGET_HYBRID_HTTP_P50_MS),
        "server_peak_rss_mb": (results["http"]["server_memory"]["peak_rss_mb"], TARGET_SERVER_RSS_MB),
    }
    return {
        name: {"value": value, "target": limit, "met": value is not None and value <= limit}
        for name, (value, limit) in rows.items()
    }


def print_summary(results: dict[str, Any]) -> None:
    embedding, queries, http_ = results["embedding"], results["in_process"], results["http"]
    fragments = embedding["fragments"]
    embedded = (
        f"{fragments:,} fragments in {embedding['embed_seconds']:.1f} s = {embedding['fragments_per_second']:.1f}/s"
        if fragments
        else f"reused {embedding['vectors']:,} vectors"
    )
    rows = [
        ("notes", f"{results['params']['notes']:,}"),
        ("embedding", embedded),
        ("plan (chunk every note)", f"{embedding['plan_seconds']:.2f} s"),
        ("vector index on disk", f"{results['vector_index']['bytes'] / MIB:.1f} MiB"),
        ("hybrid in-process", _latency(queries["hybrid"])),
        *((f"  {kind}", _latency(s)) for kind, s in queries["hybrid"]["by_kind"].items()),
        ("  query embedding alone", _latency(queries["query_embedding"])),
        ("  semantic channel alone", _latency(queries["semantic_channel_given_vector"])),
        ("  lexical channel alone", _latency(queries["lexical_channel"])),
        ("  fusion: RRF + traces (3 channels)", _latency(queries["fusion_rrf_and_traces"])),
        ("  fusion: whole merge, snippets incl.", _latency(queries["fusion_merge_with_snippets"])),
        ("  graph channel given seeds", _latency(queries["graph_channel_given_seeds"])),
        ("hybrid + graph in-process", _latency(queries["hybrid_with_graph"])),
        ("server semantic ready after", f"{http_['semantic_ready_seconds']:.1f} s"),
        ("hybrid HTTP 1 client", _latency(http_["single"])),
        (f"hybrid HTTP {http_['concurrent']['clients']} clients", _latency(http_["concurrent"])),
        ("server RSS after ready", f"{http_['server_memory_after_ready']['rss_mb']} MiB"),
        ("server peak RSS", f"{http_['server_memory']['peak_rss_mb']} MiB"),
        ("bench peak RSS (bulk embedding)", f"{results['memory']['bench_peak_rss_mb']} MiB"),
    ]
    width = max(len(label) for label, _ in rows)
    machine = results["machine"]
    print(
        f"\nnotarium-search semantic perf — {results['model']['name']}, {machine['cpus']} cpus,"
        f" load {machine['load_average_at_start'][0]} at start, {machine['date']}"
    )
    for label, value in rows:
        print(f"  {label:<{width}}  {value}")
    print("targets:")
    for name, target in results["targets"].items():
        print(f"  {name:<{width}}  {target['value']} vs {target['target']}  {'ok' if target['met'] else 'MISSED'}")


def _latency(summary: dict[str, Any]) -> str:
    if not summary.get("count"):
        return "no samples"
    p50, p95, p99 = (summary[k] for k in ("p50_ms", "p95_ms", "p99_ms"))
    extra = f"  degraded: {summary['degraded']}" if summary.get("degraded") else ""
    return f"p50 {p50:.2f}  p95 {p95:.2f}  p99 {p99:.2f} ms (n={summary['count']}){extra}"


# -- driver ----------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=DEFAULT_NOTES, help=f"notes to generate (default {DEFAULT_NOTES})")
    parser.add_argument(
        "--model", type=Path, default=DEFAULT_MODEL_DIR, help=f"embedding pack (default {DEFAULT_MODEL_DIR})"
    )
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument(
        "--eval-dir", type=Path, default=default_eval_dir(), help="folder holding piaf-fr/ and cranfield/"
    )
    parser.add_argument("--quick", action="store_true", help="fewer queries and a 2 s throughput run (smoke test)")
    parser.add_argument("--work", type=Path, help="keep notes, index and server log in this folder")
    parser.add_argument("--reuse", action="store_true", help="with --work: measure on the notes and vectors kept there")
    args = parser.parse_args(argv)
    if args.notes < 1:
        parser.error("--notes must be at least 1")
    if args.reuse and args.work is None:
        parser.error("--reuse needs --work DIR")
    if not (args.model / "model.onnx").is_file():
        parser.error(f"--model {args.model}: no model.onnx there")
    return args


@contextmanager
def work_dir(keep: Path | None, reuse: bool) -> Iterator[Path]:
    if keep is None:
        with tempfile.TemporaryDirectory(prefix="notarium-perf-semantic-") as tmp:
            yield Path(tmp)
        return
    if reuse:
        if not (keep / "spaces" / SPACE).is_dir() or not (keep / "index" / SPACE).is_dir():
            raise BenchError(f"--reuse: {keep} holds no kept run (spaces/{SPACE} and index/{SPACE})")
    elif keep.exists() and any(keep.iterdir()):
        raise BenchError(f"--work {keep} is not empty: pass --reuse to measure on what it holds")
    keep.mkdir(parents=True, exist_ok=True)
    yield keep.resolve()


def run(args: argparse.Namespace, plan: Plan, work: Path) -> dict[str, Any]:
    corpora = load_corpora(args.eval_dir)
    notes_dir = work / "spaces" / SPACE
    model_dir = args.model.resolve()
    results: dict[str, Any] = {
        "benchmark": "perf_semantic",
        "params": {"notes": args.notes, "quick": args.quick, "reuse": args.reuse, "model_dir": str(model_dir)},
        "machine": {
            **machine_info(),
            **{pkg: _version(pkg) for pkg in ("onnxruntime", "tokenizers", "usearch")},
        },
    }
    if not args.reuse:
        results["corpus"] = build_space(notes_dir, args.notes, corpora)
    settings = Settings(
        spaces=(SpaceConfig(SPACE, notes_dir, "fr"),),
        index_dir=work / "index",
        log_level="warning",
        vector_search=True,
        model_dir=model_dir,
    )
    built = build(settings, args.notes, args.reuse)
    results.update(built.results)
    queries = build_queries(plan, corpora)
    try:
        results["in_process"] = measure_in_process(built, queries, plan)
    finally:
        built.service.stop()  # releases the writer lock the server needs
    vectors = work / "index" / SPACE / "vectors"
    results["vector_index"] = {
        "bytes": dir_size(vectors),
        "files": {p.name: p.stat().st_size for p in sorted(vectors.iterdir())},
        "bytes_per_vector": round(dir_size(vectors) / max(results["embedding"]["vectors"], 1), 1),
    }
    results["http"] = measure_http(work, model_dir, queries, plan)
    # semantic_ready already failed the run if the server re-embedded; this
    # records whether its start-up rewrote the vector files all the same.
    after = {p.name: p.stat().st_size for p in sorted(vectors.iterdir())}
    results["http"]["vector_files_after"] = after
    results["http"]["server_rewrote_vector_files"] = after != results["vector_index"]["files"]
    results["memory"] = {"bench_peak_rss_mb": peak_rss_mb()}
    results["targets"] = check_targets(results)
    return results


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    plan = QUICK if args.quick else FULL
    configure_logging("warning", sys.stderr)
    with work_dir(args.work, args.reuse) as work:
        results = run(args, plan, work)
    print_summary(results)
    if args.out is not None:
        args.out.write_text(json.dumps(results, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        print(f"results written to {args.out}")
    return results


if __name__ == "__main__":
    try:
        main()
    except BenchError as exc:
        print(f"perf_semantic: error: {exc}", file=sys.stderr)
        sys.exit(2)
