"""Performance of the lexical pipeline: indexing, Spotlight and feed latency, HTTP, memory.

Builds a synthetic space of Markdown notes from the eval corpora (French
passages from piaf-fr, English ones from cranfield), indexes it with the real
pipeline, then measures:

* full index time (notes/s), then a second reconcile with nothing changed;
* in-process `Service.search` latency (snippets included: the real path) and
  `Service.feed`, with a query and with only a tag filter;
* HTTP latency through a real `python -m notarium_search serve` on the same
  index: one keep-alive client, then 4 concurrent clients (throughput);
* CPU per query: this process's for `Service.search` (`cpu_us_per_query`),
  the serving worker's, all its threads, per HTTP request
  (`server_cpu_us_per_request`, from /proc: Linux only). A figure a busy
  machine inflates less than latency, yet not free of it: compare runs
  made at the same load;
* peak RSS of the server and of this process, index size on disk.

    .venv/bin/python bench/perf_lexical.py --notes 10000 --out /tmp/perf.json
    .venv/bin/python bench/perf_lexical.py --notes 500 --quick     # CI smoke run, < 60 s

Everything is seeded: two runs write the same notes (`corpus.sha256` in the
output) and send the same queries, whatever --notes is. The notes were just
written, so indexing reads them from the page cache. `load_average_at_start`
tells whether other work shared the CPUs. `--profile` runs the indexing and
in-process query phases under cProfile (their timings are then inflated) and
prints the top functions. `main(argv)` returns the results dict, for a CI
smoke test: `main(["--notes", "500", "--quick"])`.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import http.client
import io
import json
import math
import os
import platform
import pstats
import random
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from notarium_search.logsetup import configure_logging
from notarium_search.service import Service
from notarium_search.settings import LANGUAGE_SETTINGS, Settings, SpaceConfig
from notarium_search.types import FeedFilter

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SPACE = "perf"
DEFAULT_NOTES = 10_000
SHARED_EVAL_DIR = PROJECT_ROOT.parent / "shared" / "eval"  # beside the repository, never inside it
FRENCH_COLLECTION = "piaf-fr"
ENGLISH_COLLECTION = "cranfield"
CORPUS_SEED = 20_240_501  # fixed: every run writes byte-identical notes
QUERY_SEED = 7  # separate from the corpus seed: the query list does not depend on --notes

# -- synthetic notes -------------------------------------------------------

ENGLISH_NOTE_SHARE = 0.15  # users write mostly French; some notes are English (cranfield)
LONG_NOTE_SHARE = 0.01  # 1 note in 100 is a long document (exercises snippets and length norms)
LONG_NOTE_CHARS = 20_000
SECTION_PASSAGES = (3, 5)  # passages per `##` section of a long note
BODY_CHARS = (300, 3_000)  # drawn log-uniformly: many short notes, a tail of longer ones
LINK_SHARE = 0.4  # share of notes that link to others with [[wiki-links]]
MAX_LINKS = 4
ALIASED_LINK_SHARE = 0.3  # some links are written [[Target|alias]]
MAX_TAGS = 3
TITLE_LEAD_WORDS = 4  # "Article — first words of the passage": distinct titles from 191 articles
ENGLISH_TITLE_WORDS = 8  # cranfield titles are whole sentences: keep the start
MAX_FILE_NAME_CHARS = 100
DATES_START = datetime(2021, 1, 1, tzinfo=UTC)
DATES_SPAN_SECONDS = 4 * 365 * 86_400  # created dates spread over four years
MAX_EDIT_DAYS = 180  # `updated` falls within six months after `created`
TAG_VOCABULARY = (
    "projet/alpha",
    "projet/beta",
    "lecture",
    "réunion",
    "idée",
    "todo",
    "histoire",
    "science/physique",
    "science/aéro",
    "politique",
    "sport",
    "personnel",
)
# 20 folders, some nested; "" is the space root. Journal notes are titled by date.
FOLDERS = (
    "",
    "Inbox",
    "Journal",
    "Journal/2022",
    "Journal/2023",
    "Journal/2024",
    "Projets",
    "Projets/Alpha",
    "Projets/Beta",
    "Projets/Beta/Réunions",
    "Lectures",
    "Lectures/Livres",
    "Lectures/Articles",
    "Recherche",
    "Recherche/Aéro",
    "Recherche/Aéro/Soufflerie",
    "Histoire",
    "Personnel",
    "Archives",
    "Archives/2021",
)
_UNSAFE_FILE_CHARS = str.maketrans(dict.fromkeys('/\\:*?"<>|#^[]', " "))

# -- what is measured --------------------------------------------------------

SEARCH_LIMIT = 10  # what the Spotlight UI asks for
FEED_LIMIT = 20  # one feed page
PREFIX_CHARS = (4, 6)  # as-you-type: the first 4-6 letters of a word
PREFIX_MIN_WORD = 7  # only words long enough to be cut mid-way
LONE_PREFIX_SHARE = 0.5  # half the prefixes are typed alone, half after the words before them
FEED_WORDS = (1, 2)  # feed filters alternate between one and two words
HOST = "127.0.0.1"
CLIENTS = 4  # concurrent HTTP clients for the throughput run
HTTP_WARMUP = 20
HTTP_TIMEOUT = 30.0
SERVER_READY_TIMEOUT = 120.0  # start-up + a no-change reconcile of 10,000 notes
POLL_SECONDS = 0.1
TRANSPORT_ERROR = -1  # "status" recorded when the connection failed
LOG_TAIL_CHARS = 2_000
PROFILE_LINES = 25
# Peak and current RSS of the server; anonymous memory (heap, Tantivy buffers) is
# what grows, file-backed pages are mostly the memory-mapped index.
SERVER_MEMORY_FIELDS = {"peak_rss_mb": "VmHWM", "rss_mb": "VmRSS", "rss_anon_mb": "RssAnon", "rss_file_mb": "RssFile"}
MIB = 1024 * 1024

TARGET_NOTES_PER_S = 1_000
TARGET_SEARCH_P50_MS = 2.0
TARGET_HTTP_P50_MS = 10.0
TARGET_RSS_MB = 200


class BenchError(RuntimeError):
    """The benchmark cannot run or produced an inconsistent result."""


@dataclass(frozen=True, slots=True)
class Plan:
    """How much to measure: the full run, or the CI smoke run (--quick)."""

    fr_queries: int
    en_queries: int
    prefix_queries: int
    warmup: int
    feed_queries: int
    tag_feed_rounds: int  # each round asks the feed once per tag of the vocabulary
    concurrent_seconds: float


# 300 queries: enough for a stable p99 (3 samples above it), a few seconds per pass.
FULL = Plan(200, 50, 50, warmup=50, feed_queries=100, tag_feed_rounds=5, concurrent_seconds=10.0)
# The CI smoke run checks that every phase still works, not the figures.
QUICK = Plan(40, 10, 10, warmup=10, feed_queries=20, tag_feed_rounds=1, concurrent_seconds=2.0)


@dataclass(frozen=True, slots=True)
class Passage:
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class Corpora:
    french: list[Passage]
    english: list[Passage]
    french_queries: list[str]
    english_queries: list[str]


@dataclass(frozen=True, slots=True)
class NoteSpec:
    path: str  # POSIX, relative to the notes folder
    title: str
    english: bool
    long: bool
    chars: int
    first: Passage  # the title is derived from it, so it opens the body
    tags: tuple[str, ...]
    created: datetime
    updated: datetime


@dataclass(frozen=True, slots=True)
class BenchQuery:
    kind: str  # "fr", "en" or "prefix"
    text: str


# -- corpora ---------------------------------------------------------------


def load_corpora(eval_dir: Path) -> Corpora:
    french, english = eval_dir / FRENCH_COLLECTION, eval_dir / ENGLISH_COLLECTION
    needed = [folder / name for folder in (french, english) for name in ("corpus.jsonl", "queries.jsonl")]
    missing = [str(path) for path in needed if not path.is_file()]
    if missing:
        raise BenchError(
            f"eval corpora not found: {', '.join(missing)}; pass --eval-dir DIR, a folder holding"
            f" {FRENCH_COLLECTION}/ and {ENGLISH_COLLECTION}/ (default: $NOTARIUM_EVAL_DIR or {SHARED_EVAL_DIR})"
        )
    return Corpora(
        french=_passages(french / "corpus.jsonl"),
        english=_passages(english / "corpus.jsonl"),
        french_queries=_texts(french / "queries.jsonl"),
        english_queries=_texts(english / "queries.jsonl"),
    )


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _passages(path: Path) -> list[Passage]:
    return [Passage(str(r.get("title") or ""), str(r["text"]).strip()) for r in _rows(path) if str(r["text"]).strip()]


def _texts(path: Path) -> list[str]:
    return [str(r["text"]).strip() for r in _rows(path) if str(r["text"]).strip()]


# -- synthetic space -------------------------------------------------------


def build_space(notes_dir: Path, count: int, corpora: Corpora) -> dict[str, Any]:
    """Write `count` notes under `notes_dir`; returns what was written."""
    started = time.perf_counter()
    rng = random.Random(CORPUS_SEED)
    specs = plan_notes(count, rng, corpora)
    titles = [spec.title for spec in specs]
    digest = hashlib.sha256()
    total_bytes = linked = 0
    for spec in specs:
        body, has_links = render_body(spec, rng, corpora, titles)
        data = (frontmatter(spec) + body + "\n").encode("utf-8")
        path = notes_dir / spec.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        digest.update(spec.path.encode("utf-8") + b"\0" + data)
        total_bytes += len(data)
        linked += has_links
    return {
        "notes": count,
        "long_notes": sum(s.long for s in specs),
        "english_notes": sum(s.english for s in specs),
        "notes_with_links": linked,
        "folders": len(FOLDERS) - 1,
        "bytes": total_bytes,
        "mean_note_bytes": round(total_bytes / max(count, 1)),
        "sha256": digest.hexdigest(),
        "generate_seconds": round(time.perf_counter() - started, 3),
    }


def plan_notes(count: int, rng: random.Random, corpora: Corpora) -> list[NoteSpec]:
    titles: set[str] = set()
    paths: set[str] = set()
    specs = []
    for _ in range(count):
        english = rng.random() < ENGLISH_NOTE_SHARE
        first = rng.choice(corpora.english if english else corpora.french)
        created = DATES_START + timedelta(seconds=rng.randrange(DATES_SPAN_SECONDS))
        updated = created + timedelta(seconds=rng.randrange(MAX_EDIT_DAYS * 86_400))
        folder = _folder(rng.choice(FOLDERS), created)
        title = _unique(_title(first, english, folder, created), titles)
        stem = _file_name(title)
        path = _unique(f"{folder}/{stem}" if folder else stem, paths) + ".md"
        long = rng.random() < LONG_NOTE_SHARE
        chars = LONG_NOTE_CHARS if long else round(math.exp(rng.uniform(*map(math.log, BODY_CHARS))))
        tags = tuple(rng.sample(TAG_VOCABULARY, rng.randint(0, MAX_TAGS)))
        specs.append(NoteSpec(path, title, english, long, chars, first, tags, created, updated))
    return specs


def _folder(drawn: str, created: datetime) -> str:
    """Daily notes are filed by year, when the year has a folder."""
    if not drawn.startswith("Journal/"):
        return drawn
    by_year = f"Journal/{created.year}"
    return by_year if by_year in FOLDERS else "Journal"


def _title(first: Passage, english: bool, folder: str, created: datetime) -> str:
    if folder.startswith("Journal"):
        return f"{created:%Y-%m-%d}"  # daily notes
    if english:
        words = first.title.rstrip(" .").split()[:ENGLISH_TITLE_WORDS]
        return " ".join(words).capitalize() or "Untitled"
    lead = " ".join(first.text.split()[:TITLE_LEAD_WORDS]).rstrip(",.;:")
    return f"{first.title} — {lead}"


def _file_name(title: str) -> str:
    return " ".join(title.translate(_UNSAFE_FILE_CHARS).split())[:MAX_FILE_NAME_CHARS]


def _unique(name: str, used: set[str]) -> str:
    """`name`, or `name (2)`, `name (3)`… as a note app names duplicates; recorded in `used`."""
    number = 1
    candidate = name
    while candidate in used:
        number += 1
        candidate = f"{name} ({number})"
    used.add(candidate)
    return candidate


def frontmatter(spec: NoteSpec) -> str:
    return "\n".join(
        (
            "---",
            f"title: {json.dumps(spec.title, ensure_ascii=False)}",
            f"tags: {json.dumps(list(spec.tags), ensure_ascii=False)}",
            f"created: {spec.created:%Y-%m-%d}",
            f"updated: {spec.updated:%Y-%m-%dT%H:%M:%S}",
            "---",
            "",
            "",
        )
    )


def render_body(spec: NoteSpec, rng: random.Random, corpora: Corpora, titles: list[str]) -> tuple[str, bool]:
    """The note's Markdown body and whether it holds wiki-links."""
    pool = corpora.english if spec.english else corpora.french
    body = _long_body(spec, rng, pool) if spec.long else _short_body(spec, rng, pool)
    if rng.random() >= LINK_SHARE:
        return body, False
    targets = rng.sample(titles, rng.randint(1, MAX_LINKS))
    links = [f"[[{t}|{t.split()[0].lower()}]]" if rng.random() < ALIASED_LINK_SHARE else f"[[{t}]]" for t in targets]
    lead = "See also" if spec.english else "Voir aussi"
    return f"{body}\n\n{lead} : {', '.join(links)}.", True


