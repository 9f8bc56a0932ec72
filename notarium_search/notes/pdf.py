"""PDFs as notes: each page's text, each page a section ("page 3").

What is read (docs/notes.md, "PDFs"): the text layer of each page, as PDFium
extracts it; the title from the document's metadata, else the file name; its
author, subject and keywords as the note's properties. A hit says its page:
its `heading` and `anchor` are "page N", its `line` the page number and its
`column` the column in that page's line of text; `open_url` opens the page
where the editor can (Obsidian: `paper.pdf#page=3`, `link_text`).

PDFium is C code reading hostile input: it runs in a child process
(notes/pdf_pages.py) that a crash, a deadline or an allocation past its
address-space limit takes down alone. The writer waits for its answer, never
past `deadline(size)`; then the child is killed, the next document gets a
new one, and this one is skipped until it changes, with its reason in status.
An encrypted, broken or image-only PDF is skipped with its reason too
("encrypted: it needs a password", "no text layer"). So `read` does no file
I/O, but it is not pure the way Markdown's is: it talks to that child.
"""

from __future__ import annotations

import posixpath
import re
from datetime import datetime
from typing import Any

from notarium_search.logsetup import get_logger
from notarium_search.notes.parse import MAX_TITLE_CHARS, NotANote, clean_frontmatter, file_stem, nfc
from notarium_search.notes.pdf_pages import MAX_TEXT_CHARS
from notarium_search.settings import PAGE_CHUNKING
from notarium_search.types import ParsedNote

log = get_logger(__name__)

VERSION = 1  # bump when what `read` makes of some PDF changes: every space is rebuilt
# Whole files only (a cut PDF has no cross-reference table): a 300-page scanned
# book with its text layer is 20-60 MB; past this it is an archive of images.
MAX_PDF_BYTES = 64 * 2**20
# Pages read of one document: past a 2,000-page book the rest is listed in its
# warning; a 5,000-page PDF reads in ~4 s (tests/notes/test_pdf.py).
MAX_PAGES = 2_000
# Processor seconds a document may take, by its size (the child's RLIMIT_CPU:
# notes/pdf_child.py): a 5,000-page document of text read its 2,000 pages in
# 0.1 s here, a page of 50 MB of drawing in 3 s; a 64 MB document gets 74 s.
DEADLINE_SECONDS = 10.0
DEADLINE_SECONDS_PER_MIB = 1.0
PAGE_HEADING = "page {}"
_PAGE_RE = re.compile(r"page (\d+)")
# Control characters PDFium gives for layout (form feed, vertical tab…) but
# tabs and line ends; a NUL would end the lexical index's text.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")
# Markdown's inline syntax, escaped in `shown` so that a PDF's `*` or `[[`
# are shown as written (and a `<` as text, before nh3 even sees it).
_MARKDOWN_INLINE_RE = re.compile(r"([\\`*_\[\]<>|~=$%^!#&])")
# A line's start: a list marker, a thematic break or a setext underline (`-`,
# `+`), an ordered list's number. Its indent is dropped (four blanks: code).
_MARKDOWN_BLOCK_RE = re.compile(r"^[ \t]*([-+]|\d+)([.)]?)", re.M)
_INDENT_RE = re.compile(r"^[ \t]+", re.M)
# A request (the note view) waits this long for a PDFium process, then says
# the note cannot be shown now rather than holding a server thread.
SHOWN_WAIT_SECONDS = 5.0


def deadline(size: int) -> int:
    """The processor seconds a document of `size` bytes may take to read."""
    return int(DEADLINE_SECONDS + DEADLINE_SECONDS_PER_MIB * size / 2**20)


def extract(raw: bytes, *, max_pages: int = MAX_PAGES, wait: float | None = None) -> dict[str, Any]:
    """A child's reading of a PDF (metadata, each page's text up to the
    bounds); `NotANote` with the reason for a PDF with no text to index,
    `ReadLater` when it could not be read now (notes/pdf_child.py)."""
    if not raw.lstrip(b"\x00\t\n\f\r ").startswith(b"%PDF-") and b"%PDF-" not in raw[:1024]:
        raise NotANote("not a PDF (no %PDF- header)")
    # The PDFium processes' module (subprocess, selectors, signals) when a PDF
    # is read: the format's registration alone (a search from the shell) needs none of it.
    from notarium_search.notes import pdf_child

    answer = pdf_child.ask(raw, (max_pages, MAX_TEXT_CHARS, deadline(len(raw))), wait=wait)
    if "error" in answer:
        if answer.get("encrypted"):
            raise NotANote("encrypted: it needs a password")
        raise NotANote(f"not a readable PDF: {answer['error']}")
    return answer


