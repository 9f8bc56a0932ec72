"""The link graph's memory: the Python objects `LinkGraph` holds for an
indexed space, traced by tracemalloc (what the graph channel adds to a
worker's RSS), and the time to build it (best of 5).

    PYTHONPATH=<tree> python bench/graph_memory.py --root ROOT --index INDEX

Run it once per source tree (PYTHONPATH) on the same index to compare two
commits; the space must be indexed (`notarium-search index`).
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from pathlib import Path

from notarium_search.graph.links import LinkGraph, NoteLinks
from notarium_search.index.opening import Role, open_space
from notarium_search.index.space import Space
from notarium_search.lexical import stored as stored_notes
from notarium_search.settings import load_settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, required=True, help="NOTARIUM_SPACES_ROOT (its first space is used)")
    parser.add_argument("--index", type=Path, required=True, help="NOTARIUM_INDEX_DIR, already indexed")
    args = parser.parse_args()
    env = {"NOTARIUM_SPACES_ROOT": str(args.root), "NOTARIUM_INDEX_DIR": str(args.index), "NOTARIUM_WATCH": "0"}
    settings = load_settings(env=env)
    space = open_space(settings.spaces[0], settings, Role.READER)
    # Traced from before the notes are read, as the channel builds it: each
    # stored note is decoded, handed to the graph and dropped, so the strings
    # the graph keeps are counted as its own.
    gc.collect()
    tracemalloc.start()
    graph = build(space)
    gc.collect()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    best = float("inf")
    for _ in range(5):
        del graph
        gc.collect()
        started = time.perf_counter()
        graph = build(space)
        best = min(best, time.perf_counter() - started)
    stats = graph.stats()
    print(f"{stats.notes} notes, {stats}: {held / 2**20:.1f} MiB held, built (notes decoded) in {best * 1000:.0f} ms")


def build(space: Space) -> LinkGraph:
    graph = LinkGraph()
    for payload in stored_notes.all_payloads(space.lexical):
        graph.upsert(NoteLinks.of(payload))
    return graph


if __name__ == "__main__":
    main()