def _short_body(spec: NoteSpec, rng: random.Random, pool: list[Passage]) -> str:
    paragraphs = [spec.first.text]
    size = len(spec.first.text)
    while size < spec.chars:
        paragraphs.append(rng.choice(pool).text)
        size += len(paragraphs[-1])
    return _cut_words("\n\n".join(paragraphs), spec.chars)


def _long_body(spec: NoteSpec, rng: random.Random, pool: list[Passage]) -> str:
    parts = [spec.first.text]
    size = len(spec.first.text)
    while size < spec.chars:
        passages = [rng.choice(pool) for _ in range(rng.randint(*SECTION_PASSAGES))]
        heading = passages[0].title.rstrip(" .") or " ".join(passages[0].text.split()[:TITLE_LEAD_WORDS])
        section = f"## {heading}\n\n" + "\n\n".join(p.text for p in passages)
        parts.append(section)
        size += len(section)
    return "\n\n".join(parts)


def _cut_words(text: str, chars: int) -> str:
    if len(text) <= chars:
        return text
    space = text.rfind(" ", 0, chars)
    return text[: space if space > 0 else chars].rstrip(" ,;:") + "."


# -- queries ---------------------------------------------------------------


def build_queries(plan: Plan, corpora: Corpora) -> list[BenchQuery]:
    """A fixed, shuffled mix of French and English questions and as-you-type prefixes."""
    rng = random.Random(QUERY_SEED)
    queries = [BenchQuery("fr", q) for q in rng.sample(corpora.french_queries, plan.fr_queries)]
    queries += [BenchQuery("en", q) for q in rng.sample(corpora.english_queries, plan.en_queries)]
    sources = corpora.french_queries + corpora.english_queries
    prefixes: list[BenchQuery] = []
    for source in rng.sample(sources, len(sources)):
        typed = as_you_type(source, rng)
        if typed is not None:
            prefixes.append(BenchQuery("prefix", typed))
        if len(prefixes) == plan.prefix_queries:
            break
    queries += prefixes
    rng.shuffle(queries)
    return queries


