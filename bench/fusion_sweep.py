"""Fusion settings scored offline on channel rankings dumped by eval_collection.py.

    python bench/eval_collection.py ../shared/eval/piaf-fr --language fr \\
        --model ../shared/models/multilingual-e5-small-int8 --dump /tmp/piaf-channels.json
    python bench/eval_collection.py ../shared/eval/cranfield --language en \\
        --model ../shared/models/multilingual-e5-small-int8 --dump /tmp/cranfield-channels.json
    python bench/fusion_sweep.py /tmp/piaf-channels.json /tmp/cranfield-channels.json

Each dump holds, per query, the lexical and semantic rankings (100 notes each,
with their own scores), the exact-phrase flags and what unrelated text scores
against the query, as `Service.search` sees them. This script re-fuses them
the way the service does — the relevance floor at `--margin` above unrelated
text (a hit below it only supports a note another channel found), the
semantic channel weighed down on a query whose best hit barely clears it
(bench/relevance_sweep.py's `channel_results`), then the service's own
`fusion.ranking` — for a grid of RRF constants, lexical weights and score
floors, and at the defaults with 50 notes per channel and without the phrase
list. It prints nDCG@10 per collection, and on each half of its questions
(even and odd ranks of the sorted ids: a setting that only fits these
questions gains on one half and loses on the other), best settings first. The
service's defaults are marked, and their row reproduces `Service.search` on
the same dump; docs/ranking.md records the tables and the choices.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.eval_collection import NDCG_DEPTH, ndcg
from bench.relevance_sweep import channel_results
from notarium_search.fusion import CANDIDATES_PER_CHANNEL, ranking
from notarium_search.semantic.calibration import E5_SMALL_MARGIN
from notarium_search.settings import FusionConfig

GRID_K = (30, 60, 100, 150)
GRID_LEXICAL_WEIGHT = (0.85, 0.9, 1.0, 1.25)
GRID_FLOOR = (1.0, 0.2, 0.1)  # 1.0: plain rank-only RRF
SHALLOW_DEPTH = 50


def fused_ranking(query: dict[str, Any], config: FusionConfig, depth: int, margin: float | None) -> list[str]:
    trimmed = {**query, "lexical": query["lexical"][:depth], "semantic": query["semantic"][:depth]}
    return [entry.note_id for entry in ranking(channel_results(trimmed, margin, "support"), config)][:NDCG_DEPTH]


def scores(dump: dict[str, Any], config: FusionConfig, depth: int, margin: float | None) -> dict[str, float]:
    """nDCG@10 on every question, and on each half of them."""
    qrels, ids = dump["qrels"], sorted(dump["queries"])
    each = [ndcg(fused_ranking(dump["queries"][qid], config, depth, margin), qrels[qid]) for qid in ids]
    return {"": statistics.fmean(each), ":even": statistics.fmean(each[0::2]), ":odd": statistics.fmean(each[1::2])}


def single(dump: dict[str, Any], channel: str) -> float:
    qrels = dump["qrels"]
    return statistics.fmean(ndcg([doc for doc, _ in q[channel]], qrels[qid]) for qid, q in dump["queries"].items())


def settings_grid() -> list[tuple[FusionConfig, int]]:
    default = FusionConfig()
    grid = [
        (FusionConfig(k=float(k), lexical_weight=weight, score_floor=floor), CANDIDATES_PER_CHANNEL)
        for k, weight, floor in itertools.product(GRID_K, GRID_LEXICAL_WEIGHT, GRID_FLOOR)
    ]
    if all(config != default for config, _ in grid):
        grid.append((default, CANDIDATES_PER_CHANNEL))
    grid.append((default, SHALLOW_DEPTH))
    grid.append((FusionConfig(phrase_weight=0.0), CANDIDATES_PER_CHANNEL))
    return grid


def sweep(dumps: dict[str, dict[str, Any]], margin: float | None) -> list[dict[str, Any]]:
    rows = []
    for config, depth in settings_grid():
        row: dict[str, Any] = {
            "k": config.k,
            "lexical_weight": config.lexical_weight,
            "floor": config.score_floor,
            "depth": depth,
            "phrase": config.phrase_weight,
        }
        for name, dump in dumps.items():
            row.update({name + half: round(value, 4) for half, value in scores(dump, config, depth, margin).items()})
        row["mean"] = round(statistics.fmean(row[name] for name in dumps), 4)
        rows.append(row)
    rows.sort(key=lambda row: -row["mean"])
    return rows


def is_default(row: dict[str, Any]) -> bool:
    default = FusionConfig()
    return (row["k"], row["lexical_weight"], row["floor"], row["depth"], row["phrase"]) == (
        default.k,
        default.lexical_weight,
        default.score_floor,
        CANDIDATES_PER_CHANNEL,
        default.phrase_weight,
    )


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dumps", type=Path, nargs="+")
    parser.add_argument(
        "--margin",
        default=str(E5_SMALL_MARGIN),
        help="the model's relevance margin (the dumps' model; default multilingual-e5-small's), or 'none'",
    )
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--out", type=Path, help="write every row as JSON here")
    args = parser.parse_args(argv)
    margin = None if args.margin == "none" else float(args.margin)
    dumps = {path.stem.removesuffix("-channels"): json.loads(path.read_text()) for path in args.dumps}
    for name, dump in dumps.items():
        print(f"{name}: lexical {single(dump, 'lexical'):.4f}, semantic {single(dump, 'semantic'):.4f}")
    rows = sweep(dumps, margin)
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    print(" ".join(f"{key:>14}" for key in rows[0]))
    for row in rows[: args.top]:
        print(" ".join(f"{value!s:>14}" for value in row.values()))
    for row in rows:
        if is_default(row):
            print("service default:", row)
    return rows


if __name__ == "__main__":
    main()
