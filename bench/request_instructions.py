"""Instructions per search request, counted by valgrind: a measure of CPU
work that does not move with the machine's load (the 2-core CI machine's
CPU time per answer swings 4.2-7.3 ms minute to minute; this count does
not). Serves an indexed space through the whole ASGI app (Litestar's
routing, dependencies, guards, middleware, serialisation: no socket) and
asks N searches of the piaf-fr and cranfield questions:

    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \\
        python -m bench.request_instructions --root ROOT --index INDEX --requests 0
    (the same with --requests 600)

The difference of the two "I refs" totals over 600 is the instructions of
one request. Run from each tree to compare (docs/benchmarks.md, issue 30).
"""

from __future__ import annotations

import argparse
import time
import urllib.parse
from pathlib import Path

from litestar.testing import TestClient

from bench.http_tail import questions
from notarium_search.api.app import create_app
from notarium_search.service import Service
from notarium_search.settings import load_settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, required=True, help="NOTARIUM_SPACES_ROOT of an indexed vault")
    parser.add_argument("--index", type=Path, required=True, help="its NOTARIUM_INDEX_DIR")
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--eval-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval")
    parser.add_argument("--language", default="auto", help="NOTARIUM_LANGUAGE: auto (the default) or one language")
    args = parser.parse_args(argv)
    env = {
        "NOTARIUM_SPACES_ROOT": str(args.root),
        "NOTARIUM_INDEX_DIR": str(args.index),
        "NOTARIUM_WATCH": "0",
        "NOTARIUM_RATE_LIMIT": "0",
        "GRAPH_BOOST": "0",
        "VECTOR_SEARCH": "0",
        "NOTARIUM_LOG_LEVEL": "warning",
        "NOTARIUM_LANGUAGE": args.language,
    }
    settings = load_settings(env=env)
    service = Service(settings)
    service.start()
    while not service.spaces or not all(space.ready for space in service.spaces.values()):
        time.sleep(0.5)  # the start's reconcile pass: the same work with or without requests
    space = next(iter(service.spaces))
    texts = questions(args.eval_dir)
    with TestClient(create_app(settings, service, start_indexing=False), base_url="http://127.0.0.1") as client:
        for i in range(args.requests):
            query = urllib.parse.urlencode({"q": texts[i % len(texts)], "limit": 10})
            response = client.get(f"/spaces/{space}/search?{query}")
            response.raise_for_status()
    service.stop()
    print(f"{args.requests} requests")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