def as_you_type(query: str, rng: random.Random) -> str | None:
    """The query as typed so far: cut inside a long word, alone or after the words before it."""
    words = query.split()
    long_words = [i for i, w in enumerate(words) if len(w) >= PREFIX_MIN_WORD and w.isalpha()]
    if not long_words:
        return None
    i = rng.choice(long_words)
    cut = words[i][: rng.randint(*PREFIX_CHARS)]
    return cut if rng.random() < LONE_PREFIX_SHARE else " ".join([*words[:i], cut])


def feed_keywords(query: str, count: int) -> str:
    """The feed is filtered by a word or two (every word must occur), not by a question."""
    words = sorted((w for w in query.split() if w.isalpha()), key=len, reverse=True)
    return " ".join(words[:count])


# -- measurement helpers -----------------------------------------------------


def elapsed_ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def summarize(samples_ms: Sequence[float]) -> dict[str, Any]:
    """count, p50/p95/p99, mean and max in milliseconds."""
    if not samples_ms:
        return {"count": 0}
    cuts = statistics.quantiles(samples_ms, n=100, method="inclusive") if len(samples_ms) > 1 else [samples_ms[0]] * 99
    return {
        "count": len(samples_ms),
        "p50_ms": round(cuts[49], 3),
        "p95_ms": round(cuts[94], 3),
        "p99_ms": round(cuts[98], 3),
        "mean_ms": round(statistics.fmean(samples_ms), 3),
        "max_ms": round(max(samples_ms), 3),
    }


