"""SQLite FTS5 BM25 beside our Tantivy lexical channel: same notes, same queries, same process.

Peer note-search tools (qmd, basic-memory) rank with SQLite's FTS5 `bm25()`.
This baseline answers "is our Tantivy channel worth its weight against what
they use?" on the shared judged collections: for each collection it indexes
every document in an FTS5 table (through the standard `sqlite3` module) and in
a real notarium space (bench/eval_collection.py's `build`), runs every query
through both engines one at a time, and reports per engine:

* nDCG@10 and Recall@100 (eval_collection's `score`, 100 results per query);
* query latency p50/p95/p99 at that depth, snippets included on both sides;
* Spotlight latency (10 results with snippets) on a fixed sample of queries,
  FTS5 in both query modes ("all": every word required; "any": OR, BM25 ranked);
* index time, documents/s and size on disk.

Quality runs use FTS5 "any" mode: the collections' queries are natural-language
questions, and requiring every word of a question would find almost nothing.

    .venv/bin/python -m bench.fts5_compare --collections piaf-fr,cranfield --json /tmp/fts5.json

`main(argv)` returns the results dict.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from bench.eval_collection import (
    RECALL_DEPTH,
    SPACE,
    Ranker,
    build,
    lexical_ranker,
    load_average,
    load_judgments,
    score,
)
from bench.perf_lexical import code_version, default_eval_dir, dir_size, elapsed_ms, summarize
from notarium_search.lexical import search as lexical
from notarium_search.logsetup import configure_logging
from notarium_search.settings import RankingConfig
from notarium_search.types import FeedFilter

Mode = Literal["all", "any"]
MODES: tuple[Mode, ...] = ("all", "any")

# unicode61 with every diacritic removed (1 misses letters carrying several) is
# the best FTS5 offers for French: it has no French stemmer.
FRENCH_TOKENIZER = "unicode61 remove_diacritics 2"
# For English FTS5 does have a stemmer, Porter's, as the shared reference run used:
# fair to FTS5 means letting it stem where it can, as ours stems both languages.
ENGLISH_TOKENIZER = f"porter {FRENCH_TOKENIZER}"
TOKENIZERS = {"fr": FRENCH_TOKENIZER, "en": ENGLISH_TOKENIZER}
COLLECTION_LANGUAGES = {"piaf-fr": "fr", "cranfield": "en"}  # any other collection is taken as French
DEFAULT_COLLECTIONS = ("piaf-fr", "cranfield")

# bm25() takes one weight per column in declaration order, UNINDEXED ones
# included: `bm25(t, 10.0, 1.0)` would weigh the id column, not the title.
# Ours (notarium_search/lexical/query.py) scores a word in one combined field
# holding title and body at weight 1, plus the title alone at
# RankingConfig.title_boost (0.25). Mirrored here: the body column holds the
# title too (see `_fts5_row`) and the title column weighs title_boost.
ID_WEIGHT = 0.0  # never matched: UNINDEXED
TITLE_WEIGHT = RankingConfig().title_boost
BODY_WEIGHT = 1.0

# Plain SQL, values bound: the weights are parameters of bm25() too. The snippet
# comes from column 2 (body), 12 tokens around the match, about our snippets' length.
_INSERT = "INSERT INTO notes_fts (id, title, body) VALUES (?, ?, ?)"
_OPTIMIZE = "INSERT INTO notes_fts (notes_fts) VALUES ('optimize')"  # merge into one b-tree, as a reader wants
_SEARCH = (
    "SELECT id, snippet(notes_fts, 2, '<mark>', '</mark>', '…', 12) FROM notes_fts WHERE notes_fts MATCH :match"
    " ORDER BY bm25(notes_fts, :id_weight, :title_weight, :body_weight) LIMIT :limit"
)

SPOTLIGHT_LIMIT = 10  # what the Spotlight UI asks for
SPOTLIGHT_QUERIES = 300  # enough for a stable p99, a few seconds per engine
WARMUP = 30  # queries run untimed first: page cache, prepared statements, Tantivy searcher
_WORD = re.compile(r"[^\W_]+")  # letters and digits: what unicode61 keeps as tokens


# -- FTS5 ------------------------------------------------------------------


def build_fts5(
    db_path: Path, notes: Iterable[tuple[str, str, str]], tokenizer: str = FRENCH_TOKENIZER
) -> dict[str, Any]:
    """Index (id, title, body) notes in a fresh contentful FTS5 table; time, rate and size on disk."""
    rows = [_fts5_row(*note) for note in notes]  # read the notes before the clock starts
    db_path.unlink(missing_ok=True)
    started = time.perf_counter()
    conn = sqlite3.connect(db_path)
    try:
        # SQLite's default rollback journal (WAL brings nothing to one bulk
        # transaction and leaves a -wal file beside the database) and
        # synchronous=NORMAL, what desktop apps use: one sync at commit, no more.
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute("PRAGMA synchronous = NORMAL")
        with conn:  # one transaction
            conn.execute(
                f"CREATE VIRTUAL TABLE notes_fts USING fts5(id UNINDEXED, title, body, tokenize = '{tokenizer}')"
            )
            conn.executemany(_INSERT, rows)
            conn.execute(_OPTIMIZE)
    finally:
        conn.close()
    seconds = time.perf_counter() - started
    return {
        "notes": len(rows),
        "index_seconds": round(seconds, 3),
        "notes_per_s": round(len(rows) / seconds, 1) if seconds > 0 else None,
        "size_bytes": db_path.stat().st_size,
        "tokenizer": tokenizer,
    }


def _fts5_row(note_id: str, title: str, body: str) -> tuple[str, str, str]:
    # The title leads the body, as in our combined `text` field (title weighting above).
    return note_id, title, f"{title}\n\n{body}"


def connect(db_path: Path) -> sqlite3.Connection:
    """A read connection to a database `build_fts5` wrote."""
    return sqlite3.connect(db_path, check_same_thread=False)


def match_expression(text: str, mode: Mode) -> str | None:
    """A MATCH expression FTS5 always parses: every word of `text` a quoted string
    (no operator, column filter or prefix star survives), ANDed or ORed; None if no word."""
    words = _WORD.findall(text)
    if not words:
        return None
    quoted = ['"' + word.replace('"', '""') + '"' for word in words]  # doubling: safe whatever the word pattern
    return (" AND " if mode == "all" else " OR ").join(quoted)


def search_fts5(
    conn: sqlite3.Connection,
    text: str,
    mode: Mode,
    limit: int = SPOTLIGHT_LIMIT,
    weights: tuple[float, float] = (TITLE_WEIGHT, BODY_WEIGHT),
) -> list[tuple[str, str]]:
    """The `limit` best (note id, body snippet) pairs by weighted BM25 (FTS5's is lower-is-better)."""
    expression = match_expression(text, mode)
    if expression is None:
        return []
    title_weight, body_weight = weights
    bound = {"match": expression, "limit": limit, "id_weight": ID_WEIGHT}
    rows = conn.execute(_SEARCH, bound | {"title_weight": title_weight, "body_weight": body_weight})
    return [(str(note_id), str(snippet)) for note_id, snippet in rows]


def fts5_ranker(conn: sqlite3.Connection, mode: Mode, limit: int = RECALL_DEPTH) -> Ranker:
    """`search_fts5` as eval_collection's Ranker (snippets cut, as ours cuts them)."""

    def rank(text: str) -> tuple[list[str], bool]:
        return [note_id for note_id, _ in search_fts5(conn, text, mode, limit)], False

    return rank


def measure_latency(
    conn: sqlite3.Connection, queries: list[str], mode: Mode, limit: int = SPOTLIGHT_LIMIT, warmup: int = WARMUP
) -> dict[str, Any]:
    """FTS5 query latency (snippets included), one query at a time, after `warmup` untimed queries."""
    return _latency(lambda text: search_fts5(conn, text, mode, limit), queries, warmup)


def _latency(run: Callable[[str], object], queries: list[str], warmup: int) -> dict[str, Any]:
    for text in queries[:warmup]:
        run(text)
    took = []
    for text in queries:
        started = time.perf_counter()
        run(text)
        took.append(elapsed_ms(started))
    return summarize(took)


# -- side by side ----------------------------------------------------------


def read_documents(collection: Path) -> Iterator[tuple[str, str, str]]:
    """(id, title, text) of every document, titled as eval_collection.write_space titles its notes."""
    with open(collection / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                doc = json.loads(line)
                yield str(doc["id"]), str(doc.get("title") or doc["id"]), str(doc["text"])


def evaluate(
    collection_dir: Path, work: Path, language: str | None = None, max_queries: int | None = None
) -> dict[str, Any]:
    """Both engines on one collection: quality, latency, index cost, and FTS5 / Tantivy ratios.
    `max_queries`: only the first queries by id (a smoke run's sample; None: all of them)."""
    language = language or COLLECTION_LANGUAGES.get(collection_dir.name, "fr")
    queries, qrels = load_judgments(collection_dir)
    if max_queries is not None:
        queries = dict(sorted(queries.items())[:max_queries])
    spotlight = [text for _, text in sorted(queries.items())[:SPOTLIGHT_QUERIES]]
    work.mkdir(parents=True, exist_ok=True)
    fts5_db = work / "fts5.sqlite3"
    fts5 = _index_stats(build_fts5(fts5_db, read_documents(collection_dir), TOKENIZERS[language]))
    conn = connect(fts5_db)
    try:
        fts5 |= _quality(fts5_ranker(conn, "any"), queries, qrels)
        fts5["spotlight"] = {mode: measure_latency(conn, spotlight, mode) for mode in MODES}
    finally:
        conn.close()
    tantivy = _tantivy(collection_dir, work / "tantivy", language, queries, qrels, spotlight)
    return {
        "collection": collection_dir.name,
        "language": language,
        "documents": fts5["notes"],
        "queries": len(queries),
        "tantivy": tantivy,
        "fts5": fts5,
        "fts5_over_tantivy": _ratios(fts5, tantivy),
    }


def _tantivy(
    collection: Path,
    work: Path,
    language: str,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    spotlight: list[str],
) -> dict[str, Any]:
    shutil.rmtree(work / "index", ignore_errors=True)  # a kept --work index would make the index time a no-op
    service, seconds = build(collection, work, language, RankingConfig())
    try:
        documents = service.spaces[SPACE].status().notes
        out: dict[str, Any] = {"notes": documents, "index_seconds": round(seconds, 3)}
        out |= {"notes_per_s": round(documents / seconds, 1), "size_bytes": dir_size(work / "index")}
        out |= _quality(lexical_ranker(service, SPACE), queries, qrels)
        index, ranking = service.spaces[SPACE].lexical, service.settings.ranking

        def top(text: str) -> object:
            return lexical.search(index, text, FeedFilter(), SPOTLIGHT_LIMIT, ranking)

        # Ours makes every word optional and ranks notes matching more higher: FTS5 "any" is the like.
        out["spotlight"] = {"any": _latency(top, spotlight, WARMUP)}
        return out
    finally:
        service.stop()


def _index_stats(built: dict[str, Any]) -> dict[str, Any]:
    return {k: built[k] for k in ("notes", "index_seconds", "notes_per_s", "size_bytes", "tokenizer")}


def _quality(rank: Ranker, queries: dict[str, str], qrels: dict[str, dict[str, int]]) -> dict[str, Any]:
    """eval_collection's `score`, each call timed for the whole latency distribution (score keeps the p50)."""
    took: list[float] = []

    def timed(text: str) -> tuple[list[str], bool]:
        started = time.perf_counter()
        try:
            return rank(text)
        finally:
            took.append(elapsed_ms(started))

    scored = score(timed, queries, qrels)
    return {"ndcg@10": scored["ndcg@10"], "recall@100": scored["recall@100"], "latency": summarize(took)}


def _ratios(fts5: dict[str, Any], tantivy: dict[str, Any]) -> dict[str, float | None]:
    pairs = {
        "ndcg@10": (fts5["ndcg@10"], tantivy["ndcg@10"]),
        "recall@100": (fts5["recall@100"], tantivy["recall@100"]),
        "p50_ms": (fts5["latency"]["p50_ms"], tantivy["latency"]["p50_ms"]),
        "p99_ms": (fts5["latency"]["p99_ms"], tantivy["latency"]["p99_ms"]),
        "spotlight_p50_ms": (fts5["spotlight"]["any"]["p50_ms"], tantivy["spotlight"]["any"]["p50_ms"]),
        "size_bytes": (fts5["size_bytes"], tantivy["size_bytes"]),
    }
    return {name: round(theirs / ours, 3) if ours else None for name, (theirs, ours) in pairs.items()}


# -- command line ----------------------------------------------------------


_COLUMNS = f"{'collection':<11} {'engine':<8} {'nDCG@10':>8} {'R@100':>6} {'p50 ms':>7} {'p99 ms':>7}"
_COLUMNS += f" {'top10 p50':>9} {'index s':>8} {'MiB':>6}"


def print_table(results: dict[str, Any]) -> None:
    """Quality, latency at depth 100 and at 10 (FTS5 "any" mode), index time and size."""
    print(_COLUMNS)
    for name, run in results["collections"].items():
        for engine in ("tantivy", "fts5"):
            print(_row(name, engine, run[engine]))


def _row(name: str, engine: str, r: dict[str, Any]) -> str:
    quality = f"{r['ndcg@10']:>8.3f} {r['recall@100']:>6.3f}"
    latency = f"{r['latency']['p50_ms']:>7.2f} {r['latency']['p99_ms']:>7.2f} {r['spotlight']['any']['p50_ms']:>9.2f}"
    return f"{name:<11} {engine:<8} {quality} {latency} {r['index_seconds']:>8.2f} {r['size_bytes'] / 2**20:>6.1f}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collections", default=",".join(DEFAULT_COLLECTIONS), help="comma-separated names")
    parser.add_argument("--eval-dir", type=Path, default=default_eval_dir(), help="folder holding the collections")
    parser.add_argument("--work", type=Path, help="keep the notes and both indexes here (rebuilt on every run)")
    parser.add_argument("--json", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    args.names = [name.strip() for name in args.collections.split(",") if name.strip()]
    missing = [str(args.eval_dir / n) for n in args.names if not (args.eval_dir / n / "corpus.jsonl").is_file()]
    if missing or not args.names:
        # Exits with status 2 and the usage line: a clear message, never a traceback.
        parser.error(
            f"evaluation collection not found: {', '.join(missing) or 'none named'}; pass --eval-dir DIR"
            " (default: $NOTARIUM_EVAL_DIR, else ../shared/eval beside the repository)"
        )
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    configure_logging("warning")
    results: dict[str, Any] = {
        "date": datetime.now(tz=UTC).isoformat(timespec="seconds"),
        "code": code_version(),
        "sqlite": sqlite3.sqlite_version,
        "load_average_at_start": load_average(),  # 2 shared cores: other work skews the timings
        "collections": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        for name in args.names:
            results["collections"][name] = evaluate(args.eval_dir / name, work / name)
    print_table(results)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
