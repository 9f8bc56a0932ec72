"""The graph channel on a vault with hubs: does a home note every note links
to, or a map of content listing hundreds of notes, crowd the answers?

Turns piaf-fr (761 passages of 191 Wikipedia articles, 3,835 judged questions)
into a linked vault, the way people link their notes:

* each passage links to the previous and next passage of its article
  (`Voir aussi : [[…]]`): the links the graph channel should follow;
* every passage links to a home note (`Retour à l'[[Accueil]]`), which links
  to four maps of content; each map lists 200 random passages by title.

Then every judged question goes through `Service.search` (lexical channel,
GRAPH_BOOST on, no model): without the graph, with the graph as it was (every
link weighs the same: HUB_DEGREE set out of reach), with the graph as shipped
(links of hubs weighed down, graph/ranking.py), then at other graph weights. Reported:
nDCG@10, and per answer the mean number of hubs (the home note and the maps)
and of notes only the graph brought in its top 10, and the share of answers
with the home note in the top 10.

    python bench/graph_hubs.py ../shared/eval/piaf-fr --out /tmp/graph-hubs.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from msgspec.structs import replace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.eval_collection import load_judgments, ndcg
from notarium_search.graph import ranking
from notarium_search.logsetup import configure_logging
from notarium_search.service import Service
from notarium_search.settings import Settings, SpaceConfig
from notarium_search.types import FeedFilter

SPACE = "hubs"
HOME = "accueil"
MAPS = 4
MAP_SIZE = 200
SEED = 14
LIMIT = 10
GRAPH_WEIGHTS = (1.0, 0.5, 0.25, 0.15, 0.05)  # the alternatives to the shipped weight (0.1)
NO_HUB_WEIGHING = 10**9  # HUB_DEGREE out of reach: every link weighs the same


def write_vault(collection: Path, notes: Path) -> set[str]:
    """The linked vault; returns the hubs' ids."""
    docs = [json.loads(line) for line in (collection / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    by_title: dict[str, list[str]] = defaultdict(list)
    for doc in docs:
        by_title[doc.get("title") or doc["id"]].append(doc["id"])
    notes.mkdir(parents=True, exist_ok=True)
    for doc in docs:
        title = doc.get("title") or doc["id"]
        siblings = by_title[title]
        at = siblings.index(doc["id"])
        near = [siblings[i] for i in (at - 1, at + 1) if 0 <= i < len(siblings)]
        see_also = f"\n\nVoir aussi : {', '.join(f'[[{n}]]' for n in near)}." if near else ""
        front = f"---\nid: {json.dumps(doc['id'])}\ntitle: {json.dumps(title, ensure_ascii=False)}\n---\n\n"
        body = f"{doc['text']}{see_also}\n\nRetour à l'[[Accueil]].\n"
        (notes / f"{doc['id']}.md").write_text(front + body, encoding="utf-8")
    rng = random.Random(SEED)
    titles = {doc["id"]: doc.get("title") or doc["id"] for doc in docs}
    hubs = {HOME}
    for number in range(1, MAPS + 1):
        listed = rng.sample(sorted(titles), MAP_SIZE)
        lines = "\n".join(f"- [[{doc_id}|{titles[doc_id]}]]" for doc_id in listed)
        map_id = f"sommaire-{number}"
        hubs.add(map_id)
        (notes / f"{map_id}.md").write_text(
            f"---\nid: {map_id}\ntitle: Sommaire {number}\n---\n\n{lines}\n", encoding="utf-8"
        )
    maps = ", ".join(f"[[sommaire-{n}]]" for n in range(1, MAPS + 1))
    (notes / "Accueil.md").write_text(f"---\nid: {HOME}\ntitle: Accueil\n---\n\nLes sommaires : {maps}.\n")
    return hubs


def measure(
    service: Service, queries: dict[str, str], qrels: dict[str, dict[str, int]], hubs: set[str]
) -> dict[str, Any]:
    scores, hub_counts, graph_only, home = [], [], [], 0
    for qid, text in queries.items():
        hits = service.search(SPACE, text, FeedFilter(), LIMIT).results
        ranked = [hit.note.id for hit in hits]
        scores.append(ndcg(ranked, qrels[qid]))
        hub_counts.append(sum(note_id in hubs for note_id in ranked))
        graph_only.append(sum(set(hit.channels) == {"graph"} for hit in hits))
        home += HOME in ranked
    return {
        "ndcg@10": round(statistics.fmean(scores), 4),
        "hubs_in_top10": round(statistics.fmean(hub_counts), 3),
        "graph_only_in_top10": round(statistics.fmean(graph_only), 3),
        "home_in_top10_pct": round(100 * home / len(queries), 1),
    }


def run(collection: Path, work: Path, queries_limit: int | None, alternatives: bool = True) -> dict[str, Any]:
    """The lexical channel alone and the graph as shipped; with `alternatives`,
    also every link equal and the other graph weights."""
    hubs = write_vault(collection, work / "notes")
    queries, qrels = load_judgments(collection)
    if queries_limit:
        queries = dict(list(queries.items())[:queries_limit])
    settings = Settings(
        spaces=(SpaceConfig(SPACE, work / "notes", "fr"),), index_dir=work / "index", log_level="warning"
    )
    results: dict[str, Any] = {"collection": collection.name, "queries": len(queries), "hub_degree": ranking.HUB_DEGREE}
    service = Service(settings)
    try:
        service.spaces[SPACE].writing.build()
        results["lexical"] = measure(service, queries, qrels, hubs)
    finally:
        service.stop()
    graph = Service(replace(settings, graph_boost=True))
    try:
        graph.spaces[SPACE].writing.build()
        results["graph_hubs_weighed_down"] = measure(graph, queries, qrels, hubs)
        if not alternatives:
            return results
        shipped = ranking.HUB_DEGREE
        ranking.HUB_DEGREE = NO_HUB_WEIGHING
        try:
            results["graph_every_link_equal"] = measure(graph, queries, qrels, hubs)
        finally:
            ranking.HUB_DEGREE = shipped
        fusion = graph.settings.fusion
        for weight in GRAPH_WEIGHTS:
            graph.settings = replace(graph.settings, fusion=replace(fusion, graph_weight=weight))
            graph.spaces[SPACE].settings = graph.settings
            results[f"graph_weight_{weight}"] = measure(graph, queries, qrels, hubs)
    finally:
        graph.stop()
    return results


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("collection", type=Path)
    parser.add_argument("--queries", type=int, help="only the first N judged questions")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    configure_logging("warning")
    with tempfile.TemporaryDirectory() as tmp:
        result = run(args.collection, Path(tmp), args.queries)
    for mode, figures in result.items():
        if isinstance(figures, dict):
            print(f"{mode:>24}: {figures}")
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
