"""What a pack's word-embedding table costs held in the graph, against read
from the pack's file row by row (semantic/word_table.py).

    python -m bench.word_table_memory ../shared/models/multilingual-e5-small-int8

Each route is loaded in a fresh interpreter (so one route's freed memory does
not hide the other's), alternately, `--rounds` times: load time, RSS after
load and after the queries and passages (each after `malloc_trim`, as the
service trims), peak RSS, a query's p50 and passages per second. The texts are
piaf-fr's and cranfield's questions and passages (or, without the collections,
fixed French and English sentences).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.fresh_process import measured_apart

ROUTES = ("in-graph", "from-file")

_CHILD = r"""
import ctypes, json, resource, statistics, sys, time
from pathlib import Path

from notarium_search.semantic import word_table
from notarium_search.semantic.embedding import load_embedder

def rss_mib():
    ctypes.CDLL(None).malloc_trim(0)
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

route, pack, eval_dir, queries, passages = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), *map(int, sys.argv[4:6])

def texts(kind, count):
    found = []
    for name in ("piaf-fr", "cranfield"):
        path = eval_dir / name / f"{kind}.jsonl"
        if path.is_file():
            found += [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines()[:count]]
    fixed = {"queries": ["Quel est le rôle du ministère ?", "what is a boundary layer"],
             "corpus": ["Une boisson chaude le matin, puis le travail. " * 20, "The flow over a flat plate. " * 25]}
    return (found or fixed[kind] * count)[: 2 * count]

if route == "in-graph":  # as before the split: onnxruntime loads the file itself
    word_table.split_graph = lambda path: None
started = time.perf_counter()
embedder = load_embedder(pack)
load = time.perf_counter() - started
assert (embedder._word_table is not None) == (route == "from-file"), "the pack does not take this route"
loaded = rss_mib()
asked = texts("queries", queries // 2)
took = []
for text in asked:
    began = time.perf_counter()
    embedder.embed_query(text)
    took.append(time.perf_counter() - began)
bodies = texts("corpus", passages // 2)
began = time.perf_counter()
embedder.embed_passages(bodies)
per_second = len(bodies) / (time.perf_counter() - began)
print(json.dumps({
    "route": route, "load_s": load, "loaded_mib": loaded, "used_mib": rss_mib(),
    "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "query_p50_ms": statistics.median(took) * 1000, "passages_per_s": per_second,
}))
"""


def measure(route: str, pack: Path, eval_dir: Path, queries: int, passages: int) -> dict[str, float | str]:
    return measured_apart(_CHILD, route, str(pack), str(eval_dir), str(queries), str(passages))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pack", type=Path, help="a model pack folder whose graph has a word table to take out")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=400, help="questions embedded, half French, half English")
    parser.add_argument("--passages", type=int, default=48, help="passages embedded in one call")
    parser.add_argument("--eval-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval")
    args = parser.parse_args(argv)
    for round_number in range(1, args.rounds + 1):
        # The order alternates: the second process of a round starts on a warmer page cache.
        for route in ROUTES if round_number % 2 else reversed(ROUTES):
            row = measure(route, args.pack, args.eval_dir, args.queries, args.passages)
            print(
                f"round {round_number} {row['route']:>9}: load {float(row['load_s']):.2f} s,"
                f" RSS {float(row['loaded_mib']):.0f} MiB loaded, {float(row['used_mib']):.0f} MiB used,"
                f" peak {float(row['peak_mib']):.0f} MiB, query p50 {float(row['query_p50_ms']):.2f} ms,"
                f" {float(row['passages_per_s']):.1f} passages/s"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
