"""The child process that reads PDFs with PDFium (`python -m notarium_search.notes.pdf_pages`).

PDFium is C code: a document built to crash it, or to make it allocate
without end, must take down this process only, never the writer that asked
(notes/pdf.py starts it, kills it past a document's deadline and starts
another). It reads requests on stdin and answers on stdout, one at a time:
a request is an 8-byte big-endian length, then the PDF's bytes, then its
bounds (REQUEST: pages, characters, processor seconds); an answer an 8-byte
length, then JSON: `{"title", "author", "subject", "keywords", "page_count",
"pages": [text…], "cut": bool}` or `{"error": "…", "encrypted": bool}`.

It imports nothing of the package but this module (a fast start), and bounds
itself: its address space, so that a page asking for gigabytes fails here;
and its processor time for each document (RLIMIT_CPU, whose SIGXCPU ends
it: the parent reads that end as "took too long"). So a child whose parent
died mid-document stops at that budget at the latest, and at stdin's end
between documents. (Not PR_SET_PDEATHSIG: it fires when the *thread* that
started the child ends, and a pooled child outlives the request thread
that started it.)
"""

from __future__ import annotations

import json
import resource
import struct
import sys
from typing import Any, BinaryIO

# The child's address space. PDFium keeps a page's objects and a text page in
# memory; a 5,000-page document of text read page by page stays under 300 MB,
# and a page whose content stream is 50 MB under 1 GB (tests/notes/test_pdf.py).
# A document asking for more fails here with a MemoryError or a PDFium error.
MAX_ADDRESS_SPACE = 3 * 2**30
# Characters kept of one page: a page of text holds 2,000-6,000; past this
# it is data drawn as text (a table of numbers, a font test sheet).
MAX_PAGE_CHARS = 100_000
# Characters kept of one document, as max_file_bytes bounds a Markdown note
# (notes/pdf.py asks for them; the child stops reading pages past them).
MAX_TEXT_CHARS = 4_000_000
HEADER = struct.Struct(">Q")
REQUEST = struct.Struct(">QQQ")  # pages, characters, processor seconds


def read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    """`size` bytes of the stream; None at its end."""
    chunks: list[bytes] = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def extract(raw: bytes, max_pages: int, max_chars: int = 2**62) -> dict[str, Any]:
    """The text of the PDF in `raw`, page by page up to `max_pages` pages or
    `max_chars` characters (`cut` then), and its metadata."""
    import pypdfium2 as pdfium  # here: the parent never loads PDFium

    try:
        document = pdfium.PdfDocument(raw)
    except pdfium.PdfiumError as exc:
        message = str(exc)
        return {"error": message, "encrypted": "password" in message.lower()}
    try:
        meta = document.get_metadata_dict(skip_empty=True)
        count = len(document)
        pages: list[str] = []
        chars = 0
        for index in range(min(count, max_pages)):
            if chars >= max_chars:
                break
            page = document[index]
            try:
                textpage = page.get_textpage()
                try:
                    pages.append(textpage.get_text_bounded()[:MAX_PAGE_CHARS])
                    chars += len(pages[-1])
                finally:
                    textpage.close()
            finally:
                page.close()
        return {
            "title": meta.get("Title", ""),
            "author": meta.get("Author", ""),
            "subject": meta.get("Subject", ""),
            "keywords": meta.get("Keywords", ""),
            "page_count": count,
            "pages": pages,
            "cut": chars >= max_chars,
        }
    finally:
        document.close()


def serve(requests: BinaryIO, answers: BinaryIO) -> None:
    """Answer requests until stdin ends."""
    while True:
        head = read_exactly(requests, HEADER.size)
        if head is None:
            return
        raw = read_exactly(requests, HEADER.unpack(head)[0])
        bounds = read_exactly(requests, REQUEST.size)
        if raw is None or bounds is None:
            return
        max_pages, max_chars, cpu_seconds = REQUEST.unpack(bounds)
        limit_processor_time(cpu_seconds)
        try:
            answer = extract(raw, max_pages, max_chars)
        except MemoryError:
            answer = {"error": "needs more memory than a document may have", "encrypted": False}
        except Exception as exc:  # noqa: BLE001 - a PDFium failure past the opening: one sentence for status
            answer = {"error": f"{type(exc).__name__}: {exc}"[:300], "encrypted": False}
        data = json.dumps(answer, ensure_ascii=False).encode("utf-8", "surrogatepass")
        answers.write(HEADER.pack(len(data)) + data)
        answers.flush()


def limit_processor_time(seconds: int) -> None:
    """SIGXCPU once this document has had `seconds` of processor time (the
    limit counts from the process's start: what it used so far is added)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(used.ru_utime + used.ru_stime) + max(seconds, 1)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.getrlimit(resource.RLIMIT_CPU)[1]))


def main() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MAX_ADDRESS_SPACE, MAX_ADDRESS_SPACE))
    serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()
