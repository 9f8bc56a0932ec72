"""Throughput and memory by number of worker processes (`NOTARIUM_WORKERS`).

    python -m bench.workers --root ROOT --index INDEX --workers 1 --workers 2 [--graph] [--model PACK]
        [--workers 2,NOTARIUM_EMBED_THREADS=1] [--env KEY=VALUE]

For each worker count, alternately (`--rounds`), a `notarium-search serve`
on the same indexed vault (ROOT and INDEX as in NOTARIUM_SPACES_ROOT /
NOTARIUM_INDEX_DIR; its first space) answers the piaf-fr and cranfield
questions (shuffled with a fixed seed):

- one keep-alive client for `--seconds`: queries/s, p50 and p99;
- `--clients` (16) clients, each a thread with its own keep-alive
  connection, for `--seconds`: queries/s, p50 and p99, and how many of the
  answers each worker gave (the access log's `worker`);
- memory of the whole process tree, ready and idle, then at the end of the
  concurrent run: the sum of RSS (pages shared between processes counted
  once per process) and of PSS (shared pages split between them);
- with `--edits N` (the server then watches the files): N edits of a note,
  each timed from its save until a search finds it through the first
  worker, and through every worker (searches on new connections).

The clients run as threads of this process, as in bench/scale.py: on 2
cores they share the CPUs with the server. Build and index the vault first
(`bench.perf_lexical.build_space`, then `notarium-search index`; with
VECTOR_SEARCH=1 and the model for `--model`). The server does not watch.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import string
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench.http_tail import questions, wait_ready

EDIT_TIMEOUT_SECONDS = 60.0  # a bound on waiting, not a target
EDIT_CONFIRMATIONS = 20  # answers finding the edit before the next one: both workers among them


def tree_memory(root: int) -> tuple[float, float]:
    """(sum of RSS, sum of PSS) in MiB of `root` and its children."""
    pids = [root]
    children = Path(f"/proc/{root}/task/{root}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    rss = pss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except OSError:
            continue
    return rss / 1024, pss / 1024


def tree_cpu_seconds(root: int) -> float:
    """CPU time (user + system) of `root` and its children, as far as they run now."""
    pids = [root]
    children = Path(f"/proc/{root}/task/{root}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


NO_DEGRADATION = b'"degraded":{}'


@dataclass
class Load:
    qps: float
    latencies: list[float]  # ms, sorted
    answered: Counter[str]  # the request ids answered
    degraded: int  # answers whose `degraded` is not empty


def load(port: int, paths: list[str], clients: int, seconds: float = 0.0, queries: int = 0) -> Load:
    """`clients` keep-alive clients (threads) searching `paths` in turn, for
    `seconds`, or `queries` searches each."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    ids: list[list[str]] = [[] for _ in range(clients)]
    degraded = [0] * clients
    barrier = threading.Barrier(clients + 1)
    deadline = [float("inf")]

    def client(k: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        index = k * len(paths) // clients
        barrier.wait()
        while time.perf_counter() < deadline[0] and (not queries or len(latencies[k]) < queries):
            started = time.perf_counter()
            connection.request("GET", paths[index % len(paths)])
            response = connection.getresponse()
            body = response.read()
            if response.status != 200:
                raise RuntimeError(f"search answered {response.status}")
            latencies[k].append(1000 * (time.perf_counter() - started))
            ids[k].append(response.getheader("x-request-id") or "")
            degraded[k] += NO_DEGRADATION not in body
            index += 1

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    if seconds:
        deadline[0] = time.perf_counter() + seconds
    began = time.perf_counter()
    barrier.wait()
    for thread in threads:
        thread.join()
    took = time.perf_counter() - began
    flat = sorted(x for per in latencies for x in per)
    return Load(len(flat) / took, flat, Counter(i for per in ids for i in per), sum(degraded))


def by_worker(log_path: Path, answered: Counter[str]) -> list[int]:
    """How many of `answered` each worker gave, most first."""
    workers: Counter[int] = Counter()
    for line in log_path.read_text(errors="replace").splitlines():
        if line.startswith("{") and '"request"' in line:
            record = json.loads(line)
            if record.get("request_id") in answered and "worker" in record:
                workers[int(record["worker"])] += 1
    return sorted(workers.values(), reverse=True)


def edit_visibility(port: int, space: str, notes: Path, log_path: Path, edits: int) -> list[dict[str, float]]:
    """Per edit (a new word saved into a note as an editor saves it: a
    temporary file renamed over it), the milliseconds until a search found it
    through the first worker, and through every worker: searches on new
    connections every 10 ms, mapped to workers by the access log afterwards."""
    note = sorted(notes.rglob("*.md"))[0]
    original = note.read_bytes()
    results = []
    try:
        for _ in range(edits):
            # Letters drawn anew: a word one letter from the last edit's would
            # be found in its place by the typo tolerance.
            word = "".join(random.choices(string.ascii_lowercase, k=12))
            saved_at = time.perf_counter()
            temporary = note.with_name(f".{note.name}.tmp")
            temporary.write_bytes(original + f"\n\n{word}\n".encode())
            os.replace(temporary, note)
            seen: list[tuple[str, float, bool]] = []
            while time.perf_counter() - saved_at < EDIT_TIMEOUT_SECONDS:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                connection.request("GET", f"/spaces/{space}/search?q={word}&limit=1", headers={"Connection": "close"})
                response = connection.getresponse()
                found = b'"results":[{' in response.read()
                seen.append((response.getheader("x-request-id") or "", time.perf_counter() - saved_at, found))
                connection.close()
                if len([s for s in seen if s[2]]) >= EDIT_CONFIRMATIONS:
                    break
                time.sleep(0.01)
            results.append(_first_found(seen, log_path))
    finally:
        note.write_bytes(original)
    return results


def _first_found(seen: list[tuple[str, float, bool]], log_path: Path) -> dict[str, float]:
    """When the edit was found first, and when the last worker to find it did (ms)."""
    time.sleep(0.5)  # an access line is written just after its answer
    workers = {}
    for line in log_path.read_text(errors="replace").splitlines():
        if line.startswith("{") and '"request"' in line:
            record = json.loads(line)
            workers[record.get("request_id")] = record.get("worker")
    first: dict[object, float] = {}
    for request_id, at, found in seen:
        if found:
            first.setdefault(workers.get(request_id), at)
    return {"first_ms": round(1000 * min(first.values()), 1), "every_worker_ms": round(1000 * max(first.values()), 1)}


def percentile(values: list[float], p: float) -> float:
    return values[min(len(values) - 1, int(p * len(values)))]


def run(variant: str, args: argparse.Namespace, paths: list[str], folder: Path, port: int) -> dict[str, object]:
    """`variant`: a worker count, and settings of its own after commas (`2,NOTARIUM_EMBED_THREADS=1`)."""
    count, *own = variant.split(",")
    workers = int(count)
    log_path = folder / f"serve-{workers}-{port}.log"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("NOTARIUM_")},
        "NOTARIUM_SPACES_ROOT": str(args.root),
        "NOTARIUM_INDEX_DIR": str(args.index),
        "NOTARIUM_PORT": str(port),
        "NOTARIUM_WATCH": "1" if args.edits else "0",
        "NOTARIUM_RECONCILE_INTERVAL": "0",  # no full comparison every 60 s inside a load
        "NOTARIUM_RATE_LIMIT": "0",
        "NOTARIUM_WORKERS": str(workers),
        "NOTARIUM_LOG_LEVEL": "info",  # the access lines say which worker answered
        "GRAPH_BOOST": "1" if args.graph else "0",
        "VECTOR_SEARCH": "1" if args.model else "0",
        **({"NOTARIUM_MODEL_DIR": str(args.model)} if args.model else {}),
        **dict(setting.split("=", 1) for setting in [*args.env, *own]),
    }
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "notarium_search", "serve"], env=env, stdout=log, stderr=log)
    try:
        space = wait_ready(port, process, semantic=args.model is not None)
        time.sleep(args.settle)  # every worker read the vectors; start-up collections over
        space_paths = [p.replace("{space}", space) for p in paths]
        idle = tree_memory(process.pid)
        one = load(port, space_paths, 1, args.seconds)
        server_cpu, client_cpu = tree_cpu_seconds(process.pid), time.process_time()
        concurrent = load(port, space_paths, args.clients, args.seconds)
        single, many, answered = one.latencies, concurrent.latencies, concurrent.answered
        server_cpu = tree_cpu_seconds(process.pid) - server_cpu
        client_cpu = time.process_time() - client_cpu
        peak = tree_memory(process.pid)
        edits = edit_visibility(port, space, args.root / space, log_path, args.edits) if args.edits else []
    finally:
        process.terminate()
        process.wait()
    return {
        "workers": variant,
        "one_client": {"qps": round(one.qps), "p50": percentile(single, 0.5), "p99": percentile(single, 0.99)},
        "clients": args.clients,
        "many_clients": {
            "qps": round(concurrent.qps),
            "p50": percentile(many, 0.5),
            "p99": percentile(many, 0.99),
            # CPU per answer: the server's processes, and these client threads on the same cores.
            "server_cpu_ms": round(1000 * server_cpu / len(many), 2),
            "client_cpu_ms": round(1000 * client_cpu / len(many), 2),
        },
        "answers_by_worker": by_worker(log_path, answered),
        "memory_mib": {"idle_rss": idle[0], "idle_pss": idle[1], "peak_rss": peak[0], "peak_pss": peak[1]},
        "edits": edits,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument(
        "--workers", action="append", required=True, help="a worker count, then ,KEY=VALUE settings of its own (repeat)"
    )
    parser.add_argument("--graph", action="store_true", help="GRAPH_BOOST=1")
    parser.add_argument("--model", type=Path, help="a model pack: VECTOR_SEARCH=1 (hybrid)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for every server (repeat)")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--settle", type=float, default=3.0, help="seconds between ready and the first query")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--edits", type=int, default=0, help="edits timed until searchable (the server then watches)")
    parser.add_argument("--port", type=int, default=18891)
    parser.add_argument("--eval-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval")
    args = parser.parse_args(argv)
    texts = questions(args.eval_dir)
    paths = [f"/spaces/{{space}}/search?{urllib.parse.urlencode({'q': q, 'limit': 10})}" for q in texts]
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as folder:
        for round_number in range(1, args.rounds + 1):
            for workers in args.workers:
                result = run(workers, args, paths, Path(folder), args.port)
                print(json.dumps({"round": round_number, **result}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
