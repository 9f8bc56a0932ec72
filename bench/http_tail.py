"""The HTTP latency tail, and the garbage collector's full passes behind it.

    python -m bench.http_tail --root ROOT --index INDEX --tree ../before --tree . [--graph] [--model PACK]

For each source tree, alternately (`--rounds`), a `notarium-search serve`
from that tree on the same indexed vault (ROOT and INDEX as in
NOTARIUM_SPACES_ROOT / NOTARIUM_INDEX_DIR; its first space) answers
`--queries` searches from one keep-alive client (the piaf-fr and cranfield
questions, shuffled with a fixed seed). Reported: p50, p95, p99, p99.9 and
the maximum, and every full (generation 2) garbage collection the worker
ran while the queries were answered, with its duration — recorded by a
`sitecustomize` put on the server's path (a `gc.callbacks` hook; nothing
in the package is changed for it).

Build a vault with `bench.perf_lexical.build_space` and index it with
`notarium-search index` first (with VECTOR_SEARCH=1 and the model for
`--model`, hybrid: the server then waits for the semantic channel to be
ready before the queries); the server does not watch the files.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

READY_SECONDS = 600.0
PERCENTILES = (0.5, 0.95, 0.99, 0.999)

_GC_HOOK = """
import gc, json, os, time
_path = os.environ.get("BENCH_GC_LOG")
if _path:
    _started = []
    def _hook(phase, info):
        if phase == "start":
            _started[:] = [time.perf_counter()]
        elif info["generation"] == 2 and _started:
            with open(_path, "a") as log:
                log.write(json.dumps({"pid": os.getpid(), "at": time.time(),
                    "ms": 1000 * (time.perf_counter() - _started[0]), "collected": info["collected"]}) + "\\n")
    gc.callbacks.append(_hook)
"""


def questions(eval_dir: Path) -> list[str]:
    texts = [
        json.loads(line)["text"]
        for name in ("piaf-fr", "cranfield")
        for line in (eval_dir / name / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    random.Random(1).shuffle(texts)
    return texts


def wait_ready(port: int, process: subprocess.Popen[bytes], semantic: bool) -> str:
    """The first space's name, once every space is indexed (and, `semantic`,
    its vectors ready)."""
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the server exited during start-up")
        try:
            client = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            client.request("GET", "/status")
            status = json.loads(client.getresponse().read())
            ready = ("lexical", "semantic") if semantic else ("lexical",)
            if status["message"] is None and all(s[c]["state"] == "ready" for s in status["spaces"] for c in ready):
                return str(status["spaces"][0]["space"])
        except (OSError, http.client.HTTPException, ValueError):
            pass
        time.sleep(0.5)
    raise RuntimeError("the server was not ready in time")


def run(tree: Path, args: argparse.Namespace, texts: list[str], hook_dir: Path, port: int) -> str:
    gc_log = hook_dir / f"gc-{port}.jsonl"
    gc_log.unlink(missing_ok=True)
    env = {
        **os.environ,
        "NOTARIUM_SPACES_ROOT": str(args.root),
        "NOTARIUM_INDEX_DIR": str(args.index),
        "NOTARIUM_PORT": str(port),
        "NOTARIUM_WATCH": "0",
        "NOTARIUM_RECONCILE_INTERVAL": "0",  # no full comparison every 60 s inside a load
        "NOTARIUM_RATE_LIMIT": "0",
        "NOTARIUM_WORKERS": "1",  # one worker, as the runs of docs/benchmarks.md
        "GRAPH_BOOST": "1" if args.graph else "0",
        "VECTOR_SEARCH": "1" if args.model else "0",
        **({"NOTARIUM_MODEL_DIR": str(args.model)} if args.model else {}),
        "PYTHONPATH": f"{tree}{os.pathsep}{hook_dir}",
        "BENCH_GC_LOG": str(gc_log),
    }
    with open(hook_dir / f"serve-{port}.log", "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "notarium_search", "serve"], cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        space = wait_ready(port, process, semantic=args.model is not None)
        time.sleep(2)  # the start-up's own collections are over
        began = time.time()
        client = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        latencies = []
        for index in range(args.queries):
            query = urllib.parse.urlencode({"q": texts[index % len(texts)], "limit": 10})
            started = time.perf_counter()
            client.request("GET", f"/spaces/{space}/search?{query}")
            response = client.getresponse()
            response.read()
            latencies.append(1000 * (time.perf_counter() - started))
            if response.status != 200:
                raise RuntimeError(f"search answered {response.status}")
        ended = time.time()
    finally:
        process.terminate()
        process.wait()
    latencies.sort()
    marks = " ".join(
        f"p{100 * p:g} {latencies[min(len(latencies) - 1, int(p * len(latencies)))]:.1f}" for p in PERCENTILES
    )
    records = [json.loads(line) for line in gc_log.read_text().splitlines()] if gc_log.exists() else []
    during = [r for r in records if r["pid"] != process.pid and began <= r["at"] <= ended]
    pauses = ", ".join(f"{r['ms']:.0f}" for r in during) or "none"
    return f"{marks} max {latencies[-1]:.1f} ms; full collections while answering: {len(during)} ({pauses} ms)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--tree", type=Path, action="append", required=True, help="a checkout to serve from (repeat)")
    parser.add_argument("--graph", action="store_true", help="GRAPH_BOOST=1")
    parser.add_argument("--model", type=Path, help="a model pack: VECTOR_SEARCH=1 (hybrid)")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--port", type=int, default=18890)
    parser.add_argument("--eval-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval")
    args = parser.parse_args(argv)
    texts = questions(args.eval_dir)
    with tempfile.TemporaryDirectory(prefix="http-tail-") as folder:
        hook_dir = Path(folder)
        (hook_dir / "sitecustomize.py").write_text(_GC_HOOK)
        for round_number in range(1, args.rounds + 1):
            for tree in args.tree:
                line = run(tree.resolve(), args, texts, hook_dir, args.port)
                print(f"round {round_number} {tree}: {line}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
