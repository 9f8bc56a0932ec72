"""Calibration data for a per-model floor on the semantic channel's cosine.

For each run (a collection and an embedding model), every judged query and every
no-answer query (../shared/eval/noanswer, both kinds) goes through the real
`Service.search` (vector search on, graph off, limit 100), and the cosine of each
hit's semantic trace (`hit.trace["semantic"].score`: the note's best fragment)
is sorted into groups:

* `relevant_top1` / `relevant_top10` / `relevant_top100`: judged relevant notes
  at that semantic rank or better;
* `nonrelevant_top1` / `nonrelevant_top10`: the other notes the semantic channel ranks there;
* `judged_top1`: each judged query's semantic rank-1 cosine (whatever its relevance);
* `noanswer_top1` / `noanswer_top10`: the same for the no-answer queries.

`judged_top1` against `noanswer_top1` is what a per-query "is this channel
confident at all" test would use. A sweep of candidate floors (0.70-0.95 by
0.005 for E5 models, whose cosines sit in a high band; the observed range by
0.01 for other models) gives the share of relevant and non-relevant top-10
semantic hits kept, of judged queries keeping a semantic hit, and of no-answer
queries left with none. The suggested floor is the highest one that keeps at
least --keep (95 %) of the relevant top-10 semantic hits; runs of one model are
also pooled.

Caveat: a semantic score is only visible for notes in the fused top `limit`
(100) of the answer. Semantic ranks 1-10 are practically always there (RRF), and
the script counts the ones that are missing; deeper semantic ranks may be cut.

    python bench/semantic_floor.py --work /tmp/semfloor-work
    python bench/semantic_floor.py cranfield:all-minilm-l6-v2-int8 --out /tmp/floor.json

RUN is COLLECTION[:MODEL] (MODEL a pack name under ../shared/models or a
folder; default multilingual-e5-small-int8). Default runs: piaf-fr, cranfield,
cranfield:all-minilm-l6-v2-int8. --work DIR keeps the indexes in
DIR/COLLECTION-MODEL, as bench/noanswer.py does.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.eval_collection import load_judgments
from bench.noanswer import (
    DEFAULT_MODEL,
    EVAL_DIR,
    LANGUAGES,
    collection_dir,
    load_noanswer,
    model_dir,
    open_service,
    prepare,
    search,
)
from bench.perf_lexical import code_version
from notarium_search.logsetup import configure_logging
from notarium_search.service import Service

LIMIT = 100
PERCENTILES = (1, 5, 10, 25, 50, 75, 90, 95, 99)
DEFAULT_RUNS = ("piaf-fr", "cranfield", "cranfield:all-minilm-l6-v2-int8")
E5_FLOORS = (0.70, 0.95, 0.005)
OTHER_STEP = 0.01
SWEEP_COLUMNS: tuple[tuple[str, int], ...] = (("floor", 7), ("rel@10 kept", 13), ("rel@1 kept", 12))
SWEEP_COLUMNS += (("nonrel@10 kept", 16), ("judged w/ hit", 15), ("noans emptied", 15))
Groups = dict[str, list[float]]


def semantic_ranks(service: Service, text: str) -> tuple[dict[int, tuple[str, float]], bool]:
    """Semantic rank -> (note id, cosine) for the notes of the fused top LIMIT; degraded?"""
    response = search(service, text, LIMIT)
    ranks = {
        trace.rank: (hit.note.id, trace.score)
        for hit in response.results
        if (trace := hit.trace.get("semantic")) is not None
    }
    return ranks, bool(response.degraded)


def collect(service: Service, collection: Path, eval_dir: Path) -> tuple[Groups, dict[str, int]]:
    """The cosine groups of one run, and counts (queries, degraded, missing top-10 ranks)."""
    groups: Groups = defaultdict(list)
    counts = {"judged_queries": 0, "noanswer_queries": 0, "degraded_queries": 0, "missing_top10_ranks": 0}
    queries, qrels = load_judgments(collection)
    for qid, text in queries.items():
        ranks, degraded = semantic_ranks(service, text)
        counts["judged_queries"] += 1
        counts["degraded_queries"] += degraded
        counts["missing_top10_ranks"] += sum(1 for r in range(1, 11) if r not in ranks)
        if 1 in ranks:
            groups["judged_top1"].append(ranks[1][1])
        for rank, (note_id, cosine) in ranks.items():
            kind = "relevant" if note_id in qrels[qid] else "nonrelevant"
            for depth in (1, 10, 100):
                if rank <= depth and (kind == "relevant" or depth < 100):
                    groups[f"{kind}_top{depth}"].append(cosine)
    for query in load_noanswer(collection, eval_dir):
        ranks, degraded = semantic_ranks(service, query["text"])
        counts["noanswer_queries"] += 1
        counts["degraded_queries"] += degraded
        counts["missing_top10_ranks"] += sum(1 for r in range(1, 11) if r not in ranks)
        if 1 in ranks:
            groups["noanswer_top1"].append(ranks[1][1])
            groups[f"noanswer_{query['kind']}_top1"].append(ranks[1][1])
        groups["noanswer_top10"].extend(cosine for rank, (_, cosine) in ranks.items() if rank <= 10)
    return groups, counts


def percentiles(values: list[float]) -> dict[str, float | int | None]:
    out: dict[str, float | int | None] = {"n": len(values)}
    cuts = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else values * 99
    for p in PERCENTILES:
        out[f"p{p}"] = round(cuts[p - 1], 4) if cuts else None
    return out


def floors_for(model: str, groups: Groups) -> list[float]:
    """The candidate floors: a fixed band for E5 models, the observed range otherwise."""
    if "e5" in model:
        start, stop, step = E5_FLOORS
    else:
        values = [v for vs in groups.values() for v in vs]
        start, stop, step = math.floor(min(values) * 100) / 100, math.ceil(max(values) * 100) / 100, OTHER_STEP
    return [round(start + i * step, 4) for i in range(round((stop - start) / step) + 1)]


def share(values: list[float], floor: float, above: bool = True) -> float | None:
    if not values:
        return None
    kept = sum(1 for v in values if (v >= floor) == above)
    return round(100 * kept / len(values), 2)


def sweep(groups: Groups, floors: list[float]) -> list[dict[str, Any]]:
    return [
        {
            "floor": floor,
            "relevant_top10_kept_pct": share(groups["relevant_top10"], floor),
            "relevant_top1_kept_pct": share(groups["relevant_top1"], floor),
            "nonrelevant_top10_kept_pct": share(groups["nonrelevant_top10"], floor),
            "judged_with_semantic_hit_pct": share(groups["judged_top1"], floor),
            "noanswer_emptied_pct": share(groups["noanswer_top1"], floor, above=False),
        }
        for floor in floors
    ]


def suggest(rows: list[dict[str, Any]], keep: float) -> dict[str, Any] | None:
    """The highest floor that keeps at least `keep` % of the relevant top-10 semantic hits."""
    fitting = [row for row in rows if (row["relevant_top10_kept_pct"] or 0) >= keep]
    return max(fitting, key=lambda row: row["floor"]) if fitting else None


def analyse(name: str, model: str, groups: Groups, keep: float) -> dict[str, Any]:
    rows = sweep(groups, floors_for(model, groups))
    return {
        "name": name,
        "model": model,
        "percentiles": {group: percentiles(values) for group, values in sorted(groups.items())},
        "sweep": rows,
        "suggested": suggest(rows, keep),
        "top1_overlap": overlap(groups["judged_top1"], groups["noanswer_top1"]),
    }


def overlap(judged: list[float], noanswer: list[float]) -> dict[str, dict[str, float]]:
    """How far the top-1 cosines of judged and no-answer queries share a band."""
    return {
        "judged_top1": {
            "min": min(judged),
            "max": max(judged),
            "pct_within_other": round(100 * sum(1 for v in judged if v <= max(noanswer)) / len(judged), 2),
        },
        "noanswer_top1": {
            "min": min(noanswer),
            "max": max(noanswer),
            "pct_within_other": round(100 * sum(1 for v in noanswer if v >= min(judged)) / len(noanswer), 2),
        },
    }


def report(result: dict[str, Any]) -> str:
    header = f"{'group':<28}{'n':>7}" + "".join(f"{'p' + str(p):>8}" for p in PERCENTILES)
    lines = [f"== {result['name']} ({result['model']})", header]
    for group, row in result["percentiles"].items():
        cells = "".join(f"{row[f'p{p}']:>8.3f}" if row[f"p{p}"] is not None else f"{'-':>8}" for p in PERCENTILES)
        lines.append(f"{group:<28}{row['n']:>7}{cells}")
    lines.append("".join(f"{title:>{width}}" for title, width in SWEEP_COLUMNS))
    for row in result["sweep"]:
        shown = [f"{row['floor']:.3f}"] + ["-" if row[k] is None else f"{row[k]:.1f}" for k in list(row)[1:]]
        lines.append("".join(f"{cell:>{width}}" for cell, (_, width) in zip(shown, SWEEP_COLUMNS, strict=True)))
    judged, noanswer = result["top1_overlap"]["judged_top1"], result["top1_overlap"]["noanswer_top1"]
    lines.append(
        f"top-1 overlap: judged {judged['min']:.3f}-{judged['max']:.3f}, no-answer {noanswer['min']:.3f}-"
        f"{noanswer['max']:.3f}; {judged['pct_within_other']:.1f} % of judged top-1 <= the highest no-answer"
        f" top-1, {noanswer['pct_within_other']:.1f} % of no-answer top-1 >= the lowest judged top-1"
    )
    best = result["suggested"]
    lines.append(
        "suggested floor: none in the sweep"
        if best is None
        else f"suggested floor {best['floor']:.3f}: keeps {best['relevant_top10_kept_pct']:.1f} % of relevant top-10"
        f" semantic hits, {best['nonrelevant_top10_kept_pct']:.1f} % of non-relevant; empties"
        f" {best['noanswer_emptied_pct']:.1f} % of no-answer queries;"
        f" {best['judged_with_semantic_hit_pct']:.1f} % of judged queries keep a semantic hit"
    )
    return "\n".join(lines)


def run_one(spec: str, args: argparse.Namespace, work: Path) -> tuple[str, Groups, dict[str, int]]:
    name, _, model_name = spec.partition(":")
    collection, model = collection_dir(name, args.eval_dir), model_dir(model_name or DEFAULT_MODEL)
    language = LANGUAGES.get(collection.name, "en")
    settings, embedder = prepare(collection, work / f"{collection.name}-{model.name}", language, model)
    service = open_service(settings, embedder, vector_search=True, graph_boost=False)
    try:
        groups, counts = collect(service, collection, args.eval_dir)
    finally:
        service.stop()
    return model.name, groups, counts


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", default=list(DEFAULT_RUNS), metavar="RUN", help="COLLECTION[:MODEL]")
    parser.add_argument("--eval-dir", type=Path, default=EVAL_DIR, help="holds the collections and noanswer/")
    parser.add_argument("--work", type=Path, help="keep notes and indexes under DIR/COLLECTION-MODEL, reuse them")
    parser.add_argument("--keep", type=float, default=95.0, help="%% of relevant top-10 semantic hits to keep")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    configure_logging("warning")
    started_at = datetime.now(tz=UTC).isoformat(timespec="seconds")
    runs: list[dict[str, Any]] = []
    pooled: dict[str, Groups] = defaultdict(lambda: defaultdict(list))
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.runs:
            model, groups, counts = run_one(spec, args, args.work or Path(tmp))
            name = spec.partition(":")[0]
            runs.append(analyse(Path(name).name, model, groups, args.keep) | {"counts": counts})
            for group, values in groups.items():
                pooled[model][group].extend(values)
    by_model = [analyse("all collections", model, groups, args.keep) for model, groups in pooled.items()]
    for run in runs:
        print(report(run) + f"\ncounts: {run['counts']}\n")
    for pooled_run in by_model:
        if sum(1 for run in runs if run["model"] == pooled_run["model"]) > 1:  # else: the same as its one run
            print(report(pooled_run) + "\n")
    summary = {r["model"]: r["suggested"] and r["suggested"]["floor"] for r in by_model}
    print(f"suggested floors (keep >= {args.keep:g} % of relevant top-10 semantic hits): {summary}")
    result = {"date": started_at, "code": code_version(), "limit": LIMIT, "keep_pct": args.keep, "runs": runs}
    result |= {"pooled_by_model": by_model, "suggested_floors": summary}
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
