"""What a search returns when no note answers: the no-answer queries of a collection.

Reads ../shared/eval/noanswer/COLLECTION.jsonl (kinds `nonsense`: made-up words
none of which is in the corpus, a good answer is no result; `out_of_domain`:
everyday questions, lexical hits on common words are legitimate, notes found by
the semantic channel alone are not) and runs each query through `Service.search`
in three modes over the same index:

* `lexical`: vector search off (what a lexical-only install answers);
* `hybrid`: vector search on, graph off;
* `hybrid+graph`: vector search and graph boost on.

For each mode and kind it reports the share of queries answered with no result,
the mean number of results, and the mean number of notes in the top 10 that
only the semantic channel found (`hit.channels` is just "semantic"). With
`--judged`, the same services also answer the collection's judged questions:
nDCG@10 and Recall@100 per mode — issue 14's acceptance in one command:

    python bench/noanswer.py piaf-fr --judged
    python bench/noanswer.py cranfield --judged

    python bench/noanswer.py piaf-fr
    python bench/noanswer.py cranfield --model ../shared/models/all-minilm-l6-v2-int8 \\
        --work /tmp/noanswer-work --out /tmp/noanswer-cranfield.json

COLLECTION is a name under --eval-dir (../shared/eval) or a collection folder;
its language is fr for piaf-fr, en otherwise (--language to choose). The
collection is embedded once with --model (default multilingual-e5-small-int8);
with --work DIR the notes and index are kept in DIR/COLLECTION-MODEL and reused
(bench/semantic_floor.py uses the same layout).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec.structs import replace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.eval_collection import SPACE, build, build_vectors, evaluate, load_embedder_from, load_judgments
from bench.perf_lexical import code_version
from notarium_search.logsetup import configure_logging
from notarium_search.service import Service
from notarium_search.settings import RankingConfig, Settings
from notarium_search.types import FeedFilter, SearchResponse

if TYPE_CHECKING:
    from notarium_search.semantic.embedding import Embedder

ROOT = Path(__file__).resolve().parents[1]
EVAL_DIR = ROOT.parent / "shared" / "eval"
MODELS_DIR = ROOT.parent / "shared" / "models"
DEFAULT_MODEL = "multilingual-e5-small-int8"
LANGUAGES = {"piaf-fr": "fr"}  # every other collection: en
TOP = 10
# mode -> (vector_search, graph_boost)
MODES: dict[str, tuple[bool, bool]] = {"lexical": (False, False), "hybrid": (True, False), "hybrid+graph": (True, True)}


def collection_dir(name: str, eval_dir: Path = EVAL_DIR) -> Path:
    """A collection folder: the name itself if it is one, else under `eval_dir`."""
    path = Path(name)
    return path if (path / "corpus.jsonl").exists() else eval_dir / name


def model_dir(name: str, models_dir: Path = MODELS_DIR) -> Path:
    path = Path(name)
    return path if (path / "model.onnx").exists() else models_dir / name


def load_noanswer(collection: Path, eval_dir: Path = EVAL_DIR) -> list[dict[str, str]]:
    """The collection's no-answer queries: {"id", "text", "kind"}."""
    with open(eval_dir / "noanswer" / f"{collection.name}.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def prepare(collection: Path, work: Path, language: str, model: Path) -> tuple[Settings, Embedder]:
    """Index and embed the collection once (reused when `work` holds it already);
    the settings to open it again in any mode, and the loaded embedder."""
    service, _ = build(collection, work, language, RankingConfig(), vector_search=True)
    try:
        embedder = load_embedder_from(model, service.settings)
        embedding = build_vectors(service, embedder)
        if not embedding["reused_vectors"]:
            print(
                f"  {collection.name}/{model.name}: embedded {embedding['fragments_embedded']:,} fragments"
                f" in {embedding['embed_seconds']:.0f} s",
                file=sys.stderr,
                flush=True,
            )
        return service.settings, embedder
    finally:
        service.stop()


def open_service(settings: Settings, embedder: Embedder, vector_search: bool, graph_boost: bool) -> Service:
    """A service over the prepared index with these switches (vectors reused, never re-embedded)."""
    service = Service(replace(settings, vector_search=vector_search, graph_boost=graph_boost))
    service.spaces[SPACE].writing.run_reconcile()
    if vector_search:
        build_vectors(service, embedder)
    return service


def search(service: Service, text: str, limit: int) -> SearchResponse:
    return service.search(SPACE, text, FeedFilter(), limit)


def semantic_only(response: SearchResponse, top: int = TOP) -> int:
    """Notes of the first `top` that no channel but the semantic one found."""
    return sum(1 for hit in response.results[:top] if set(hit.channels) == {"semantic"})


def measure(service: Service, queries: list[dict[str, str]], limit: int) -> dict[str, dict[str, Any]]:
    """Per kind: queries, % with no result, mean results, mean semantic-only notes in the top 10."""
    out: dict[str, dict[str, Any]] = {}
    for kind in sorted({q["kind"] for q in queries}):
        counts, only, degraded = [], [], 0
        for query in (q for q in queries if q["kind"] == kind):
            response = search(service, query["text"], limit)
            counts.append(len(response.results))
            only.append(semantic_only(response))
            degraded += bool(response.degraded)
        out[kind] = {
            "queries": len(counts),
            "empty_pct": round(100 * sum(1 for c in counts if c == 0) / len(counts), 2),
            "mean_results": round(statistics.fmean(counts), 3),
            f"mean_semantic_only_top{TOP}": round(statistics.fmean(only), 3),
            "degraded_queries": degraded,
        }
    return out


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    collection = collection_dir(args.collection, args.eval_dir)
    model = model_dir(args.model)
    language = args.language or LANGUAGES.get(collection.name, "en")
    queries = load_noanswer(collection, args.eval_dir)
    started_at = datetime.now(tz=UTC).isoformat(timespec="seconds")
    settings, embedder = prepare(collection, work / f"{collection.name}-{model.name}", language, model)
    modes: dict[str, Any] = {}
    judged, qrels = load_judgments(collection) if args.judged else ({}, {})
    for mode, (vector_search, graph_boost) in MODES.items():
        service = open_service(settings, embedder, vector_search, graph_boost)
        try:
            modes[mode] = measure(service, queries, args.limit)
            if judged:  # the same service on the judged questions: nDCG@10, Recall@100
                modes[mode]["judged"] = evaluate(service, SPACE, judged, qrels)
        finally:
            service.stop()
    return {
        "collection": collection.name,
        "language": language,
        "model": model.name,
        "limit": args.limit,
        "date": started_at,
        "code": code_version(),
        "modes": modes,
    }


def table(result: dict[str, Any]) -> str:
    head = f"no-answer queries: {result['collection']} (model {result['model']}, limit {result['limit']})"
    columns = f"{'mode':<14}{'kind':<15}{'queries':>8}{'empty %':>9}{'mean res':>10}{'sem-only@10':>13}{'degr':>6}"
    lines = [head, columns]
    judged = []
    for mode, kinds in result["modes"].items():
        for kind, row in kinds.items():
            if kind == "judged":
                judged.append(f"{mode:<14}nDCG@10 {row['ndcg@10']:.4f}  Recall@100 {row['recall@100']:.4f}")
                continue
            lines.append(
                f"{mode:<14}{kind:<15}{row['queries']:>8}{row['empty_pct']:>9.1f}{row['mean_results']:>10.2f}"
                f"{row[f'mean_semantic_only_top{TOP}']:>13.2f}{row['degraded_queries']:>6}"
            )
    if judged:
        lines.extend(["judged questions:", *judged])
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("collection", help="piaf-fr, cranfield, or a collection folder")
    parser.add_argument("--eval-dir", type=Path, default=EVAL_DIR, help="holds the collections and noanswer/")
    parser.add_argument("--language", choices=["fr", "en"], help="default: fr for piaf-fr, else en")
    parser.add_argument("--model", default=DEFAULT_MODEL, metavar="DIR", help="embedding pack (folder or name)")
    parser.add_argument("--work", type=Path, help="keep notes and index under DIR/COLLECTION-MODEL, reuse them")
    parser.add_argument("--limit", type=int, default=TOP, help="results asked per query")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--judged", action="store_true", help="also nDCG@10 and Recall@100 of the judged questions")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    configure_logging("warning")
    with tempfile.TemporaryDirectory() as tmp:
        result = run(args, args.work or Path(tmp))
    print(table(result))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
