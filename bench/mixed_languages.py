"""A French and an English collection in one space: each note in its own language.

One space holds piaf-fr (French) and cranfield (English), in folders
`piaf-fr/` and `cranfield/`, each note's id prefixed with its collection's
name; each collection's questions are scored against its own judgments
(nDCG@10: a note of the other collection counts as irrelevant). The space is
indexed with `language = "auto"` (languages fr, en: each note analysed in its
own), then "fr", then "en"; the baselines are each collection alone in a space
of its language (the same notes, `include` restricted to its folder). Scored:
`lexical` (the lexical channel alone) and, with `--model DIR`, `hybrid`
(`Service.search`), as bench/eval_collection.py does. The issue's acceptance:
each collection in the `auto` space at least 0.99 × its score alone.

    python bench/mixed_languages.py --model ../shared/models/multilingual-e5-small-int8 --out /tmp/mixed.json
    python bench/mixed_languages.py --smoke          # 20 questions a collection, lexical only

Also: the language the `auto` space gave each note (stored payloads) against
its collection's, and the cost of `note_language` per note (each note's
fastest of 3 passes) and of the process's first call (reading the model).

The fragments are embedded once, in the mixed space; the three mixed
configurations share its index folder (a change of language rebuilds the
lexical index, the vectors stay), and each baseline starts from a copy of its
vectors, keeping its own notes' (so every configuration searches the same
vectors). A query's vector is computed once for all configurations, before
the first search (so `query_ms_p50` leaves the query's embedding out). `--work
DIR` keeps the notes and indexes for the next run (one DIR per `--limit`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec.structs import replace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.eval_collection import (
    EVAL_QUERY_EMBED_TIMEOUT_MS,
    NDCG_DEPTH,
    Ranker,
    build_vectors,
    hybrid_ranker,
    lexical_ranker,
    load_average,
    load_embedder_from,
    load_judgments,
    ndcg,
    score,
    write_space,
)
from bench.perf_lexical import code_version
from notarium_search.lexical.stored import all_payloads
from notarium_search.logsetup import configure_logging
from notarium_search.notes.language import note_language
from notarium_search.service import Service
from notarium_search.settings import Settings, SpaceConfig

if TYPE_CHECKING:
    from notarium_search.semantic.embedding import Embedder, Vectors
    from notarium_search.semantic.model_config import ModelConfig

ROOT = Path(__file__).resolve().parents[1]
COLLECTIONS = {"piaf-fr": "fr", "cranfield": "en"}  # collection → its language
LANGUAGES = ("fr", "en")  # the auto space's, the fallback first (the default)
MIXED = "mixed"
ACCEPTANCE = 0.99  # auto / alone, each collection, each mode
DETECTION_ACCEPTANCE_PCT = 99.0
SMOKE_LIMIT = 20
WORST = 5  # queries listed where auto loses most against alone
TIMING_PASSES = 3  # note_language over every note, each note's fastest pass kept


@dataclass(frozen=True)
class Config:
    label: str  # auto, fr, en (the mixed space) or alone (a baseline)
    space: str  # the space's name, and its index folder
    language: str
    collections: tuple[str, ...]


CONFIGS = (
    Config("auto", MIXED, "auto", tuple(COLLECTIONS)),
    Config("fr", MIXED, "fr", tuple(COLLECTIONS)),
    Config("en", MIXED, "en", tuple(COLLECTIONS)),
    *(Config("alone", name, language, (name,)) for name, language in COLLECTIONS.items()),
)


class QueryCache:
    """The embedder, each query embedded once for every configuration (same
    model, same text: same vector); anything else is the embedder's."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.vectors: dict[str, Vectors] = {}

    @property
    def config(self) -> ModelConfig:
        return self.inner.config

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return self.inner.embed_passages(texts)

    def embed_query(self, text: str) -> Vectors:
        if text not in self.vectors:
            self.vectors[text] = self.inner.embed_query(text)
        return self.vectors[text]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def derive(source: Path, name: str, dest: Path, limit: int | None) -> Path:
    """The collection with every id prefixed `name/` (so its notes land in
    folder `name/`); with `limit`, its first `limit` judged questions, the
    documents they judge relevant and the first `limit` documents."""
    queries, qrels = load_judgments(source)
    if limit is not None:
        queries = dict(list(queries.items())[:limit])
    judged = {doc for qid in queries for doc in qrels[qid]}
    dest.mkdir(parents=True, exist_ok=True)
    with open(source / "corpus.jsonl", encoding="utf-8") as lines, open(dest / "corpus.jsonl", "w") as out:
        for at, line in enumerate(lines):
            doc = json.loads(line)
            if limit is None or at < limit or doc["id"] in judged:
                out.write(json.dumps({**doc, "id": f"{name}/{doc['id']}"}, ensure_ascii=False) + "\n")
    rows = [json.dumps({"id": qid, "text": text}, ensure_ascii=False) for qid, text in queries.items()]
    (dest / "queries.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    grades = [f"{qid}\t{name}/{doc}\t{grade}" for qid in queries for doc, grade in qrels[qid].items()]
    (dest / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(grades) + "\n", encoding="utf-8")
    return dest


def prepare(eval_dir: Path, work: Path, limit: int | None) -> dict[str, Path]:
    """The derived collections and their notes (kept in `work` for the next run)."""
    stamp = work / "mixed_languages.json"
    if stamp.exists() and json.loads(stamp.read_text())["limit"] != limit:
        raise SystemExit(f"{work} was prepared with another --limit: use another --work")
    derived = {}
    for name in COLLECTIONS:
        derived[name] = work / "collections" / name
        if not stamp.exists():
            derive(eval_dir / name, name, derived[name], limit)
            (work / "notes" / name).mkdir(parents=True, exist_ok=True)
            write_space(derived[name], work / "notes")  # the note of id "name/doc" is name/doc.md
    stamp.write_text(json.dumps({"limit": limit}))
    return derived


def open_config(config: Config, work: Path, vectors: bool) -> tuple[Service, float]:
    """The configuration's space, its lexical index brought up to date (synchronously)."""
    space = SpaceConfig(config.space, work / "notes", config.language, languages=LANGUAGES)
    if config.space != MIXED:  # a baseline: its collection's folder alone
        space = replace(space, include=tuple(f"{c}/**/*.md" for c in config.collections))
    settings = Settings(
        spaces=(space,),
        index_dir=work / "index",
        log_level="warning",
        vector_search=vectors,
        query_embed_timeout_ms=EVAL_QUERY_EMBED_TIMEOUT_MS,
    )
    seed = work / "index" / MIXED / "vectors"
    if vectors and config.space != MIXED and seed.exists() and not (work / "index" / config.space / "vectors").exists():
        shutil.copytree(seed, work / "index" / config.space / "vectors")  # the other collection's notes are dropped
    service = Service(settings)
    started = time.perf_counter()
    service.spaces[config.space].writing.run_reconcile()
    return service, time.perf_counter() - started


def recording(rank: Ranker, top: list[list[str]], own: list[list[str]], prefix: str) -> Ranker:
    """`rank`, each query's first NDCG_DEPTH notes kept in `top`, in query order,
    and in `own` its first NDCG_DEPTH notes whose id starts with `prefix`."""

    def ranked(text: str) -> tuple[list[str], bool]:
        notes, degraded = rank(text)
        top.append(notes[:NDCG_DEPTH])
        own.append([note for note in notes if note.startswith(prefix)][:NDCG_DEPTH])
        return notes, degraded

    return ranked


def run_config(
    config: Config, work: Path, judged: dict[str, Any], model: Path | None, state: dict[str, Any]
) -> dict[str, Any]:
    """Every question of the configuration's collections, lexical (and hybrid with a model)."""
    service, seconds = open_config(config, work, model is not None)
    try:
        out: dict[str, Any] = {"space": config.space, "language": config.language, "index_seconds": round(seconds, 2)}
        out["notes"] = service.spaces[config.space].status().notes
        rankers = {"lexical": lexical_ranker(service, config.space)}
        if model is not None:
            if "embedder" not in state:
                state["embedder"] = QueryCache(load_embedder_from(model, service.settings))
                started = time.perf_counter()
                for queries, _ in judged.values():  # once, before any search: latencies exclude it
                    for text in queries.values():
                        state["embedder"].embed_query(text)
                state["query_embedding_seconds"] = round(time.perf_counter() - started, 1)
            out["embedding"] = build_vectors(service, state["embedder"].inner, config.space)
            semantic = service.spaces[config.space].semantic
            calibration = semantic.index.calibration if semantic and semantic.index else None
            out["embedding"]["calibrated_on_vectors"] = calibration.vectors if calibration else None
            service.embedder = state["embedder"]
            rankers["hybrid"] = hybrid_ranker(service, config.space)
        if config.label == "auto":
            state["payloads"] = [
                (p.id, p.language, p.text, p.frontmatter, p.code_blocks)
                for p in all_payloads(service.spaces[config.space].lexical)
            ]
        for name in config.collections:
            queries, qrels = judged[name]
            for mode, rank in rankers.items():
                top: list[list[str]] = []
                own: list[list[str]] = []
                started = time.perf_counter()
                result = score(recording(rank, top, own, f"{name}/"), queries, qrels)
                result["seconds"] = round(time.perf_counter() - started, 1)
                out.setdefault(name, {})[mode] = result
                state["top"][(name, config.label, mode)] = top
                state["own"][(name, config.label, mode)] = own
        return out
    finally:
        service.stop()


def detection(payloads: list[tuple[str, str, str, dict[str, Any], Any]], model_seconds: float) -> dict[str, Any]:
    """The language each note got against its collection's, and what detecting costs a note."""
    out: dict[str, Any] = {"model_load_ms": round(model_seconds * 1000, 1), "languages": list(LANGUAGES)}
    for name, truth in COLLECTIONS.items():
        notes = [p for p in payloads if p[0].startswith(f"{name}/")]
        wrong = [p for p in notes if p[1] != truth]
        out[name] = {
            "notes": len(notes),
            "truth": truth,
            "correct_pct": round(100 * (len(notes) - len(wrong)) / max(len(notes), 1), 3),
            "wrong": [
                {"id": p[0], "given": p[1], "letters": sum(c.isalpha() for c in p[2]), "text": p[2][:80]} for p in wrong
            ],
        }
        out[name]["meets_99"] = out[name]["correct_pct"] >= DETECTION_ACCEPTANCE_PCT
    took = [math.inf] * len(payloads)
    for _ in range(TIMING_PASSES):  # each note's best pass: the 2 cores are shared with other work
        for at, (_, _, text, frontmatter, code_blocks) in enumerate(payloads):
            started = time.perf_counter()
            note_language(frontmatter, text, code_blocks, LANGUAGES)
            took[at] = min(took[at], (time.perf_counter() - started) * 1000)
    out["per_note_ms"] = {
        "notes": len(took),
        "passes": TIMING_PASSES,
        "median": round(statistics.median(took), 4) if took else None,
        "mean": round(statistics.fmean(took), 4) if took else None,
        "p99": round(sorted(took)[int(0.99 * (len(took) - 1))], 4) if took else None,
        "total_ms": round(sum(took), 1),
    }
    return out


def package_digest() -> dict[str, str]:
    """Where notarium_search was imported from, and a digest of its sources: the
    figures of an uncommitted tree are tied to the code they measured."""
    import notarium_search

    root = Path(notarium_search.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return {"path": str(root), "sha256": digest.hexdigest()[:16]}


def first_detection() -> float:
    """Seconds of the process's first detection: importing py3langid and reading its model."""
    started = time.perf_counter()
    note_language({}, "Le modèle est lu une seule fois par processus, au premier besoin. " * 2, (), LANGUAGES)
    return time.perf_counter() - started


def comparison(
    runs: dict[str, Any], judged: dict[str, Any], top: dict[Any, list[list[str]]], own: dict[Any, list[list[str]]]
) -> dict[str, Any]:
    """Per collection and mode: each configuration against alone, the ratio auto/alone,
    the other collection's share of the mixed top 10 and of the first hits, the
    score once its notes are taken out, and the questions auto loses most."""
    out: dict[str, Any] = {}
    for name in COLLECTIONS:
        queries, qrels = judged[name]
        for mode in ("lexical", "hybrid"):
            if mode not in runs["alone"][name]:
                continue
            alone = runs["alone"][name][mode]["ndcg@10"]
            row: dict[str, Any] = {"alone": alone}
            for label in ("auto", "fr", "en"):
                value = runs[label][name][mode]["ndcg@10"]
                row[label] = value
                row[f"{label}/alone"] = round(value / alone, 4) if alone else None
                hits = [note for notes in top[(name, label, mode)] for note in notes]
                row[f"{label}_other_collection_in_top10_pct"] = round(
                    100 * sum(not h.startswith(f"{name}/") for h in hits) / max(len(hits), 1), 2
                )
                firsts = [notes[0] for notes in top[(name, label, mode)] if notes]
                row[f"{label}_other_collection_first_pct"] = round(
                    100 * sum(not h.startswith(f"{name}/") for h in firsts) / max(len(queries), 1), 2
                )
                # the other collection's notes taken out: what is left is the order of its own
                owns = [ndcg(notes, qrels[qid]) for qid, notes in zip(queries, own[(name, label, mode)], strict=True)]
                row[f"{label}_without_other_collection"] = round(statistics.fmean(owns), 4)
            row["auto_meets_acceptance"] = alone == 0 or row["auto"] >= ACCEPTANCE * alone
            per_query = []
            for qid, auto_top, alone_top in zip(
                queries, top[(name, "auto", mode)], top[(name, "alone", mode)], strict=True
            ):
                gains = qrels[qid]
                per_query.append((ndcg(auto_top, gains) - ndcg(alone_top, gains), qid, auto_top, alone_top))
            row["queries_worse"] = sum(d < -1e-9 for d, *_ in per_query)
            row["queries_better"] = sum(d > 1e-9 for d, *_ in per_query)
            row["worst"] = [
                {
                    "qid": qid,
                    "text": queries[qid],
                    "delta": round(d, 4),
                    "auto_top3": a[:3],
                    "alone_top3": b[:3],
                    "relevant": sorted(qrels[qid])[:5],
                }
                for d, qid, a, b in sorted(per_query, key=lambda x: x[0])[:WORST]
                if d < 0
            ]
            out.setdefault(name, {})[mode] = row
    return out


def table(result: dict[str, Any]) -> str:
    head = f"{'collection':<10} {'mode':<8} {'alone':>7} {'auto':>7} {'fr':>7} {'en':>7} {'auto/alone':>10}  ok"
    lines = [head + "  auto without the other collection"]
    for name, modes in result["comparison"].items():
        for mode, row in modes.items():
            lines.append(
                f"{name:<10} {mode:<8} {row['alone']:>7.4f} {row['auto']:>7.4f} {row['fr']:>7.4f} {row['en']:>7.4f}"
                f" {row['auto/alone']:>10.4f}  {'yes' if row['auto_meets_acceptance'] else 'NO ':<3}"
                f"  {row['auto_without_other_collection']:.4f}"
            )
    det = result["detection"]
    for name, truth in COLLECTIONS.items():
        lines.append(
            f"detection {name}: {det[name]['correct_pct']} % given {truth!r} ({len(det[name]['wrong'])} wrong)"
        )
    cost = det["per_note_ms"]
    lines.append(
        f"note_language: median {cost['median']} ms/note, mean {cost['mean']}, total {cost['total_ms']} ms over"
        f" {cost['notes']} notes; first call (model load) {det['model_load_ms']} ms"
    )
    return "\n".join(lines)


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    started = time.perf_counter()
    model_seconds = first_detection()  # before anything else reads the model
    derived = prepare(args.eval_dir, work, args.limit)
    judged = {name: load_judgments(path) for name, path in derived.items()}
    state: dict[str, Any] = {"top": {}, "own": {}}
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "code": code_version(),
        "package": package_digest(),
        "model": args.model.name if args.model else None,
        "limit": args.limit,
        "load_average_at_start": load_average(),
        "questions": {name: len(queries) for name, (queries, _) in judged.items()},
        "runs": {},
    }
    for config in CONFIGS:
        print(f"{config.label} ({config.space}, {config.language})…", file=sys.stderr, flush=True)
        done = run_config(config, work, judged, args.model, state)
        runs = result["runs"].setdefault(config.label, {})
        runs.update({key: value for key, value in done.items() if key in COLLECTIONS})
        runs.setdefault("spaces", {})[config.space] = {k: v for k, v in done.items() if k not in COLLECTIONS}
    result["query_embedding_seconds"] = state.get("query_embedding_seconds")
    result["comparison"] = comparison(result["runs"], judged, state["top"], state["own"])
    result["detection"] = detection(state["payloads"], model_seconds)
    result["load_average_at_end"] = load_average()
    result["elapsed_seconds"] = round(time.perf_counter() - started, 1)
    return result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_eval = Path(os.environ.get("NOTARIUM_EVAL_DIR", ROOT.parent / "shared" / "eval"))
    parser.add_argument("--eval-dir", type=Path, default=default_eval, help="holds piaf-fr/ and cranfield/")
    parser.add_argument("--model", type=Path, metavar="DIR", help="embedding pack: also score hybrid")
    parser.add_argument("--limit", type=int, metavar="N", help="the first N judged questions of each collection")
    parser.add_argument("--smoke", action="store_true", help=f"--limit {SMOKE_LIMIT}")
    parser.add_argument("--work", type=Path, help="keep notes and indexes here (one folder per --limit)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    if args.smoke and args.limit is None:
        args.limit = SMOKE_LIMIT
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    configure_logging("warning")
    with tempfile.TemporaryDirectory() as tmp:
        result = run(args, args.work or Path(tmp))
    print(table(result))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
