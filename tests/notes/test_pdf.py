"""PDFs in a space (notes/pdf.py): each page's text and its page in a hit,
links to them resolved, their pages shown, and hostile or broken documents
skipped with their reason while the rest of the vault is indexed."""

from __future__ import annotations

import io
import os
import resource
import signal
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime

import pytest
from fpdf import FPDF
from PIL import Image

from notarium_search.notes import formats, pdf, pdf_child, pdf_pages
from notarium_search.notes.parse import NotANote, ReadLater
from notarium_search.semantic.embedding import load_embedder
from notarium_search.service import Service, read_markdown
from notarium_search.types import FeedFilter
from tests.conftest import Vault, build_semantic, ids, models_dir

NO_FILTER = FeedFilter()
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # fonts-dejavu-core: .ci/run installs it
NOW = datetime(2026, 12, 4, tzinfo=UTC)


def written(pages: list[str], title: str = "", columns: int = 1) -> bytes:
    """A PDF of `pages` (text with accents: a Unicode font), as fpdf2 writes it."""
    document = FPDF()
    if title:
        document.set_title(title)
    document.add_font("dejavu", fname=DEJAVU)
    document.set_font("dejavu", size=11)
    for text in pages:
        document.add_page()
        if columns == 1:
            document.multi_cell(0, 6, text)
        else:
            with document.text_columns(ncols=columns) as cols:
                cols.write(text)
    return bytes(document.output())


