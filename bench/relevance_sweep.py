"""The semantic similarity floor and fusion's rules, scored offline on the
channel rankings eval_collection.py dumps (judged and no-answer queries).

    python bench/eval_collection.py ../shared/eval/piaf-fr --language fr \\
        --model ../shared/models/multilingual-e5-small-int8 --dump /tmp/piaf-fr-channels.json
    python bench/eval_collection.py ../shared/eval/cranfield --language en \\
        --model ../shared/models/multilingual-e5-small-int8 --dump /tmp/cranfield-channels.json
    python bench/relevance_sweep.py /tmp/piaf-fr-channels.json /tmp/cranfield-channels.json

For each candidate margin, a query's relevance floor is what unrelated text
scores against it (the dump's `unrelated`: its mean similarity to the
reference passages) plus the margin; the semantic hits below it are marked as
not `confident` (as semantic/search.py marks them) and the lists are fused by
the service's own `fusion.ranking`, in two ways:

* `support`: a hit below the floor still adds to a note another channel found
  (what the service does);
* `drop`: hits below the floor are thrown away.

In both, the channel is weighed as the service weighs it on a query whose
best hit is close to the floor (`calibration.query_weight`).

Reported per collection: nDCG@10 of the judged queries (with the lexical and
semantic channels alone for reference: the fused list should beat both), and
for the no-answer queries the share answered with nothing, the mean number of
results in a top 10, and how many of those only the semantic channel found.
Margin `none` is the service without a floor.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.eval_collection import NDCG_DEPTH, ndcg
from notarium_search.fusion import ranking
from notarium_search.semantic.calibration import query_weight
from notarium_search.settings import FusionConfig
from notarium_search.types import ChannelHit, ChannelResult

VARIANTS = ("support", "drop")


def channel_results(query: dict[str, Any], margin: float | None, variant: str) -> list[ChannelResult]:
    """The two channels' lists as Service.search hands them to fusion."""
    floor = None if margin is None else query["unrelated"] + margin
    exact = set(query["exact"])
    lexical = tuple(ChannelHit(None, s, (), note_id=doc, exact=doc in exact) for doc, s in query["lexical"])
    semantic = [
        ChannelHit(None, s, (), note_id=doc, confident=floor is None or s >= floor) for doc, s in query["semantic"]
    ]
    if variant == "drop":
        semantic = [hit for hit in semantic if hit.confident]
    weight = 1.0  # as semantic/search.py weighs a query whose best hit is close to the floor
    if margin is not None and query["semantic"]:
        weight = query_weight(query["semantic"][0][1], query["unrelated"], margin)
    return [ChannelResult("lexical", lexical), ChannelResult("semantic", tuple(semantic), weight=weight)]


def fused(query: dict[str, Any], margin: float | None, variant: str, config: FusionConfig) -> list[str]:
    return [entry.note_id for entry in ranking(channel_results(query, margin, variant), config)]


def judged(dump: dict[str, Any], margin: float | None, variant: str, config: FusionConfig) -> float:
    qrels = dump["qrels"]
    return statistics.fmean(ndcg(fused(q, margin, variant, config), qrels[qid]) for qid, q in dump["queries"].items())


def single(dump: dict[str, Any], channel: str, margin: float | None = None) -> float:
    qrels = dump["qrels"]
    return statistics.fmean(
        ndcg([doc for doc, s in q[channel] if margin is None or s >= q["unrelated"] + margin], qrels[qid])
        for qid, q in dump["queries"].items()
    )


def unanswerable(dump: dict[str, Any], margin: float | None, variant: str, config: FusionConfig) -> dict[str, float]:
    queries = dump.get("noanswer", {})
    if not queries:
        return {}
    empty, shown, alone = 0, [], []
    for query in queries.values():
        top = fused(query, margin, variant, config)[:NDCG_DEPTH]
        lexical = {doc for doc, _ in query["lexical"]}
        empty += not top
        shown.append(len(top))
        alone.append(sum(doc not in lexical for doc in top))
    return {
        "empty_pct": round(100 * empty / len(queries), 1),
        "mean_results": round(statistics.fmean(shown), 2),
        "semantic_only": round(statistics.fmean(alone), 2),
    }


def margins(step: float, highest: float) -> list[float | None]:
    return [None, *(round(i * step, 4) for i in range(int(highest / step) + 1))]


def sweep(dumps: dict[str, dict[str, Any]], step: float, highest: float) -> list[dict[str, Any]]:
    config = FusionConfig()
    rows = []
    for margin in margins(step, highest):
        for variant in VARIANTS if margin is not None else VARIANTS[:1]:
            row: dict[str, Any] = {"margin": margin, "variant": variant}
            for name, dump in dumps.items():
                row[name] = round(judged(dump, margin, variant, config), 4)
                row[f"{name}:sem"] = round(single(dump, "semantic", margin), 4)
                row.update({f"{name}:{k}": v for k, v in unanswerable(dump, margin, variant, config).items()})
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dumps", type=Path, nargs="+")
    parser.add_argument("--step", type=float, default=0.01, help="between candidate margins")
    parser.add_argument("--highest", type=float, default=0.15, help="the highest margin tried")
    parser.add_argument("--out", type=Path, help="write every row as JSON here")
    args = parser.parse_args(argv)
    dumps = {path.stem.removesuffix("-channels"): json.loads(path.read_text()) for path in args.dumps}
    for name, dump in dumps.items():
        print(f"{name}: lexical {single(dump, 'lexical'):.4f}, semantic {single(dump, 'semantic'):.4f}")
    rows = sweep(dumps, args.step, args.highest)
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    print(" ".join(f"{key:>18}" for key in rows[0]))
    for row in rows:
        print(" ".join(f"{value!s:>18}" for value in row.values()))
    return rows


if __name__ == "__main__":
    main()