def peak_rss_mb() -> float:
    """Peak RSS of this process (ru_maxrss is in KiB on Linux)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def proc_status_mb(pid: int, key: str) -> float | None:
    """A `VmXxx:` line of /proc/<pid>/status, in MiB."""
    return kib_line_mb(Path(f"/proc/{pid}/status"), key)


def kib_line_mb(path: Path, key: str) -> float | None:
    """The `Key:   N kB` line of a /proc file, in MiB; None off Linux."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith(f"{key}:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


def dir_size(path: Path) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


class Profiler:
    """Optional cProfile of named phases; the top functions go to the results."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.reports: dict[str, str] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if not self.enabled:
            yield
            return
        profile = cProfile.Profile()
        profile.enable()
        try:
            yield
        finally:
            profile.disable()
            out = io.StringIO()
            stats = pstats.Stats(profile, stream=out)
            stats.sort_stats("tottime").print_stats(PROFILE_LINES)
            stats.sort_stats("cumulative").print_stats(PROFILE_LINES)
            self.reports[name] = out.getvalue()


# -- in-process phases -------------------------------------------------------


def measure_indexing(service: Service, expected: int, profiler: Profiler) -> dict[str, Any]:
    space = service.spaces[SPACE]
    started, cpu_started = time.perf_counter(), time.process_time()
    with profiler.phase("index"):
        full = space.writing.run_reconcile()
    full_s = time.perf_counter() - started
    cpu_s = time.process_time() - cpu_started  # all threads: Python and Tantivy's
    if full.indexed != expected or full.skipped:
        raise BenchError(f"indexed {full.indexed} notes and skipped {full.skipped}, expected {expected} and 0")
    started = time.perf_counter()
    again = space.writing.run_reconcile()
    noop_s = time.perf_counter() - started
    return {
        "full_seconds": round(full_s, 3),
        "notes_per_second": round(expected / full_s, 1),
        "cpu_seconds": round(cpu_s, 3),
        "noop_reconcile_seconds": round(noop_s, 3),
        "noop_reconcile_indexed": again.indexed,
        "indexed_docs": space.status().notes,
    }


def settle(service: Service) -> dict[str, Any]:
    """Close the writer (waits for Tantivy's background merges) and reload the
    reader, so that queries run on the segments a long-running service has,
    like the server's. This also releases the writer lock the server takes."""
    started = time.perf_counter()
    service.stop()
    waited = time.perf_counter() - started
    lexical = service.spaces[SPACE].lexical
    lexical.reload()
    return {"merge_wait_seconds": round(waited, 3), "segments": int(lexical.searcher().num_segments)}


def measure_search(service: Service, queries: list[BenchQuery], plan: Plan, profiler: Profiler) -> dict[str, Any]:
    for query in queries[: plan.warmup]:
        service.search(SPACE, query.text, FeedFilter(), SEARCH_LIMIT)
    by_kind: dict[str, list[float]] = defaultdict(list)
    empty = 0
    cpu_started = time.process_time()
    with profiler.phase("search"):
        for query in queries:
            started = time.perf_counter()
            response = service.search(SPACE, query.text, FeedFilter(), SEARCH_LIMIT)
            by_kind[query.kind].append(elapsed_ms(started))
            empty += not response.results
    cpu_us = (time.process_time() - cpu_started) / len(queries) * 1e6
    every = [ms for samples in by_kind.values() for ms in samples]
    return {
        **summarize(every),
        "cpu_us_per_query": round(cpu_us),
        "warmup": plan.warmup,
        "empty_results": empty,
        "by_kind": {kind: summarize(samples) for kind, samples in sorted(by_kind.items())},
    }


def measure_feed(service: Service, queries: list[BenchQuery], plan: Plan) -> dict[str, Any]:
    sources = [q.text for q in queries if q.kind != "prefix"][: plan.feed_queries]
    texts = [feed_keywords(text, FEED_WORDS[i % len(FEED_WORDS)]) for i, text in enumerate(sources)]
    with_query, empty = [], 0
    for text in texts:
        started = time.perf_counter()
        page = service.feed(SPACE, text, FeedFilter(), FEED_LIMIT, None)
        with_query.append(elapsed_ms(started))
        empty += not page.items
    by_tag = []
    for _ in range(plan.tag_feed_rounds):
        for tag in TAG_VOCABULARY:
            started = time.perf_counter()
            service.feed(SPACE, "", FeedFilter(tags=(tag,)), FEED_LIMIT, None)
            by_tag.append(elapsed_ms(started))
    return {"query": {**summarize(with_query), "empty_pages": empty}, "tag_only": summarize(by_tag)}


# -- HTTP phases -------------------------------------------------------------


class Client:
    """One keep-alive HTTP/1.1 connection; reconnects after a transport error."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection(HOST, port, timeout=HTTP_TIMEOUT)

    def get(self, path: str) -> tuple[int, bytes]:
        return self.request("GET", path)

    def post(self, path: str) -> tuple[int, bytes]:
        return self.request("POST", path)

    def request(self, method: str, path: str) -> tuple[int, bytes]:
        try:
            self.conn.request(method, path)
            response = self.conn.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException):
            self.close()
            self.conn = http.client.HTTPConnection(HOST, self.port, timeout=HTTP_TIMEOUT)
            return TRANSPORT_ERROR, b""

    def close(self) -> None:
        self.conn.close()


def search_path(text: str) -> str:
    return f"/spaces/{SPACE}/search?q={urllib.parse.quote(text, safe='')}&limit={SEARCH_LIMIT}"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def server_env(spaces_root: Path, index_dir: Path, port: int, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without any notarium setting, plus ours (and `extra`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTARIUM_")}
    env.pop("VECTOR_SEARCH", None)
    env.pop("GRAPH_BOOST", None)
    env.update(
        NOTARIUM_SPACES_ROOT=str(spaces_root),
        NOTARIUM_INDEX_DIR=str(index_dir),
        NOTARIUM_HOST=HOST,
        NOTARIUM_PORT=str(port),
        NOTARIUM_LOG_LEVEL="warning",
        NOTARIUM_RATE_LIMIT="0",  # measures throughput, not the per-client limit
        # One worker, whose process these figures read (`Server.owner_pid`), as
        # in every earlier run; bench/workers.py compares worker counts.
        NOTARIUM_WORKERS="1",
    )
    env.update(extra or {})
    return env


@dataclass(frozen=True, slots=True)
class Server:
    process: subprocess.Popen[bytes]
    port: int
    ready_seconds: float

    @property
    def owner_pid(self) -> int:
        """The process that owns the indexes and answers: `serve`'s worker (its
        only child, granian's supervisor being the parent), or `serve` itself
        when it runs alone (commits before the supervised server)."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        found = children.read_text().split() if children.exists() else []
        return int(found[0]) if len(found) == 1 else self.process.pid

    def cpu_seconds(self) -> float | None:
        """CPU time the owner has used so far, all its threads (None off Linux)."""
        return process_cpu_seconds(self.owner_pid)

    def memory(self) -> dict[str, float | None]:
        """The owner's memory; `supervisor_peak_rss_mb` when a supervisor runs it."""
        owner = self.owner_pid
        figures = {key: proc_status_mb(owner, field) for key, field in SERVER_MEMORY_FIELDS.items()}
        supervisor = proc_status_mb(self.process.pid, "VmHWM") if owner != self.process.pid else None
        return {**figures, "supervisor_peak_rss_mb": supervisor}


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process, all its threads (fields 14-15 of
    /proc/<pid>/stat, after the command name); None off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


CpuClock = Callable[[], float | None]
"""The server's CPU seconds so far (Server.cpu_seconds), for CPU per request."""


def cpu_us_per_request(clock: CpuClock | None, started: float | None, requests: int) -> dict[str, Any]:
    """`server_cpu_us_per_request` since `started` (a reading of `clock`), or nothing without a clock."""
    ended = clock() if clock is not None else None
    if started is None or ended is None or not requests:
        return {}
    return {"server_cpu_us_per_request": round((ended - started) / requests * 1e6)}


ReadyCheck = Callable[[int], bool]
"""Port → whether the server is ready to be measured (raises BenchError when it never will be)."""


@contextmanager
def running_server(
    spaces_root: Path,
    index_dir: Path,
    log_path: Path,
    extra_env: Mapping[str, str] | None = None,
    ready: ReadyCheck | None = None,
    ready_timeout: float = SERVER_READY_TIMEOUT,
) -> Iterator[Server]:
    """A real `python -m notarium_search serve` on the index, once `ready`
    (default: the lexical index of the space is ready); stopped on exit."""
    port = free_port()
    started = time.perf_counter()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "notarium_search", "serve"],
            cwd=PROJECT_ROOT,
            env=server_env(spaces_root, index_dir, port, extra_env),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_ready(process, port, log_path, ready, ready_timeout)
            yield Server(process, port, round(time.perf_counter() - started, 3))
        finally:
            process.terminate()
            try:
                process.wait(timeout=HTTP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def wait_ready(
    process: subprocess.Popen[bytes],
    port: int,
    log_path: Path,
    ready: ReadyCheck | None = None,
    timeout: float = SERVER_READY_TIMEOUT,
) -> None:
    """Until `ready(port)` (default: /healthz answers and /status shows the space ready)."""
    check = ready or _space_ready
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BenchError(f"server exited with code {process.returncode}:\n{_tail(log_path)}")
        if check(port):
            return
        time.sleep(POLL_SECONDS)
    raise BenchError(f"server not ready after {timeout:.0f} s:\n{_tail(log_path)}")


def server_status(port: int) -> dict[str, Any] | None:
    """The /status body, or None while the server does not answer yet."""
    client = Client(port)
    try:
        if client.get("/healthz")[0] != http.client.OK:
            return None
        status, body = client.get("/status")
    finally:
        client.close()
    if status != http.client.OK:
        return None
    state: dict[str, Any] = json.loads(body)
    return state


def bench_space(state: dict[str, Any]) -> dict[str, Any]:
    """The benchmark space's entry of a /status body; BenchError when its lexical index failed."""
    spaces = {s["space"]: s for s in state["spaces"]}
    if SPACE not in spaces:
        raise BenchError(f"the server does not serve space {SPACE!r}: {sorted(spaces)}")
    space: dict[str, Any] = spaces[SPACE]
    if space["lexical"]["state"] == "failed":
        raise BenchError(f"the server failed to open the index: {space['lexical']['error']}")
    return space


def _space_ready(port: int) -> bool:
    state = server_status(port)
    if state is None:
        return False
    return state["message"] is None and bench_space(state)["lexical"]["state"] == "ready"


def _tail(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL_CHARS:]


def measure_http_single(port: int, paths: list[str], cpu: CpuClock | None = None) -> dict[str, Any]:
    client = Client(port)
    statuses: Counter[int] = Counter()
    samples = []
    empty = 0
    try:
        for path in paths[:HTTP_WARMUP]:
            client.get(path)
        cpu_started = cpu() if cpu is not None else None
        for path in paths:
            started = time.perf_counter()
            status, body = client.get(path)
            samples.append(elapsed_ms(started))
            statuses[status] += 1
            empty += status == http.client.OK and not json.loads(body)["results"]  # same as in-process
        cpu_figures = cpu_us_per_request(cpu, cpu_started, len(paths))
    finally:
        client.close()
    return {**summarize(samples), **cpu_figures, "empty_results": empty, **_status_counts(statuses)}


def measure_http_concurrent(
    port: int, paths: list[str], seconds: float, clients: int = CLIENTS, cpu: CpuClock | None = None
) -> dict[str, Any]:
    """`clients` threads, each on its own connection, for `seconds`."""
    samples: list[list[float]] = [[] for _ in range(clients)]
    statuses: list[Counter[int]] = [Counter() for _ in range(clients)]
    start = threading.Barrier(clients + 1, timeout=HTTP_TIMEOUT)  # a client that dies cannot hang the run

    def worker(k: int) -> None:
        client = Client(port)
        offset = k * len(paths) // clients  # clients do not send the same query at the same time
        try:
            start.wait()
            deadline = time.perf_counter() + seconds
            i = 0
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                status, _ = client.get(paths[(offset + i) % len(paths)])
                samples[k].append(elapsed_ms(started))
                statuses[k][status] += 1
                i += 1
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(k,), name=f"client-{k}") for k in range(clients)]
    for thread in threads:
        thread.start()
    cpu_started = cpu() if cpu is not None else None
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    every = [ms for per_client in samples for ms in per_client]
    return {
        "clients": clients,
        "seconds": round(wall, 3),
        "queries_per_second": round(len(every) / wall, 1),
        **summarize(every),
        **cpu_us_per_request(cpu, cpu_started, len(every)),
        **_status_counts(sum(statuses, Counter())),
    }


