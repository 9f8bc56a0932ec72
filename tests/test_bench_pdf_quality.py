"""bench/pdf_quality.py still runs end to end (its figures are not checked here)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench import pdf_quality
from notarium_search.notes.pdf import PDF

SMOKE_DOCUMENTS = 20
MTIME = datetime(2024, 1, 1, tzinfo=UTC)


def _cranfield() -> Path:
    path = Path(os.environ.get("NOTARIUM_EVAL_DIR", "../shared/eval")) / "cranfield"
    if not (path / "corpus.jsonl").is_file():
        pytest.skip(f"no cranfield collection at {path}")
    return path


@pytest.mark.slow
def test_pdf_quality_smoke(tmp_path: Path) -> None:
    """Lexical only, 20 documents: both spaces index every document, the table has both rows."""
    result = pdf_quality.main([str(_cranfield()), "--limit", str(SMOKE_DOCUMENTS), "--work", str(tmp_path)])
    assert set(result["sides"]) == set(pdf_quality.FORMATS)
    for side in result["sides"].values():
        assert side["documents"] == SMOKE_DOCUMENTS
        assert side["indexed_notes"] == SMOKE_DOCUMENTS
        assert side["skipped_notes"] == 0
        assert side["queries"] > 0
        assert 0 <= side["runs"]["lexical"]["ndcg@10"] <= 1
        assert side["peak_rss_mib"] > 0
    pdf = result["sides"]["pdf"]
    assert pdf["pages"] >= SMOKE_DOCUMENTS
    assert pdf["two_column_documents"] == SMOKE_DOCUMENTS // pdf_quality.TWO_COLUMNS_EVERY
    assert pdf["pdf_child_peak_rss_mib"] > 0
    assert set(result["ndcg@10_pdf_minus_markdown"]) == {"lexical"}
    assert "| PDF − Markdown |" in pdf_quality.table(result)


@pytest.mark.parametrize("two_columns", [False, True])
def test_written_pdf_reads_back(tmp_path: Path, two_columns: bool) -> None:
    """The bench's PDFs go through the Unicode font: accents and the title come back from PDFium."""
    path = tmp_path / "doc.pdf"
    text = "l'écoulement supersonique autour d'une aile delta à forte flèche " * 30
    pages = pdf_quality.write_pdf(path, "Aérodynamique des ailes", text, two_columns=two_columns)
    note = PDF.read(path.read_bytes(), path.name, MTIME)
    assert pages == 1
    assert note.title == "Aérodynamique des ailes"
    assert note.text.startswith("Aérodynamique des ailes\n")
    assert " ".join(note.text.split()).count("forte flèche") == 30