def _clean(text: str) -> str:
    return nfc(_CONTROL_RE.sub(" ", text.replace("\r\n", "\n").replace("\r", "\n"))).strip()


class PdfFormat:
    """The PDF note format (notes/formats.py's `NoteFormat`)."""

    name = "pdf"
    suffixes = (".pdf",)
    version = VERSION
    max_bytes = MAX_PDF_BYTES

    def read(self, raw: bytes, path: str, mtime: datetime, *, truncated: bool = False) -> ParsedNote:
        answer = extract(raw)
        pages = [_clean(str(page)) for page in answer.get("pages", [])]
        if not any(pages):
            raise NotANote("no text layer (an image-only or scanned PDF: no OCR here)")
        text, sections, lines = _layout(pages)
        warnings = []
        count = int(answer.get("page_count", len(pages)))
        if count > len(pages) and not answer.get("cut"):
            warnings.append(f"only the first {len(pages)} of {count} pages read")
        if len(text) > MAX_TEXT_CHARS or answer.get("cut"):
            warnings.append(f"only the first {MAX_TEXT_CHARS} characters of its text read")
            text = text[:MAX_TEXT_CHARS]
            sections = [s for s in sections if s[0] < MAX_TEXT_CHARS]
            lines = [anchor for anchor in lines if anchor[0] < MAX_TEXT_CHARS]
        stem = file_stem(path)
        title = _clean(str(answer.get("title", ""))).replace("\n", " ")
        properties = {k: _clean(str(answer.get(k, ""))) for k in ("author", "subject", "keywords")}
        return ParsedNote(
            id=path,
            path=path,
            title=(title or stem)[:MAX_TITLE_CHARS],
            tags=(),
            folder=posixpath.dirname(path),
            created=mtime,
            updated=mtime,
            headings=(),
            links=(),
            text=text,
            warnings=tuple(warnings),
            sections=tuple(sections),
            frontmatter=clean_frontmatter({k: v for k, v in properties.items() if v} | {"pages": count}),
            lines=tuple(lines),
            chunking=PAGE_CHUNKING,  # a semantic hit says its page: no fragment spans two
        )

    def shown(self, raw: bytes, path: str, *, truncated: bool = False) -> str:
        pages = [_clean(str(page)) for page in extract(raw, wait=SHOWN_WAIT_SECONDS).get("pages", [])]
        return "\n\n".join(f"## {PAGE_HEADING.format(n)}\n\n{_escaped(page)}" for n, page in enumerate(pages, 1))

    def link_text(self, path: str, heading: str) -> str:
        page = _PAGE_RE.fullmatch(heading)
        return f"{path}#page={page.group(1)}" if page else path


def _layout(pages: list[str]) -> tuple[str, list[tuple[int, int, str]], list[tuple[int, int, int]]]:
    """The pages as one text, each a section, each of its lines anchored at
    (its page, column 1): a place's `line` is its page."""
    parts: list[str] = []
    sections: list[tuple[int, int, str]] = []
    lines: list[tuple[int, int, int]] = []
    at = 0
    for number, page in enumerate(pages, 1):
        if not page:
            continue
        sections.append((at, 1, PAGE_HEADING.format(number)))
        for line in page.split("\n"):
            lines.append((at, number, 1))
            at += len(line) + 1
        parts.append(page)
        at += 1  # the blank line between two pages
    return "\n\n".join(parts), sections, lines


def _escaped(text: str) -> str:
    """A page's text as Markdown that shows it as written."""
    text = _MARKDOWN_INLINE_RE.sub(r"\\\1", _INDENT_RE.sub("", text))
    text = _MARKDOWN_BLOCK_RE.sub(_escaped_marker, text)
    return text.replace("\n", "  \n")


def _escaped_marker(match: re.Match[str]) -> str:
    """`- x` → `\\- x`, `3. x` → `3\\. x`: a list marker shown as written."""
    marker, dot = match.groups()
    if dot:
        return f"{marker}\\{dot}"
    return f"\\{marker}" if not marker.isdigit() else match.group()


PDF = PdfFormat()
