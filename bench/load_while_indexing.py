"""Load while indexing: many clients query a real server while its space is
rebuilt and its files are edited.

A seeded vault (perf_lexical.py's generator) is indexed by a real
`python -m notarium_search serve` on 127.0.0.1 (watching its files, no rate
limit). Then, for `--seconds`: `--clients` threads send Spotlight searches
and feed queries on keep-alive connections, one after the other; a full
re-index (`POST /spaces/perf/reindex?full=1`) is requested every
`--reindex-every` seconds; an editor thread rewrites, creates, moves and
deletes notes (`--edits-per-second`). Reported: requests, errors (5xx,
transport failures, any status but 200), p50/p95/p99, full re-indexes
completed, and stale hits: results naming a note whose file had been deleted
before the query was sent (the editor records a deletion once the file is
gone, so no slack is needed; it must be zero). The run lasts `--seconds`, and
then until at least one re-index request was answered and one edit made, so
that a slow machine cannot end it before either happened.

    .venv/bin/python bench/load_while_indexing.py --notes 10000 --out /tmp/load.json
    .venv/bin/python bench/load_while_indexing.py --notes 500 --seconds 5 --clients 4   # smoke run

`main(argv)` returns the results dict.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from bench.perf_lexical import (
    FULL,
    SPACE,
    Client,
    build_queries,
    build_space,
    code_version,
    default_eval_dir,
    load_corpora,
    running_server,
    summarize,
)

# The editor records a deletion once the file is unlinked, and the server drops
# any hit whose file is gone (Space.on_disk): a hit on a note recorded deleted
# before the query was sent is stale, however the threads were scheduled (an
# editor stalled between recording and unlinking made a slack race).
EDIT_SEED = 7
# After --seconds, how long the run waits for its first re-index answer and
# first edit: a bound on waiting, generous for a machine at a tenth of its speed.
FIRST_EVENTS_TIMEOUT = 120.0
POLL_SECONDS = 0.05


class Editor(threading.Thread):
    """Rewrites, creates, moves and deletes notes at a steady rate, and
    remembers when each note id was deleted."""

    def __init__(self, notes: Path, per_second: float, stop: threading.Event) -> None:
        super().__init__(name="editor", daemon=True)
        self.notes = notes
        self.period = 1.0 / per_second if per_second > 0 else 0.0
        self.stop = stop
        self.rng = random.Random(EDIT_SEED)
        self.deleted: dict[str, float] = {}  # note id (the path: generated notes have no id) → when
        self.edits = 0

    def run(self) -> None:
        files = sorted(p for p in self.notes.rglob("*.md"))
        while self.period and not self.stop.wait(self.period):
            path = self.rng.choice(files)
            if not path.exists():
                continue
            rel = path.relative_to(self.notes).as_posix()
            roll = self.rng.random()
            if roll < 0.6:
                text = path.read_text(encoding="utf-8")
                temporary = path.with_name(f".{path.name}.tmp")
                temporary.write_text(text + f"\n\nmodification {self.edits}\n", encoding="utf-8")
                temporary.replace(path)  # an editor's atomic save
            elif roll < 0.8:
                path.unlink()
                self.deleted[rel] = time.monotonic()
            else:
                target = self.notes / "nouveau" / f"n{self.edits}.md"
                target.parent.mkdir(exist_ok=True)
                target.write_text(f"# Nouvelle note {self.edits}\n\nmodification récente\n", encoding="utf-8")
            self.edits += 1


def client_loop(
    port: int, paths: list[str], stop: threading.Event, editor: Editor, out: dict[str, Any], seed: int
) -> None:
    rng = random.Random(seed)
    client = Client(port)
    latencies: list[float] = []
    errors: dict[str, int] = {}
    stale = 0
    try:
        while not stop.is_set():
            path = rng.choice(paths)
            sent = time.monotonic()
            status, body = client.get(path)
            latencies.append((time.monotonic() - sent) * 1000)
            if status != 200:
                errors[str(status)] = errors.get(str(status), 0) + 1
                continue
            items = json.loads(body).get("results") or json.loads(body).get("items") or []
            for item in items:
                gone = editor.deleted.get(item["path"])
                if gone is not None and gone < sent:
                    stale += 1
    finally:
        client.close()
    out["latencies"] = latencies
    out["errors"] = errors
    out["stale"] = stale


def reindex_loop(port: int, every: float, stop: threading.Event, counts: dict[str, int]) -> None:
    while not stop.wait(every):
        # A new connection each time: the server closes a keep-alive connection
        # idle for 5 s, and this one idles longer between requests.
        client = Client(port)
        try:
            status, _ = client.post(f"/spaces/{SPACE}/reindex?full=1")
        finally:
            client.close()
        counts[str(status)] = counts.get(str(status), 0) + 1


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    notes = work / "spaces" / SPACE
    corpus = build_space(notes, args.notes, load_corpora(args.eval_dir))
    queries = build_queries(FULL, load_corpora(args.eval_dir))
    paths = [f"/spaces/{SPACE}/search?q={urllib.parse.quote(q.text, safe='')}&limit=10" for q in queries]
    paths += [f"/spaces/{SPACE}/feed?q={urllib.parse.quote(q.text.split()[0], safe='')}" for q in queries[:50]]
    env = {"NOTARIUM_WATCH_DEBOUNCE_MS": "300"}
    with running_server(work / "spaces", work / "index", work / "server.log", env) as server:
        stop = threading.Event()
        editor = Editor(notes, args.edits_per_second, stop)
        reindexes: dict[str, int] = {}
        outs: list[dict[str, Any]] = [{} for _ in range(args.clients)]
        threads = [
            threading.Thread(target=client_loop, args=(server.port, paths, stop, editor, outs[i], i), daemon=True)
            for i in range(args.clients)
        ]
        threads.append(threading.Thread(target=reindex_loop, args=(server.port, args.reindex_every, stop, reindexes)))
        started = time.monotonic()
        editor.start()
        for thread in threads:
            thread.start()
        time.sleep(args.seconds)
        deadline = time.monotonic() + FIRST_EVENTS_TIMEOUT
        while (not reindexes or (editor.period and not editor.edits)) and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
        stop.set()
        for thread in [*threads, editor]:
            thread.join(30)
        elapsed = time.monotonic() - started
    latencies = [ms for out in outs for ms in out.get("latencies", [])]
    errors: dict[str, int] = {}
    for out in outs:
        for status, count in out.get("errors", {}).items():
            errors[status] = errors.get(status, 0) + count
    return {
        "benchmark": "load_while_indexing",
        "code": code_version(),
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "corpus": {"notes": corpus["notes"]},
        "requests": len(latencies),
        "requests_per_second": round(len(latencies) / elapsed, 1),
        "latency": summarize(latencies),
        "errors": errors,
        "stale_hits": sum(out.get("stale", 0) for out in outs),
        "reindex_requests": reindexes,
        "failed_reindex_requests": sum(n for status, n in reindexes.items() if status != "202"),
        "edits": editor.edits,
        "deleted_notes": len(editor.deleted),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--reindex-every", type=float, default=15.0)
    parser.add_argument("--edits-per-second", type=float, default=10.0)
    parser.add_argument("--eval-dir", type=Path, default=default_eval_dir())
    parser.add_argument("--out", type=Path)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        result = run(args, Path(tmp))
    latency = result["latency"]
    print(
        f"{result['requests']:,} requests from {args.clients} clients in {args.seconds:.0f} s"
        f" ({result['requests_per_second']}/s) during {sum(result['reindex_requests'].values())} full re-indexes"
        f" and {result['edits']} edits: p50 {latency['p50_ms']} ms, p99 {latency['p99_ms']} ms,"
        f" errors {result['errors'] or 0}, stale hits {result['stale_hits']}"
    )
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
