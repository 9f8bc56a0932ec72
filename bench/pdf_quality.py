"""PDFs beside Markdown (issue 32): the same documents, the same queries.

Writes the documents of a judged collection (cranfield) twice, each into its
own space: as Markdown notes exactly as bench/eval_collection.py writes them,
and as PDFs written here with fpdf2 (the DejaVu Unicode font, the title as
the document's metadata title and as its first line, every third document in
two columns). Each space is indexed by the real pipeline in its own process
(so that the peak memories are apart), then scored by nDCG@10 through the
lexical channel alone and through `Service.search` (hybrid, with an embedding
pack). A PDF's note id is its path (`123.pdf`): mapped back to the document id
before scoring.

    python -m bench.pdf_quality ../shared/eval/cranfield \\
        --model ../shared/models/all-minilm-l6-v2-int8 [--limit N] [--json]

Indexing is timed by `build` (the reconcile pass: reading, parsing, the lexical
index; with --model its fragments planned too): wall seconds, pages/s for the
PDFs (pages = every page written), notes/s for Markdown. Peak memory: the
indexing process's peak RSS (VmHWM) right after indexing (before the model is
loaded), and for the PDFs the largest PDFium child's (its VmHWM, read before
the idle children are stopped). `--limit N` keeps the first N documents and
the queries with at least one judged document among them (judgments on the
others left out). Without --model only the lexical channel is scored.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.eval_collection import (
    SPACE,
    Ranker,
    build,
    build_vectors,
    hybrid_ranker,
    lexical_ranker,
    load_average,
    load_embedder_from,
    load_judgments,
    score,
    write_space,
)
from bench.perf_lexical import code_version
from notarium_search.logsetup import configure_logging
from notarium_search.settings import RankingConfig

FORMATS = ("markdown", "pdf")
FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
FONT_SIZE = 11
LINE_HEIGHT = 5.5  # mm
TWO_COLUMNS_EVERY = 3  # every third document in two columns
PDF_SUFFIX = ".pdf"


def subset(collection: Path, out: Path, limit: int | None) -> Path:
    """The first `limit` documents of `collection` as a collection of its own
    (corpus, queries, qrels), for eval_collection's writer and loader; the
    collection itself when there is no limit."""
    if limit is None:
        return collection
    out.mkdir(parents=True, exist_ok=True)
    lines = (collection / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:limit]
    (out / "corpus.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    kept = {json.loads(line)["id"] for line in lines}
    queries, qrels = load_judgments(collection)
    with open(out / "qrels.tsv", "w", encoding="utf-8") as handle:
        handle.write("query-id\tcorpus-id\tscore\n")
        for qid, gains in qrels.items():
            for did, gain in gains.items():
                if did in kept:
                    handle.write(f"{qid}\t{did}\t{gain}\n")
    judged = {qid for qid, gains in qrels.items() if kept & set(gains)}
    rows = [json.dumps({"id": qid, "text": text}) + "\n" for qid, text in queries.items() if qid in judged]
    (out / "queries.jsonl").write_text("".join(rows), encoding="utf-8")
    return out


def write_pdf(path: Path, title: str, text: str, *, two_columns: bool) -> int:
    """One document as a PDF: the title as metadata and as the first line, then
    the text, in one column or two. Returns its page count."""
    from fpdf import FPDF

    document = FPDF(format="A4")
    document.set_title(title)
    document.add_font("DejaVu", fname=str(FONT))
    document.set_font("DejaVu", size=FONT_SIZE)
    document.set_auto_page_break(auto=True, margin=15)
    document.add_page()
    document.multi_cell(0, LINE_HEIGHT, title, new_x="LMARGIN", new_y="NEXT")
    document.ln(LINE_HEIGHT)
    if two_columns:
        with document.text_columns(ncols=2) as columns:
            columns.write(text)
    else:
        document.multi_cell(0, LINE_HEIGHT, text, new_x="LMARGIN", new_y="NEXT")
    document.output(str(path))
    return int(document.pages_count)


def write_pdf_space(collection: Path, notes_dir: Path) -> dict[str, int]:
    """One PDF per document, named by its id as the Markdown note is."""
    notes_dir.mkdir(parents=True, exist_ok=True)
    documents = pages = two_columns = 0
    with open(collection / "corpus.jsonl", encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            doc = json.loads(line)
            columns = number % TWO_COLUMNS_EVERY == TWO_COLUMNS_EVERY - 1
            title = doc.get("title") or doc["id"]
            pages += write_pdf(notes_dir / f"{doc['id']}{PDF_SUFFIX}", title, doc["text"], two_columns=columns)
            documents += 1
            two_columns += columns
    return {"documents": documents, "pages": pages, "two_columns": two_columns}


def document_ids(rank: Ranker) -> Ranker:
    """A ranker answering document ids: a PDF note's id is its path (`123.pdf`)."""

    def ranked(text: str) -> tuple[list[str], bool]:
        ids, degraded = rank(text)
        return [i.removesuffix(PDF_SUFFIX) for i in ids], degraded

    return ranked


def peak_rss_mib(pid: int | str = "self") -> float | None:
    """A process's peak resident memory: VmHWM, its address space's high-water
    mark. Not ru_maxrss: that one keeps, across exec, the peak of the process
    it was forked from (here the parent that wrote 100 MiB of PDFs), so it
    reports the spawner's RSS when that is larger than the child's own."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def pdf_children_peak_rss_mib() -> float | None:
    """The largest peak of the PDFium children still alive (the idle ones kept
    between documents), read before they are stopped."""
    from notarium_search.notes import pdf_child

    children = list(pdf_child.CHILDREN._idle)
    peaks = [peak_rss_mib(child.process.pid) for child in children if child.alive]
    pdf_child.CHILDREN.stop()
    found = [peak for peak in peaks if peak is not None]
    return max(found) if found else None


def write_side(kind: str, collection: Path, notes: Path) -> dict[str, Any]:
    """One format's space written (by the calling process, not the indexing one)."""
    started = time.perf_counter()
    if kind == "pdf":
        written = write_pdf_space(collection, notes)
    else:
        written = {"documents": write_space(collection, notes), "pages": 0, "two_columns": 0}
    return written | {"write_seconds": round(time.perf_counter() - started, 2)}


