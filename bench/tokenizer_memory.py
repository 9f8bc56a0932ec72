"""What a pack's tokenizer costs through each route of semantic/tokenizing.py.

    python -m bench.tokenizer_memory ../shared/models/multilingual-e5-small-int8

Each route is loaded in a fresh interpreter (so one route's freed memory does
not hide the other's), alternately, `--rounds` times: RSS growth of the load
(after `malloc_trim`), peak RSS, load time, and the CPU time to tokenise
1,000 passages of piaf-fr (or, without the collection, a fixed French text).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.fresh_process import measured_apart

ROUTES = ("tokenizers", "sentencepiece")
PASSAGES = 1000

_CHILD = r"""
import ctypes, json, resource, sys, time
from pathlib import Path

def rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

import tokenizers, sentencepiece  # both libraries imported on both sides
from notarium_search.semantic import tokenizing

route, path, corpus = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
texts = [json.loads(line)["text"] for line in open(corpus)] if corpus else ["Une boisson chaude le matin."] * 200
texts = ["passage: " + text for text in (texts * 5)[:1000]]
before = rss_mib()
started = time.perf_counter()
if route == "tokenizers":
    tokenizer = tokenizing.HubTokenizer.load(path, 512)
else:
    tokenizer = tokenizing.open_tokenizer(path, 512)
    assert tokenizer.name == "sentencepiece", "the pack does not take the sentencepiece route"
load = time.perf_counter() - started
ctypes.CDLL(None).malloc_trim(0)
held = rss_mib() - before
cpu = time.process_time()
tokenizer.encode_batch(texts)
cpu = time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"route": route, "held_mib": held, "peak_mib": peak, "load_s": load, "tokenise_cpu_ms": cpu * 1000}))
"""


def measure(route: str, tokenizer_json: Path, corpus: str) -> dict[str, float | str]:
    return measured_apart(_CHILD, route, str(tokenizer_json), corpus)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pack", type=Path, help="a model pack folder (its tokenizer.json)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--eval-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval")
    args = parser.parse_args(argv)
    corpus = args.eval_dir / "piaf-fr" / "corpus.jsonl"
    for round_number in range(1, args.rounds + 1):
        for route in ROUTES:
            row = measure(route, args.pack / "tokenizer.json", str(corpus) if corpus.is_file() else "")
            print(
                f"round {round_number} {row['route']:>13}: held {float(row['held_mib']):6.1f} MiB,"
                f" peak {float(row['peak_mib']):6.1f} MiB, load {float(row['load_s']):.2f} s,"
                f" tokenise {PASSAGES} passages {float(row['tokenise_cpu_ms']):.0f} ms CPU"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
