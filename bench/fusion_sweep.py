"""Fusion settings scored offline on channel rankings dumped by eval_collection.py.

    python bench/eval_collection.py ../shared/eval/piaf-fr --language fr \\
        --model ../shared/models/multilingual-e5-small-int8 --dump /tmp/piaf-channels.json
    python bench/eval_collection.py ../shared/eval/cranfield --language en \\
        --model ../shared/models/multilingual-e5-small-int8 --dump /tmp/cranfield-channels.json
    python bench/fusion_sweep.py /tmp/piaf-channels.json /tmp/cranfield-channels.json

Each dump holds, per query, the lexical and semantic rankings (100 notes each,
with their own scores) and the exact-phrase flags, as `Service.search` sees
them. This script re-fuses them with `notarium_search.fusion.rrf` — the
service's own function — for a grid of RRF constants, channel weights, depths
(how many notes of each channel are fused) and with or without the phrase
list, and prints nDCG@10 per collection, best settings first. The service's
defaults are marked; docs/ranking.md records the table and the choice.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from notarium_search.fusion import CANDIDATES_PER_CHANNEL, rrf
from notarium_search.settings import FusionConfig

NDCG_DEPTH = 10
GRID_K = (10, 30, 60, 100)
GRID_LEXICAL_WEIGHT = (0.9, 1.0, 1.25)
GRID_DEPTH = (50, 100)
GRID_PHRASE = (0.0, 1.0)
GRID_FLOOR = (1.0, 0.5, 0.2, 0.1)  # 1.0: plain rank-only RRF


def ndcg(ranked: list[str], gains: dict[str, int], depth: int = NDCG_DEPTH) -> float:
    dcg = sum(gains.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:depth]))
    ideal = sorted(gains.values(), reverse=True)[:depth]
    best = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / best if best else 0.0


def fused_ranking(
    query: dict[str, Any], k: float, lexical_weight: float, depth: int, phrase: float, floor: float
) -> list[str]:
    lexical = [doc for doc, _ in query["lexical"][:depth]]
    rankings = {"lexical": lexical, "semantic": [doc for doc, _ in query["semantic"][:depth]]}
    scores = {channel: [s for _, s in query[channel][:depth]] for channel in ("lexical", "semantic")}
    exact = [doc for doc in query["exact"] if doc in set(lexical)]
    if exact and phrase:
        rankings["phrase"] = exact
    weights = {"lexical": lexical_weight, "semantic": 1.0, "phrase": phrase}
    return [entry.note_id for entry in rrf(rankings, k, weights, scores, floor)[:NDCG_DEPTH]]


def score(dump: dict[str, Any], **settings: Any) -> float:
    qrels = dump["qrels"]
    return statistics.fmean(ndcg(fused_ranking(q, **settings), qrels[qid]) for qid, q in dump["queries"].items())


def single(dump: dict[str, Any], channel: str) -> float:
    qrels = dump["qrels"]
    return statistics.fmean(ndcg([doc for doc, _ in q[channel]], qrels[qid]) for qid, q in dump["queries"].items())


def sweep(dumps: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    grid = itertools.product(GRID_K, GRID_LEXICAL_WEIGHT, GRID_DEPTH, GRID_PHRASE, GRID_FLOOR)
    for k, weight, depth, phrase, floor in grid:
        settings = {"k": k, "lexical_weight": weight, "depth": depth, "phrase": phrase, "floor": floor}
        scores = {name: round(score(dump, **settings), 4) for name, dump in dumps.items()}
        rows.append({**settings, **scores, "mean": round(statistics.fmean(scores.values()), 4)})
    rows.sort(key=lambda row: -row["mean"])
    return rows


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dumps", type=Path, nargs="+")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--out", type=Path, help="write every row as JSON here")
    args = parser.parse_args(argv)
    dumps = {path.stem.removesuffix("-channels"): json.loads(path.read_text()) for path in args.dumps}
    for name, dump in dumps.items():
        print(f"{name}: lexical {single(dump, 'lexical'):.4f}, semantic {single(dump, 'semantic'):.4f}")
    rows = sweep(dumps)
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    default = FusionConfig()
    print(" ".join(f"{key:>14}" for key in rows[0]))
    for row in rows[: args.top]:
        print(" ".join(f"{value!s:>14}" for value in row.values()))
    for row in rows:
        if (row["k"], row["lexical_weight"], row["depth"], row["phrase"], row["floor"]) == (
            default.k,
            default.lexical_weight,
            CANDIDATES_PER_CHANNEL,
            default.phrase_weight,
            default.score_floor,
        ):
            print("service default:", row)
    return rows


if __name__ == "__main__":
    main()