def _status_counts(statuses: Counter[int]) -> dict[str, Any]:
    failures = {str(code): n for code, n in sorted(statuses.items()) if code != http.client.OK}
    return {"non_200": sum(failures.values()), "non_200_by_status": failures}


def measure_http(work: Path, queries: list[BenchQuery], plan: Plan, language: str) -> dict[str, Any]:
    paths = [search_path(q.text) for q in queries]
    # The server reads the space as it was indexed: another language would rebuild it.
    language_env = {"NOTARIUM_LANGUAGE": language}
    with running_server(work / "spaces", work / "index", work / "server.log", language_env) as server:
        single = measure_http_single(server.port, paths, server.cpu_seconds)
        concurrent = measure_http_concurrent(server.port, paths, plan.concurrent_seconds, cpu=server.cpu_seconds)
        memory = server.memory()
        ready = server.ready_seconds
    return {"server_ready_seconds": ready, "single": single, "concurrent": concurrent, "server_memory": memory}


# -- report ----------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "ram_mb": kib_line_mb(Path("/proc/meminfo"), "MemTotal"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "tantivy": metadata.version("tantivy"),
        "date": datetime.now(tz=UTC).isoformat(timespec="seconds"),
        # Other work on the machine skews every figure: compare this with `cpus`.
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "code": code_version(),
    }


