"""Known-item search: does the note you name come first? (issue 29, item 6)

    .venv/bin/python -m bench.known_items --out /tmp/known-items.json
    .venv/bin/python -m bench.known_items --hybrid --vault /path/to/a/vault:en   # + semantic, + a real vault

On each collection, through `Service.search` (snippets included) in each mode
(`lexical`: VECTOR_SEARCH off; `lexical+graph`: GRAPH_BOOST on; `hybrid`:
the semantic channel on with --hybrid, multilingual-e5-small-int8) and, side
by side, an Omnisearch-like baseline (bench/minisearch: MiniSearch with
Omnisearch 1.29.2's default settings; `npm ci --prefix bench/minisearch`):

* exact name first: the note's name typed as the query, the note ranked
  first — over the names that belong to exactly one note (after folding case,
  accents and punctuation) and over all names; and the MRR@20 over all;
* typed share: the name typed character by character (each prefix sent as a
  query, as the page does while typing), the share of its characters typed
  before the note comes first and stays first (100 % if it is not first
  once the whole name is typed); the median over a fixed sample of the
  unique names (--sample);
* heading pointer: each heading that belongs to one note of the collection
  (and is not its name), typed as is: the note first and its hit's first
  placed snippet (`SearchHit.placed()`) under that heading (`heading[-1]`);
  for the baseline, which reports no heading, the section holding the
  offset Omnisearch opens the note at (its first match, `getMatches`: the
  whole query where it occurs as typed, else the first matched word);
* alias top-3: each frontmatter alias typed, the note in the first 3.

Collections: `cranfield` and `piaf-fr` (../shared/eval, written as
bench/eval_collection.py writes them: the name is the document's title, the
file is named after its id), `vault-fr` and `vault-en` (bench/known_vault.py,
generated), and each `--vault DIR:LANG` (a real vault on disk, never copied).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec.structs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import known_baseline
from bench.eval_collection import build_vectors, load_average, load_embedder_from, write_space
from bench.known_vault import write_vault
from bench.perf_lexical import code_version
from notarium_search.logsetup import configure_logging
from notarium_search.service import Service
from notarium_search.settings import Settings, SpaceConfig
from notarium_search.types import FeedFilter

if TYPE_CHECKING:
    from notarium_search.semantic.embedding import Embedder

ROOT = Path(__file__).resolve().parents[1]
EVAL_DIR = ROOT.parent / "shared" / "eval"
MODEL = ROOT.parent / "shared" / "models" / "multilingual-e5-small-int8"
SPACE = "known"
EVAL_COLLECTIONS = {"cranfield": "en", "piaf-fr": "fr"}
VAULTS = {"vault-fr": "fr", "vault-en": "en"}
DEFAULT_COLLECTIONS = ("cranfield", "piaf-fr", "vault-fr", "vault-en")
MODES: dict[str, tuple[bool, bool]] = {
    "lexical": (False, False),
    "lexical+graph": (False, True),
    "hybrid": (True, False),
}
MRR_DEPTH = 20
ALIAS_DEPTH = 3
QUERY_EMBED_TIMEOUT_MS = 60_000  # as bench/eval_collection.py: the fused ranking, never a missed deadline
KEPT_FAILURES = 12

Ranker = Callable[[str, int], tuple[list[str], str | None]]
"""(query, depth) → note paths best first, and the heading the first hit points at."""


def fold(text: str) -> str:
    """Case, accents, punctuation and spacing folded: what makes two names one."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(re.sub(r"[\W_]+", " ", bare).split())


@dataclass
class Item:
    """One note to find and what is typed to find it."""

    path: str
    name: str
    headings: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)


@dataclass
class Collection:
    name: str
    language: str
    root: Path  # the folder of notes (the space)
    items: list[Item]

    def unique_names(self) -> set[str]:
        counts = Counter(fold(item.name) for item in self.items)
        return {key for key, n in counts.items() if n == 1}