def raw_pdf(objects: list[bytes]) -> bytes:
    """A PDF of these objects (1 is the catalog), with its cross-reference table:
    structures fpdf2 would never write."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def huge_page(size: int) -> bytes:
    """One page whose content stream is `size` bytes of lines drawn, and one word."""
    unit = b"0 0 m 100 100 l S\n"
    stream = b"BT /F1 12 Tf 10 10 Td (immense) Tj ET\n" + unit * (size // len(unit))
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
            b" /Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


def recursive_pages() -> bytes:
    """A page tree that holds itself (each node a kid of the other)."""
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
            b"<< /Type /Pages /Parent 2 0 R /Kids [3 0 R 2 0 R] /Count 5 >>",
        ]
    )


def encrypted() -> bytes:
    document = FPDF()
    document.add_page()
    document.set_font("helvetica")
    document.cell(text="confidentiel")
    document.set_encryption(owner_password="owner", user_password="user")  # noqa: S106 - a test document
    return bytes(document.output())


def image_only() -> bytes:
    """A scan: one page holding a picture, no text layer."""
    picture = io.BytesIO()
    Image.new("L", (200, 100), 128).save(picture, format="PNG")
    document = FPDF()
    document.add_page()
    document.image(picture, x=10, y=10, w=100)
    return bytes(document.output())


def many_pages(count: int) -> bytes:
    document = FPDF()
    document.set_font("helvetica", size=10)
    for number in range(1, count + 1):
        document.add_page()
        document.cell(text=f"feuillet{number} texte" + (" colophon" if number == count else ""))
    return bytes(document.output())


def read(raw: bytes, path: str = "doc.pdf") -> object:
    return pdf.PDF.read(raw, path, NOW)


def test_each_page_is_a_section_and_a_place_says_its_page():
    note = pdf.PDF.read(
        written(["Introduction générale.\nLes coûts de l'énergie.", "La réplication logique fonctionne."], "Rapport"),
        "docs/rapport-2024.pdf",
        NOW,
    )
    assert note.title == "Rapport"  # the document's metadata
    assert note.id == note.path == "docs/rapport-2024.pdf"
    assert note.folder == "docs"
    assert note.text == "Introduction générale.\nLes coûts de l'énergie.\n\nLa réplication logique fonctionne."
    at = note.text.index("réplication")
    assert [(heading, offset <= at) for offset, _, heading in note.sections] == [("page 1", True), ("page 2", True)]
    from notarium_search.notes.location import heading_path, line_and_column, pack, unpack

    assert heading_path(note.sections, at) == ("page 2",)
    assert line_and_column(unpack(pack(note.lines)), at) == (2, 4)  # page 2, column 4 of its line
    assert note.headings == ()  # "page" is no heading a query should find every PDF by
    assert (note.created, note.updated, note.created_from) == (NOW, NOW, "file")


def test_the_title_is_the_file_name_when_the_metadata_has_none():
    assert pdf.PDF.read(written(["texte"]), "Articles/Étude de cas.pdf", NOW).title == "Étude de cas"


def test_an_obsidian_link_opens_the_page():
    assert formats.link_text("docs/paper.pdf", "page 3") == "docs/paper.pdf#page=3"
    assert formats.link_text("docs/paper.pdf", "") == "docs/paper.pdf"
    assert formats.link_text("docs/note.md", "Intro") == "docs/note#Intro"


def test_a_page_is_shown_as_written():
    """The note view renders `shown` as Markdown: a PDF's `*`, `[[`, `<b>` or
    `1.` are text, not emphasis, links, HTML or lists."""
    shown = pdf.PDF.shown(
        written(["1. *pas* [[lien]] <b>", "- deux # trois &lt;i&gt;\nTitre\n-----\n    code"]), "x.pdf"
    )
    assert shown == (
        "## page 1\n\n1\\. \\*pas\\* \\[\\[lien\\]\\] \\<b\\>\n\n"
        "## page 2\n\n\\- deux \\# trois \\&lt;i\\&gt;  \nTitre  \n\\-----  \ncode"
    )


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"%PDF-1.7\n" + b"x" * 1000, "not a readable PDF"),
        (b"Juste du texte", "not a PDF"),
        (encrypted(), "encrypted: it needs a password"),
        (image_only(), "no text layer"),
        (recursive_pages(), "not a readable PDF"),
    ],
    ids=["garbage", "not_pdf", "encrypted", "image_only", "recursive"],
)
def test_a_pdf_with_no_text_to_index_is_refused_with_its_reason(raw: bytes, reason: str):
    with pytest.raises(NotANote, match=reason):
        read(raw)


def test_a_truncated_pdf_is_refused():
    whole = written(["Un texte assez long pour un document coupé. " * 40] * 3)
    with pytest.raises(NotANote, match="not a readable PDF"):
        read(whole[: len(whole) // 2])


def test_a_long_document_is_read_up_to_its_page_bound(monkeypatch: pytest.MonkeyPatch):
    note = pdf.PDF.read(many_pages(pdf.MAX_PAGES + 3), "long.pdf", NOW)
    assert note.warnings == (f"only the first {pdf.MAX_PAGES} of {pdf.MAX_PAGES + 3} pages read",)
    assert f"feuillet{pdf.MAX_PAGES} " in note.text
    assert f"feuillet{pdf.MAX_PAGES + 1} " not in note.text
    assert note.frontmatter["pages"] == pdf.MAX_PAGES + 3


@pytest.fixture
def child() -> Iterator[pdf_child._Child]:
    started = pdf_child._Child()
    try:
        yield started
    finally:
        started.kill()


BOUNDS = (10, 10_000, 60)  # pages, characters, processor seconds


@pytest.mark.parametrize(
    ("sent", "error", "reason"),
    [
        (signal.SIGSEGV, NotANote, r"PDFium crashed reading it \(SIGSEGV\): skipped until the file changes"),
        (signal.SIGABRT, NotANote, r"PDFium crashed reading it \(SIGABRT\)"),
        (signal.SIGXCPU, NotANote, "took more than 60 s of processor time to read: skipped until the file changes"),
        (signal.SIGTERM, ReadLater, r"stopped from outside \(SIGTERM\): tried again at the next pass"),
        (signal.SIGKILL, ReadLater, r"stopped from outside \(SIGKILL\)"),
        (signal.SIGINT, ReadLater, r"stopped from outside \(SIGINT\)"),
    ],
)
def test_how_a_child_ends_says_whether_the_document_is_skipped_or_read_later(
    child: pdf_child._Child, sent: int, error: type[Exception], reason: str
):
    """A crash or the processor budget spent is the document's doing: skipped
    until it changes. A stop from outside (Ctrl+C, systemctl stop, the OOM
    killer) is not: the file is read again at the next pass."""
    os.kill(child.process.pid, sent)
    child.process.wait()
    with pytest.raises(error, match=reason):
        child.ask(written(["texte"]), BOUNDS, 60)
    assert pdf.PDF.read(written(["suivant"]), "b.pdf", NOW).text == "suivant"  # the next document: a new child


def test_a_child_spends_at_most_its_budget_of_processor_time(child: pdf_child._Child):
    """The child sets RLIMIT_CPU from the request, so a document that makes
    PDFium spin ends it (SIGXCPU) even when its parent is gone."""
    child.ask(written(["texte"]), (10, 10_000, 7), 60)
    soft, _ = resource.prlimit(child.process.pid, resource.RLIMIT_CPU)
    assert 7 <= soft <= 7 + 60  # what it used so far (a few seconds at most) and the document's 7


def test_a_child_that_does_not_answer_in_time_is_killed_and_the_file_read_later(child: pdf_child._Child):
    """No duration measured: a wall-clock bound of 0 s is past before any answer."""
    with pytest.raises(ReadLater, match="did not answer in time"):
        child.ask(many_pages(50), BOUNDS, 0)
    assert not child.alive


def test_the_characters_past_the_bound_are_not_sent():
    answer = pdf_pages.extract(many_pages(30), 100, 40)
    assert answer["cut"] is True
    assert len(answer["pages"]) < 30
    assert answer["page_count"] == 30


def test_a_child_is_kept_only_after_a_whole_exchange():
    """Left mid-answer, a child would give the rest to the next document."""
    with pytest.raises(RuntimeError), pdf_child.CHILDREN.child(None) as taken:
        raise RuntimeError("the caller failed between two reads")
    assert not taken.alive
    assert taken not in pdf_child.CHILDREN._idle


def test_requests_wait_for_a_child_within_a_bound_and_pages_shown_are_kept(vault: Vault):
    """At most MAX_BUSY children read at once; a note view asks for one, and
    when all are busy (held here) it gets no content rather than a thread
    held or a 500; what was shown before is kept and shown again without one."""
    shown_first = vault.write("vu.pdf", written(["Déjà vu."]))
    other = vault.write("autre.pdf", written(["Jamais vu."]))
    assert read_markdown(shown_first.parent, "vu.pdf", 2**20) == "## page 1\n\nDéjà vu."
    with ExitStack() as held:
        for _ in range(pdf_child.MAX_BUSY):
            held.enter_context(pdf_child.CHILDREN.child(None))
        with pytest.raises(ReadLater, match="busy"):
            pdf_child.ask(written(["x"]), BOUNDS, wait=0)
        assert read_markdown(other.parent, "autre.pdf", 2**20) is None  # waited SHOWN_WAIT_SECONDS, then gave up
        assert read_markdown(shown_first.parent, "vu.pdf", 2**20) == "## page 1\n\nDéjà vu."  # kept
    assert read_markdown(other.parent, "autre.pdf", 2**20) == "## page 1\n\nJamais vu."


def test_a_pdf_that_cannot_be_read_now_is_read_at_the_next_pass(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    """ReadLater is no skip: the file is not marked, and the next pass reads it."""
    vault.write("plus-tard.pdf", written(["Relu au passage suivant."]))
    real = pdf_child.ask

    def stopped_from_outside(*args: object, **kwargs: object) -> dict[str, object]:
        raise ReadLater("PDFium's process was stopped from outside (SIGTERM): tried again at the next pass")

    monkeypatch.setattr(pdf_child, "ask", stopped_from_outside)
    service = vault.service()
    try:
        assert ids(service.search("notes", "relu", NO_FILTER, 10)) == []
        monkeypatch.setattr(pdf_child, "ask", real)
        service.space("notes").writing.run_reconcile()
        assert ids(service.search("notes", "relu", NO_FILTER, 10)) == ["plus-tard.pdf"]
    finally:
        service.stop()


def hostile_vault(vault: Vault) -> None:
    vault.write("lisible.pdf", written(["Le protocole de Kyoto.", "Ratifié en 2005."], "Climat"))
    vault.write("note.md", "# Note\n\nVoir [[lisible.pdf]] et ![[Lisible.PDF#page=2]], pas [[absent.pdf]].\n")
    vault.write("coupé.pdf", written(["Texte coupé au milieu du fichier. " * 40] * 3)[:3000])
    vault.write("chiffré.pdf", encrypted())
    vault.write("scan.pdf", image_only())
    vault.write("boucle.pdf", recursive_pages())
    vault.write("long.pdf", many_pages(5_000))
    vault.write("immense.pdf", huge_page(50 * 2**20))
    vault.write("faux.pdf", b"\x00\x01 pas un PDF")


def test_a_hostile_pdf_corpus_is_skipped_with_reasons_and_the_rest_indexed(vault: Vault):
    hostile_vault(vault)
    service = vault.service()
    try:
        (status,) = service.status()
        reasons = {s.path: s.reason for s in status.skipped_notes}
        assert reasons.keys() == {"coupé.pdf", "chiffré.pdf", "scan.pdf", "boucle.pdf", "faux.pdf"} or (
            # The 50 MB page reads in seconds; on a machine too slow for its
            # deadline it is skipped instead, with that reason.
            "took more than" in reasons.get("immense.pdf", "")
        )
        assert reasons["chiffré.pdf"] == "encrypted: it needs a password"
        assert reasons["scan.pdf"].startswith("no text layer")
        assert reasons["faux.pdf"] == "not a PDF (no %PDF- header)"
        assert reasons["coupé.pdf"].startswith("not a readable PDF")
        assert ids(service.search("notes", "Kyoto", NO_FILTER, 10)) == ["lisible.pdf"]
        assert ids(service.search("notes", "feuillet2000", NO_FILTER, 10)) == ["long.pdf"]
        assert ids(service.search("notes", "colophon", NO_FILTER, 10)) == []  # on page 5,000: past the bound
        assert "note.md" in ids(service.search("notes", "voir", NO_FILTER, 10))
    finally:
        service.stop()


def test_links_to_a_pdf_resolve_and_a_hit_opens_at_its_page(vault: Vault):
    vault.write("docs/lisible.pdf", written(["Le protocole de Kyoto.", "Ratifié en 2005 par la Russie."], "Climat"))
    vault.write("note.md", "# Note\n\nVoir [[lisible.pdf]] et ![[docs/Lisible.PDF#page=2]], pas [[absent.pdf]].\n")
    vault.write(".obsidian/app.json", "{}")  # an Obsidian vault: hits get its links
    service: Service = vault.service()
    try:
        detail = service.note("notes", "note.md")
        assert [(link.target, link.note.id if link.note else None) for link in detail.links] == [
            ("lisible.pdf", "docs/lisible.pdf"),
            ("docs/Lisible.PDF", "docs/lisible.pdf"),
        ]
        assert [link.target for link in detail.dangling] == ["absent.pdf"]
        pdf_detail = service.note("notes", "docs/lisible.pdf", content=True)
        assert [n.id for n in pdf_detail.backlinks] == ["note.md"]
        assert pdf_detail.body == "## page 1\n\nLe protocole de Kyoto.\n\n## page 2\n\nRatifié en 2005 par la Russie."
        assert pdf_detail.content == pdf_detail.body  # MCP get_note's text
        (hit,) = service.search("notes", "Russie", NO_FILTER, 10).results
        best = hit.placed()
        assert best is not None
        assert (best.heading, best.line) == (("page 2",), 2)
        assert hit.open_url == ("obsidian://open?vault=notes&file=docs%2Flisible.pdf%23page%3D2")
        filtered = service.search("notes", "protocole folder:docs file:lisible", NO_FILTER, 10)
        assert ids(filtered) == ["docs/lisible.pdf"]
    finally:
        service.stop()


def test_a_pdf_is_related_to_a_note_at_the_page_that_resonates(vault: Vault):
    """A PDF's fragments never span two pages, however short (chunking "page"):
    a PDF is among a note's related notes, at the page that resonated (the real MiniLM model)."""
    pages = [
        "Tomatoes grow best in full sun with regular watering in the garden, staked against the wind.",
        "Software systems exchange data through open standard interfaces and web APIs, documented for others.",
    ]
    vault.write("report.pdf", written(pages, "Yearly report"), space="en-notes")
    agent = "A software agent that cannot call other systems through programming interfaces sees only its prompt."
    vault.write("agent.md", f"---\nid: agent\ntitle: The blind agent\n---\n{agent}\n", space="en-notes")
    vault.write("bread.md", "---\nid: bread\n---\nBake the sourdough loaf in a hot oven.\n", space="en-notes")
    service = vault.service(vector_search=True, query_embed_timeout_ms=60_000)
    build_semantic(service, load_embedder(models_dir() / "all-minilm-l6-v2-int8"))
    try:
        (echo, *_) = service.related("en-notes", "agent", 2)
        assert echo.note.id == "report.pdf"
        # The page that resonated, alone: its fragment ends where its page does.
        assert echo.fragment.heading == ("page 2",)
        assert "Tomatoes" not in echo.fragment.text
    finally:
        service.stop()
