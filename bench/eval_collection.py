"""Retrieval quality of the real search path on a judged collection.

Turns a collection (corpus.jsonl, queries.jsonl, qrels.tsv) into a space of
Markdown notes (one note per document, frontmatter `title`), indexes it with
the real pipeline, runs every query through `Service.search` and reports
nDCG@10 (graded gains) and Recall@100.

    python bench/eval_collection.py ../shared/eval/piaf-fr --language fr
    python bench/eval_collection.py ../shared/eval/cranfield --language en

With `--model DIR` (an embedding pack, e.g. ../shared/models/multilingual-e5-small-int8)
the space is also embedded, synchronously, with the real semantic channel
(fragments, usearch), and three runs are scored over every query:

* `lexical`: the lexical channel alone (`lexical.search`, snippets included);
* `semantic`: the semantic channel alone (query embedding + nearest fragments → notes);
* `hybrid`: `Service.search`, both channels fused by RRF (what users get).

    python bench/eval_collection.py ../shared/eval/piaf-fr --language fr \\
        --model ../shared/models/multilingual-e5-small-int8 --out /tmp/eval-piaf.json

`--dump FILE` also writes each query's channel rankings with their scores, for
bench/fusion_sweep.py and bench/relevance_sweep.py to score other fusion
settings offline; the collection's no-answer queries (../shared/eval/noanswer)
too, apart, when there are some.

Each run reports nDCG@10, Recall@100 and the query latency p50 (one query at a
time, in-process); the build reports embedding throughput (fragments/s). The
notes and the index go to a temporary folder (or --work DIR to keep them; a
kept index is reused, and then no embedding throughput is measured).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec.structs import replace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.embedding_build import embed_space
from bench.perf_lexical import code_version
from notarium_search.lexical import search as lexical
from notarium_search.logsetup import configure_logging
from notarium_search.service import Service
from notarium_search.settings import RankingConfig, Settings, SpaceConfig
from notarium_search.types import ChannelQuery, FeedFilter

if TYPE_CHECKING:
    from notarium_search.index.space import Space
    from notarium_search.semantic.channel import SemanticChannel
    from notarium_search.semantic.embedding import Embedder

SPACE = "eval"
RECALL_DEPTH = 100
NDCG_DEPTH = 10
MODES = ("lexical", "semantic", "hybrid")
# Service.search answers from the lexical channel alone when the query embedding
# misses its deadline (300 ms by default), and says so in `degraded`. Here the
# fused ranking itself is measured, on a machine shared with other work: one
# minute is far beyond any single query embedding, so the deadline never fires.
EVAL_QUERY_EMBED_TIMEOUT_MS = 60_000
# The build prints a progress line this often (a large collection embeds for minutes).

# shared/README.md, "Reference figures" (nDCG@10, Recall@100): a straightforward
# implementation with one vector per document and fusion over the top 1,000.
REFERENCES: dict[str, dict[str, tuple[float, float]]] = {
    "piaf-fr": {"bm25": (0.798, 0.961), "semantic": (0.766, 0.976), "rrf_k60": (0.825, 0.988)},
    "cranfield": {"bm25": (0.349, 0.717), "semantic": (0.360, 0.729), "rrf_k60": (0.391, 0.757)},
}

Ranker = Callable[[str], tuple[list[str], bool]]
"""Query text → note ids best first, and whether a channel failed to answer."""


def write_space(collection: Path, notes_dir: Path) -> int:
    """One Markdown note per document; the file name is the document id."""
    notes_dir.mkdir(parents=True, exist_ok=True)
    count = 0
    with open(collection / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            title = doc.get("title") or doc["id"]
            front = "---\n" + f"id: {json.dumps(doc['id'])}\ntitle: {json.dumps(title, ensure_ascii=False)}\n---\n\n"
            (notes_dir / f"{doc['id']}.md").write_text(front + doc["text"] + "\n", encoding="utf-8")
            count += 1
    return count


def load_judgments(collection: Path) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    queries = {}
    with open(collection / "queries.jsonl", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            queries[row["id"]] = row["text"]
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with open(collection / "qrels.tsv", encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            qid, did, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                qrels[qid][did] = int(score)
    return {q: t for q, t in queries.items() if q in qrels}, qrels


def ndcg(ranked: list[str], gains: dict[str, int], depth: int = NDCG_DEPTH) -> float:
    dcg = sum(gains.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:depth]))
    ideal = sorted(gains.values(), reverse=True)[:depth]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall(ranked: list[str], gains: dict[str, int], depth: int = RECALL_DEPTH) -> float:
    return len(set(ranked[:depth]) & set(gains)) / len(gains)


def score(
    rank: Ranker,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
) -> dict[str, Any]:
    """Run every query through `rank`, one at a time; quality and latency."""
    load = load_average()
    ndcgs, recalls, took = [], [], []
    degraded = 0
    for qid, text in queries.items():
        started = time.perf_counter()
        ranked, was_degraded = rank(text)
        took.append((time.perf_counter() - started) * 1000)
        degraded += was_degraded
        ndcgs.append(ndcg(ranked, qrels[qid]))
        recalls.append(recall(ranked, qrels[qid]))
    return {
        "queries": len(queries),
        "ndcg@10": round(statistics.fmean(ndcgs), 4),
        "recall@100": round(statistics.fmean(recalls), 4),
        "query_ms_p50": round(statistics.median(took), 3),
        "degraded_queries": degraded,
        "load_average_at_start": load,
    }


def hybrid_ranker(service: Service, space: str) -> Ranker:
    """The real search path: every enabled channel, fused."""

    def rank(text: str) -> tuple[list[str], bool]:
        response = service.search(space, text, FeedFilter(), RECALL_DEPTH)
        return [hit.note.id for hit in response.results], "semantic" in response.degraded

    return rank


def lexical_ranker(service: Service, space: str) -> Ranker:
    """The lexical channel alone (snippets included, as in the real path)."""
    index, ranking = service.spaces[space].lexical, service.settings.ranking

    def rank(text: str) -> tuple[list[str], bool]:
        result = lexical.search(index, text, FeedFilter(), RECALL_DEPTH, ranking)
        return [hit.note_id for hit in result.hits], False

    return rank


def semantic_ranker(service: Service, space: str, embedder: Embedder) -> Ranker:
    """The semantic channel alone: the query embedding, then nearest fragments → notes."""
    channel = _semantic(service.spaces[space])
    if not channel.ready:
        raise RuntimeError("the semantic channel is not built: run build_vectors first")

    def rank(text: str) -> tuple[list[str], bool]:
        asked = ChannelQuery(text, FeedFilter(), RECALL_DEPTH, RECALL_DEPTH, vector=embedder.embed_query(text))
        result = channel.search(asked)
        return [hit.note_id for hit in result.hits], False

    return rank


def evaluate(
    service: Service, space: str, queries: dict[str, str], qrels: dict[str, dict[str, int]]
) -> dict[str, float]:
    """`Service.search` over every query (the test suite's quality gate)."""
    result = score(hybrid_ranker(service, space), queries, qrels)
    return {k: v for k, v in result.items() if k in ("queries", "ndcg@10", "recall@100", "query_ms_p50")}


def build(
    collection: Path, work: Path, language: str, ranking: RankingConfig, vector_search: bool = False
) -> tuple[Service, float]:
    """The space indexed lexically (synchronously); with `vector_search`, its
    semantic channel exists but is empty until `build_vectors`."""
    notes = work / "notes" / SPACE
    if not notes.exists():
        write_space(collection, notes)
    settings = Settings(
        spaces=(SpaceConfig(SPACE, notes, language),),
        index_dir=work / "index",
        ranking=ranking,
        log_level="warning",
        vector_search=vector_search,
        query_embed_timeout_ms=EVAL_QUERY_EMBED_TIMEOUT_MS,
    )
    service = Service(settings)
    started = time.perf_counter()
    service.spaces[SPACE].writing.run_reconcile()
    return service, time.perf_counter() - started


def build_vectors(service: Service, embedder: Embedder, space: str = SPACE) -> dict[str, Any]:
    """Embed every fragment of the space on this thread (`SpaceWriter.build`, as
    tests/conftest.py `build_semantic` does), then hand the embedder to the service."""
    load = load_average()
    figures = embed_space(service.spaces[space], embedder)
    service.embedder = embedder
    return {
        "fragments_embedded": figures["fragments"] or 0,
        "vectors": figures["vectors"],
        "plan_seconds": figures["plan_seconds"],
        "embed_seconds": figures["embed_seconds"],
        "fragments_per_second": figures["fragments_per_second"],
        "reused_vectors": figures["reused"],
        "load_average_at_start": load,
    }


def _semantic(space: Space) -> SemanticChannel:
    if space.semantic is None:
        raise RuntimeError(f"space {space.name} has no semantic channel (build it with vector_search=True)")
    return space.semantic


def load_embedder_from(model_dir: Path, settings: Settings) -> Embedder:
    """The real ONNX embedder, with the batch size and threads the service would use."""
    import notarium_search.semantic  # noqa: F401 - onnxruntime must be imported before usearch
    from notarium_search.semantic.embedding import load_embedder

    return load_embedder(
        model_dir, settings.model, bulk_threads=settings.embed_threads, batch_size=settings.embed_batch_size
    )


def load_average() -> list[float]:
    """1, 5 and 15-minute load averages: other work on the 2 cores skews the timings."""
    return [round(x, 2) for x in os.getloadavg()]


def compare(runs: dict[str, dict[str, Any]], collection: str) -> dict[str, Any]:
    """Hybrid against the best single channel, and every run against the references."""
    out: dict[str, Any] = {}
    for metric in ("ndcg@10", "recall@100"):
        best = max(("lexical", "semantic"), key=lambda mode: float(runs[mode][metric]))
        out[metric] = {
            "best_single": best,
            "hybrid_minus_best_single": round(runs["hybrid"][metric] - runs[best][metric], 4),
            "hybrid_at_least_best_single": runs["hybrid"][metric] >= runs[best][metric],
        }
    reference = REFERENCES.get(collection)
    if reference is not None:
        out["reference"] = {name: {"ndcg@10": n, "recall@100": r} for name, (n, r) in reference.items()}
    return out


def dump_channels(
    service: Service, embedder: Embedder, queries: dict[str, str], space: str = SPACE
) -> dict[str, dict[str, Any]]:
    """Each query's channel rankings with their own scores and the exact-phrase
    flags, as fusion sees them: for tuning fusion offline (--dump)."""
    index, ranking = service.spaces[space].lexical, service.settings.ranking
    channel = _semantic(service.spaces[space])
    out = {}
    for qid, text in queries.items():
        found = lexical.search(index, text, FeedFilter(), RECALL_DEPTH, ranking, with_snippets=False, phrase_depth=20)
        near = channel.search(ChannelQuery(text, FeedFilter(), RECALL_DEPTH, 0, vector=embedder.embed_query(text)))
        out[qid] = {
            "lexical": [[hit.note_id, hit.score] for hit in found.hits],
            "semantic": [[hit.note_id, hit.score] for hit in near.hits],
            "exact": [hit.note_id for hit in found.hits if hit.exact],
            "unrelated": near.unrelated,  # what unrelated text scores against the query (semantic/calibration.py)
        }
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("collection", type=Path)
    parser.add_argument("--language", default="fr", choices=["fr", "en"])
    parser.add_argument("--work", type=Path, help="keep notes and index here")
    parser.add_argument("--ranking", action="append", default=[], metavar="KEY=VALUE", help="override a ranking knob")
    parser.add_argument("--model", type=Path, metavar="DIR", help="embedding pack: also run semantic and hybrid")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--dump", type=Path, help="with --model: write each query's channel rankings here")
    return parser.parse_args(argv)


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    ranking = replace(RankingConfig(), **{k: float(v) for k, v in (kv.split("=") for kv in args.ranking)})
    name = args.collection.name
    started_at = datetime.now(tz=UTC).isoformat(timespec="seconds")
    load = load_average()
    service, seconds = build(args.collection, work, args.language, ranking, vector_search=args.model is not None)
    try:
        queries, qrels = load_judgments(args.collection)
        if args.model is None:
            result: dict[str, Any] = evaluate(service, SPACE, queries, qrels)
            result["index_seconds"] = round(seconds, 2)
            result["collection"] = name
            return result
        embedder = load_embedder_from(args.model, service.settings)
        embedding = build_vectors(service, embedder)
        rankers = {
            "lexical": lexical_ranker(service, SPACE),
            "semantic": semantic_ranker(service, SPACE, embedder),
            "hybrid": hybrid_ranker(service, SPACE),
        }
        runs = {mode: score(rankers[mode], queries, qrels) for mode in MODES}
        if args.dump is not None:
            dumped = {"qrels": qrels, "queries": dump_channels(service, embedder, queries)}
            noanswer = args.collection.parent / "noanswer" / f"{name}.jsonl"
            if noanswer.is_file():  # queries nothing answers (../shared/eval/noanswer), kept apart
                rows = [json.loads(line) for line in noanswer.read_text(encoding="utf-8").splitlines() if line]
                dumped["noanswer"] = dump_channels(service, embedder, {r["id"]: r["text"] for r in rows})
            args.dump.write_text(json.dumps(dumped), encoding="utf-8")
        return {
            "collection": name,
            "language": args.language,
            "model": args.model.name,
            "documents": service.spaces[SPACE].status().notes,
            "date": started_at,
            "code": code_version(),
            "load_average_at_start": load,
            "index_seconds": round(seconds, 2),
            "embedding": embedding,
            "runs": runs,
            "comparison": compare(runs, name),
        }
    finally:
        service.stop()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    configure_logging("warning")
    with tempfile.TemporaryDirectory() as tmp:
        result = run(args, args.work or Path(tmp))
    print(json.dumps(result))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