def eval_collection(name: str, eval_dir: Path, work: Path) -> Collection:
    """A judged collection as bench/eval_collection.py writes it; each note's name is its title."""
    source = eval_dir / name
    root = work / "notes" / name
    if not root.exists():
        write_space(source, root)
    items = []
    with open(source / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            # cranfield's titles end with " ." (the collection's tokenisation): nobody types that
            title = (doc.get("title") or "").strip().removesuffix(" .")
            if fold(title):
                items.append(Item(f"{doc['id']}.md", title))
    return Collection(name, EVAL_COLLECTIONS[name], root, items)


def vault_collection(name: str, root: Path, language: str) -> Collection:
    """A vault: each note's name is its file name; its headings and aliases typed too.
    A heading is typed only if it belongs to this one note of the vault and no
    note's name or alias starts with it (then that note is the right answer)."""
    notes = known_baseline.read_notes(root)
    names = sorted({fold(name) + " " for n in notes for name in (n.basename, *n.aliases)})
    heading_count = Counter(fold(text) for n in notes for _, text, _ in n.headings)

    def typed(heading: str) -> bool:
        key = fold(heading)
        return bool(key) and heading_count[key] == 1 and not any(name.startswith(key + " ") for name in names)

    items = []
    for note in notes:
        headings = [t for _, t, _ in note.headings if typed(t)]
        items.append(Item(note.path, note.basename, headings, [a for a in note.aliases if fold(a)]))
    return Collection(name, language, root, items)


def service_ranker(service: Service) -> Ranker:
    def rank(query: str, depth: int) -> tuple[list[str], str | None]:
        response = service.search(SPACE, query, FeedFilter(), depth)
        paths = [hit.note.path for hit in response.results]
        placed = response.results[0].placed() if response.results else None
        return paths, (placed.heading[-1] if placed is not None and placed.heading else None)

    return rank


def names_ranker(collection: Collection) -> Ranker:
    """A quick switcher that knows names only: the notes whose folded name starts
    with the folded query, the shortest name first (then the path). Not an engine
    to compare with but the ceiling of the typed share: while the typed text is
    still the start of a shorter name, that name's note rightly comes first."""
    names = sorted(((fold(item.name), item.path) for item in collection.items), key=lambda n: (len(n[0]), n[1]))

    def rank(query: str, depth: int) -> tuple[list[str], str | None]:
        key = fold(query)
        return [path for name, path in names if key and name.startswith(key)][:depth], None

    return rank


def minisearch_ranker(baseline: known_baseline.MiniSearchBaseline) -> Ranker:
    def rank(query: str, depth: int) -> tuple[list[str], str | None]:
        paths, heading = baseline.rank(query)
        return paths[:depth], heading

    return rank


def typed_share(rank: Ranker, item: Item) -> float:
    """The share of the name typed before its note comes first and stays first.
    Walked back from the whole name: the first prefix (from the end) where the
    note is not first ends the run."""
    name = item.name
    first_from = len(name) + 1
    for k in range(len(name), 0, -1):
        prefix = name[:k]
        if not prefix.strip():
            break
        paths, _ = rank(prefix, 1)
        if not paths or paths[0] != item.path:
            break
        first_from = k
    return min(1.0, first_from / len(name)) if first_from <= len(name) else 1.0


def pct(hits: int, total: int) -> float | None:
    return round(100 * hits / total, 1) if total else None


Failures = dict[str, list[dict[str, Any]]]


def _keep(failures: Failures, kind: str, case: dict[str, Any]) -> None:
    kept = failures.setdefault(kind, [])
    if len(kept) < KEPT_FAILURES:
        kept.append(case)


def exact_names(collection: Collection, rank: Ranker, failures: Failures | None = None) -> dict[str, Any]:
    """Each name typed whole: first over the unique names and over all; MRR over all."""
    failures = {} if failures is None else failures
    unique = collection.unique_names()
    first_unique = first_all = n_unique = 0
    reciprocal: list[float] = []
    for item in collection.items:
        paths, _ = rank(item.name, MRR_DEPTH)
        at = paths.index(item.path) + 1 if item.path in paths else None
        reciprocal.append(1 / at if at else 0.0)
        first_all += at == 1
        if fold(item.name) in unique:
            n_unique += 1
            first_unique += at == 1
            if at != 1:
                _keep(failures, "name", {"query": item.name, "want": item.path, "rank": at, "first": paths[:1]})
    return {
        "exact_name_first_unique_pct": pct(first_unique, n_unique),
        "exact_name_first_all_pct": pct(first_all, len(collection.items)),
        "names": len(collection.items),
        "unique_names": n_unique,
        f"mrr@{MRR_DEPTH}": round(statistics.fmean(reciprocal), 4) if reciprocal else None,
    }


def typed_shares(collection: Collection, rank: Ranker, sample: int, seed: int, failures: Failures) -> dict[str, Any]:
    unique = collection.unique_names()
    pool = sorted((i for i in collection.items if fold(i.name) in unique), key=lambda i: i.path)
    shares = []
    for item in random.Random(seed).sample(pool, min(sample, len(pool))):
        share = typed_share(rank, item)
        shares.append(share)
        if share >= 0.9:
            _keep(failures, "typed", {"query": item.name, "want": item.path, "share": round(share, 2)})
    return {
        "typed_share_median_pct": round(100 * statistics.median(shares), 1) if shares else None,
        "typed_names": len(shares),
    }


def heading_pointers(collection: Collection, rank: Ranker, failures: Failures) -> dict[str, Any]:
    pointed = note_first = n_headings = 0
    for item in collection.items:
        for heading in item.headings:
            paths, at_heading = rank(heading, 1)
            n_headings += 1
            first = bool(paths) and paths[0] == item.path
            note_first += first
            good = first and at_heading is not None and fold(at_heading) == fold(heading)
            pointed += good
            if not good:
                case = {"query": heading, "want": item.path, "first": paths[:1], "opened_at": at_heading}
                _keep(failures, "heading", case)
    return {
        "heading_pointer_pct": pct(pointed, n_headings),
        "heading_note_first_pct": pct(note_first, n_headings),
        "headings": n_headings,
    }


def alias_top3(collection: Collection, rank: Ranker, failures: Failures) -> dict[str, Any]:
    hits = count = 0
    for item in collection.items:
        for alias in item.aliases:
            paths, _ = rank(alias, ALIAS_DEPTH)
            count += 1
            hits += item.path in paths
            if item.path not in paths:
                _keep(failures, "alias", {"query": alias, "want": item.path, "first": paths[:1]})
    return {"alias_top3_pct": pct(hits, count), "aliases": count}


def measure(collection: Collection, rank: Ranker, sample: int, seed: int = 29) -> dict[str, Any]:
    """Every measure of the module docstring for one engine over one collection."""
    started = time.perf_counter()
    failures: Failures = {}
    return {
        **exact_names(collection, rank, failures),
        **typed_shares(collection, rank, sample, seed, failures),
        **heading_pointers(collection, rank, failures),
        **alias_top3(collection, rank, failures),
        "seconds": round(time.perf_counter() - started, 1),
        "failures": failures,
    }


def open_service(collection: Collection, index_dir: Path, vector_search: bool, graph_boost: bool) -> Service:
    settings = Settings(
        spaces=(SpaceConfig(SPACE, collection.root, collection.language),),
        index_dir=index_dir,
        log_level="error",  # a real vault's malformed frontmatter is its own business here
        vector_search=vector_search,
        graph_boost=graph_boost,
        query_embed_timeout_ms=QUERY_EMBED_TIMEOUT_MS,
    )
    service = Service(settings)
    service.spaces[SPACE].writing.run_reconcile()
    return service


def run_collection(
    collection: Collection, work: Path, modes: list[str], embedder: Embedder | None, sample: int, baseline: bool
) -> dict[str, Any]:
    out: dict[str, Any] = {"language": collection.language, "notes": None}
    index_dir = work / "index" / collection.name
    for mode in modes:
        vector_search, graph_boost = MODES[mode]
        service = open_service(collection, index_dir, vector_search, graph_boost)
        try:
            out["notes"] = service.spaces[SPACE].status().notes
            if vector_search:
                assert embedder is not None
                embedded = build_vectors(service, embedder, SPACE)
                out["fragments_embedded"] = embedded["fragments_embedded"]
            print(f"  {collection.name} / {mode} …", file=sys.stderr, flush=True)
            out[mode] = measure(collection, service_ranker(service), sample)
        finally:
            service.stop()
    print(f"  {collection.name} / names only …", file=sys.stderr, flush=True)
    names_only = names_ranker(collection)
    out["names-only"] = {
        **exact_names(collection, names_only),
        **typed_shares(collection, names_only, sample, 29, {}),
    }
    if baseline:
        why = known_baseline.available()
        if why is not None:
            out["minisearch"] = {"skipped": why}
        else:
            print(f"  {collection.name} / minisearch …", file=sys.stderr, flush=True)
            engine = known_baseline.MiniSearchBaseline(known_baseline.read_notes(collection.root))
            try:
                out["minisearch"] = measure(collection, minisearch_ranker(engine), sample)
            finally:
                engine.close()
    return out


ROWS = (
    ("exact name first, unique names", "exact_name_first_unique_pct", "%"),
    ("exact name first, all names", "exact_name_first_all_pct", "%"),
    (f"MRR@{MRR_DEPTH} of the name", f"mrr@{MRR_DEPTH}", ""),
    ("typed share (median)", "typed_share_median_pct", "%"),
    ("heading pointer", "heading_pointer_pct", "%"),
    ("heading typed: note first", "heading_note_first_pct", "%"),
    ("alias in the top 3", "alias_top3_pct", "%"),
)


def table(results: dict[str, Any]) -> str:
    """One Markdown table per collection: a row per measure, a column per engine."""
    lines = []
    for name, found in results["collections"].items():
        engines = [
            e
            for e in (*MODES, "minisearch", "names-only")
            if isinstance(found.get(e), dict) and "skipped" not in found[e]
        ]
        counts = found[engines[0]] if engines else {}
        lines.append(
            f"\n{name} ({found['notes']} notes, {counts.get('unique_names')} unique names of {counts.get('names')},"
            f" {counts.get('headings')} headings, {counts.get('aliases')} aliases)\n"
        )
        lines.append("| measure | " + " | ".join(engines) + " |")
        lines.append("|---|" + "---|" * len(engines))
        for label, key, unit in ROWS:
            cells = [found[e].get(key) for e in engines]
            lines.append(f"| {label} | " + " | ".join("—" if c is None else f"{c}{unit}" for c in cells) + " |")
    return "\n".join(lines)


def collections_from(args: argparse.Namespace, work: Path) -> list[Collection]:
    out = []
    for name in args.collections.split(","):
        if name in EVAL_COLLECTIONS:
            out.append(eval_collection(name, args.eval_dir, work))
        elif name in VAULTS:
            root = work / "notes" / name
            if not root.exists():
                write_vault(root, VAULTS[name], args.vault_notes, args.seed)
            out.append(vault_collection(name, root, VAULTS[name]))
        elif name:
            raise SystemExit(f"unknown collection {name!r}: {', '.join((*EVAL_COLLECTIONS, *VAULTS))}")
    for spec in args.vault:
        path, _, language = spec.rpartition(":")
        root = Path(path)
        out.append(vault_collection(root.name, root, language))
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collections", default=",".join(DEFAULT_COLLECTIONS), help="comma-separated")
    parser.add_argument("--vault", action="append", default=[], metavar="DIR:LANG", help="a real vault (fr or en)")
    parser.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    parser.add_argument("--hybrid", action="store_true", help="also the hybrid mode (embeds every collection)")
    parser.add_argument("--model", type=Path, default=MODEL, help="the embedding pack of --hybrid")
    parser.add_argument("--modes", default="lexical,lexical+graph", help="comma-separated, of " + ", ".join(MODES))
    parser.add_argument("--no-minisearch", action="store_true", help="skip the Omnisearch-like baseline")
    parser.add_argument("--sample", type=int, default=150, help="names typed character by character per collection")
    parser.add_argument("--vault-notes", type=int, default=300, help="notes per generated vault")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--work", type=Path, help="keep notes and indexes here (reused)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument(
        "--auto", action="store_true", help='every space set to language = "auto" (each note in its own language)'
    )
    return parser.parse_args(argv)


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    modes = [m for m in args.modes.split(",") if m]
    if args.hybrid and "hybrid" not in modes:
        modes.append("hybrid")
    unknown = set(modes) - set(MODES)
    if unknown:
        raise SystemExit(f"unknown modes: {sorted(unknown)}")
    embedder = None
    if "hybrid" in modes:
        embedder = load_embedder_from(args.model, msgspec.structs.replace(Settings(spaces=()), vector_search=True))
    results: dict[str, Any] = {
        "date": datetime.now(tz=UTC).isoformat(timespec="seconds"),
        "code": code_version(),
        "load_average_at_start": load_average(),
        "modes": modes,
        "sample": args.sample,
        "auto": args.auto,
        "collections": {},
    }
    for found in collections_from(args, work):
        collection = replace(found, language="auto") if args.auto else found
        results["collections"][collection.name] = run_collection(
            collection, work, modes, embedder, args.sample, not args.no_minisearch
        )
        if args.out is not None:  # after each collection: a long run cut short keeps what it measured
            args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return results


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