def code_version() -> dict[str, Any] | None:
    """The commit measured, and whether the package had uncommitted changes
    (figures of a dirty tree cannot be tied to a commit); None outside git."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "notarium_search"],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return {"commit": commit, "package_uncommitted_changes": bool(dirty)}


def _cpu_model() -> str | None:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or None
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), None)


def check_targets(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each target: measured value, limit, and whether it is met."""
    server_rss = results["http"]["server_memory"]["peak_rss_mb"]
    rows = {
        "index_notes_per_second": (results["index"]["notes_per_second"], TARGET_NOTES_PER_S, True),
        "search_p50_ms": (results["search"]["p50_ms"], TARGET_SEARCH_P50_MS, False),
        "http_p50_ms": (results["http"]["single"]["p50_ms"], TARGET_HTTP_P50_MS, False),
        "server_peak_rss_mb": (server_rss, TARGET_RSS_MB, False),
        "bench_peak_rss_mb": (results["memory"]["bench_peak_rss_mb"], TARGET_RSS_MB, False),
    }
    return {
        name: {
            "value": value,
            "target": limit,
            "met": value is not None and (value >= limit if at_least else value <= limit),
        }
        for name, (value, limit, at_least) in rows.items()
    }


def print_summary(results: dict[str, Any]) -> None:
    corpus, index, search, feed, http_ = (results[k] for k in ("corpus", "index", "search", "feed", "http"))
    single, concurrent = http_["single"], http_["concurrent"]
    rows = [
        ("notes", f"{corpus['notes']:,} ({corpus['bytes'] / MIB:.1f} MiB, {corpus['long_notes']} long)"),
        ("full index", f"{index['full_seconds']:.2f} s = {index['notes_per_second']:,.0f} notes/s"),
        ("index CPU", f"{index['cpu_seconds']:.2f} s (all threads), {index['segments']} segments"),
        ("no-change reconcile", f"{index['noop_reconcile_seconds'] * 1000:.1f} ms"),
        ("index size", f"{index['size_bytes'] / MIB:.1f} MiB"),
        ("search in-process", _latency(search) + _cpu(search, "cpu_us_per_query")),
        *((f"  {kind}", _latency(s)) for kind, s in search["by_kind"].items()),
        ("feed with query", _latency(feed["query"])),
        ("feed tag only", _latency(feed["tag_only"])),
        ("server ready after", f"{http_['server_ready_seconds']:.2f} s"),
        (
            "HTTP 1 client",
            _latency(single) + _cpu(single, "server_cpu_us_per_request") + f"  non-200: {single['non_200']}",
        ),
        (f"HTTP {concurrent['clients']} clients", _throughput(concurrent)),
        ("server peak RSS", _server_rss(http_["server_memory"])),
        ("bench peak RSS", f"{results['memory']['bench_peak_rss_mb']} MiB"),
    ]
    width = max(len(label) for label in [*(r[0] for r in rows), *results["targets"]])
    machine = results["machine"]
    load = machine["load_average_at_start"][0]
    print(f"\nnotarium-search lexical perf — {machine['cpus']} cpus, load {load} at start, {machine['date']}")
    for label, value in rows:
        print(f"  {label:<{width}}  {value}")
    print("targets:")
    for name, target in results["targets"].items():
        print(f"  {name:<{width}}  {target['value']} vs {target['target']}  {'ok' if target['met'] else 'MISSED'}")