def run_side(kind: str, collection: Path, work: Path, model: Path | None) -> dict[str, Any]:
    """One format's space (written by `write_side` into `work`) indexed and scored,
    in the process that calls it."""
    written = json.loads((work / "written.json").read_text(encoding="utf-8"))
    load = load_average()
    service, seconds = build(collection, work, "en", RankingConfig(), vector_search=model is not None)
    try:
        status = service.spaces[SPACE].status()
        rss = peak_rss_mib()
        child_rss = pdf_children_peak_rss_mib() if kind == "pdf" else None
        queries, qrels = load_judgments(collection)
        result: dict[str, Any] = {
            "format": kind,
            "documents": written["documents"],
            "pages": written["pages"] or None,
            "two_column_documents": written["two_columns"] or None,
            "indexed_notes": status.notes,
            "skipped_notes": status.skipped,
            "write_seconds": written["write_seconds"],
            "index_seconds": round(seconds, 2),
            "notes_per_second": round(written["documents"] / seconds, 1),
            "pages_per_second": round(written["pages"] / seconds, 1) if written["pages"] else None,
            "peak_rss_mib": rss,
            "pdf_child_peak_rss_mib": child_rss,
            "load_average_at_start": load,
            "queries": len(queries),
            "runs": {"lexical": score(document_ids(lexical_ranker(service, SPACE)), queries, qrels)},
        }
        if model is not None:
            embedder = load_embedder_from(model, service.settings)
            result["embedding"] = build_vectors(service, embedder)
            result["runs"]["hybrid"] = score(document_ids(hybrid_ranker(service, SPACE)), queries, qrels)
            result["peak_rss_with_model_mib"] = peak_rss_mib()
        return result
    finally:
        service.stop()


def run(collection: Path, work: Path, model: Path | None, limit: int | None) -> dict[str, Any]:
    """Both formats, each in a process of its own, one after the other."""
    source = subset(collection, work / "collection", limit)
    sides: dict[str, dict[str, Any]] = {}
    for kind in FORMATS:
        written = write_side(kind, source, work / kind / "notes" / SPACE)
        (work / kind / "written.json").write_text(json.dumps(written), encoding="utf-8")
        command = [sys.executable, "-m", "bench.pdf_quality", "--side", kind, str(source), "--work", str(work / kind)]
        if model is not None:
            command += ["--model", str(model)]
        done = subprocess.run(
            command, capture_output=True, text=True, check=False, cwd=Path(__file__).resolve().parents[1]
        )
        if done.returncode != 0:
            raise RuntimeError(f"the {kind} side failed ({done.returncode}):\n{done.stderr[-4000:]}")
        sides[kind] = json.loads(done.stdout.strip().splitlines()[-1])
    difference = {
        mode: round(sides["pdf"]["runs"][mode]["ndcg@10"] - sides["markdown"]["runs"][mode]["ndcg@10"], 4)
        for mode in sides["pdf"]["runs"]
    }
    return {
        "collection": collection.name,
        "limit": limit,
        "model": model.name if model is not None else None,
        "code": code_version(),
        "sides": sides,
        "ndcg@10_pdf_minus_markdown": difference,
    }


def table(result: dict[str, Any]) -> str:
    """The figures, one row per format, then the difference."""
    head = (
        "| format | docs | pages | index s | pages/s | notes/s | peak RSS MiB (indexer / PDF child) "
        "| nDCG@10 lexical | nDCG@10 hybrid |"
    )
    rows = [head, "|" + "---|" * 9]
    for kind in FORMATS:
        side = result["sides"][kind]
        runs = side["runs"]
        hybrid = f"{runs['hybrid']['ndcg@10']:.4f}" if "hybrid" in runs else "—"
        child = side["pdf_child_peak_rss_mib"]
        pages = f"{side['pages']:,}" if side["pages"] else "—"
        rows.append(
            f"| {kind} | {side['documents']:,} | {pages} | {side['index_seconds']} "
            f"| {side['pages_per_second'] or '—'} | {side['notes_per_second']} "
            f"| {side['peak_rss_mib']} / {child if child is not None else '—'} "
            f"| {runs['lexical']['ndcg@10']:.4f} | {hybrid} |"
        )
    diff = result["ndcg@10_pdf_minus_markdown"]
    hybrid_diff = f"{diff['hybrid']:+.4f}" if "hybrid" in diff else "—"
    rows.append(f"| PDF − Markdown | | | | | | | {diff['lexical']:+.4f} | {hybrid_diff} |")
    return "\n".join(rows)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("collection", type=Path)
    parser.add_argument("--model", type=Path, metavar="DIR", help="embedding pack: also score hybrid")
    parser.add_argument("--limit", type=int, help="the first N documents only")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--work", type=Path, help="keep the spaces and indexes here")
    parser.add_argument("--side", choices=FORMATS, help=argparse.SUPPRESS)  # one format, in this process
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    configure_logging("warning")
    if args.side is not None:
        side = run_side(args.side, args.collection, args.work, args.model)
        print(json.dumps(side))
        return side
    with tempfile.TemporaryDirectory() as tmp:
        result = run(args.collection, args.work or Path(tmp), args.model, args.limit)
    print(json.dumps(result) if args.json else table(result))
    return result


if __name__ == "__main__":
    main()
