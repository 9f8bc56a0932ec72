"""The HTTP half of `bench/scale.py`: one real server per channel set on a
vault already indexed, measured the way users meet it.

Per mode (lexical only, hybrid, hybrid + graph) a fresh `python -m
notarium_search serve` process on the same index folder gives:

- cold start: process start → first search answered (lexical), and for the
  hybrid modes → semantic channel `ready` (model loaded, vectors opened);
- latency at 1 client (p50/p95/p99) and throughput at 1, 4 and 16 clients;
- the feed filter (`?q=` with a folder/tag filter) at 1 client, lexical mode;
- RSS idle (ready, before the first query) and peak (after the 16-client run);
- in hybrid mode, incremental latency: a one-paragraph edit saved the way an
  editor saves (write a temporary file, rename it over the note) → the note
  found by the edit's new word (lexical), → found by the semantic channel.

The clients run as threads of this process: at 16 clients the client side
shares the 2 CPUs with the server, as it would on a small host.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import statistics
import time
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.perf_lexical import (
    FEED_LIMIT,
    SPACE,
    BenchQuery,
    Client,
    Corpora,
    _space_ready,
    elapsed_ms,
    feed_keywords,
    measure_http_concurrent,
    running_server,
    search_path,
    summarize,
    wait_ready,
)
from bench.perf_semantic import SEMANTIC_READY_TIMEOUT, measure_http_single, semantic_ready
from notarium_search.settings import Settings

CLIENT_COUNTS = (1, 4, 16)
MODES: dict[str, dict[str, str]] = {
    "lexical": {},
    "hybrid": {"VECTOR_SEARCH": "1"},
    "hybrid_graph": {"VECTOR_SEARCH": "1", "GRAPH_BOOST": "1"},
}
FIRST_ANSWER_WORD = "données"  # frequent in the French corpus: the first answer is never empty
DEFAULT_DEBOUNCE_MS = Settings().watch_debounce_ms  # the servers run with it
EDITS = 5  # one-paragraph edits per vault size; the median is reported
EDIT_SEED = 11
# Past this an edit counts as never visible (a bug, reported as None). A bound
# on waiting, not a target: generous, so that a shared machine running at a
# tenth of its speed still measures (the targets are 1 s and 3 s).
EDIT_TIMEOUT_S = 120.0
LEXICAL_POLL_S = 0.01
SEMANTIC_POLL_S = 0.025
EDIT_PASSAGE_CHARS = 450  # two halves from different articles: a paragraph no other note holds


def measure_modes(
    work: Path,
    model_dir: Path,
    queries: list[BenchQuery],
    corpora: Corpora,
    seconds_per_run: float,
    edits: int = EDITS,
    server_env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """`server_env`: settings every server runs with (e.g. NOTARIUM_QUERY_EMBED_TIMEOUT_MS)."""
    paths = [search_path(q.text) for q in queries]
    feeds = _feed_paths(queries)
    common = dict(server_env or {})
    results: dict[str, Any] = {}
    for mode, env in MODES.items():
        extra = {**common, **env, "NOTARIUM_MODEL_DIR": str(model_dir)} if env else common
        results[mode] = _measure_mode(work, mode, extra, paths, feeds, seconds_per_run)
        if mode == "hybrid" and edits:
            results["incremental"] = _measure_edits(work, model_dir, corpora, edits, common)
    return results


def _measure_mode(
    work: Path, mode: str, env: Mapping[str, str], paths: list[str], feeds: list[str], seconds: float
) -> dict[str, Any]:
    vectors = "VECTOR_SEARCH" in env
    log = work / f"server-{mode}.log"
    # Ready = first answer: the cold-start figure. Then wait for the start-up
    # reconcile (and the vectors) to finish, so that they do not skew latency.
    with running_server(work / "spaces", work / "index", log, env, _first_answer) as server:
        first_answer_s = server.ready_seconds
        started = time.perf_counter()
        ready = semantic_ready if vectors else _space_ready
        wait_ready(server.process, server.port, log, ready, SEMANTIC_READY_TIMEOUT)
        ready_s = round(first_answer_s + time.perf_counter() - started, 3)
        idle = server.memory()  # the worker that owns the indexes; the supervisor's peak beside it
        single = measure_http_single(server.port, paths)
        sweep = {str(n): measure_http_concurrent(server.port, paths, seconds, n) for n in CLIENT_COUNTS}
        feed = None if vectors else _measure_feed(server.port, feeds)
        loaded = server.memory()
    result = {
        "cold_start_first_answer_s": first_answer_s,
        "ready_s": ready_s,
        "single": single,
        "clients": sweep,
        "server_memory_idle": idle,
        "server_memory_after_load": loaded,
    }
    if feed is not None:
        result["feed"] = feed
    return result


def _feed_paths(queries: list[BenchQuery]) -> list[str]:
    """Feed requests as a client sends them: one or two words, half with a tag filter."""
    texts = [feed_keywords(q.text, 1 + i % 2) for i, q in enumerate(queries) if q.kind != "prefix"]
    paths = []
    for i, text in enumerate(t for t in texts if t):
        tag = "&tag=lecture" if i % 2 else ""
        paths.append(f"/spaces/{SPACE}/feed?q={urllib.parse.quote(text, safe='')}&limit={FEED_LIMIT}{tag}")
    return paths


def _measure_feed(port: int, paths: list[str]) -> dict[str, Any]:
    client = Client(port)
    samples, failures, empty = [], 0, 0
    try:
        for path in paths:
            started = time.perf_counter()
            status, body = client.get(path)
            samples.append(elapsed_ms(started))
            failures += status != http.client.OK
            empty += status == http.client.OK and not json.loads(body)["items"]
    finally:
        client.close()
    return {**summarize(samples), "non_200": failures, "empty_pages": empty}


def _first_answer(port: int) -> bool:
    client = Client(port)
    try:
        status, body = client.get(search_path(FIRST_ANSWER_WORD))
    finally:
        client.close()
    return status == http.client.OK and bool(json.loads(body)["results"])


# -- incremental latency --------------------------------------------------------


def _measure_edits(
    work: Path, model_dir: Path, corpora: Corpora, edits: int, server_env: Mapping[str, str]
) -> dict[str, Any]:
    """A fresh hybrid server (watching the files), then `edits` one-paragraph
    edits, each timed from the rename until search shows it; every note is
    restored afterwards so the vault stays the generated one."""
    notes_dir = work / "spaces" / SPACE
    rng = random.Random(EDIT_SEED)
    targets = rng.sample(sorted(p for p in notes_dir.rglob("*.md")), edits)
    env = {**server_env, "VECTOR_SEARCH": "1", "NOTARIUM_MODEL_DIR": str(model_dir)}
    originals = {path: path.read_bytes() for path in targets}
    lexical_ms: list[float | None] = []
    semantic_ms: list[float | None] = []
    log = work / "server-edits.log"
    with running_server(work / "spaces", work / "index", log, env, semantic_ready, SEMANTIC_READY_TIMEOUT) as server:
        client = Client(server.port)
        try:
            for k, path in enumerate(targets):
                marker = f"zqxmark{k}{rng.randrange(10**6)}"
                paragraph = _edit_paragraph(corpora, rng)
                note_id = _note_id(path, notes_dir)
                saved = _save_like_an_editor(path, originals[path] + f"\n\n{marker} {paragraph}\n".encode())
                lexical_ms.append(_until_found(client, marker, note_id, saved, "lexical", LEXICAL_POLL_S))
                semantic_ms.append(_until_found(client, paragraph, note_id, saved, "semantic", SEMANTIC_POLL_S))
            for path, content in originals.items():
                _save_like_an_editor(path, content)
        finally:
            client.close()
    return {
        "edits": edits,
        "lexical_visible_ms": _median_of(lexical_ms),
        "semantic_visible_ms": _median_of(semantic_ms),
        "lexical_samples_ms": lexical_ms,
        "semantic_samples_ms": semantic_ms,
        "debounce_ms": DEFAULT_DEBOUNCE_MS,
    }


def _edit_paragraph(corpora: Corpora, rng: random.Random) -> str:
    first, second = rng.sample(corpora.french, 2)
    return f"{first.text[:EDIT_PASSAGE_CHARS]} {second.text[:EDIT_PASSAGE_CHARS]}".replace("\n", " ")


def _note_id(path: Path, notes_dir: Path) -> str:
    """The note's id as the index has it: its frontmatter `id`, else its path."""
    frontmatter = path.read_text(encoding="utf-8").split("\n---", 1)[0]
    for line in frontmatter.splitlines():
        if line.startswith("id:"):
            return line.split(":", 1)[1].strip().strip("'\"")
    return path.relative_to(notes_dir).as_posix()


def _save_like_an_editor(path: Path, content: bytes) -> float:
    temporary = path.with_name(f".{path.name}.swp")
    temporary.write_bytes(content)
    os.replace(temporary, path)
    return time.perf_counter()


def _until_found(client: Client, text: str, note_id: str, since: float, channel: str, poll: float) -> float | None:
    path = search_path(text)
    deadline = since + EDIT_TIMEOUT_S
    while time.perf_counter() < deadline:
        status, body = client.get(path)
        if status == http.client.OK:
            for result in json.loads(body)["results"]:
                if result["id"] == note_id and channel in result["channels"]:
                    return round(elapsed_ms(since), 1)
        time.sleep(poll)
    return None


def _median_of(samples: list[float | None]) -> float | None:
    seen = [s for s in samples if s is not None]
    return round(statistics.median(seen), 1) if len(seen) == len(samples) and seen else None