def _server_rss(memory: dict[str, Any]) -> str:
    shown = f"{memory['peak_rss_mb']} MiB"
    supervisor = memory.get("supervisor_peak_rss_mb")
    return f"{shown} (worker) + {supervisor} MiB (supervisor)" if supervisor is not None else shown


def _latency(summary: dict[str, Any]) -> str:
    if not summary.get("count"):
        return "no samples"
    p50, p95, p99 = (summary[k] for k in ("p50_ms", "p95_ms", "p99_ms"))
    return f"p50 {p50:.2f}  p95 {p95:.2f}  p99 {p99:.2f} ms (n={summary['count']})"


def _throughput(summary: dict[str, Any]) -> str:
    cpu = _cpu(summary, "server_cpu_us_per_request")
    return f"{summary['queries_per_second']:,.0f} q/s  {_latency(summary)}{cpu}  non-200: {summary['non_200']}"


def _cpu(summary: dict[str, Any], key: str) -> str:
    return f"  CPU {summary[key]:,} µs/query" if key in summary else ""


# -- driver ----------------------------------------------------------------


def default_eval_dir() -> Path:
    """$NOTARIUM_EVAL_DIR, as the test suite uses it (.ci/run), else the shared folder."""
    return Path(os.environ.get("NOTARIUM_EVAL_DIR") or SHARED_EVAL_DIR)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=DEFAULT_NOTES, help=f"notes to generate (default {DEFAULT_NOTES})")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument(
        "--eval-dir",
        type=Path,
        default=default_eval_dir(),
        help=f"folder holding piaf-fr/ and cranfield/ (default: $NOTARIUM_EVAL_DIR or {SHARED_EVAL_DIR})",
    )
    parser.add_argument("--quick", action="store_true", help="fewer queries and a 2 s throughput run (CI smoke test)")
    parser.add_argument("--work", type=Path, help="keep notes, index and server log in this new or empty folder")
    parser.add_argument("--profile", action="store_true", help="cProfile the index and search phases (slows them)")
    parser.add_argument(
        "--language",
        default="auto",
        choices=LANGUAGE_SETTINGS,
        help="the space's language: auto (each note in its own, detected: the default) or one for every note",
    )
    args = parser.parse_args(argv)
    if args.notes < 1:
        parser.error("--notes must be at least 1")
    return args


