"""First letters: does a launcher find a note from the starts of its name's words? (issue 31, item 4)

    .venv/bin/python -m bench.word_starts --out /tmp/word-starts.json
    .venv/bin/python -m bench.word_starts --collections "" --vault ~/vaults/kepano-obsidian:en

Over bench/known_items.py's collections (generated vaults, real vaults given
with --vault; the judged collections' titles with --collections), for a fixed
sample of the names (a note's file name, its title for the judged
collections) of two words or more that belong to one note, each typed the
way a search-as-you-type launcher is used, through `Service.search` (lexical,
snippets included) and, side by side, the Omnisearch-like baseline
(bench/minisearch, every term a prefix):

* `initials`: the first two letters of each of the name's first three words,
  a space apart ("Migration vers PostgreSQL" → `mi ve po`);
* `later word`: the first three letters of the name's longest word after its
  first (`pos`);
* `first letter`: the name's first letter alone (`m`): only a small vault can
  list a given note for one letter, so this is mostly about answering at all.

For each: the share of names whose note is first, the share with it in the
first 10 (a launcher's page), the MRR@10, and the share of queries answered
with nothing. The ranking of full-word queries is bench/known_items.py's and
bench/eval_collection.py's.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import known_baseline
from bench.eval_collection import load_average
from bench.known_items import (
    EVAL_DIR,
    Collection,
    Item,
    Ranker,
    collections_from,
    fold,
    minisearch_ranker,
    open_service,
    service_ranker,
)
from bench.perf_lexical import code_version
from notarium_search.logsetup import configure_logging

DEPTH = 10
DEFAULT_COLLECTIONS = "vault-fr,vault-en"


def initials(words: list[str]) -> str:
    return " ".join(word[:2] for word in words[:3])


def later_word(words: list[str]) -> str:
    longest = max(words[1:], key=len)  # the first of the longest
    return longest[:3]


def first_letter(words: list[str]) -> str:
    return words[0][:1]


QUERIES: dict[str, Callable[[list[str]], str]] = {
    "initials": initials,
    "later word": later_word,
    "first letter": first_letter,
}


def sample_items(collection: Collection, sample: int, seed: int) -> list[Item]:
    """Names of two words or more that belong to one note, a fixed sample of them."""
    counts = Counter(fold(item.name) for item in collection.items)
    items = [i for i in collection.items if counts[fold(i.name)] == 1 and len(fold(i.name).split()) >= 2]
    items.sort(key=lambda i: i.path)
    return random.Random(seed).sample(items, min(sample, len(items)))


def measure(items: list[Item], rank: Ranker) -> dict[str, Any]:
    started = time.perf_counter()
    out: dict[str, Any] = {}
    for kind, typed in QUERIES.items():
        first = top = empty = 0
        reciprocal = 0.0
        for item in items:
            paths, _ = rank(typed(fold(item.name).split()), DEPTH)
            empty += not paths
            if item.path in paths[:DEPTH]:
                position = paths.index(item.path) + 1
                top += 1
                first += position == 1
                reciprocal += 1 / position
        n = max(len(items), 1)
        out[kind] = {
            "first_pct": round(100 * first / n, 1),
            f"top{DEPTH}_pct": round(100 * top / n, 1),
            f"mrr@{DEPTH}": round(reciprocal / n, 4),
            "nothing_pct": round(100 * empty / n, 1),
        }
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    results: dict[str, Any] = {
        "date": datetime.now(tz=UTC).isoformat(timespec="seconds"),
        "code": code_version(),
        "load_average_at_start": load_average(),
        "sample": args.sample,
        "collections": {},
    }
    for collection in collections_from(args, work):
        items = sample_items(collection, args.sample, args.seed)
        found: dict[str, Any] = {"names": len(items)}
        print(f"  {collection.name} / lexical …", file=sys.stderr, flush=True)
        service = open_service(collection, work / "index" / collection.name, vector_search=False, graph_boost=False)
        try:
            found["lexical"] = measure(items, service_ranker(service))
        finally:
            service.stop()
        if not args.no_minisearch:
            why = known_baseline.available()
            if why is not None:
                found["minisearch"] = {"skipped": why}
            else:
                print(f"  {collection.name} / minisearch …", file=sys.stderr, flush=True)
                engine = known_baseline.MiniSearchBaseline(known_baseline.read_notes(collection.root))
                try:
                    found["minisearch"] = measure(items, minisearch_ranker(engine))
                finally:
                    engine.close()
        results["collections"][collection.name] = found
        if args.out is not None:
            args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return results


def table(results: dict[str, Any]) -> str:
    lines = []
    for name, found in results["collections"].items():
        engines = [e for e in ("lexical", "minisearch") if isinstance(found.get(e), dict) and "skipped" not in found[e]]
        lines.append(f"\n{name} ({found['names']} names)\n")
        lines.append("| query | " + " | ".join(f"{e}: first / top {DEPTH} / MRR / nothing" for e in engines) + " |")
        lines.append("|---|" + "---|" * len(engines))
        for kind in QUERIES:
            cells = []
            for engine in engines:
                m = found[engine][kind]
                cells.append(
                    f"{m['first_pct']} % / {m[f'top{DEPTH}_pct']} % / {m[f'mrr@{DEPTH}']} / {m['nothing_pct']} %"
                )
            lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collections", default=DEFAULT_COLLECTIONS, help="comma-separated, as bench/known_items.py")
    parser.add_argument("--vault", action="append", default=[], metavar="DIR:LANG", help="a real vault (fr or en)")
    parser.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    parser.add_argument("--no-minisearch", action="store_true", help="skip the Omnisearch-like baseline")
    parser.add_argument("--sample", type=int, default=150, help="names per collection")
    parser.add_argument("--vault-notes", type=int, default=300, help="notes per generated vault")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--work", type=Path, help="keep notes and indexes here (reused)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    configure_logging("error")
    if args.work is not None:
        results = run(args, args.work)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            results = run(args, Path(tmp))
    print(table(results))
    return results


if __name__ == "__main__":
    main()
