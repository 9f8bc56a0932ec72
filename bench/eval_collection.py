"""Retrieval quality of the real search path on a judged collection.

Turns a collection (corpus.jsonl, queries.jsonl, qrels.tsv) into a space of
Markdown notes (one note per document, frontmatter `title`), indexes it with
the real pipeline, runs every query through `Service.search` and reports
nDCG@10 (graded gains) and Recall@100.

    python bench/eval_collection.py ../shared/eval/piaf-fr --language fr
    python bench/eval_collection.py ../shared/eval/cranfield --language en

The notes and the index go to a temporary folder (or --work DIR to keep them).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from notarium_search.logsetup import configure_logging
from notarium_search.models import FeedFilter
from notarium_search.service import Service
from notarium_search.settings import RankingConfig, Settings, SpaceConfig

RECALL_DEPTH = 100
NDCG_DEPTH = 10


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


def evaluate(
    service: Service, space: str, queries: dict[str, str], qrels: dict[str, dict[str, int]]
) -> dict[str, float]:
    ndcgs, recalls, took = [], [], []
    for qid, text in queries.items():
        started = time.perf_counter()
        response = service.search(space, text, FeedFilter(), RECALL_DEPTH)
        took.append((time.perf_counter() - started) * 1000)
        ranked = [hit.note.id for hit in response.results]
        ndcgs.append(ndcg(ranked, qrels[qid]))
        recalls.append(recall(ranked, qrels[qid]))
    return {
        "queries": len(queries),
        "ndcg@10": round(statistics.fmean(ndcgs), 4),
        "recall@100": round(statistics.fmean(recalls), 4),
        "query_ms_p50": round(statistics.median(took), 3),
    }


def build(collection: Path, work: Path, language: str, ranking: RankingConfig) -> tuple[Service, float]:
    notes = work / "notes" / "eval"
    if not notes.exists():
        write_space(collection, notes)
    settings = Settings(
        spaces=(SpaceConfig("eval", notes, language),), index_dir=work / "index", ranking=ranking, log_level="warning"
    )
    service = Service(settings)
    started = time.perf_counter()
    service.spaces["eval"].run_reconcile()
    return service, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("collection", type=Path)
    parser.add_argument("--language", default="fr", choices=["fr", "en"])
    parser.add_argument("--work", type=Path, help="keep notes and index here")
    parser.add_argument("--ranking", action="append", default=[], metavar="KEY=VALUE", help="override a ranking knob")
    args = parser.parse_args()
    configure_logging("warning")
    ranking = replace(RankingConfig(), **{k: float(v) for k, v in (kv.split("=") for kv in args.ranking)})
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        service, seconds = build(args.collection, work, args.language, ranking)
        queries, qrels = load_judgments(args.collection)
        result = evaluate(service, "eval", queries, qrels)
        result["index_seconds"] = round(seconds, 2)
        result["collection"] = args.collection.name
        print(json.dumps(result))
        service.stop()


if __name__ == "__main__":
    main()