@contextmanager
def work_dir(keep: Path | None) -> Iterator[Path]:
    if keep is None:
        with tempfile.TemporaryDirectory(prefix="notarium-perf-") as tmp:
            yield Path(tmp)
        return
    if keep.exists() and any(keep.iterdir()):
        raise BenchError(f"--work {keep} is not empty: a reused index would not measure a full build")
    keep.mkdir(parents=True, exist_ok=True)
    yield keep.resolve()


def run(args: argparse.Namespace, plan: Plan, corpora: Corpora, work: Path) -> dict[str, Any]:
    notes_dir = work / "spaces" / SPACE
    profiler = Profiler(args.profile)
    results: dict[str, Any] = {
        "benchmark": "perf_lexical",
        "params": {
            "notes": args.notes,
            "quick": args.quick,
            "profiled": args.profile,
            "eval_dir": str(args.eval_dir),
            "language": args.language,
        },
        "machine": machine_info(),
        "corpus": build_space(notes_dir, args.notes, corpora),
    }
    memory = {"after_generate_mb": peak_rss_mb()}
    space = SpaceConfig(SPACE, notes_dir, args.language)
    settings = Settings(spaces=(space,), index_dir=work / "index", log_level="warning")
    service = Service(settings)
    queries = build_queries(plan, corpora)
    try:
        results["index"] = measure_indexing(service, args.notes, profiler)
        results["index"].update(settle(service))
        memory["after_index_mb"] = peak_rss_mb()
        results["search"] = measure_search(service, queries, plan, profiler)
        results["feed"] = measure_feed(service, queries, plan)
    finally:
        service.stop()  # idempotent; on failure, releases the writer lock all the same
    results["index"]["size_bytes"] = dir_size(work / "index" / SPACE)
    results["index"]["lexical_size_bytes"] = dir_size(work / "index" / SPACE / "lexical")
    results["http"] = measure_http(work, queries, plan, args.language)
    results["memory"] = {**memory, "bench_peak_rss_mb": peak_rss_mb()}
    results["targets"] = check_targets(results)
    if profiler.reports:
        results["profile"] = profiler.reports
    return results


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    plan = QUICK if args.quick else FULL
    corpora = load_corpora(args.eval_dir)
    configure_logging("warning", sys.stderr)
    with work_dir(args.work) as work:
        results = run(args, plan, corpora, work)
    for name, report in results.get("profile", {}).items():
        print(f"\n===== cProfile: {name} =====\n{report}")
    print_summary(results)
    if args.out is not None:
        args.out.write_text(json.dumps(results, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        print(f"results written to {args.out}")
    return results


if __name__ == "__main__":
    try:
        main()
    except BenchError as exc:
        print(f"perf_lexical: error: {exc}", file=sys.stderr)
        sys.exit(2)
